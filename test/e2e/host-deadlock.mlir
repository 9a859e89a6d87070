// Bad input: a hand-written schedule that deadlocks. pipe-compile does not
// verify schedules, so it compiles; pipe-runner's watchdog must turn the hang
// into an error naming the device and the stuck action, well within the
// timeout (the static checker, --pipe-verify-schedule, finds it too).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-opt %s --pipe-differentiate -o %t/dead.mlir
// RUN: not pipe-opt %t/dead.mlir --pipe-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: pipe-compile %t/dead.mlir -o %t/dead.so --weights %t/w.safetensors -O 0
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:F32:2x4x8:13:0.5 input1:F32:2x4x8:11:0.5
// A hang would be killed by `timeout` and print no message: FileCheck fails.
// RUN: not timeout 60 pipe-runner %t/dead.so --weights %t/w.safetensors --data %t/data.safetensors --watchdog 0.5 2>&1 | FileCheck %s

// VERIFY: error: schedule @onefoneb: device 0: pipe.recv gradient @s1 -> @s0 mb 1 deadlocks: it can never run because its matching send is never issued

// Either stuck device may be reported first.
// CHECK: pipe-runner: step 1: schedule 'onefoneb': device {{(0: recv gradient s1->s0|1: recv activation s0->s1)}} mb 1 step 0 did not match a send within 0.5 s

pipe.param @w0 : tensor<8x8xf32> = dense<0.125>
pipe.param @w1 : tensor<8x8xf32> = dense<0.25>
pipe.param @w2 : tensor<8x8xf32> = dense<0.5>

pipe.block @linear_relu params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %relu = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  pipe.return %relu : tensor<4x8xf32>
}

pipe.block @mse_head params(%w: tensor<8x8xf32>)
    (%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.03125 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum_init = tensor.empty() : tensor<f32>
  %sum0 = linalg.fill ins(%zero : f32) outs(%sum_init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%mm, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%sum0 : tensor<f32>) {
  ^bb0(%p: f32, %t: f32, %s: f32):
    %d = arith.subf %p, %t : f32
    %sq = arith.mulf %d, %d : f32
    %scaled = arith.mulf %sq, %scale : f32
    %acc2 = arith.addf %s, %scaled : f32
    linalg.yield %acc2 : f32
  } -> tensor<f32>
  pipe.return %sum : tensor<f32>
}

pipe.graph @model(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %h0 = pipe.run "l0" @linear_relu(%x) params [@w0]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @linear_relu(%h0) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = pipe.run "head" @mse_head(%h1, %y) params [@w2]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

pipe.placement @two graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1", "head"]
}

// Device 0 never sends micro-batch 1's activation (the send was deleted from
// the 1F1B list): device 1 waits for it, device 0 for its gradient.
pipe.schedule @onefoneb placement @two kind "1f1b" microbatches 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.forward @s0 mb 1
    %g0 = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g0
    pipe.backward @s0 mb 0
    %g1 = pipe.recv gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g1
    pipe.backward.input @s0 mb 1
    pipe.backward.weight @s0 mb 1
    pipe.wait %a0
    pipe.update @s0
  }
  pipe.device 1 {
    %r0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r0
    pipe.forward @s1 mb 0
    pipe.recompute @s1 mb 0
    pipe.backward @s1 mb 0
    %g0 = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    %r1 = pipe.recv activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %r1
    pipe.forward @s1 mb 1
    pipe.backward @s1 mb 1
    %g1 = pipe.send gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g0, %g1
    pipe.update @s1
  }
}
