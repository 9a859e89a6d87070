// Run-time memory limits on the host back end: tiny-gpt on two devices
// under 1F1B. The capacity is the measured peak read from a --profile
// (so the limit is not written into the test): at the peak the run passes,
// one byte below it fails naming the device, the action, the bytes
// requested, in use and the capacity, and leaves the checkpoint as it was.
// The peak does not depend on thread timing: runs measure the same.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt --vocab=256 -o %t/m.mlir
// RUN: pipe-opt %t/m.mlir --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=4" -o %t/s.mlir
// RUN: pipe-compile %t/s.mlir -o %t/m.so --weights %t/w.safetensors -O 0
// RUN: for i in $(seq 1 40); do echo "line $i: one byte below the peak."; done > %t/data.txt
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 2 --profile %t/p1.json > /dev/null
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 2 --profile %t/p2.json > /dev/null
// RUN: %python %S/Inputs/peak-bytes.py %t/p1.json peak > %t/peak1
// RUN: %python %S/Inputs/peak-bytes.py %t/p2.json peak > %t/peak2
// RUN: diff %t/peak1 %t/peak2
//
// At the peak: trains, and writes the checkpoint the failing run resumes.
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 2 --checkpoint %t/ck.safetensors --device-memory $(cat %t/peak1) | FileCheck %s --check-prefix=FITS
// RUN: cp %t/ck.safetensors %t/ck0.safetensors
//
// One byte below: exits 1 at its first step, checkpoint unchanged, no
// weights written.
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 4 --resume --checkpoint %t/ck.safetensors --save-weights %t/final.safetensors --device-memory $(%python %S/Inputs/peak-bytes.py %t/p1.json peak -1) > %t/over.out 2> %t/over.err; test $? -eq 1
// RUN: FileCheck %s --check-prefix=OVER --input-file %t/over.err -DDEV=$(%python %S/Inputs/peak-bytes.py %t/p1.json device) -DCAP=$(%python %S/Inputs/peak-bytes.py %t/p1.json peak -1)
// RUN: cmp %t/ck.safetensors %t/ck0.safetensors
// RUN: test ! -e %t/final.safetensors
//
// PipeDream-async with weight stashing reduces the tied embedding's
// gradient across the devices (a meeting): each device frees what it
// deposited itself, once all have read it, not whichever collects last.
// RUN: pipe-opt %t/m.mlir --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=pipedream-async microbatches=4 steps=4" -o %t/pd.mlir
// RUN: pipe-compile %t/pd.mlir -o %t/pd.so --weights %t/pd.safetensors -O 0
// RUN: for i in 1 2 3 4 5; do pipe-runner %t/pd.so --weights %t/pd.safetensors --data %t/data.txt --steps 4 --profile-skip 0 --profile %t/pd$i.json > /dev/null && %python -c "import json,sys; print(json.load(open(sys.argv[1]))['peak_device_bytes'])" %t/pd$i.json; done | sort -u | wc -l | FileCheck %s --check-prefix=ONE
// ONE: {{^ *}}1{{$}}
//
// The flag's value is checked before anything runs.
// RUN: not pipe-runner %t/m.so --weights %t/w.safetensors --device-memory lots 2>&1 | FileCheck %s --check-prefix=FLAG

// FITS: summary: 2 steps
// FITS: checkpoint: {{.*}}ck.safetensors

// OVER: pipe-runner: step 3: schedule 'forward_placement_1f1b': device [[DEV]]: {{forward|backward}} stage '{{s[01]}}' mb {{[0-9]+}} step 0 run '{{[a-z0-9]+}}': device [[DEV]]: allocation '{{.*}}' of {{[0-9]+}} bytes exceeds the arena: {{[0-9]+}} of [[CAP]] bytes in use
// FLAG: --device-memory: 'lots' is not a non-negative integer
