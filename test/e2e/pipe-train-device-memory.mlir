// pipe-train --device-model sets the devices' capacities at run time, not
// only for planning: with a device model whose memory is one byte below the
// measured peak (read from a --profile of the same training), the plan
// passes (the memory model counts less than the run holds, see
// host-memory-model.mlir) and the run fails naming the device model's
// capacity; with the peak itself it trains. --device-memory overrides the
// device model.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for i in $(seq 1 40); do echo "line $i: the device model holds."; done > %t/data.txt
// RUN: pipe-train --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 8 --microbatches 4 --data %t/data.txt --steps 2 --eval-every 0 -O 0 --profile %t/p.json > /dev/null
// RUN: %python %S/Inputs/device-model-with-memory.py %S/../../presets/devices/h200.json %t/below.json $(%python %S/Inputs/peak-bytes.py %t/p.json peak -1)
// RUN: %python %S/Inputs/device-model-with-memory.py %S/../../presets/devices/h200.json %t/at.json $(%python %S/Inputs/peak-bytes.py %t/p.json peak)
// RUN: not pipe-train --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 8 --microbatches 4 --data %t/data.txt --steps 2 --eval-every 0 -O 0 --device-model %t/below.json 2>&1 | FileCheck %s --check-prefix=BELOW -DCAP=$(%python %S/Inputs/peak-bytes.py %t/p.json peak -1)
// RUN: pipe-train --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 8 --microbatches 4 --data %t/data.txt --steps 2 --eval-every 0 -O 0 --device-model %t/at.json | FileCheck %s --check-prefix=AT
// RUN: pipe-train --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 8 --microbatches 4 --data %t/data.txt --steps 2 --eval-every 0 -O 0 --device-model %t/below.json --device-memory $(%python %S/Inputs/peak-bytes.py %t/p.json peak) | FileCheck %s --check-prefix=AT

// BELOW: pipe-train: step 1: schedule '{{.*}}': device {{[01]}}: {{.*}} exceeds the arena: {{[0-9]+}} of [[CAP]] bytes in use
// AT: summary: 2 steps
