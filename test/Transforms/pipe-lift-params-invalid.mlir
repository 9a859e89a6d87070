// RUN: pipe-opt %s -split-input-file --pipe-lift-params -verify-diagnostics
// Option errors name the option:
// RUN: not pipe-opt %s -split-input-file --pipe-lift-params="frozen=(" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not pipe-opt %s -split-input-file --pipe-lift-params="min-elements=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not pipe-opt %s -split-input-file --pipe-lift-params="param-args=7" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not pipe-opt %s -split-input-file --pipe-lift-params="param-args=0 entry=nope" 2>&1 | FileCheck %s --check-prefix=ENTRY
// REGEX: error: frozen: invalid regular expression '(':
// NEG: error: min-elements must not be negative, got -1
// RANGE: error: 'func.func' op param-args: argument index 7 is out of range: @size_mismatch has 0 arguments
// ENTRY: error: param-args: no function @nope with a body in the module

// A blob whose size does not match its type would be read as garbage (the
// parser does not check; torch-mlir's 4-byte alignment prefix is not data).

func.func @size_mismatch() -> tensor<4xf32> {
  // expected-error @+1 {{weight 'short' has a dense_resource blob 'short' of 8 bytes, but 'tensor<4xf32>' needs 16 bytes}}
  %0 = arith.constant dense_resource<short> : tensor<4xf32>
  return %0 : tensor<4xf32>
}
{-#
  dialect_resources: {
    builtin: {
      short: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// expected-error @+1 {{weight global @g has a dense_resource blob 'long' of 12 bytes, but 'tensor<2xf32>' needs 8 bytes}}
ml_program.global private @g(dense_resource<long> : tensor<2xf32>) : tensor<2xf32>
func.func @global_size() -> tensor<2xf32> {
  %0 = ml_program.global_load_const @g : tensor<2xf32>
  return %0 : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      long: "0x040000000000803F0000004000004040"
    }
  }
#-}

// -----

func.func @duplicate_names() -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = arith.constant {pipe.param = "w"} dense<[1.0, 2.0]> : tensor<2xf32>
  // expected-error @+1 {{parameter name 'w' is already taken by another parameter or symbol}}
  %1 = arith.constant {pipe.param = "w"} dense<[3.0, 4.0]> : tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @taken() -> tensor<2xf32> {
  // expected-error @+1 {{parameter name 'taken' is already taken by another parameter or symbol}}
  %0 = arith.constant {pipe.param = "taken"} dense<[1.0, 2.0]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @conflicting_names() -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = arith.constant {pipe.param = "a"} dense_resource<blob> : tensor<2xf32>
  // expected-error @+1 {{'arith.constant' op names dense_resource 'blob' pipe.param "b", but it is already named "a"}}
  %1 = arith.constant {pipe.param = "b"} dense_resource<blob> : tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F00000040"
    }
  }
#-}

// -----

func.func @not_elements() -> tensor<2xf32> {
  // expected-error @+1 {{'arith.constant' op is marked pipe.param but its value is neither dense nor dense_resource}}
  %0 = arith.constant {pipe.param = "s"} sparse<[[0]], [1.0]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @scalar_constant() -> f32 {
  // expected-error @+1 {{'arith.constant' op is marked pipe.param but its type 'f32' is not a tensor of integers or floats}}
  %0 = arith.constant {pipe.param = "s"} 1.0 : f32
  return %0 : f32
}

// -----

func.func @complex_constant() -> tensor<2xcomplex<f32>> {
  // expected-error @+1 {{'arith.constant' op is marked pipe.param but its type 'tensor<2xcomplex<f32>>' is not a tensor of integers or floats}}
  %0 = arith.constant {pipe.param = "c"} dense<(1.0, 2.0)> : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}

// -----

// expected-error @+1 {{'ml_program.global' op @state is marked pipe.param but is not only read by global_load/global_load_const, so it cannot become a parameter}}
ml_program.global private mutable @state(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32> {pipe.param = "state"}
func.func @stored() {
  %0 = ml_program.global_load @state : tensor<2xf32>
  ml_program.global_store @state = %0 : tensor<2xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 of @called cannot become a parameter: @called is called from within the module}}
func.func private @called(%w: tensor<2xf32> {pipe.param = "w"}) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}
func.func @caller(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @called(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{argument #0 of @scalar of type 'f32' cannot become a parameter: it needs a static tensor type of integers or floats}}
func.func @scalar(%w: f32 {pipe.param = "w"}) -> f32 {
  return %w : f32
}

// -----

// expected-error @+1 {{pipe.param names must not be empty}}
func.func @empty_name(%w: tensor<2xf32> {pipe.param = ""}) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}

// -----

// Hostile inputs: each is lifted or reported with a location, never a
// crash. A zero-size blob for a non-empty weight:
func.func @forward(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{weight 'empty_blob' has a dense_resource blob 'empty_blob' of 0 bytes, but 'tensor<4xf32>' needs 16 bytes}}
  %w = arith.constant dense_resource<empty_blob> : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
{-# dialect_resources: { builtin: { empty_blob: "0x04000000" } } #-}

// -----

// An empty weight with an empty blob is consistent (and below
// min-elements); an empty module, a 0-d weight, an i1 weight and weights
// read inside nested regions or across basic blocks are fine.
module {
}

// -----

func.func @forward(%a: tensor<0xf32>, %c: i1) -> tensor<0xf32> {
  %z = arith.constant dense_resource<zero_elems> : tensor<0xf32>
  %s = arith.constant {pipe.param = "scale"} dense<2.0> : tensor<f32>
  %m = arith.constant {pipe.param = "mask"} dense<[true, false]> : tensor<2xi1>
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%acc = %a) -> tensor<0xf32> {
    %e = tensor.empty() : tensor<0xf32>
    %x = linalg.add ins(%acc, %z : tensor<0xf32>, tensor<0xf32>) outs(%e : tensor<0xf32>) -> tensor<0xf32>
    %y = tensor.extract %w[%c0] : tensor<4xf32>
    %t = tensor.extract %s[] : tensor<f32>
    %b = tensor.extract %m[%c0] : tensor<2xi1>
    scf.yield %x : tensor<0xf32>
  }
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %v = tensor.extract %w[%c1] : tensor<4xf32>
  cf.br ^bb2
^bb2:
  return %r : tensor<0xf32>
}
{-# dialect_resources: { builtin: { zero_elems: "0x04000000" } } #-}
