// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=kaiming-uniform init-seed=7" | FileCheck %s
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=kaiming-uniform init-seed=7" 2>&1 -o /dev/null | FileCheck %s --check-prefix=WARN
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init-missing=true" | FileCheck %s --check-prefix=MISSING
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=zeros" | FileCheck %s --check-prefix=ZEROS
// The draw depends on the seed and the name only.
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=normal init-seed=3" -mlir-print-op-generic -o %t.a
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=normal init-seed=3" -mlir-print-op-generic -o %t.b
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=normal init-seed=4" -mlir-print-op-generic -o %t.c
// RUN: cmp %t.a %t.b
// RUN: not cmp -s %t.a %t.c

// A torch-mlir linalg-on-tensors export of an eval-mode
// conv2d -> batch_norm -> relu -> linear, its weights elided: batch_norm
// decomposed (running statistics viewed as [1, C, 1, 1], subtracted, added
// to eps, rsqrt), conv2d as linalg.conv_2d_nchw_fchw into the broadcast
// bias, linear as a transpose, a matmul and a broadcast add. The running
// statistics are frozen and start at 0 and 1; the conv and linear weights
// are drawn with their fans; biases are zero, the BatchNorm scale one.

// WARN: warning: 8 weight(s) have no data in the module (elided or missing dense_resource blobs, globals without a value): initialised with kaiming-uniform (seed 7), each constant reading a missing blob as its own parameter

// CHECK-LABEL: module
// CHECK-DAG: pipe.param @conv.weight : tensor<4x3x3x3xf32> = dense_resource<init.conv.weight>
// CHECK-DAG: pipe.param @conv.bias : tensor<4xf32> = dense<0.000000e+00>
// CHECK-DAG: pipe.param @bn.running_mean frozen : tensor<4xf32> = dense<0.000000e+00>
// CHECK-DAG: pipe.param @bn.running_var frozen : tensor<4xf32> = dense<1.000000e+00>
// CHECK-DAG: pipe.param @bn.weight : tensor<4xf32> = dense<1.000000e+00>
// CHECK-DAG: pipe.param @bn.bias : tensor<4xf32> = dense<0.000000e+00>
// CHECK-DAG: pipe.param @fc.weight : tensor<5x64xf32> = dense_resource<init.fc.weight>
// CHECK-DAG: pipe.param @fc.bias : tensor<5xf32> = dense<0.000000e+00>

// init-missing alone lifts them without values; the statistics get theirs.
// MISSING-DAG: pipe.param @conv.weight : tensor<4x3x3x3xf32> {pipe.source
// MISSING-DAG: pipe.param @bn.running_mean frozen : tensor<4xf32> = dense<0.000000e+00>
// MISSING-DAG: pipe.param @bn.running_var frozen : tensor<4xf32> = dense<1.000000e+00>
// MISSING-DAG: pipe.param @bn.weight : tensor<4xf32> {pipe.source

// zeros: the matrices are zero, scales still one.
// ZEROS-DAG: pipe.param @conv.weight : tensor<4x3x3x3xf32> = dense<0.000000e+00>
// ZEROS-DAG: pipe.param @fc.weight : tensor<5x64xf32> = dense<0.000000e+00>
// ZEROS-DAG: pipe.param @bn.weight : tensor<4xf32> = dense<1.000000e+00>
// ZEROS-DAG: pipe.param @bn.running_var frozen : tensor<4xf32> = dense<1.000000e+00>
#map = affine_map<(d0, d1, d2, d3) -> (d1)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @forward(%arg0: tensor<2x3x4x4xf32>) -> tensor<2x5xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e-05 : f64
    %cst_1 = arith.constant dense_resource<__elided__> : tensor<4x3x3x3xf32> loc("conv.weight")
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("conv.bias")
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.running_mean")
    %cst_4 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.running_var")
    %cst_5 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.weight")
    %cst_6 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.bias")
    %cst_7 = arith.constant dense_resource<__elided__> : tensor<5x64xf32> loc("fc.weight")
    %cst_8 = arith.constant dense_resource<__elided__> : tensor<5xf32> loc("fc.bias")
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<2x3x4x4xf32> to tensor<2x3x6x6xf32>
    %0 = tensor.empty() : tensor<2x4x4x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_2 : tensor<4xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x4x4x4xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_1 : tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%1 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    %expanded = tensor.expand_shape %cst_3 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %expanded_9 = tensor.expand_shape %cst_4 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %3 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %expanded : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.subf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %4 = tensor.empty() : tensor<1x4x1x1xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_9 : tensor<1x4x1x1xf32>) outs(%4 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.truncf %cst_0 : f64 to f32
      %15 = arith.addf %in, %14 : f32
      linalg.yield %15 : f32
    } -> tensor<1x4x1x1xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5 : tensor<1x4x1x1xf32>) outs(%4 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = math.rsqrt %in : f32
      linalg.yield %14 : f32
    } -> tensor<1x4x1x1xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3, %6 : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.mulf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %expanded_10 = tensor.expand_shape %cst_5 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_10 : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.mulf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %expanded_11 = tensor.expand_shape %cst_6 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_11 : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.addf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<2x4x4x4xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.cmpf ugt, %in, %cst : f32
      %15 = arith.select %14, %in, %cst : f32
      linalg.yield %15 : f32
    } -> tensor<2x4x4x4xf32>
    %collapsed = tensor.collapse_shape %10 [[0], [1, 2, 3]] : tensor<2x4x4x4xf32> into tensor<2x64xf32>
    %11 = tensor.empty() : tensor<64x5xf32>
    %transposed = linalg.transpose ins(%cst_7 : tensor<5x64xf32>) outs(%11 : tensor<64x5xf32>) permutation = [1, 0]
    %12 = tensor.empty() : tensor<2x5xf32>
    %fill = linalg.fill ins(%cst : f32) outs(%12 : tensor<2x5xf32>) -> tensor<2x5xf32>
    %13 = linalg.matmul ins(%collapsed, %transposed : tensor<2x64xf32>, tensor<64x5xf32>) outs(%fill : tensor<2x5xf32>) -> tensor<2x5xf32>
    %14 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%13, %cst_8 : tensor<2x5xf32>, tensor<5xf32>) outs(%12 : tensor<2x5xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %15 = arith.addf %in, %in_12 : f32
      linalg.yield %15 : f32
    } -> tensor<2x5xf32>
    return %14 : tensor<2x5xf32>
  }
}

