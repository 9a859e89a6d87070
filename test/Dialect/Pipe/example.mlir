// The worked example verifies, round-trips in custom and generic form, and
// summarises as documented.
// RUN: pipe-opt %pipe_src_root/examples/mixed-pipe-gpipe.mlir --verify-roundtrip | pipe-opt | FileCheck %s --check-prefix=IR
// RUN: pipe-opt %pipe_src_root/examples/mixed-pipe-gpipe.mlir --mlir-print-op-generic | pipe-opt | FileCheck %s --check-prefix=IR
// RUN: pipe-opt %pipe_src_root/examples/mixed-pipe-gpipe.mlir --pipe-print-summary -o /dev/null | FileCheck %s

// IR: pipe.placement @placed graph @model devices 2
// IR: pipe.stage @s2 device 0 blocks ["head"]
// IR: pipe.schedule @gpipe placement @placed kind "gpipe" microbatches 2

// CHECK: parameters: 4 (256 elements)
// CHECK: graph @model: 4 block instances
// CHECK: placement @placed of graph @model: 2 devices
// CHECK-NEXT: device 0: @s0 [l0] @s2 [head]
// CHECK-NEXT: device 1: @s1 [l1, l2]
// CHECK-NEXT: stage order: @s0 @s1 @s2
// CHECK: schedule @gpipe: kind gpipe, 2 micro-batches, 1 step(s)
// CHECK-NEXT: device 0: 23 actions (forward 4, send 4, recv 4, wait 5, backward 4, update 2)
// CHECK-NEXT: device 1: 18 actions (recv 4, wait 5, forward 2, send 4, backward 2, update 1)
