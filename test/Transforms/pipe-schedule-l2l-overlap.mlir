// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=1 steps=2 host-update=overlap" --pipe-verify-schedule | FileCheck %s
// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=1 steps=2" --pipe-verify-schedule | FileCheck %s --check-prefix=PLAIN
// RUN: pipe-opt %s --pipe-schedule="kind=l2l microbatches=1 steps=3 host-update=delayed" --pipe-verify-schedule | FileCheck %s --check-prefix=DELAYED
// RUN: not pipe-opt %s --pipe-schedule="kind=l2l host-update=later" 2>&1 | FileCheck %s --check-prefix=BAD

pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @layer(%h0) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h1 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
}

// Overlap: step 0 ends by waiting for its last push only; step 1 issues its
// loads at once and waits each with the previous update of its stage.
// CHECK: %[[U1:.*]] = pipe.ps.update @s1{{$}}
// CHECK: %[[U0:.*]] = pipe.ps.update @s0{{$}}
// CHECK-NEXT: pipe.ps.release @s0
// CHECK-NEXT: pipe.wait %{{[0-9]+}}
// CHECK-NEXT: pipe.wait %{{[0-9]+}}{{$}}
// CHECK-NEXT: %[[L0:.*]] = pipe.ps.load @s0 step 1
// CHECK-NEXT: %[[L1:.*]] = pipe.ps.load @s1 step 1
// CHECK-NEXT: pipe.wait %[[L0]], %[[U0]]
// CHECK-NEXT: pipe.forward @s0 mb 0 step 1
// CHECK: pipe.wait %[[L1]], %[[U1]]
// CHECK-NEXT: pipe.forward @s1 mb 0 step 1

// Plain: step 0 waits for every host update before step 1 loads.
// PLAIN: %[[U1:.*]] = pipe.ps.update @s1{{$}}
// PLAIN: %[[U0:.*]] = pipe.ps.update @s0{{$}}
// PLAIN: pipe.wait %[[U1]], %[[U0]], %{{[0-9]+}}
// PLAIN-NEXT: pipe.ps.load @s0 step 1

// BAD: host-update must be 'plain', 'overlap' or 'delayed', got 'later'

// Delayed: step k > 0 loads weight version k - 1 in its forward and its
// backward, so no load waits for the previous step's update; the device
// waits for that update only before pushing the stage's next gradient.
// DELAYED: %{{.*}} = pipe.ps.load @s0 version 0
// DELAYED: %[[U1:.*]] = pipe.ps.update @s1{{$}}
// DELAYED: %[[U0:.*]] = pipe.ps.update @s0{{$}}
// DELAYED: %[[L0:.*]] = pipe.ps.load @s0 step 1 version 0
// DELAYED-NEXT: %{{.*}} = pipe.ps.load @s1 step 1 version 0
// DELAYED-NEXT: pipe.wait %[[L0]]{{$}}
// DELAYED: %[[B0:.*]] = pipe.ps.load @s0 step 1 version 0
// DELAYED: pipe.backward @s1 mb 0 step 1
// DELAYED-NEXT: pipe.wait %[[U1]]{{$}}
// DELAYED-NEXT: pipe.ps.push @s1 step 1
// DELAYED: pipe.wait %[[B0]]
// DELAYED: pipe.backward @s0 mb 0 step 1
// DELAYED-NEXT: pipe.wait %[[U0]]{{$}}
// DELAYED-NEXT: pipe.ps.push @s0 step 1
// DELAYED: pipe.ps.load @s0 step 2 version 1
// DELAYED-NEXT: pipe.ps.load @s1 step 2 version 1
// Only the last step waits for its updates.
// DELAYED: pipe.wait %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}
// DELAYED-NEXT: }
