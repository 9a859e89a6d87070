// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=1 --pipe-place="devices=1" | FileCheck %s --check-prefix=PLACE
// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=2" --pipe-verify-schedule | FileCheck %s
// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=2 constant-memory=true" --pipe-verify-schedule | FileCheck %s --check-prefix=CM
// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=2 forward-only=true" --pipe-verify-schedule | FileCheck %s --check-prefix=FWD
// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=2 forward-only=true constant-memory=true" --pipe-verify-schedule | FileCheck %s --check-prefix=FWD
// RUN: not pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule=kind=l2l 2>&1 | FileCheck %s --check-prefix=ERR

// PLACE-COUNT-1: pipe.placement

pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.param @w2 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @layer(%h0) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = pipe.run "l2" @layer(%h1) params [@w2] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h2 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
  pipe.stage @s2 device 0 blocks ["l2"]
}

// Layer-major: load the next stage before computing this one, all
// micro-batches per stage, release; backward in reverse with recompute,
// push and host update per stage; each stage's push waits for the one
// before it (at most two stages' gradients on the device); the step ends
// waiting for the host updates and the last push.
// CHECK-LABEL: pipe.schedule @one_l2l placement @one kind "l2l" microbatches 2 ps_stages [@s0, @s1, @s2] {
// CHECK-NEXT:    pipe.device 0 {
// CHECK-NEXT:      %[[L0:.*]] = pipe.ps.load @s0
// CHECK-NEXT:      %[[L1:.*]] = pipe.ps.load @s1
// CHECK-NEXT:      pipe.wait %[[L0]]
// CHECK-NEXT:      pipe.forward @s0 mb 0
// CHECK-NEXT:      pipe.forward @s0 mb 1
// CHECK-NEXT:      pipe.ps.release @s0
// CHECK-NEXT:      %[[L2:.*]] = pipe.ps.load @s2
// CHECK-NEXT:      pipe.wait %[[L1]]
// CHECK-NEXT:      pipe.forward @s1 mb 0
// CHECK-NEXT:      pipe.forward @s1 mb 1
// CHECK-NEXT:      pipe.ps.release @s1
// CHECK-NEXT:      pipe.wait %[[L2]]
// CHECK-NEXT:      pipe.forward @s2 mb 0
// CHECK-NEXT:      pipe.forward @s2 mb 1
// CHECK-NEXT:      %[[B1:.*]] = pipe.ps.load @s1
// CHECK-NEXT:      pipe.recompute @s2 mb 0
// CHECK-NEXT:      pipe.backward @s2 mb 0
// CHECK-NEXT:      pipe.recompute @s2 mb 1
// CHECK-NEXT:      pipe.backward @s2 mb 1
// CHECK-NEXT:      %[[P2:.*]] = pipe.ps.push @s2
// CHECK-NEXT:      %[[U2:.*]] = pipe.ps.update @s2
// CHECK-NEXT:      pipe.ps.release @s2
// CHECK-NEXT:      %[[B0:.*]] = pipe.ps.load @s0
// CHECK-NEXT:      pipe.wait %[[B1]]
// CHECK-NEXT:      pipe.recompute @s1 mb 0
// CHECK:           %[[P1:.*]] = pipe.ps.push @s1
// CHECK-NEXT:      %[[U1:.*]] = pipe.ps.update @s1
// CHECK-NEXT:      pipe.ps.release @s1
// CHECK-NEXT:      pipe.wait %[[P2]]
// CHECK:           %[[P0:.*]] = pipe.ps.push @s0
// CHECK-NEXT:      %[[U0:.*]] = pipe.ps.update @s0
// CHECK-NEXT:      pipe.ps.release @s0
// CHECK-NEXT:      pipe.wait %[[P1]]
// CHECK-NEXT:      pipe.wait %[[U2]], %[[U1]], %[[U0]], %[[P0]]

// CM:      pipe.forward @s0 mb 0
// CM-NEXT: %[[O:.*]] = pipe.offload @s0 mb 0
// CM:      %[[P:.*]] = pipe.prefetch @s0 mb 0
// CM:      pipe.wait %[[P]],
// CM-NEXT: pipe.recompute @s0 mb 0

// Forward-only (evaluation under L2L): per stage, the next stage's load
// issued first, then this one's forwards and release; no backward, push,
// host update or offload, with or without constant-memory.
// FWD-LABEL: pipe.schedule @one_l2l placement @one kind "l2l" microbatches 2 forward_only
// FWD-NEXT:    pipe.device 0 {
// FWD-NEXT:      %[[L0:.*]] = pipe.ps.load @s0
// FWD-NEXT:      %[[L1:.*]] = pipe.ps.load @s1
// FWD-NEXT:      pipe.wait %[[L0]]
// FWD-NEXT:      pipe.forward @s0 mb 0
// FWD-NEXT:      pipe.forward @s0 mb 1
// FWD-NEXT:      pipe.ps.release @s0
// FWD-NEXT:      %[[L2:.*]] = pipe.ps.load @s2
// FWD-NEXT:      pipe.wait %[[L1]]
// FWD-NEXT:      pipe.forward @s1 mb 0
// FWD-NEXT:      pipe.forward @s1 mb 1
// FWD-NEXT:      pipe.ps.release @s1
// FWD-NEXT:      pipe.wait %[[L2]]
// FWD-NEXT:      pipe.forward @s2 mb 0
// FWD-NEXT:      pipe.forward @s2 mb 1
// FWD-NEXT:      pipe.ps.release @s2
// FWD-NEXT:    }
// FWD-NEXT:  }

// ERR: error: cannot schedule placement @model_placement as 'l2l': l2l runs every stage on device 0, but stage 's1' is on device 1; place the model on one device
