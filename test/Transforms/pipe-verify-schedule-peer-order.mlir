// --pipe-verify-schedule=peer-order: what a transport without message tags
// (NCCL) needs, every device pair's sends and recvs in the same order. A
// plain 1F1B over 2 devices has it; with two stages per device the
// activations of stage 0 -> 1 and the gradients of stage 2 -> 1 share the
// device pair in different orders on the two sides. Without the option both
// schedules verify (MPI and the in-process transport match by tag).
//
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t.mlir
// RUN: pipe-opt %t.mlir --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=4" --pipe-verify-schedule=peer-order -o /dev/null
// RUN: pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4" --pipe-verify-schedule -o /dev/null
// RUN: not pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4" --pipe-verify-schedule=peer-order -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: schedule @{{.*}}: device {{[01]}}: pipe.send {{.*}} is message {{[0-9]+}} from device {{[01]}} to device {{[01]}}, but that device's recv {{[0-9]+}} from it is pipe.recv {{.*}}: NCCL matches the messages of a device pair in order, so both sides must issue them in the same order (generate it with pipe-schedule peer-order=true)
