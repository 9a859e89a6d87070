// RUN: pipe-opt %s -split-input-file --pipe-lift-params | FileCheck %s --check-prefix=DEFAULT
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="lift-splats=true" | FileCheck %s --check-prefix=SPLATS
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="min-elements=1 lift-splats=true" | FileCheck %s --check-prefix=MIN1
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="min-elements=5" | FileCheck %s --check-prefix=MIN5
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="frozen=^h\.0\." | FileCheck %s --check-prefix=FROZEN

// min-elements and lift-splats decide which constants are weights.

// DEFAULT-LABEL: func.func @sizes
// DEFAULT-NOT: pipe.get_param
// DEFAULT: return

// SPLATS: pipe.param @p0 : tensor<4xf32> = dense<0.000000e+00>
// SPLATS-NOT: pipe.param
// SPLATS-LABEL: func.func @sizes
// SPLATS-NEXT: pipe.get_param @p0 : tensor<4xf32>
// SPLATS-NEXT: arith.constant dense<1.000000e+00> : tensor<1xf32>

// MIN1: pipe.param @p0 : tensor<4xf32> = dense<0.000000e+00>
// MIN1-NEXT: pipe.param @p1 : tensor<1xf32> = dense<1.000000e+00>
// MIN1-LABEL: func.func @sizes
// MIN1-NEXT: pipe.get_param @p0
// MIN1-NEXT: pipe.get_param @p1
// MIN1-NEXT: arith.constant 2.0
func.func @sizes() -> (tensor<4xf32>, tensor<1xf32>, f32) {
  %0 = arith.constant dense<0.0> : tensor<4xf32>
  %1 = arith.constant dense<1.0> : tensor<1xf32>
  %2 = arith.constant 2.0 : f32
  return %0, %1, %2 : tensor<4xf32>, tensor<1xf32>, f32
}

// -----

// DEFAULT: pipe.param @small : tensor<4xf32>
// DEFAULT-NEXT: pipe.param @large : tensor<8xf32>
// MIN5-NOT: pipe.param @small
// MIN5: pipe.param @large : tensor<8xf32>
// MIN5-LABEL: func.func @threshold
// MIN5-NEXT: arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// MIN5-NEXT: pipe.get_param @large
func.func @threshold() -> (tensor<4xf32>, tensor<8xf32>) {
  %0 = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> loc("small")
  %1 = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32> loc("large")
  return %0, %1 : tensor<4xf32>, tensor<8xf32>
}

// -----

// frozen marks the parameters whose name matches.

// FROZEN: pipe.param @h.0.w frozen : tensor<2xf32>
// FROZEN-NEXT: pipe.param @h.1.w : tensor<2xf32>
// FROZEN-NEXT: pipe.param @xh.0.w : tensor<2xf32>
func.func @frozen() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %0 = arith.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("h.0.w")
  %1 = arith.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("h.1.w")
  %2 = arith.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("xh.0.w")
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
