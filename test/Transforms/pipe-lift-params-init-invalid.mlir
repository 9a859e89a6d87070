// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init=uniform" -verify-diagnostics

// expected-error @below {{init: 'uniform' is not one of normal, xavier-uniform, kaiming-uniform, zeros}}
module {
  func.func @f() -> tensor<2xf32> {
    %0 = arith.constant dense_resource<__elided__> : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
