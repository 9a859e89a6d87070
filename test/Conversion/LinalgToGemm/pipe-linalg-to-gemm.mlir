// RUN: pipe-opt %s --pipe-linalg-to-gemm | FileCheck %s

// Each rewritten contraction gets a constant table {batch, m, n, k, A strides
// (batch, m, k), B strides (batch, k, n), C strides (batch, m, n)} in
// elements; the call passes the three operands' addresses (aligned pointer +
// offset), the table, and pointers to the table's three stride triples.

#mA = affine_map<(m, n, k) -> (m, k)>
#mBt = affine_map<(m, n, k) -> (n, k)>
#mC = affine_map<(m, n, k) -> (m, n)>
#xw = affine_map<(b, s, i, j) -> (b, s, i)>
#dy = affine_map<(b, s, i, j) -> (b, s, j)>
#dw = affine_map<(b, s, i, j) -> (i, j)>
#lx = affine_map<(b, s, n, k) -> (b, s, k)>
#lw = affine_map<(b, s, n, k) -> (k, n)>
#ly = affine_map<(b, s, n, k) -> (b, s, n)>

// CHECK-DAG: func.func private @pipe_rt_gemm_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// matmul: no batch (size 1, strides 0), row-major operands.
// CHECK-DAG: memref.global "private" constant @[[MM:__pipe_gemm_shape_[0-9]+]] : memref<13xi64> = dense<[1, 4, 16, 8, 0, 8, 1, 0, 16, 1, 0, 16, 1]>
// batch_matmul
// CHECK-DAG: memref.global "private" constant @[[BMM:__pipe_gemm_shape_[0-9]+]] : memref<13xi64> = dense<[2, 4, 16, 8, 32, 8, 1, 128, 16, 1, 64, 16, 1]>
// B read transposed: its k stride is 1, its n stride 8.
// CHECK-DAG: memref.global "private" constant @[[BT:__pipe_gemm_shape_[0-9]+]] : memref<13xi64> = dense<[1, 4, 16, 8, 0, 8, 1, 0, 1, 8, 0, 16, 1]>
// Weight gradient: the reduction over (batch, sequence) is one K of 6.
// CHECK-DAG: memref.global "private" constant @[[WG:__pipe_gemm_shape_[0-9]+]] : memref<13xi64> = dense<[1, 8, 16, 6, 0, 1, 8, 0, 16, 1, 0, 16, 1]>
// A linear layer on (batch, sequence, features): batch and sequence are one
// M of 6.
// CHECK-DAG: memref.global "private" constant @[[LIN:__pipe_gemm_shape_[0-9]+]] : memref<13xi64> = dense<[1, 6, 16, 8, 0, 8, 1, 0, 16, 1, 0, 16, 1]>
// A strided view: row stride 16.
// CHECK-DAG: memref.global "private" constant @[[SV:__pipe_gemm_shape_[0-9]+]] : memref<13xi64> = dense<[1, 4, 16, 8, 0, 16, 1, 0, 16, 1, 0, 16, 1]>

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x16xf32>)
// CHECK:         %[[T:.*]] = memref.get_global @[[MM]] : memref<13xi64>
// CHECK:         %[[TP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK:         memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[AP:.*]] = llvm.inttoptr
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         %[[BP:.*]] = llvm.inttoptr
// CHECK:         memref.extract_aligned_pointer_as_index %[[C]]
// CHECK:         %[[CP:.*]] = llvm.inttoptr
// CHECK:         %[[AS:.*]] = llvm.getelementptr %[[TP]][4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[BS:.*]] = llvm.getelementptr %[[TP]][7] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[CS:.*]] = llvm.getelementptr %[[TP]][10] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         call @pipe_rt_gemm_f32(%[[AP]], %[[BP]], %[[CP]], %[[TP]], %[[AS]], %[[BS]], %[[CS]])
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @matmul(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// CHECK-LABEL: func.func @batch_matmul(
// CHECK:         memref.get_global @[[BMM]]
// CHECK:         call @pipe_rt_gemm_f32
// CHECK-NOT:     linalg.
func.func @batch_matmul(%a: memref<2x4x8xf32>, %b: memref<2x8x16xf32>, %c: memref<2x4x16xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x4x8xf32>, memref<2x8x16xf32>) outs(%c : memref<2x4x16xf32>)
  return
}

