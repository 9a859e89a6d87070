// --pipe-schedule=peer-order: with two stages per device, device 0 sends
// device 1 the activations of s0 -> s1 for micro-batches 2 and 3 before the
// gradients of s2 -> s1, but 1F1B's device 1 would receive them the other
// way round. With the option it posts those two recvs earlier, where its
// recv of the first gradient was, and the schedule passes the peer-order
// check; every send stays where it was.
//
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t.mlir
// RUN: pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4 peer-order=true" --pipe-verify-schedule=peer-order | FileCheck %s
// RUN: pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4" | FileCheck %s --check-prefix=PLAIN
// RUN: pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=zb-h1 microbatches=4 peer-order=true" --pipe-verify-schedule=peer-order -o /dev/null
// RUN: pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=pipedream-async microbatches=4 steps=2 peer-order=true" --pipe-verify-schedule=peer-order -o /dev/null
// RUN: pipe-opt %t.mlir "--pipe-place=devices=2 stages-per-device=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=4 peer-order=true" --pipe-verify-schedule=peer-order -o /dev/null

// CHECK-LABEL: pipe.device 1 {
// CHECK:       pipe.send gradient @s3 -> @s2 mb 1
// CHECK-NEXT:  pipe.recv activation @s0 -> @s1 mb 2
// CHECK-NEXT:  pipe.recv activation @s0 -> @s1 mb 3
// CHECK-NEXT:  pipe.recv gradient @s2 -> @s1 mb 0
// CHECK:       pipe.send gradient @s1 -> @s0 mb 1
// CHECK-NOT:   pipe.recv activation @s0 -> @s1
// CHECK:       pipe.send activation @s1 -> @s2 mb 2

// PLAIN-LABEL: pipe.device 1 {
// PLAIN:       pipe.send gradient @s3 -> @s2 mb 1
// PLAIN-NEXT:  pipe.recv gradient @s2 -> @s1 mb 0
// PLAIN:       pipe.send gradient @s1 -> @s0 mb 1
// PLAIN-NEXT:  pipe.recv activation @s0 -> @s1 mb 2
