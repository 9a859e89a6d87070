// RUN: pipe-opt %s -split-input-file --pipe-freeze-params="patterns=head.*" -verify-diagnostics

// expected-error @+1 {{pipe-freeze-params: 'head.*' matches no parameter; the parameters are p0, p1, p2, p3, p4, p5, p6, p7, ...}}
module {
  pipe.param @p0 : tensor<2xf32>
  pipe.param @p1 : tensor<2xf32>
  pipe.param @p2 : tensor<2xf32>
  pipe.param @p3 : tensor<2xf32>
  pipe.param @p4 : tensor<2xf32>
  pipe.param @p5 : tensor<2xf32>
  pipe.param @p6 : tensor<2xf32>
  pipe.param @p7 : tensor<2xf32>
  pipe.param @p8 : tensor<2xf32>
}

// -----

// expected-error @+1 {{pipe-freeze-params: 'head.*' matches no parameter (the module has none)}}
module {
}
