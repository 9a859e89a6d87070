//===- GemmLayout.h - How a strided matrix maps onto BLAS -------*- C++ -*-===//
//
// Private to the runtime: the rule both GEMM back ends (OpenBLAS on the
// host, cuBLAS on the GPU) use to hand a strided operand to BLAS.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_RUNTIME_GEMMLAYOUT_H
#define PIPE_LIB_RUNTIME_GEMMLAYOUT_H

#include <algorithm>
#include <cstdint>

namespace pipe_rt {

/// A `rows` x `cols` operand with element strides (rowStride, colStride) is
/// a row-major matrix with leading dimension `ld` if its column stride is 1
/// (`transposed` false), or the transpose of one if its row stride is 1
/// (`transposed` true); otherwise BLAS cannot read it in place.
inline bool blasMatrixLayout(int64_t rowStride, int64_t colStride, int64_t rows,
                             int64_t cols, bool &transposed, int64_t &ld) {
  if (colStride == 1 && rowStride >= std::max<int64_t>(cols, 1)) {
    transposed = false;
    ld = rowStride;
    return true;
  }
  if (rowStride == 1 && colStride >= std::max<int64_t>(rows, 1)) {
    transposed = true;
    ld = colStride;
    return true;
  }
  return false;
}

/// The matrix strides of one GEMM of pipe_rt_gemm_f32's table (A: m x k,
/// B: k x n, C: m x n), with the stride of every size-1 dimension made
/// "unit-compatible" so that the layout checks accept the vector cases.
struct MatrixStrides {
  int64_t am, ak, bk, bn, cm, cn;
};

inline MatrixStrides normalizedStrides(int64_t m, int64_t n, int64_t k,
                                       const int64_t *aStrides,
                                       const int64_t *bStrides,
                                       const int64_t *cStrides) {
  return {
      m == 1 ? std::max<int64_t>(k, 1) : aStrides[1], k == 1 ? 1 : aStrides[2],
      k == 1 ? std::max<int64_t>(n, 1) : bStrides[1], n == 1 ? 1 : bStrides[2],
      m == 1 ? std::max<int64_t>(n, 1) : cStrides[1], n == 1 ? 1 : cStrides[2]};
}

} // namespace pipe_rt

#endif // PIPE_LIB_RUNTIME_GEMMLAYOUT_H