// -----

// torch-mlir's batch_norm lowered without decomposition: one generic over
// input, weight, bias, running mean and running variance. Statistics with
// data keep it and are still frozen.
// CHECK-LABEL: module
// CHECK-DAG: pipe.param @mean frozen : tensor<2xf32> = dense<[5.000000e-01, 2.500000e-01]>
// CHECK-DAG: pipe.param @var frozen : tensor<2xf32> = dense<1.000000e+00>
// CHECK-DAG: pipe.param @gamma : tensor<2xf32> = dense<1.000000e+00>
// CHECK-DAG: pipe.param @beta : tensor<2xf32> = dense<0.000000e+00>
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @fused(%arg0: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %cst = arith.constant 1.000000e-05 : f64
  %w = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("gamma")
  %b = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("beta")
  %m = arith.constant dense<[0.5, 0.25]> : tensor<2xf32> loc("mean")
  %v = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("var")
  %0 = tensor.empty() : tensor<1x2x3x3xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map1, #map1, #map1, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %w, %b, %m, %v : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) outs(%0 : tensor<1x2x3x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32):
    %2 = arith.subf %in, %in_2 : f32
    %3 = arith.truncf %cst : f64 to f32
    %4 = arith.addf %in_3, %3 : f32
    %5 = math.rsqrt %4 : f32
    %6 = arith.mulf %2, %5 : f32
    %7 = arith.mulf %6, %in_0 : f32
    %8 = arith.addf %7, %in_1 : f32
    linalg.yield %8 : f32
  } -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// -----

// A vector that is subtracted but never scaled by a standard deviation is
// no running mean; one added to a constant without a square root is no
// running variance: both stay trainable biases.
// CHECK-LABEL: module
// CHECK-DAG: pipe.param @shift : tensor<2xf32> = dense<0.000000e+00>
// CHECK-DAG: pipe.param @offset : tensor<2xf32> = dense<0.000000e+00>
#map = affine_map<(d0) -> (d0)>
func.func @not_statistics(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %cst = arith.constant 1.000000e-05 : f32
  %s = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("shift")
  %o = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("offset")
  %0 = tensor.empty() : tensor<2xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel"]} ins(%arg0, %s, %o : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) outs(%0 : tensor<2xf32>) {
  ^bb0(%in: f32, %in_0: f32, %in_1: f32, %out: f32):
    %2 = arith.subf %in, %in_0 : f32
    %3 = arith.addf %in_1, %cst : f32
    %4 = arith.mulf %2, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<2xf32>
  return %1 : tensor<2xf32>
}

// -----

// Names survive into the initialised parameters: an elided global keeps its
// name, a lifted argument its name location; the argument (the weight of a
// matmul, [in, out]) is drawn, the global (added) is a zero bias.
// CHECK-LABEL: module
// CHECK-DAG: pipe.param @fc.bias : tensor<3xf32> = dense<0.000000e+00> {pipe.source = "global:@fc.bias"}
// CHECK-DAG: pipe.param @fc.weight : tensor<4x3xf32> = dense_resource<init.fc.weight> {pipe.source = "argument:@named:1"}
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
ml_program.global private @fc.bias(dense_resource<__elided__> : tensor<3xf32>) : tensor<3xf32>
func.func @named(%x: tensor<2x4xf32>, %w: tensor<4x3xf32> {pipe.param} loc("fc.weight")) -> tensor<2x3xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %b = ml_program.global_load_const @fc.bias : tensor<3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
