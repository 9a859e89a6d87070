// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-check-input | FileCheck %s

// An op that reads its init must not read a bare tensor.empty (undefined
// contents, NaN in training): named contractions and reductions accumulate
// into it, and so does a generic whose payload reads the out argument.
// Writing a tensor.empty without reading it is what it is for.

// CHECK-LABEL: func.func @writes_only
// CHECK: linalg.generic
// CHECK: linalg.matmul
// CHECK: linalg.reduce
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @writes_only(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  // Elementwise: the payload ignores %out.
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  // Filled first.
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r0 = tensor.empty() : tensor<4xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%r0 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%rf : tensor<4xf32>) dimensions = [1]
    (%a: f32, %b: f32) {
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
  // Transpose and broadcast only write.
  %te = tensor.empty() : tensor<8x4xf32>
  %tr = linalg.transpose ins(%g : tensor<4x8xf32>) outs(%te : tensor<8x4xf32>) permutation = [1, 0]
  return %g, %mm, %r, %tr : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x4xf32>
}

// -----

func.func @matmul(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-note @+1 {{the undefined tensor is made here}}
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{'linalg.matmul' op reads its init (outs operand #0, %0 (#0)), which is a bare 'tensor.empty' with undefined contents: a contraction or reduction adds into its init, so fill it first (linalg.fill with 0 for a sum, the reduction's identity in general), as torch-mlir does}}
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %mm : tensor<4x8xf32>
}

// -----

func.func @batch_matmul(%x: tensor<2x4x8xf32>, %w: tensor<2x8x8xf32>) -> tensor<2x4x8xf32> {
  // expected-note @+1 {{the undefined tensor is made here}}
  %e = bufferization.alloc_tensor() : tensor<2x4x8xf32>
  // expected-error @+1 {{'linalg.batch_matmul' op reads its init (outs operand #0, %0 (#0)), which is a bare 'bufferization.alloc_tensor'}}
  %mm = linalg.batch_matmul ins(%x, %w : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%e : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %mm : tensor<2x4x8xf32>
}

// -----

func.func @conv(%x: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-note @+1 {{the undefined tensor is made here}}
  %e = tensor.empty() : tensor<1x4x6x6xf32>
  // expected-error @+1 {{'linalg.conv_2d_nchw_fchw' op reads its init}}
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %k : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%e : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %c : tensor<1x4x6x6xf32>
}

// -----

func.func @reduce(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{the undefined tensor is made here}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.reduce' op reads its init}}
  %r = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%e : tensor<4xf32>) dimensions = [1]
    (%a: f32, %b: f32) {
      %s = arith.maximumf %a, %b : f32
      linalg.yield %s : f32
    }
  return %r : tensor<4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @generic_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{the undefined tensor is made here}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.generic' op reads its init (outs operand #0, %0 (#0))}}
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
         ins(%x : tensor<4x8xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// An elementwise generic that reads %out reads undefined values too.
#id = affine_map<(d0) -> (d0)>
func.func @generic_reads_out(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{the undefined tensor is made here}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.generic' op reads its init}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
         ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
