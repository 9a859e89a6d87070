// pipe-profile ingests a model as pipe-train does: a TOSA model is lowered
// to linalg first, and --init, --lift-splats and the loss flags are
// pipe-train's (it stopped at "run --pipe-import-tosa first", and weights
// without data could not be given values).
// RUN: pipe-profile %s --loss mse --init normal --lift-splats --repeats 1 --warmup 0 -o %t.table.json
// RUN: FileCheck %s --input-file %t.table.json
// RUN: not pipe-profile %s --loss mse --repeats 1 --warmup 0 -o %t.missing.json 2>&1 | FileCheck %s --check-prefix=NO-INIT

// CHECK: "format": "pipe-profile-1"
// NO-INIT: has no data

module {
  func.func @forward(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
    %w = "tosa.const"() <{values = dense_resource<__elided__> : tensor<1x2x3xf32>}> : () -> tensor<1x2x3xf32>
    %shape = tosa.const_shape {values = dense<[1, 4, 2]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %x3 = tosa.reshape %x, %shape : (tensor<4x2xf32>, !tosa.shape<3>) -> tensor<1x4x2xf32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %y3 = tosa.matmul %x3, %w, %zp, %zp : (tensor<1x4x2xf32>, tensor<1x2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
    %oshape = tosa.const_shape {values = dense<[4, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %y = tosa.reshape %y3, %oshape : (tensor<1x4x3xf32>, !tosa.shape<2>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
