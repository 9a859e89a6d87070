//===- Gemm.cpp - Matrix multiply and memref copy for lowered code --------===//
//
// pipe_rt_gemm_f32 is what the lowered block code calls for matmuls: BLAS
// (OpenBLAS) when each operand has a unit stride in one of its matrix
// dimensions, a blocked loop otherwise. memrefCopy is the strided copy that
// MLIR's c_runner_utils provides; lowered code may call it for memref.copy,
// and the runtime must not link MLIR's libraries.
//
//===----------------------------------------------------------------------===//

#include "Cores.h"
#include "GemmLayout.h"

#include "pipe/Runtime/Program.h"

#include <algorithm>
#include <cstring>
#include <vector>

// PIPE_RT_NO_CBLAS: built without OpenBLAS (the standalone GPU-machine
// build, see docs/cuda-runtime.md): every product takes the blocked loop.
#ifndef PIPE_RT_NO_CBLAS
#include <cblas.h>
#else
enum CBLAS_TRANSPOSE { CblasNoTrans, CblasTrans };
#endif

namespace {

/// C += A * B with arbitrary element strides; blocked over k and n so the
/// inner loop streams rows of B and C.
void gemmLoop(const float *a, const float *b, float *c, int64_t m, int64_t n,
              int64_t k, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn,
              int64_t scm, int64_t scn) {
  constexpr int64_t kBlock = 64, nBlock = 256;
  for (int64_t k0 = 0; k0 < k; k0 += kBlock)
    for (int64_t n0 = 0; n0 < n; n0 += nBlock) {
      int64_t k1 = std::min(k, k0 + kBlock), n1 = std::min(n, n0 + nBlock);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t p = k0; p < k1; ++p) {
          float av = a[i * sam + p * sak];
          const float *brow = b + p * sbk;
          float *crow = c + i * scm;
          for (int64_t j = n0; j < n1; ++j)
            crow[j * scn] += av * brow[j * sbn];
        }
    }
}

/// The BLAS layout of an operand (GemmLayout.h) as cblas spells it.
bool blasLayout(int64_t rowStride, int64_t colStride, int64_t rows,
                int64_t cols, CBLAS_TRANSPOSE &trans, int64_t &ld) {
  bool transposed = false;
  if (!pipe_rt::blasMatrixLayout(rowStride, colStride, rows, cols, transposed,
                                 ld))
    return false;
  trans = transposed ? CblasTrans : CblasNoTrans;
  return true;
}

/// Products smaller than this many multiply-adds (about 50 us of one core)
/// run on the calling thread: handing them to a helper costs more than it
/// saves.
constexpr int64_t kParallelMacs = int64_t(1) << 21;

/// How many chunks of rows one product of m x k by k x n is cut into: enough
/// that two or four threads share a large one, few enough that each chunk
/// keeps BLAS's blocking efficient (at least 64 rows).
int64_t rowChunksOf(int64_t m, int64_t n, int64_t k) {
  if (m * n * k < kParallelMacs)
    return 1;
  return std::clamp<int64_t>(m / 64, 1, 4);
}

struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

} // namespace

