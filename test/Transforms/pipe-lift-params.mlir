// RUN: pipe-opt %s -split-input-file --pipe-lift-params | FileCheck %s
// Double round trip: the lifted IR prints, parses and verifies again.
// RUN: pipe-opt %s -split-input-file --pipe-lift-params | pipe-opt -split-input-file | FileCheck %s

// torch-mlir's linalg-on-tensors output: weights are dense_resource literals
// with shape-and-dtype keys (made unique with _1 by MLIR), literals such as
// epsilons, indices and scalars stay, and so does @global_seed.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @torch_tensor_2_2_torch.float32 : tensor<2x2xf32> = dense_resource<torch_tensor_2_2_torch.float32> {pipe.source = "resource:torch_tensor_2_2_torch.float32"}
// CHECK-NEXT: pipe.param @torch_tensor_2_2_torch.float32_1 : tensor<2x2xf32> = dense_resource<torch_tensor_2_2_torch.float32_1> {pipe.source = "resource:torch_tensor_2_2_torch.float32_1"}
// CHECK-NEXT: ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
// CHECK-LABEL: func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[W0:.*]] = pipe.get_param @torch_tensor_2_2_torch.float32 : tensor<2x2xf32>
// CHECK-NEXT: %[[W1:.*]] = pipe.get_param @torch_tensor_2_2_torch.float32_1 : tensor<2x2xf32>
// CHECK-NEXT: arith.constant dense<9.99999974E-6> : tensor<2x2xf32>
// CHECK-NEXT: arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.constant dense<[0, 1]> : tensor<2xi64>
// CHECK-NEXT: arith.constant dense<3.000000e+00> : tensor<1xf32>
// CHECK: linalg.matmul ins(%arg0, %[[W0]] :
// CHECK: linalg.matmul ins(%{{.*}}, %[[W1]] :
// CHECK: dialect_resources
// CHECK-NEXT: builtin
// CHECK-NEXT: torch_tensor_2_2_torch.float32: "0x040000000000803F000000400000404000008040"
// CHECK-NEXT: torch_tensor_2_2_torch.float32_1: "0x040000000000003F000000BF0000803E000080BE"
module {
  ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
  func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %cst = arith.constant dense_resource<torch_tensor_2_2_torch.float32> : tensor<2x2xf32>
    %cst_0 = arith.constant dense_resource<torch_tensor_2_2_torch.float32_1> : tensor<2x2xf32>
    %cst_1 = arith.constant dense<1.000000e-05> : tensor<2x2xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %cst_3 = arith.constant dense<[0, 1]> : tensor<2xi64>
    %cst_4 = arith.constant dense<3.0> : tensor<1xf32>
    %0 = tensor.empty() : tensor<2x2xf32>
    %1 = linalg.fill ins(%cst_2 : f32) outs(%0 : tensor<2x2xf32>) -> tensor<2x2xf32>
    %2 = linalg.matmul ins(%arg0, %cst : tensor<2x2xf32>, tensor<2x2xf32>) outs(%1 : tensor<2x2xf32>) -> tensor<2x2xf32>
    %3 = linalg.matmul ins(%2, %cst_0 : tensor<2x2xf32>, tensor<2x2xf32>) outs(%1 : tensor<2x2xf32>) -> tensor<2x2xf32>
    %4 = linalg.add ins(%3, %cst_1 : tensor<2x2xf32>, tensor<2x2xf32>) outs(%0 : tensor<2x2xf32>) -> tensor<2x2xf32>
    return %4 : tensor<2x2xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_2_2_torch.float32: "0x040000000000803F000000400000404000008040",
      torch_tensor_2_2_torch.float32_1: "0x040000000000003F000000BF0000803E000080BE"
    }
  }
#-}

// -----

