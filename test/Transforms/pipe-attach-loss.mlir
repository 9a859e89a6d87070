// RUN: pipe-opt %s "--pipe-attach-loss=func=two kind=cross-entropy result=1" | FileCheck %s --check-prefix=CE
// RUN: pipe-opt %s "--pipe-attach-loss=func=seq kind=cross-entropy reduction=sum" | FileCheck %s --check-prefix=SUM
// RUN: pipe-opt %s "--pipe-attach-loss=func=two kind=nll result=1" | FileCheck %s --check-prefix=NLL
// RUN: pipe-opt %s "--pipe-attach-loss=func=two kind=mse" | FileCheck %s --check-prefix=MSE
// RUN: pipe-opt %s "--pipe-attach-loss=func=two kind=mse reduction=sum" | FileCheck %s --check-prefix=MSESUM
// RUN: pipe-opt %s "--pipe-attach-loss=func=vec" | FileCheck %s --check-prefix=VEC
// RUN: pipe-opt %s "--pipe-attach-loss=func=seq metrics=accuracy" | FileCheck %s --check-prefix=ACC
// RUN: pipe-opt %s "--pipe-attach-loss=func=two result=1 metrics=accuracy" --pipe-lift-params --pipe-form-blocks=func=two --pipe-differentiate | FileCheck %s --check-prefix=ACCDIFF
// The result is what the rest of ingestion accepts as a loss.
// RUN: pipe-opt %s "--pipe-attach-loss=func=two result=1" --pipe-lift-params --pipe-form-blocks=func=two --pipe-differentiate | FileCheck %s --check-prefix=DIFF

// Two results: the loss reads result 1 (logits); result 0 and the ops only
// it used (the square) are dropped. Class indices of the batch are the new
// last argument.
// CE-LABEL: func.func @two(%arg0: tensor<4x3xf32>, %arg1: tensor<4xi64>) -> tensor<f32>
// CE-NOT: arith.mulf
// CE: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CE: %[[MAXI:.*]] = linalg.fill ins(%[[NEGINF]] : f32) {{.*}} -> tensor<4x1xf32>
// CE: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[LOGITS:.*]] : tensor<4x3xf32>) outs(%[[MAXI]] : tensor<4x1xf32>)
// CE: arith.maximumf
// CE: %[[SHIFTED:.*]] = linalg.generic {{.*}} ins(%[[LOGITS]], %[[MAX]] : tensor<4x3xf32>, tensor<4x1xf32>)
// CE: arith.subf
// CE: math.exp
// CE: arith.addf
// CE: math.log
// CE: %[[LOGP:.*]] = linalg.generic {{.*}} ins(%[[SHIFTED]], %{{.*}} : tensor<4x3xf32>, tensor<4x1xf32>)
// CE: arith.subf
// CE: %[[IGNORE:.*]] = arith.constant -100 : i64
// CE: linalg.generic {{.*}} ins(%arg1 : tensor<4xi64>) outs(%{{.*}} : tensor<4xf32>)
// CE: %[[VALID:.*]] = arith.cmpi ne, %{{.*}}, %[[IGNORE]] : i64
// CE: %[[ROW:.*]] = linalg.index 0 : index
// CE: tensor.extract %[[LOGP]][%[[ROW]], %{{.*}}] : tensor<4x3xf32>
// CE: arith.negf
// CE: iterator_types = ["reduction"]} ins(%{{.*}} : tensor<4xf32>) outs(%{{.*}} : tensor<f32>)
// CE: %[[COUNT:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// CE: %[[LOSS:.*]] = linalg.generic {{.*}}iterator_types = []} ins(%{{.*}}, %[[COUNT]] : tensor<f32>, tensor<f32>)
// CE: arith.divf
// CE: return %[[LOSS]] : tensor<f32>
// Other functions are left alone.
// CE-LABEL: func.func @seq(%arg0: tensor<2x3x5xf32>) -> tensor<2x3x5xf32>

// Scores over the last of three dimensions: viewed as [6, 5] and [6], as
// torch's cross_entropy does; sum has no division.
// SUM-LABEL: func.func @seq(%arg0: tensor<2x3x5xf32>, %arg1: tensor<2x3xi64>) -> tensor<f32>
// SUM: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
// SUM: math.exp
// SUM: tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// SUM: tensor.extract
// SUM: %[[TOTAL:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// SUM-NOT: arith.divf
// SUM: return %[[TOTAL]] : tensor<f32>

