// A 4-block model in 3 stages on 2 devices. Device 0 hosts the first and the
// last stage, which are not adjacent (Mixed-Pipe); the GPipe (fill-drain)
// schedule for 2 micro-batches is written out action by action.
//
//   pipe-opt examples/mixed-pipe-gpipe.mlir --pipe-print-summary

pipe.param @w0 : tensor<8x8xf32> = dense<0.125>
pipe.param @w1 : tensor<8x8xf32> = dense<0.125>
pipe.param @w2 : tensor<8x8xf32> = dense<0.125>
pipe.param @w3 : tensor<8x8xf32> = dense<0.125>

// relu(x @ w), shared by the three hidden layers.
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

// mean((x @ w - y)^2)
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
  %h2 = pipe.run "l2" @linear_relu(%h1) params [@w2]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = pipe.run "head" @mse_head(%h2, %y) params [@w3]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

pipe.placement @placed graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1", "l2"]
  pipe.stage @s2 device 0 blocks ["head"]
}

pipe.schedule @gpipe placement @placed kind "gpipe" microbatches 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.forward @s0 mb 1
    %a1 = pipe.send activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    %r0 = pipe.recv activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r0
    pipe.forward @s2 mb 0
    %r1 = pipe.recv activation @s1 -> @s2 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %r1
    pipe.forward @s2 mb 1
    pipe.backward @s2 mb 0
    %g0 = pipe.send gradient @s2 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.backward @s2 mb 1
    %g1 = pipe.send gradient @s2 -> @s1 mb 1 payload [tensor<4x8xf32>]
    %q0 = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %q0
    pipe.backward @s0 mb 0
    %q1 = pipe.recv gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %q1
    pipe.backward @s0 mb 1
    pipe.wait %a0, %a1, %g0, %g1
    pipe.update @s0
    pipe.update @s2
  }
  pipe.device 1 {
    %r0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r0
    pipe.forward @s1 mb 0
    %a0 = pipe.send activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
    %r1 = pipe.recv activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %r1
    pipe.forward @s1 mb 1
    %a1 = pipe.send activation @s1 -> @s2 mb 1 payload [tensor<4x8xf32>]
    %q0 = pipe.recv gradient @s2 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %q0
    pipe.backward @s1 mb 0
    %g0 = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    %q1 = pipe.recv gradient @s2 -> @s1 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %q1
    pipe.backward @s1 mb 1
    %g1 = pipe.send gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %a0, %a1, %g0, %g1
    pipe.update @s1
  }
}