extern "C" void pipe_rt_gemm_f32(const float *a, const float *b, float *c,
                                 const int64_t *dims, const int64_t *aStrides,
                                 const int64_t *bStrides,
                                 const int64_t *cStrides) {
  int64_t batch = dims[0], m = dims[1], n = dims[2], k = dims[3];
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  // BLAS writes row-major C; a C that is contiguous along m instead is the
  // transpose of one: C^T += B^T * A^T.
  if (m > 1 && n > 1 && cStrides[2] != 1 && cStrides[1] == 1) {
    const int64_t swappedDims[4] = {batch, n, m, k};
    const int64_t swappedA[3] = {bStrides[0], bStrides[2], bStrides[1]};
    const int64_t swappedB[3] = {aStrides[0], aStrides[2], aStrides[1]};
    const int64_t swappedC[3] = {cStrides[0], cStrides[2], cStrides[1]};
    pipe_rt_gemm_f32(b, a, c, swappedDims, swappedA, swappedB, swappedC);
    return;
  }
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda = 0, ldb = 0;
  auto [sam, sak, sbk, sbn, scm, scn] =
      pipe_rt::normalizedStrides(m, n, k, aStrides, bStrides, cStrides);
  bool blas = k > 0 && scn == 1 && scm >= n &&
              blasLayout(sam, sak, m, k, ta, lda) &&
              blasLayout(sbk, sbn, k, n, tb, ldb);
  // Chunks of rows of C that intra-op helpers may take: their number comes
  // from the shape alone, so the results do not depend on how many threads
  // run them.
  int64_t rowChunks = blas ? rowChunksOf(m, n, k) : 1;
  int64_t rowsPerChunk = (m + rowChunks - 1) / rowChunks;
  auto multiply = [&](int64_t chunk) {
    int64_t i = chunk / rowChunks;
    int64_t row0 = (chunk % rowChunks) * rowsPerChunk;
    int64_t rows = std::min(rowsPerChunk, m - row0);
    const float *ai = a + i * aStrides[0] + row0 * sam;
    const float *bi = b + i * bStrides[0];
    float *ci = c + i * cStrides[0] + row0 * scm;
#ifndef PIPE_RT_NO_CBLAS
    if (blas)
      cblas_sgemm(CblasRowMajor, ta, tb, int(rows), int(n), int(k), 1.0f, ai,
                  int(lda), bi, int(ldb), 1.0f, ci, int(scm));
    else
#endif
      gemmLoop(ai, bi, ci, rows, n, k, aStrides[1], aStrides[2], bStrides[1],
               bStrides[2], cStrides[1], cStrides[2]);
  };
  if (batch * m * n * k < kParallelMacs) {
    for (int64_t chunk = 0; chunk < batch * rowChunks; ++chunk)
      multiply(chunk);
    return;
  }
  pipe_rt::parallelChunks(batch * rowChunks, multiply);
}

/// Strided copy of a ranked memref described by MLIR's descriptor layout.
extern "C" void memrefCopy(int64_t elemSize, void *srcArg, void *dstArg) {
  auto *src = static_cast<UnrankedMemRef *>(srcArg);
  auto *dst = static_cast<UnrankedMemRef *>(dstArg);
  int64_t rank = src->rank;
  auto *s = static_cast<pipe_rt_memref *>(src->descriptor);
  auto *d = static_cast<pipe_rt_memref *>(dst->descriptor);
  const int64_t *sizes = s->sizes_and_strides;
  const int64_t *sStrides = s->sizes_and_strides + rank;
  const int64_t *dStrides = d->sizes_and_strides + rank;
  const char *sp = static_cast<const char *>(s->aligned) + s->offset * elemSize;
  char *dp = static_cast<char *>(d->aligned) + d->offset * elemSize;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  if (rank == 0) {
    std::memcpy(dp, sp, size_t(elemSize));
    return;
  }
  // Odometer over every index; the innermost dimension is copied in one
  // memcpy when both sides are contiguous in it.
  std::vector<int64_t> idx(size_t(rank), 0);
  bool inner = sStrides[rank - 1] == 1 && dStrides[rank - 1] == 1;
  int64_t innerCount = inner ? sizes[rank - 1] : 1;
  while (true) {
    int64_t so = 0, dof = 0;
    for (int64_t i = 0; i < rank; ++i) {
      so += idx[i] * sStrides[i];
      dof += idx[i] * dStrides[i];
    }
    std::memcpy(dp + dof * elemSize, sp + so * elemSize,
                size_t(elemSize * innerCount));
    int64_t dim = rank - 1;
    if (inner) {
      idx[dim] = sizes[dim] - 1;
    }
    while (dim >= 0 && ++idx[dim] == sizes[dim]) {
      idx[dim] = 0;
      --dim;
    }
    if (dim < 0)
      return;
  }
}
