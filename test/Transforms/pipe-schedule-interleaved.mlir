// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 stages-per-device=2" --pipe-schedule="kind=interleaved-1f1b microbatches=4" --pipe-verify-schedule | FileCheck %s
// RUN: not pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 stages-per-device=2" --pipe-schedule="kind=interleaved-1f1b microbatches=3" 2>&1 | FileCheck %s --check-prefix=DIV
// RUN: not pipe-opt %s --pipe-schedule="kind=interleaved-1f1b microbatches=4" 2>&1 | FileCheck %s --check-prefix=RR

// Device 0 hosts chunks @s0 and @s2: p = 2 micro-batches through @s0, then
// the same two through @s2, before its first backward.
// CHECK-LABEL: pipe.schedule @model_placement_interleaved_1f1b
// CHECK:         pipe.device 0 {
// CHECK:           pipe.forward @s0 mb 0
// CHECK:           pipe.forward @s0 mb 1
// CHECK:           pipe.forward @s2 mb 0
// CHECK:           pipe.forward @s2 mb 1
// CHECK:           pipe.forward @s0 mb 2
// CHECK:           pipe.backward @s2 mb 0

// DIV: error: cannot schedule placement @model_placement as 'interleaved-1f1b': interleaved-1f1b needs the micro-batch count (3) to be divisible by the number of devices (2)
// RR: error: cannot schedule placement @contiguous as 'interleaved-1f1b': interleaved-1f1b needs a round-robin placement (stage k on device k mod 2), but stage 's1' (stage 1) is on device 0, expected 1

pipe.param @w : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@w] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @layer(%h0) params [@w] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = pipe.run "l2" @layer(%h1) params [@w] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h3 = pipe.run "l3" @layer(%h2) params [@w] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h3 : tensor<4x8xf32>
}
pipe.placement @contiguous graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
  pipe.stage @s2 device 1 blocks ["l2"]
  pipe.stage @s3 device 1 blocks ["l3"]
}
