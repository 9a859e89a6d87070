// RUN: pipe-opt %s --pipe-differentiate | FileCheck %s

// A parameter position that every run binds to a frozen pipe.param gets no
// gradient: @shift (frozen in its only run) keeps its input-gradient block
// and loses its weight-gradient block. @scale is run with a frozen and a
// trainable param: the shared block keeps the gradient (the runtime drops
// the frozen run's).

// (The attributes print sorted by name.)
// CHECK-LABEL: pipe.block @scale params
// CHECK-SAME: pipe.backward_weight = @scale_bwd_weight, pipe.recompute
// CHECK-LABEL: pipe.block @shift params
// CHECK-SAME: pipe.backward_input = @shift_bwd_input, pipe.frozen_params = array<i64: 0>, pipe.recompute
// CHECK-NOT: @shift_bwd_weight
// CHECK: pipe.graph @g

pipe.param @frozen_scale frozen : tensor<4xf32>
pipe.param @trained : tensor<4xf32>
pipe.param @bias frozen : tensor<4xf32>

#id = affine_map<(i) -> (i)>

pipe.block @scale params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  %init = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  pipe.return %y : tensor<4xf32>
}

pipe.block @shift params(%b: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  %init = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %b : tensor<4xf32>, tensor<4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  pipe.return %y : tensor<4xf32>
}

pipe.block @sum (%y: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%y : tensor<4xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}

pipe.graph @g(%x: tensor<4xf32>) -> tensor<f32> {
  %a = pipe.run "a" @scale(%x) params [@frozen_scale] : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.run "b" @scale(%a) params [@trained] : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.run "c" @shift(%b) params [@bias] : (tensor<4xf32>) -> tensor<4xf32>
  %l = pipe.run "head" @sum(%c) : (tensor<4xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
