// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-f32-to-f64 | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.+]]: tensor<2xf64>, %[[H:.+]]: tensor<2xf16>) -> tensor<2xf64>
// CHECK: arith.constant 1.500000e+00 : f64
// CHECK: arith.constant dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf64>
// CHECK: ^bb0(%{{.+}}: f64, %{{.+}}: f64, %{{.+}}: f16, %{{.+}}: f64):
// CHECK-NOT: arith.extf %{{.+}} : f64 to f64
// CHECK: arith.extf %{{.+}} : f16 to f64
// CHECK: } -> tensor<2xf64>
func.func @f(%x: tensor<2xf32>, %h: tensor<2xf16>) -> tensor<2xf32> {
  %c = arith.constant 1.5 : f32
  %d = arith.constant dense<[1.0, 2.5]> : tensor<2xf32>
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x, %d, %h : tensor<2xf32>, tensor<2xf32>, tensor<2xf16>) outs(%e : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32, %hh: f16, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %c : f32
    %w = arith.extf %s : f32 to f64
    %t = arith.truncf %w : f64 to f32
    %he = arith.extf %hh : f16 to f32
    %r2 = arith.addf %t, %he : f32
    linalg.yield %r2 : f32
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// expected-error @+1 {{pipe-f32-to-f64 cannot convert the f32 dense_resource attribute 'value'}}
%0 = "arith.constant"() {value = dense_resource<blob> : tensor<2xf32>} : () -> tensor<2xf32>

{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F00000040"
    }
  }
#-}