// nll reads log-probabilities as they are.
// NLL-LABEL: func.func @two(%arg0: tensor<4x3xf32>, %arg1: tensor<4xi64>) -> tensor<f32>
// NLL-NOT: math.exp
// NLL-NOT: math.log
// NLL: tensor.extract %{{.*}} : tensor<4x3xf32>
// NLL: arith.divf
// NLL: return

// mse: the target has the result's shape; mean divides by its 12 elements.
// MSE-LABEL: func.func @two(%arg0: tensor<4x3xf32>, %arg1: tensor<4x3xf32>) -> tensor<f32>
// MSE: %[[SQ:.*]] = linalg.generic
// MSE: arith.mulf
// MSE: %[[X:.*]] = tensor.collapse_shape %[[SQ]] {{\[\[}}0, 1]] : tensor<4x3xf32> into tensor<12xf32>
// MSE: %[[T:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<4x3xf32> into tensor<12xf32>
// MSE: linalg.generic {{.*}} ins(%[[X]], %[[T]] : tensor<12xf32>, tensor<12xf32>)
// MSE: %[[D:.*]] = arith.subf
// MSE: arith.mulf %[[D]], %[[D]] : f32
// MSE: iterator_types = ["reduction"]
// MSE: %[[N:.*]] = arith.constant 1.200000e+01 : f32
// MSE: arith.divf %{{.*}}, %[[N]] : f32
// MSE: return

// MSESUM-LABEL: func.func @two(%arg0: tensor<4x3xf32>, %arg1: tensor<4x3xf32>) -> tensor<f32>
// MSESUM: %[[TOTAL:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// MSESUM-NOT: arith.divf
// MSESUM: return %[[TOTAL]] : tensor<f32>

// One sample's scores [5] (f64): the target is a rank-0 class index and the
// loss is f64.
// VEC-LABEL: func.func @vec(%arg0: tensor<5xf64>, %arg1: tensor<i64>) -> tensor<f64>
// VEC: tensor.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 5] : tensor<5xf64> into tensor<1x5xf64>
// VEC: tensor.expand_shape %arg1 [] output_shape [1] : tensor<i64> into tensor<1xi64>
// VEC: return %{{.*}} : tensor<f64>

// DIFF: pipe.graph @two(%arg0: tensor<4x3xf32>, %arg1: tensor<4xi64>) -> (tensor<f32> {pipe.loss_seed = 1.000000e+00 : f32})

func.func @two(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<4x3xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]> : tensor<3x3xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %logits = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %sq, %logits : tensor<4x3xf32>, tensor<4x3xf32>
}

func.func @seq(%x: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  return %x : tensor<2x3x5xf32>
}

func.func @vec(%x: tensor<5xf64>) -> tensor<5xf64> {
  return %x : tensor<5xf64>
}

// metrics=accuracy: after the loss, the counts [hits, counted] of the
// [6, 5] scores against the [6] targets, in one generic reducing over the
// rows (d0) for both slots (d1): a counted target (not -100) is a hit when
// its score is at least its row's maximum.
// ACC-LABEL: func.func @seq(%arg0: tensor<2x3x5xf32>, %arg1: tensor<2x3xi64>) -> (tensor<f32>, tensor<2xi64> {pipe.metric = "accuracy"})
// ACC: %[[SCORES:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
// ACC: %[[TARGETS:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// ACC: arith.divf
// ACC: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[SCORES]] : tensor<6x5xf32>)
// ACC: arith.maximumf
// ACC: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<2xi64>) -> tensor<2xi64>
// ACC: %[[COUNTS:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["reduction", "parallel"]} ins(%[[TARGETS]], %[[MAX]] : tensor<6xi64>, tensor<6x1xf32>) outs(%[[ZERO]] : tensor<2xi64>)
// ACC: arith.cmpi ne
// ACC: tensor.extract %[[SCORES]]
// ACC: arith.cmpf oge
// ACC: linalg.index 1 : index
// ACC: arith.extui {{.*}} : i1 to i64
// ACC: arith.addi
// ACC: return %{{.*}}, %[[COUNTS]] : tensor<f32>, tensor<2xi64>

// The metric survives block formation as a graph result, and
// differentiation seeds only the loss.
// ACCDIFF: pipe.graph @two(%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<4xi64>) -> (tensor<f32> {pipe.loss_seed = 1.000000e+00 : f32}, tensor<2xi64> {pipe.metric = "accuracy"})
// ACCDIFF: pipe.return %{{.*}}, %{{.*}} : tensor<f32>, tensor<2xi64>
