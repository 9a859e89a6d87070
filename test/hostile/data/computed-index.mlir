// An index the model computes (id + 5 gathers row id + 5 of an 8-row table)
// has no range the data loader could check: the generated code checks it
// per gathered element, in the forward gather and in the gradient's
// scatter, and a bad one fails the run with the op's location and bound
// instead of touching memory outside the table.
//
// RUN: rm -rf %t && mkdir -p %t
// No range for the input: its only use is computed with.
// RUN: pipe-opt %s --pipe-infer-index-ranges | FileCheck %s --check-prefix=IR
// IR: pipe.graph @model(%{{.*}}: tensor<4xi64>) -> tensor<f32>
// The guards: a compare, a call on the failing side, a clamped index.
// RUN: pipe-opt %s --pipe-differentiate --pipe-place=devices=1 "--pipe-schedule=kind=gpipe microbatches=1" --pipe-lower-to-host --pipe-guard-indices -o %t/guarded.mlir
// RUN: FileCheck %s --check-prefix=GUARD < %t/guarded.mlir
// RUN: FileCheck %s --check-prefix=DECL < %t/guarded.mlir
// GUARD-NOT: range 0
// GUARD: llvm.mlir.global internal constant @pipe_index_site_{{[0-9]+}}("{{.*}}computed-index.mlir:{{[0-9]+}}:{{[0-9]+}}: tensor.extract in @gather, index 0 of tensor<8x4xf32>\00")
// GUARD: func.func @pipe_block_gather(
// GUARD: %[[BAD:.*]] = arith.cmpi uge, %[[I:.*]], %{{.*}} : index
// GUARD: scf.if %[[BAD]] {
// GUARD: func.call @pipe_rt_index_fault(
// GUARD: arith.select %[[BAD]], %{{.*}}, %[[I]] : index
// GUARD: tensor.insert
// DECL: @pipe_index_site_{{[0-9]+}}("{{.*}}: tensor.insert in @{{.*}}, index 0 of tensor<8x4xf32>\00")
// DECL: func.func private @pipe_rt_index_fault(!llvm.ptr, i64, i64)
//
// RUN: pipe-opt %s --pipe-differentiate --pipe-place=devices=1 "--pipe-schedule=kind=gpipe microbatches=1" -o %t/s.mlir
// RUN: pipe-compile %t/s.mlir -o %t/m.so --weights %t/w.safetensors -O 0
// ids 0..2 gather rows 5..7: trains (ids.py's input1 is not read).
// RUN: %python %S/Inputs/ids.py %t/ok.safetensors --shape 4 --rows 1 --fill 2 --set input0:0:1:0
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/ok.safetensors --steps 2 | FileCheck %s --check-prefix=OK
// OK: step 2/2 loss
// id 3 gathers row 8; -6 row -1; INT64_MAX wraps around.
// RUN: for v in 3 -6 100000 9223372036854775807; do %python %S/Inputs/ids.py %t/bad.safetensors --shape 4 --rows 1 --fill 2 --set input0:0:2:$v && %expect_error --exit 1 -- pipe-runner %t/m.so --weights %t/w.safetensors --data %t/bad.safetensors --steps 1; done > %t/bad.txt
// RUN: FileCheck %s --check-prefix=FAULT < %t/bad.txt
// FAULT: s.mlir:{{[0-9]+}}:{{[0-9]+}}: tensor.extract in @gather, index 0 of tensor<8x4xf32>: index 8 is outside [0, 8)
// FAULT: index -1 is outside [0, 8)
// FAULT: index 100005 is outside [0, 8)
// FAULT: index -9223372036854775804 is outside [0, 8)
// FAULT-NOT: step 1/1

pipe.param @table : tensor<8x4xf32> = dense<0.5>

pipe.block @gather params(%t: tensor<8x4xf32>) (%ids: tensor<4xi64>)
    -> tensor<f32> {
  %c5 = arith.constant 5 : i64
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x4xf32>
  %rows = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%init : tensor<4x4xf32>) {
  ^bb0(%id: i64, %out: f32):
    %shifted = arith.addi %id, %c5 : i64
    %row = arith.index_cast %shifted : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %t[%row, %col] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %sum_init = tensor.empty() : tensor<f32>
  %sum0 = linalg.fill ins(%zero : f32) outs(%sum_init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%rows : tensor<4x4xf32>) outs(%sum0 : tensor<f32>) {
  ^bb0(%x: f32, %s: f32):
    %sq = arith.mulf %x, %x : f32
    %acc = arith.addf %s, %sq : f32
    linalg.yield %acc : f32
  } -> tensor<f32>
  pipe.return %sum : tensor<f32>
}

pipe.graph @model(%ids: tensor<4xi64>) -> tensor<f32> {
  %loss = pipe.run "g0" @gather(%ids) params [@table]
      : (tensor<4xi64>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}
