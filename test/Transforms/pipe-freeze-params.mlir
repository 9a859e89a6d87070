// RUN: pipe-opt %s --pipe-freeze-params="patterns=wte,h.0.*,re:^h\.2\.b$" | FileCheck %s
// RUN: pipe-opt %s --pipe-freeze-params="patterns=h.?.w" | FileCheck %s --check-prefix=ONE
// RUN: not pipe-opt %s --pipe-freeze-params="patterns=re:(" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not pipe-opt %s --pipe-freeze-params="patterns=head.*,h.0.*" 2>&1 | FileCheck %s --check-prefix=NONE

// Globs match the whole name (`*` crosses dots), re: searches anywhere;
// a param already frozen stays frozen.

// CHECK: pipe.param @wte frozen : tensor<4x2xf32>
// CHECK: pipe.param @h.0.w frozen : tensor<2x2xf32>
// CHECK: pipe.param @h.0.b frozen : tensor<2xf32>
// CHECK: pipe.param @h.1.w : tensor<2x2xf32>
// CHECK: pipe.param @h.1.b : tensor<2xf32>
// CHECK: pipe.param @h.2.b frozen : tensor<2xf32>
// CHECK: pipe.param @h.20.b : tensor<2xf32>
// CHECK: pipe.param @stat frozen : tensor<2xf32>

// ONE: pipe.param @wte : tensor<4x2xf32>
// ONE: pipe.param @h.0.w frozen : tensor<2x2xf32>
// ONE: pipe.param @h.0.b : tensor<2xf32>
// ONE: pipe.param @h.1.w frozen : tensor<2x2xf32>

// REGEX: error: pipe-freeze-params: invalid regular expression '(':

// A pattern that matches nothing is an error naming it and the params.
// NONE: error: pipe-freeze-params: 'head.*' matches no parameter; the parameters are wte, h.0.w, h.0.b, h.1.w, h.1.b, h.2.b, h.20.b, stat
// NONE-NOT: 'h.0.*' matches no parameter

pipe.param @wte : tensor<4x2xf32>
pipe.param @h.0.w : tensor<2x2xf32>
pipe.param @h.0.b : tensor<2xf32>
pipe.param @h.1.w : tensor<2x2xf32>
pipe.param @h.1.b : tensor<2xf32>
pipe.param @h.2.b : tensor<2xf32>
pipe.param @h.20.b : tensor<2xf32>
pipe.param @stat frozen : tensor<2xf32>
