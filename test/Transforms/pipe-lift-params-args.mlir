// RUN: pipe-opt %s -split-input-file --pipe-lift-params | FileCheck %s --check-prefix=DEFAULT
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="param-args=0,2" | FileCheck %s --check-prefix=ARGS
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="param-args=1 entry=second" | FileCheck %s --check-prefix=ENTRY
// param-args names arguments of the only public function (or of `entry`).

// DEFAULT-LABEL: func.func @first(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)

// ARGS: pipe.param @p0 : tensor<2xf32> {pipe.source = "argument:@first:0"}
// ARGS-NEXT: pipe.param @bias : tensor<2xf32> {pipe.source = "argument:@first:2"}
// ARGS-LABEL: func.func @first(%arg0: tensor<2xf32>) -> tensor<2xf32>
// ARGS-NEXT: %[[W:.*]] = pipe.get_param @p0
// ARGS-NEXT: %[[B:.*]] = pipe.get_param @bias
// ARGS: linalg.add ins(%[[W]], %arg0 :
// ARGS: linalg.add ins(%{{.*}}, %[[B]] :
// ARGS-LABEL: func.func private @second(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>)

// ENTRY: pipe.param @p0 : tensor<2xf32> {pipe.source = "argument:@second:1"}
// ENTRY-LABEL: func.func @first(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)
// ENTRY-LABEL: func.func private @second(%arg0: tensor<2xf32>) -> tensor<2xf32>
// ENTRY-NEXT: pipe.get_param @p0
func.func @first(%w: tensor<2xf32>, %x: tensor<2xf32>, %b: tensor<2xf32> loc("bias")) -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2xf32>
  %0 = linalg.add ins(%w, %x : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %1 = linalg.add ins(%0, %b : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
func.func private @second(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}
