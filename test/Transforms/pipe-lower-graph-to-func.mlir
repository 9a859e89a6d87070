// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-graph-to-func | FileCheck %s

// Embedding lookup and a head tied to the same table (@wte): the embedding's
// weight gradient is a scatter-add loop nest; the gradient function sums the
// two runs' contributions to @wte.

// CHECK-NOT: pipe.
// CHECK-LABEL: func.func @embed_bwd_weight
// CHECK-SAME: (%{{.+}}: tensor<6x4xf32>, %[[IDS:.+]]: tensor<3xi64>, %[[DH:.+]]: tensor<3x4xf32>) -> tensor<6x4xf32>
// CHECK: %[[Z:.+]] = linalg.fill
// CHECK: scf.for %[[I:.+]] = {{.*}} iter_args(%{{.+}} = %[[Z]])
// CHECK: scf.for %[[J:.+]] = {{.*}} iter_args(%[[ACC:.+]] = %{{.+}})
// CHECK: %[[ID:.+]] = tensor.extract %[[IDS]][%[[I]]]
// CHECK: %[[G:.+]] = tensor.extract %[[DH]][%[[I]], %[[J]]]
// CHECK: %[[ROW:.+]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[OLD:.+]] = tensor.extract %[[ACC]][%[[ROW]], %[[J]]]
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]], %[[G]]
// CHECK: tensor.insert %[[NEW]] into %[[ACC]][%[[ROW]], %[[J]]]

// CHECK-LABEL: func.func @lm_forward
// CHECK-SAME: (%[[T:.+]]: tensor<6x4xf32>, %[[X:.+]]: tensor<3xi64>) -> tensor<f32> attributes {llvm.emit_c_interface}
// CHECK: %[[H:.+]] = call @embed(%[[T]], %[[X]])
// CHECK: %[[L:.+]] = call @head(%[[T]], %[[H]])
// CHECK: return %[[L]]

// CHECK-LABEL: func.func @lm_grad
// CHECK-SAME: (%[[T2:.+]]: tensor<6x4xf32>, %[[X2:.+]]: tensor<3xi64>) -> (tensor<f32>, tensor<6x4xf32>) attributes {llvm.emit_c_interface}
// CHECK: %[[H2:.+]] = call @embed(%[[T2]], %[[X2]])
// CHECK: %[[L2:.+]] = call @head(%[[T2]], %[[H2]])
// CHECK: %[[SEED:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DH2:.+]] = call @head_bwd_input(%[[T2]], %[[H2]], %[[SEED]])
// CHECK: %[[DW1:.+]] = call @head_bwd_weight(%[[T2]], %[[H2]], %[[SEED]])
// CHECK: %[[DW2:.+]] = call @embed_bwd_weight(%[[T2]], %[[X2]], %[[DH2]])
// CHECK: %[[SUM:.+]] = linalg.add ins(%[[DW1]], %[[DW2]] : {{.*}})
// CHECK: return %[[L2]], %[[SUM]] : tensor<f32>, tensor<6x4xf32>

pipe.param @wte : tensor<6x4xf32>

pipe.block @embed params(%t: tensor<6x4xf32>) (%ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<3xi64>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %t[%row, %col] : tensor<6x4xf32>
    linalg.yield %v : f32
  } -> tensor<3x4xf32>
  pipe.return %r : tensor<3x4xf32>
}

pipe.block @head params(%t: tensor<6x4xf32>) (%h: tensor<3x4xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, v, j) -> (i, j)>, affine_map<(i, v, j) -> (v, j)>,
                                        affine_map<(i, v, j) -> ()>],
                       iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%h, %t : tensor<3x4xf32>, tensor<6x4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}

pipe.graph @lm(%ids: tensor<3xi64>) -> tensor<f32> {
  %h = pipe.run "embed" @embed(%ids) params [@wte] : (tensor<3xi64>) -> tensor<3x4xf32>
  %l = pipe.run "head" @head(%h) params [@wte] : (tensor<3x4xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
