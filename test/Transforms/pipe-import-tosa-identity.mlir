// RUN: pipe-opt %s --pipe-import-tosa | FileCheck %s
// RUN: pipe-opt %s --pipe-import-tosa --pipe-check-input --pipe-lift-params=init=zeros 2>&1 | FileCheck %s --check-prefix=LIFT

// Weights keep their identity through the upstream canonicalizations of the
// TOSA import, which unique equal constants: two elided weights of one type
// (one key, `__elided__`, for both) and two weights with equal values stay
// four constants, so four parameters. Splat and integer constants are
// literals and may still be folded and merged (the two splat biases).

// CHECK-LABEL: func.func @weights
// CHECK-COUNT-2: arith.constant dense_resource<__elided__> : tensor<2x3xf32>
// CHECK-COUNT-2: arith.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NOT: __pipe_import_tosa_weight
// CHECK-NOT: tosa.

// LIFT: warning: 2 weight(s) have no data in the module
// LIFT-COUNT-4: pipe.param @{{.*}} : tensor<2x3xf32>
// LIFT-NOT: pipe.param
// LIFT-LABEL: func.func @weights
func.func @weights(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "tosa.const"() <{values = dense_resource<__elided__> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %1 = "tosa.const"() <{values = dense_resource<__elided__> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %2 = "tosa.const"() <{values = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %3 = "tosa.const"() <{values = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %4 = "tosa.const"() <{values = dense<0.5> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %5 = "tosa.const"() <{values = dense<0.5> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %a = tosa.add %x, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = tosa.add %a, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = tosa.add %b, %2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = tosa.add %c, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = tosa.add %d, %4 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = tosa.add %e, %5 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %f : tensor<2x3xf32>
}
