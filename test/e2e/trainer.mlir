// pipe-runner end to end: compile tiny-gpt with a byte vocabulary, train it
// on a text file made here, evaluate with the forward-only schedule, and
// check that stopping (--stop-after, exit 3) or kill -9 at any moment
// followed by --resume gives weights bit-identical to an uninterrupted run.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt --vocab=256 -o %t/m.mlir
// RUN: pipe-opt %t/m.mlir --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" "--pipe-schedule=kind=1f1b microbatches=2 forward-only=true" -o %t/s.mlir
// RUN: pipe-compile %t/s.mlir -o %t/m.so --weights %t/w.safetensors
// RUN: for i in $(seq 1 120); do echo "line $i: the pipe runs the stages of its layers, then updates them."; done > %t/data.txt
//
// Uninterrupted: 20 steps.
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 20 --warmup 4 --lr-schedule cosine --lr 3e-3 --seed 7 --eval-every 10 --eval-batches 4 --log-every 10 --log-json %t/log.jsonl --save-weights %t/a.safetensors | FileCheck %s --check-prefix=TRAIN
// TRAIN: data: {{.*}}data.txt, {{[0-9]+}} bytes train, {{[0-9]+}} held out
// TRAIN: training '{{.*}}' (1f1b, 2 devices, 2 micro-batches) from step 0 to 20
// TRAIN: step 10/20  loss {{[0-9.]+}}  lr {{.*}}  {{[0-9]+}} tok/s  eta
// TRAIN-NEXT: eval step 10: loss {{[0-9.]+}} (8 micro-batches)
// TRAIN: step 20/20
// TRAIN-NEXT: eval step 20: loss
// TRAIN: summary: 20 steps
// TRAIN: peak memory: device 0 {{.*}}, device 1
// TRAIN: weights: {{.*}}a.safetensors
// RUN: wc -l < %t/log.jsonl | FileCheck %s --check-prefix=LOG
// RUN: head -1 %t/log.jsonl | FileCheck %s --check-prefix=LOG1
// LOG: 20
// LOG1: {"step":1,"loss":{{[0-9.e-]+}},"lr":0.000750000007,"tokens_per_s":{{.*}},"time":
//
// Stopped after 8 steps, then resumed twice (8 more, the rest).
// RUN: { pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 20 --warmup 4 --lr-schedule cosine --lr 3e-3 --seed 7 --eval-every 10 --eval-batches 4 --checkpoint %t/c.ckpt --checkpoint-every 4 --resume --stop-after 8 > %t/stop.txt; test $? -eq 3; }
// RUN: FileCheck %s --check-prefix=STOP < %t/stop.txt
// STOP: stopping at step 8 as asked
// STOP: stopped at step 8; continue with --resume
// RUN: { pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 20 --warmup 4 --lr-schedule cosine --lr 3e-3 --seed 7 --checkpoint %t/c.ckpt --checkpoint-every 4 --resume --stop-after 8 > /dev/null; test $? -eq 3; }
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 20 --warmup 4 --lr-schedule cosine --lr 3e-3 --seed 7 --checkpoint %t/c.ckpt --resume --save-weights %t/b.safetensors | FileCheck %s --check-prefix=RESUME
// RESUME: resumed from {{.*}}c.ckpt at step 16
// RESUME: summary: 20 steps (resumed at 16)
// RUN: cmp %t/a.safetensors %t/b.safetensors
//
// kill -9 at arbitrary moments (also while a checkpoint is written), then
// resume to the end: the checkpoint is never corrupt, the result the same.
// RUN: rm -f %t/k.ckpt
// RUN: for t in 0.03 0.05 0.08 0.12; do timeout -s KILL $t pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 20 --warmup 4 --lr-schedule cosine --lr 3e-3 --seed 7 --checkpoint %t/k.ckpt --checkpoint-every 1 --resume > /dev/null; done; true
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 20 --warmup 4 --lr-schedule cosine --lr 3e-3 --seed 7 --checkpoint %t/k.ckpt --checkpoint-every 1 --resume --save-weights %t/k.safetensors > /dev/null
// RUN: cmp %t/a.safetensors %t/k.safetensors
//
// SIGTERM: the step finishes, the checkpoint is written, exit status 3. The
// signal is sent once the first step is logged (the handlers are in place
// by then, however slowly the process started); at most 30 s of waiting.
// RUN: { pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 1000000 --checkpoint %t/t.ckpt --log-json %t/term.jsonl > %t/term.txt & pid=$!; for i in $(seq 600); do test -s %t/term.jsonl && break; sleep 0.05; done; kill -TERM $pid; wait $pid; test $? -eq 3; }
// RUN: FileCheck %s --check-prefix=TERM < %t/term.txt
// TERM: stopping at step {{[0-9]+}}: received SIGTERM
// TERM-NEXT: checkpoint: step {{[0-9]+}} -> {{.*}}t.ckpt
// TERM: summary: {{[0-9]+}} steps, interrupted
//
// Errors.
// RUN: not pipe-runner %t/m.so --weights %t/w.safetensors --data %t/missing.txt 2>&1 | FileCheck %s --check-prefix=NODATA
// NODATA: pipe-runner: {{.*}}missing.txt: cannot read the data file
// RUN: not pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --schedule nope 2>&1 | FileCheck %s --check-prefix=NOSCHED
// NOSCHED: no schedule 'nope'; the program has: {{.*}} (1f1b), {{.*}} (1f1b, forward-only)
// RUN: { pipe-runner %t/m.so --weights %t/w.safetensors --bogus 2> /dev/null; test $? -eq 2; }
