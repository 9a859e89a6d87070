// pipe-runner --ps-transfer: the L2L schedule of a generated tiny GPT-2
// (parameter server, host optimizer) compiled to a shared library and
// trained 5 SGD steps on two fixed token rows with fp32 and with bf16
// parameter-server transfers (docs/runtime.md, "bf16 transfers"). Both
// learn, the bf16 run differs from the fp32 one (the flag takes effect) but
// ends at nearly the same loss, and a bad value is a usage error naming the
// flag (pipe-runner and pipe-train share the flag parser).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate "--pipe-place=devices=1 stages-per-device=4" "--pipe-schedule=kind=l2l microbatches=2" --pipe-verify-schedule -o %t/l2l.mlir
// RUN: pipe-compile %t/l2l.mlir -o %t/l2l.so --weights %t/w.safetensors -O 0
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:I64:2x2x16:64 input1:I64:2x2x16:61
// RUN: pipe-runner %t/l2l.so --weights %t/w.safetensors --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-every 1 --log-json %t/f32.jsonl --save-weights %t/f32.safetensors | FileCheck %s
// RUN: pipe-runner %t/l2l.so --weights %t/w.safetensors --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-every 1 --log-json %t/bf16.jsonl --save-weights %t/bf16.safetensors --ps-transfer bf16 | FileCheck %s
// RUN: pipe-runner %t/l2l.so --weights %t/w.safetensors --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --save-weights %t/f32b.safetensors --ps-transfer f32
// RUN: cmp %t/f32.safetensors %t/f32b.safetensors
// RUN: not cmp -s %t/f32.safetensors %t/bf16.safetensors
// RUN: %python -c "import json,sys; f,b=[[json.loads(x)['loss'] for x in open(p)] for p in sys.argv[1:]]; print('learned' if f[-1] < f[0] - 0.1 and b[-1] < b[0] - 0.1 else (f, b)); print('close' if abs(b[-1] - f[-1]) < 0.02 * f[-1] else (f, b))" %t/f32.jsonl %t/bf16.jsonl | FileCheck %s --check-prefix=LOSS
//
// RUN: { pipe-runner %t/l2l.so --weights %t/w.safetensors --ps-transfer fp8 2> %t/bad.txt; test $? -eq 2; }
// RUN: FileCheck %s --check-prefix=BAD < %t/bad.txt
// RUN: { pipe-runner %t/l2l.so --weights %t/w.safetensors --ps-transfer 2> %t/missing.txt; test $? -eq 2; }
// RUN: FileCheck %s --check-prefix=MISSING < %t/missing.txt
// RUN: { pipe-train --ps-transfer f16 2> %t/train.txt; test $? -eq 2; }
// RUN: FileCheck %s --check-prefix=TRAIN < %t/train.txt
// RUN: pipe-runner --help | FileCheck %s --check-prefix=HELP

// CHECK: training '{{.*}}' (l2l, 1 devices, 2 micro-batches) from step 0 to 5
// CHECK: step 5/5 loss

// LOSS: learned
// LOSS-NEXT: close

// BAD: pipe-runner: --ps-transfer: 'fp8' is not a transfer type (f32 or bf16)
// MISSING: pipe-runner: --ps-transfer needs a value: f32 or bf16
// TRAIN: --ps-transfer: 'f16' is not a transfer type (f32 or bf16)
// HELP: --ps-transfer T        f32 (default) or bf16
