// pipe-train on a TOSA model: it lowers it to linalg itself
// (--pipe-import-tosa) and says so, instead of stopping at the input check,
// which names a pipe-opt option.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:F32:4x4x2:13:0.5 input1:F32:4x4x3:11:0.5
// RUN: pipe-train %s --loss mse --devices 1 --data %t/data.safetensors --steps 2 --log-every 1 | FileCheck %s

// CHECK: == TOSA input: lowering it to linalg (--pipe-import-tosa)
// CHECK: == model: loss mse (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<4x2xf32> 1: tensor<4x3xf32> (target)
// CHECK-NEXT: parameters: 9 in 2 tensors
// CHECK: step 2/2  loss {{[0-9]+\.[0-9]+}}
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
