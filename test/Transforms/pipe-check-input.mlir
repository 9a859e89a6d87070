// RUN: pipe-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics --pipe-check-input | FileCheck %s

// The linalg-on-tensors contract: everything here is accepted and left as it
// is (named linalg ops with and without indexing_maps, contract,
// elementwise, generic, fill, transpose, broadcast; tensor, arith, math,
// scf, cf, ml_program, affine index ops, alloc_tensor, pipe ops).

// CHECK-LABEL: func.func @accepted
// CHECK: pipe.get_param @w
// CHECK: linalg.matmul
// CHECK: linalg.contract
// CHECK: bufferization.alloc_tensor
#mA = affine_map<(m, n, k) -> (k, m)>
#mB = affine_map<(m, n, k) -> (k, n)>
#mC = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
  pipe.param @w : tensor<8x8xf32>
  func.func @accepted(%x: tensor<4x8xf32>, %xt: tensor<8x4xf32>,
                      %b: tensor<2x4x8xf32>, %ft: tensor<i1>) -> tensor<4x8xf32> {
    %flag = tensor.extract %ft[] : tensor<i1>
    %zero = arith.constant 0.0 : f32
    %w = pipe.get_param @w : tensor<8x8xf32>
    %seed = ml_program.global_load @global_seed : tensor<i64>
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                        outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    %mt = linalg.matmul indexing_maps = [#mA, #mB, #mC]
            ins(%xt, %w : tensor<8x4xf32>, tensor<8x8xf32>)
            outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    %bw = tensor.empty() : tensor<2x8x8xf32>
    %bwb = linalg.broadcast ins(%w : tensor<8x8xf32>)
             outs(%bw : tensor<2x8x8xf32>) dimensions = [0]
    %be = tensor.empty() : tensor<2x4x8xf32>
    %bf = linalg.fill ins(%zero : f32) outs(%be : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %bm = linalg.batch_matmul ins(%b, %bwb : tensor<2x4x8xf32>, tensor<2x8x8xf32>)
            outs(%bf : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %c = linalg.contract indexing_maps = [#mA, #mB, #mC]
           ins(%xt, %w : tensor<8x4xf32>, tensor<8x8xf32>)
           outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    %add = linalg.elementwise kind=#linalg.elementwise_kind<add>
             ins(%mm, %mt : tensor<4x8xf32>, tensor<4x8xf32>)
             outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel", "parallel"]}
           ins(%add : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %t = math.tanh %in : f32
      linalg.yield %t : f32
    } -> tensor<4x8xf32>
    %te = tensor.empty() : tensor<8x4xf32>
    %tr = linalg.transpose ins(%g : tensor<4x8xf32>) outs(%te : tensor<8x4xf32>)
            permutation = [1, 0]
    %i0 = arith.constant 0 : index
    %i4 = arith.constant 4 : index
    %i1 = arith.constant 1 : index
    %sum = scf.for %i = %i0 to %i4 step %i1 iter_args(%acc = %c) -> tensor<4x8xf32> {
      %j = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
      %slice = tensor.extract_slice %acc[0, 0] [4, 8] [1, 1]
                 : tensor<4x8xf32> to tensor<4x8xf32>
      scf.yield %slice : tensor<4x8xf32>
    }
    %alloc = bufferization.alloc_tensor() : tensor<4x8xf32>
    cf.cond_br %flag, ^bb1, ^bb2
  ^bb1:
    return %sum : tensor<4x8xf32>
  ^bb2:
    return %alloc : tensor<4x8xf32>
  }
}

// -----

func.func @tosa(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tosa.add' op is TOSA, which is not accepted directly: run --pipe-import-tosa first to lower it to linalg-on-tensors}}
  %y = tosa.add %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Dialects that the tool does not register parse only with
// -allow-unregistered-dialect (see pipe-check-input-unregistered.mlir).
func.func @torch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'torch.aten.relu' op is torch dialect IR: lower it to linalg-on-tensors first (torch_mlir.fx.export_and_import(..., output_type="linalg-on-tensors"))}}
  %y = "torch.aten.relu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @stablehlo(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'stablehlo.add' op is StableHLO: lower it to linalg-on-tensors first}}
  %y = "stablehlo.add"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @attention(%q: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %e = tensor.empty() : tensor<1x4x8xf32>
  // expected-error @+1 {{'tm_tensor.attention' op (fused attention) is not supported: export with torch-mlir's default decompositions or eager attention}}
  %y = "tm_tensor.attention"(%q, %q, %q, %e) : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

func.func @sort(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tm_tensor.sort' op is not supported: export with torch-mlir's default decompositions so that it becomes linalg}}
  %y = "tm_tensor.sort"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @buffers() {
  // expected-error @+1 {{'memref.alloc' op belongs to buffer-level or lowered IR: the input must be tensor-level IR, before bufferization and lowering}}
  %m = memref.alloc() : memref<4xf32>
  return
}

// -----

func.func @vector() {
  %x = arith.constant 1.0 : f32
  // expected-error @+1 {{'vector.broadcast' op belongs to buffer-level or lowered IR}}
  %y = vector.broadcast %x : f32 to vector<4xf32>
  return
}

// -----

func.func @other(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  return %x : tensor<4xcomplex<f32>>
}
// expected-error @-3 {{argument %arg0 (#0) of function @other has type 'tensor<4xcomplex<f32>>' whose elements are not integers or floats}}
// expected-error @-4 {{result #0 of function @other has type 'tensor<4xcomplex<f32>>' whose elements are not integers or floats}}

// -----

func.func @sparse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 1.0 : f32
  // expected-error @+1 {{'shape.const_size' op is not part of the accepted input (linalg-on-tensors: builtin, func, linalg, tensor, arith, math, scf, cf, ml_program and pipe ops)}}
  %s = shape.const_size 4
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument %arg0 (#0) of function @dynamic has dynamically shaped type 'tensor<?x8xf32>': export the model with static shapes (no dynamic dimensions)}}
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  // expected-error @+1 {{'tensor.empty' op result %0 (#0) has dynamically shaped type 'tensor<?x8xf32>'}}
  %e = tensor.empty(%d) : tensor<?x8xf32>
  %s = tensor.empty() : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// expected-error @+2 {{argument %arg0 (#0) of function @unranked has unranked type 'tensor<*xf32>': export the model with static shapes}}
// expected-error @+1 {{result #0 of function @unranked has unranked type 'tensor<*xf32>'}}
func.func @unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  return %x : tensor<*xf32>
}

// -----

// expected-error @+1 {{global @state has dynamically shaped type 'tensor<?xf32>'}}
ml_program.global private mutable @state : tensor<?xf32>

// -----

func.func @memref_arg(%m: memref<4xf32>) {
  return
}
// expected-error @-3 {{argument %arg0 (#0) of function @memref_arg has unsupported type 'memref<4xf32>': the input must use ranked, statically shaped tensors of integers or floats, and scalars}}

// -----

// expected-error @+1 {{'func.func' op @external is a declaration without a body: the whole model must be defined in the module}}
func.func private @external(tensor<4xf32>) -> tensor<4xf32>

// -----

// All problems are reported, not only the first; nothing inside a rejected
// op is looked at (its own results' types included).
func.func @several(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tosa.abs' op is TOSA}}
  %a = tosa.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'torch.aten.abs' op is torch dialect IR}}
  %b = "torch.aten.abs"(%a) : (tensor<4xf32>) -> !torch.vtensor<[4],f32>
  // expected-error @+1 {{'tensor.cast' op result %cast (#0) has dynamically shaped type 'tensor<?xf32>'}}
  %c = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  return %x : tensor<4xf32>
}

// -----

// torch-mlir keeps a Python int argument (a softmax's dim) as a scalar; the
// runtime feeds a model tensors. A private helper may take scalars.
// expected-error @+1 {{argument %arg1 (#1) of function @main is a scalar 'i64': a model's inputs must be tensors (torch-mlir keeps a Python int or float argument as a scalar); export it with the value fixed, or as a 0-d tensor}}
func.func @main(%x: tensor<4xf32>, %dim: i64) -> tensor<4xf32> {
  %c = arith.constant 2.0 : f32
  %y = func.call @scale(%x, %c) : (tensor<4xf32>, f32) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @scale(%x: tensor<4xf32>, %c: f32) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// An integer table without data (an embedding bag's offsets printed
// elided) cannot be made up, unlike a float weight.
func.func @offsets(%x: tensor<4xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{integer constant 'torch_tensor_2_torch.int64' of type 'tensor<2xi64>' has no data (its dense_resource blob is missing, e.g. printed as __elided__): indices cannot be made up; export the model with its constants}}
  %idx = arith.constant dense_resource<torch_tensor_2_torch.int64> : tensor<2xi64>
  return %idx : tensor<2xi64>
}
