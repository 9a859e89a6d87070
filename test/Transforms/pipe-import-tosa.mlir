// RUN: pipe-opt %s -split-input-file --pipe-import-tosa | FileCheck %s
// The result is accepted input, and its const weights lift into parameters:
// RUN: pipe-opt %s -split-input-file --pipe-import-tosa --pipe-check-input --pipe-lift-params | FileCheck %s --check-prefix=LIFT

// A small TOSA model: reshape, a batched matmul against a constant weight,
// a broadcast bias add, reshape back.

// CHECK-LABEL: func.func @forward(%arg0: tensor<4x2xf32>) -> tensor<4x3xf32>
// CHECK-NOT: tosa.
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[}}{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]]> : tensor<1x2x3xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<{{\[}}{{\[}}[5.000000e-01, -5.000000e-01, 2.500000e-01]]]> : tensor<1x1x3xf32>
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0
// CHECK: %[[MM:.*]] = linalg.batch_matmul ins(%[[X]], %[[W]] : tensor<1x4x2xf32>, tensor<1x2x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[MM]], %[[B]] : tensor<1x4x3xf32>, tensor<1x1x3xf32>)
// CHECK: arith.addf
// CHECK: tensor.collapse_shape
// CHECK-NOT: tosa.

// LIFT: pipe.param @p0 : tensor<1x2x3xf32>
// LIFT-NEXT: pipe.param @p1 : tensor<1x1x3xf32>
// LIFT-LABEL: func.func @forward
// LIFT-DAG: pipe.get_param @p0
// LIFT-DAG: pipe.get_param @p1
func.func @forward(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = "tosa.const"() <{values = dense<[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]> : tensor<1x2x3xf32>}> : () -> tensor<1x2x3xf32>
  %b = "tosa.const"() <{values = dense<[[[0.5, -0.5, 0.25]]]> : tensor<1x1x3xf32>}> : () -> tensor<1x1x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[1, 4, 2]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %x3 = tosa.reshape %x, %s3 : (tensor<4x2xf32>, !tosa.shape<3>) -> tensor<1x4x2xf32>
  %y = tosa.matmul %x3, %w, %zp, %zp : (tensor<1x4x2xf32>, tensor<1x2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
  %z = tosa.add %y, %b : (tensor<1x4x3xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %s2 = tosa.const_shape {values = dense<[4, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %r = tosa.reshape %z, %s2 : (tensor<1x4x3xf32>, !tosa.shape<2>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Elementwise and activation ops become linalg.generic over arith/math.

// CHECK-LABEL: func.func @activations
// CHECK-NOT: tosa.
// CHECK: math.tanh
// CHECK: arith.maximumf
// CHECK-NOT: tosa.
// LIFT-LABEL: func.func @activations
func.func @activations(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %t = tosa.tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %m = tosa.maximum %t, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %m : tensor<2x8xf32>
}

// -----

// Variables become ml_program globals (then parameters: read-only ones are
// weights), and cond_if becomes scf.if.

// CHECK-LABEL: module
// CHECK: ml_program.global private mutable @w(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>)
// CHECK-LABEL: func.func @control
// CHECK: ml_program.global_load @w
// CHECK: scf.if
// CHECK-NOT: tosa.

// LIFT: pipe.param @w : tensor<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> {pipe.source = "global:@w"}
// LIFT-LABEL: func.func @control
// LIFT: pipe.get_param @w
module {
  tosa.variable @w = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  func.func @control(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %w = tosa.variable_read @w : tensor<4xf32>
    %y = tosa.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = tosa.cond_if %c : tensor<i1> -> tensor<4xf32> {
      %a = tosa.abs %y : (tensor<4xf32>) -> tensor<4xf32>
      tosa.yield %a : tensor<4xf32>
    } else {
      tosa.yield %y : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}
