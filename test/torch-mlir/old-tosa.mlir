// A TOSA export in the syntax of TOSA before MLIR 20 (TensorFlow/TFLite
// and older torch-mlir TOSA exports): `"tosa.const"() {value = ...}`,
// `tosa.reshape {new_shape = ...}` and `tosa.mul {shift = 0 : i8}`, with
// its weights elided. pipe-train upgrades the syntax before parsing (a
// warning at each op), lowers the TOSA to linalg, initialises the weights
// and trains: x [4, 6] viewed as [4, 2, 3], times a weight, plus a bias,
// tanh, summed over the last axis; an MSE loss on the [4, 2] result.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/conformance.py data old-tosa %t --loss mse
// RUN: pipe-train %s --loss mse --init xavier-uniform --init-seed 2 --save-init-weights %t/init.safetensors --devices 2 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/log.jsonl 2>&1 | FileCheck %s
// RUN: %python %S/Inputs/conformance.py check old-tosa %t --loss mse | FileCheck %s --check-prefix=REF

// CHECK: old-tosa.mlir:[[@LINE+13]]:10: warning: upgraded older syntax: tosa.const `value =` is now `values =`
// CHECK: old-tosa.mlir:[[@LINE+13]]:10: warning: upgraded older syntax: tosa.const `value =` is now `values =`
// CHECK: old-tosa.mlir:[[@LINE+13]]:10: warning: upgraded older syntax: tosa.reshape attribute(s) `new_shape` are now operands
// CHECK: old-tosa.mlir:[[@LINE+13]]:10: warning: upgraded older syntax: tosa.mul attribute(s) `shift` are now operands
// CHECK: old-tosa.mlir:[[@LINE+16]]:10: warning: upgraded older syntax: tosa.reshape attribute(s) `new_shape` are now operands
// CHECK: == TOSA input: lowering it to linalg (--pipe-import-tosa)
// CHECK: == model: loss mse (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<4x6xf32> 1: tensor<4x2xf32> (target)
// CHECK-NEXT: parameters: 12 in 2 tensors (those without data: --init xavier-uniform, seed 2)
// CHECK: step 3/3  loss
// REF: old-tosa: first loss matches PyTorch
module {
  func.func @main(%arg0: tensor<4x6xf32>) -> tensor<4x2xf32> {
    %0 = "tosa.const"() {value = dense_resource<__elided__> : tensor<1x2x3xf32>} : () -> tensor<1x2x3xf32>
    %1 = "tosa.const"() {value = dense_resource<__elided__> : tensor<1x2x3xf32>} : () -> tensor<1x2x3xf32>
    %2 = tosa.reshape %arg0 {new_shape = array<i64: 4, 2, 3>} : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
    %3 = tosa.mul %2, %0 {shift = 0 : i8} : (tensor<4x2x3xf32>, tensor<1x2x3xf32>) -> tensor<4x2x3xf32>
    %4 = tosa.add %3, %1 : (tensor<4x2x3xf32>, tensor<1x2x3xf32>) -> tensor<4x2x3xf32>
    %5 = tosa.tanh %4 : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
    %6 = tosa.reduce_sum %5 {axis = 2 : i32} : (tensor<4x2x3xf32>) -> tensor<4x2x1xf32>
    %7 = tosa.reshape %6 {new_shape = array<i64: 4, 2>} : (tensor<4x2x1xf32>) -> tensor<4x2xf32>
    return %7 : tensor<4x2xf32>
  }
}
