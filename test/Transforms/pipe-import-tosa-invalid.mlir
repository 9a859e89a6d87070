// RUN: pipe-opt %s --pipe-import-tosa -verify-diagnostics

// An op without a lowering is reported by the upstream conversion, and the
// import says that it failed.

// expected-error @below {{TOSA import failed: the ops reported above have no lowering to linalg-on-tensors}}
module {
  func.func @custom(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{failed to legalize operation 'tosa.custom'}}
    %r = tosa.custom %x {operator_name = "foo", domain_name = "bar", implementation_attrs = ""} : (tensor<4xf32>) -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
