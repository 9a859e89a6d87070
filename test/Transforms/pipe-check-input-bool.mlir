// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-check-input | FileCheck %s
// RUN: pipe-opt %s -split-input-file --pipe-check-input=inline-bool-resources=false | FileCheck %s --check-prefix=OFF

// Boolean dense_resource constants and globals (torch-mlir's masks) become
// dense literals of the same values, which LLVM translation can lower;
// other resources and dense i1 literals stay as they are.

// CHECK: ml_program.global private @g(dense<[false, true]> : tensor<2xi1>)
// CHECK-LABEL: func.func @mask
// CHECK: arith.constant dense<[true, false, false, true]> : tensor<4xi1>
// CHECK: arith.constant dense_resource<weight> : tensor<2xf32>
// CHECK: arith.constant dense<[false, true]> : tensor<2xi1>
// OFF: ml_program.global private @g(dense_resource<pair> : tensor<2xi1>)
// OFF-LABEL: func.func @mask
// OFF: arith.constant dense_resource<mask> : tensor<4xi1>
module {
  ml_program.global private @g(dense_resource<pair> : tensor<2xi1>) : tensor<2xi1>
  func.func @mask() -> (tensor<4xi1>, tensor<2xf32>, tensor<2xi1>) {
    %m = arith.constant dense_resource<mask> : tensor<4xi1>
    %w = arith.constant dense_resource<weight> : tensor<2xf32>
    %d = arith.constant dense<[false, true]> : tensor<2xi1>
    return %m, %w, %d : tensor<4xi1>, tensor<2xf32>, tensor<2xi1>
  }
}
{-#
  dialect_resources: {
    builtin: {
      mask: "0x0100000001000001",
      pair: "0x010000000001",
      weight: "0x040000000000803F00000040"
    }
  }
#-}

// -----

func.func @elided() -> tensor<4xi1> {
  // expected-error @+1 {{boolean constant '__elided__' has no data (its dense_resource blob is missing, e.g. printed as __elided__): a mask cannot be made up; export the model with its constants}}
  %m = arith.constant dense_resource<__elided__> : tensor<4xi1>
  return %m : tensor<4xi1>
}

// -----

func.func @short() -> tensor<4xi1> {
  // expected-error @+1 {{boolean constant 'short' has a dense_resource blob of 3 bytes, but 'tensor<4xi1>' needs 4 (one byte per element)}}
  %m = arith.constant dense_resource<short> : tensor<4xi1>
  return %m : tensor<4xi1>
}
{-#
  dialect_resources: {
    builtin: {
      short: "0x01000000010000"
    }
  }
#-}

// -----

func.func @notbool() -> tensor<4xi1> {
  // expected-error @+1 {{boolean constant 'junk' has byte 2 at element 2; booleans are 0 or 1}}
  %m = arith.constant dense_resource<junk> : tensor<4xi1>
  return %m : tensor<4xi1>
}
{-#
  dialect_resources: {
    builtin: {
      junk: "0x0100000001000201"
    }
  }
#-}