// Tied embeddings: the token embedding is read by the embedding lookup and
// by the LM head. One weight, one parameter, one read with two uses.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @wte : tensor<3x2xf32> = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> {pipe.source = "constant"}
// CHECK-NOT: pipe.param
// CHECK-LABEL: func.func @tied
// CHECK-NEXT: %[[WTE:.*]] = pipe.get_param @wte : tensor<3x2xf32>
// CHECK-NOT: pipe.get_param
// CHECK: tensor.extract %[[WTE]]
// CHECK: linalg.matmul indexing_maps = {{.*}} ins(%{{.*}}, %[[WTE]] :
#id = affine_map<(d0, d1) -> (d0, d1)>
#mA = affine_map<(m, n, k) -> (m, k)>
#mBt = affine_map<(m, n, k) -> (n, k)>
#mC = affine_map<(m, n, k) -> (m, n)>
func.func @tied(%ids: tensor<4xindex>) -> tensor<4x3xf32> {
  %wte = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32> loc("wte")
  %e = tensor.empty() : tensor<4x2xf32>
  %emb = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<4x2xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %tok = tensor.extract %ids[%i] : tensor<4xindex>
    %v = tensor.extract %wte[%tok, %j] : tensor<3x2xf32>
    linalg.yield %v : f32
  } -> tensor<4x2xf32>
  %zero = arith.constant 0.0 : f32
  %le = tensor.empty() : tensor<4x3xf32>
  %lf = linalg.fill ins(%zero : f32) outs(%le : tensor<4x3xf32>) -> tensor<4x3xf32>
  %logits = linalg.matmul indexing_maps = [#mA, #mBt, #mC]
      ins(%emb, %wte : tensor<4x2xf32>, tensor<3x2xf32>)
      outs(%lf : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %logits : tensor<4x3xf32>
}

// -----

// Two distinct constants with equal contents are two weights (two layers
// initialised alike); one dense_resource blob read by two constant ops, even
// in two functions, is one stored tensor and so one parameter.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @p0 : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]> {pipe.source = "constant"}
// CHECK-NEXT: pipe.param @p1 : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]> {pipe.source = "constant"}
// CHECK-NEXT: pipe.param @shared : tensor<2xf32> = dense_resource<shared> {pipe.source = "resource:shared"}
// CHECK-NOT: pipe.param
// CHECK-LABEL: func.func @f
// CHECK-NEXT: pipe.get_param @p0
// CHECK-NEXT: pipe.get_param @p1
// CHECK-NEXT: pipe.get_param @shared
// CHECK-LABEL: func.func @g
// CHECK-NEXT: pipe.get_param @shared
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = arith.constant dense_resource<shared> : tensor<2xf32>
  %e = tensor.empty() : tensor<2xf32>
  %0 = linalg.add ins(%x, %a : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %1 = linalg.add ins(%0, %b : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %2 = linalg.add ins(%1, %s : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  return %2 : tensor<2xf32>
}
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = arith.constant dense_resource<shared> : tensor<2xf32>
  %e = tensor.empty() : tensor<2xf32>
  %0 = linalg.add ins(%x, %s : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      shared: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// Names: an explicit pipe.param attribute (which also lifts a splat), name
// locations (also inside fused and call-site locations), made into bare
// identifiers and unique; a resource key is only used without a name.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @ln.bias : tensor<2xf32> = dense<0.000000e+00> {pipe.source = "constant"}
// CHECK-NEXT: pipe.param @h.0.w : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT: pipe.param @h.0.w_1 : tensor<2xf32> = dense<[3.000000e+00, 4.000000e+00]>
// CHECK-NEXT: pipe.param @h.1_attn_w : tensor<2xf32> = dense<[5.000000e+00, 6.000000e+00]>
// CHECK-NEXT: pipe.param @p0.weight : tensor<2xf32> = dense<[7.000000e+00, 8.000000e+00]>
// CHECK-NEXT: pipe.param @callee.w : tensor<2xf32> = dense_resource<key> {pipe.source = "resource:key"}
// CHECK-NEXT: pipe.param @"explicit name" : tensor<2xf32> = dense<[9.000000e+00, 1.000000e+01]>
// CHECK-LABEL: func.func @names
// CHECK-NEXT: pipe.get_param @ln.bias
// CHECK-NEXT: pipe.get_param @h.0.w :
// CHECK-NEXT: pipe.get_param @h.0.w_1
// CHECK-NEXT: pipe.get_param @h.1_attn_w
// CHECK-NEXT: pipe.get_param @p0.weight
// CHECK-NEXT: pipe.get_param @callee.w
// CHECK-NEXT: pipe.get_param @"explicit name"
func.func @names() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %0 = arith.constant {pipe.param = "ln.bias"} dense<0.0> : tensor<2xf32>
  %1 = arith.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("h.0.w")
  %2 = arith.constant dense<[3.0, 4.0]> : tensor<2xf32> loc("h.0.w")
  %3 = arith.constant dense<[5.0, 6.0]> : tensor<2xf32> loc(fused["model.py":3:4, "h.1/attn w"])
  %4 = arith.constant dense<[7.0, 8.0]> : tensor<2xf32> loc("0.weight")
  %5 = arith.constant dense_resource<key> : tensor<2xf32> loc(callsite("callee.w" at "model.py":7:1))
  %6 = arith.constant {pipe.param = "explicit name"} dense<[9.0, 10.0]> : tensor<2xf32> loc("ignored")
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      key: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// Globals: a float tensor global that is only read is a weight (one
// parameter, however many loads); a global that is stored to is model
// state, and integer globals (@global_seed) stay. A derived name that is
// taken gets a suffix.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @wte : tensor<2x2xf32> = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> {pipe.source = "global:@wte"}
// CHECK-NEXT: pipe.param @w : tensor<2xf32> = dense_resource<blob> {pipe.source = "global:@w"}
// CHECK-NEXT: pipe.param @w_1 : tensor<2xf32> = dense<[5.000000e+00, 6.000000e+00]> {pipe.source = "constant"}
// CHECK-NEXT: ml_program.global private mutable @global_seed
// CHECK-NEXT: ml_program.global private mutable @running_mean
// CHECK-NOT: ml_program.global
// CHECK-LABEL: func.func @globals
// CHECK-NEXT: %[[A:.*]] = pipe.get_param @wte : tensor<2x2xf32>
// CHECK-NEXT: %[[B:.*]] = pipe.get_param @wte : tensor<2x2xf32>
// CHECK-NEXT: pipe.get_param @w : tensor<2xf32>
// CHECK-NEXT: pipe.get_param @w_1 : tensor<2xf32>
// CHECK-NEXT: ml_program.global_load @running_mean
// CHECK-NEXT: ml_program.global_store @running_mean
// CHECK-NEXT: ml_program.global_load @global_seed
// CHECK-NEXT: return %[[A]], %[[B]]
module {
  ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
  ml_program.global private @wte(dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>) : tensor<2x2xf32>
  ml_program.global private @w(dense_resource<blob> : tensor<2xf32>) : tensor<2xf32>
  ml_program.global private mutable @running_mean(dense<[0.0, 1.0]> : tensor<2xf32>) : tensor<2xf32>
  func.func @globals() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<i64>) {
    %0 = ml_program.global_load_const @wte : tensor<2x2xf32>
    %1 = ml_program.global_load_const @wte : tensor<2x2xf32>
    %2 = ml_program.global_load_const @w : tensor<2xf32>
    %3 = arith.constant dense<[5.0, 6.0]> : tensor<2xf32> loc("w")
    %4 = ml_program.global_load @running_mean : tensor<2xf32>
    ml_program.global_store @running_mean = %4 : tensor<2xf32>
    %5 = ml_program.global_load @global_seed : tensor<i64>
    return %0, %1, %2, %3, %5 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<i64>
  }
}
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// Arguments marked pipe.param leave the signature (other arguments keep
// their attributes) and are read at the function's entry.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @h.0.w : tensor<2x2xf32> {pipe.source = "argument:@args:1"}
// CHECK-NEXT: pipe.param @from_loc : tensor<2xf32> {pipe.source = "argument:@args:2"}
// CHECK-LABEL: func.func @args(%arg0: tensor<2x2xf32> {foo.bar}) -> tensor<2x2xf32>
// CHECK-NEXT: %[[W:.*]] = pipe.get_param @h.0.w : tensor<2x2xf32>
// CHECK-NEXT: %[[B:.*]] = pipe.get_param @from_loc : tensor<2xf32>
// CHECK: linalg.matmul ins(%arg0, %[[W]] :
// CHECK: linalg.broadcast ins(%[[B]] :
func.func @args(%x: tensor<2x2xf32> {foo.bar}, %w: tensor<2x2xf32> {pipe.param = "h.0.w"},
                %b: tensor<2xf32> {pipe.param} loc("from_loc")) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = linalg.broadcast ins(%b : tensor<2xf32>) outs(%e : tensor<2x2xf32>) dimensions = [0]
  %2 = linalg.add ins(%0, %1 : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %2 : tensor<2x2xf32>
}

// -----

// Lifting is idempotent: nothing is left to lift the second time.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @w : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT: func.func @again
// CHECK-NEXT: pipe.get_param @w
module {
  pipe.param @w : tensor<2xf32> = dense<[1.0, 2.0]>
  func.func @again() -> tensor<2xf32> {
    %0 = pipe.get_param @w : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