// CHECK-LABEL: func.func @transposed_b(
// CHECK:         memref.get_global @[[BT]]
// CHECK:         call @pipe_rt_gemm_f32
// CHECK-NOT:     linalg.
func.func @transposed_b(%a: memref<4x8xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<16x8xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// dW[i, j] += sum over (b, s) of X[b, s, i] * dY[b, s, j]
// CHECK-LABEL: func.func @weight_grad(
// CHECK:         memref.get_global @[[WG]]
// CHECK:         call @pipe_rt_gemm_f32
// CHECK-NOT:     linalg.
func.func @weight_grad(%x: memref<2x3x8xf32>, %dy: memref<2x3x16xf32>, %dw: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#xw, #dy, #dw], iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%x, %dy : memref<2x3x8xf32>, memref<2x3x16xf32>) outs(%dw : memref<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @linear_3d(
// CHECK:         memref.get_global @[[LIN]]
// CHECK:         call @pipe_rt_gemm_f32
// CHECK-NOT:     linalg.
func.func @linear_3d(%x: memref<2x3x8xf32>, %w: memref<8x16xf32>, %y: memref<2x3x16xf32>) {
  linalg.generic {indexing_maps = [#lx, #lw, #ly], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x3x8xf32>, memref<8x16xf32>) outs(%y : memref<2x3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A view with static strides and an offset: the address includes the offset
// (4 elements = 16 bytes).
// CHECK-LABEL: func.func @strided_view(
// CHECK-SAME:    %[[A:.*]]: memref<4x8xf32, strided<[16, 1], offset: 4>>
// CHECK:         memref.get_global @[[SV]]
// CHECK:         %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK:         %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         %[[BYTES:.*]] = arith.muli %[[OFF]], %[[FOUR]] : index
// CHECK:         arith.addi %[[PTR]], %[[BYTES]] : index
// CHECK:         call @pipe_rt_gemm_f32
func.func @strided_view(%a: memref<4x8xf32, strided<[16, 1], offset: 4>>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[16, 1], offset: 4>>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// Left to the loop lowering:

// CHECK-LABEL: func.func @f64(
// CHECK-NOT:     call
// CHECK:         linalg.matmul
func.func @f64(%a: memref<4x8xf64>, %b: memref<8x16xf64>, %c: memref<4x16xf64>) {
  linalg.matmul ins(%a, %b : memref<4x8xf64>, memref<8x16xf64>) outs(%c : memref<4x16xf64>)
  return
}

// CHECK-LABEL: func.func @dynamic_strides(
// CHECK-NOT:     call
// CHECK:         linalg.matmul
func.func @dynamic_strides(%a: memref<4x8xf32, strided<[?, 1]>>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[?, 1]>>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// CHECK-LABEL: func.func @dynamic_sizes(
// CHECK-NOT:     call
// CHECK:         linalg.matmul
func.func @dynamic_sizes(%a: memref<?x8xf32>, %b: memref<8x16xf32>, %c: memref<?x16xf32>) {
  linalg.matmul ins(%a, %b : memref<?x8xf32>, memref<8x16xf32>) outs(%c : memref<?x16xf32>)
  return
}

// The two reduction dims of X cannot be merged: X's batch stride (32) is not
// its sequence stride times the sequence length (8 * 3).
// CHECK-LABEL: func.func @not_mergeable(
// CHECK-NOT:     call
// CHECK:         linalg.generic
func.func @not_mergeable(%x: memref<2x3x8xf32, strided<[32, 8, 1]>>, %dy: memref<2x3x16xf32>, %dw: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#xw, #dy, #dw], iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%x, %dy : memref<2x3x8xf32, strided<[32, 8, 1]>>, memref<2x3x16xf32>) outs(%dw : memref<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Not a multiply-add body.
// CHECK-LABEL: func.func @not_contraction(
// CHECK-NOT:     call
// CHECK:         linalg.generic
// CHECK:         arith.maximumf
func.func @not_contraction(%a: memref<4x8xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<16x8xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Tensors (before bufferization) are not touched.
// CHECK-LABEL: func.func @tensors(
// CHECK-NOT:     call
// CHECK:         linalg.matmul
func.func @tensors(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
