//===- Gemm.cpp - pipe_rt_cuda_gemm on cuBLAS -----------------------------===//
//
// The GPU twin of lib/Runtime/Gemm.cpp, with the same operand description:
// the transposes follow from the strides exactly as there, and the
// row-major problem C += A*B is handed to column-major cuBLAS as
// C^T += B^T * A^T (no data movement). Accumulation is always f32; the
// compute argument only lets the tensor cores round the inputs (tf32,
// bf16).
//
//===----------------------------------------------------------------------===//

#include "../GemmLayout.h"
#include "Driver.h"

#include "pipe/Runtime/CUDA.h"
#include "pipe/Runtime/Status.h"

#include <algorithm>
#include <vector>

using namespace pipe_rt;
using namespace pipe_rt::cuda;

namespace {

cublasComputeType_t computeType(int32_t compute) {
  switch (compute) {
  case PIPE_RT_CUDA_COMPUTE_TF32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  case PIPE_RT_CUDA_COMPUTE_BF16:
    return CUBLAS_COMPUTE_32F_FAST_16BF;
  case PIPE_RT_CUDA_COMPUTE_F16:
    return CUBLAS_COMPUTE_32F_FAST_16F;
  default:
    return CUBLAS_COMPUTE_32F;
  }
}

/// The handle and stream of the calling thread; `sync`: wait for the
/// stream before returning (outside a block call, whose stream nothing
/// else orders).
struct Target {
  Gpu *gpu = nullptr;
  cublasHandle_t handle = nullptr;
  CUstream stream = nullptr;
  std::mutex *mu = nullptr;
  bool sync = false;
  double watchdog = 60;
};

bool target(Target &t) {
  if (CallContext *call = currentCall()) {
    t.gpu = call->lanes->gpu;
    t.handle = call->lanes->blas;
    t.stream = call->lanes->streams[0];
    t.mu = &call->lanes->blasMu;
    t.watchdog = call->watchdog;
    makeCurrent(*t.gpu);
    return true;
  }
  std::string error;
  // The default device of mgpuSetDefaultDevice is what mgpu* use; gemm
  // outside a call is only used by tests and tools, on GPU 0.
  t.gpu = gpu(0, error);
  if (!t.gpu) {
    reportError("pipe_rt_cuda_gemm: " + error);
    return false;
  }
  makeCurrent(*t.gpu);
  std::lock_guard<std::mutex> lock(t.gpu->blasMu);
  if (!t.gpu->blas) {
    if (cublasStatus_t s = cublasCreate(&t.gpu->blas)) {
      t.gpu->blas = nullptr;
      reportError("pipe_rt_cuda_gemm: " + blasError("cublasCreate", s));
      return false;
    }
    if (attachBlasWorkspace(*t.gpu, t.gpu->blas, &t.gpu->blasWorkspace,
                            error) != PIPE_RT_OK) {
      reportError("pipe_rt_cuda_gemm: " + error);
      return false;
    }
  }
  t.handle = t.gpu->blas;
  t.mu = &t.gpu->blasMu;
  t.sync = true;
  t.watchdog = defaultWatchdog();
  return true;
}

/// A dense copy of a strided [batch, rows, cols] operand (pool memory).
void *pack(Target &t, const float *src, int64_t batch, int64_t rows,
           int64_t cols, const int64_t *strides, std::string &error) {
  void *dst = nullptr;
  uint64_t bytes = uint64_t(batch * rows * cols) * sizeof(float);
  if (t.gpu->pool->alloc(bytes, &dst, error) != CUDA_SUCCESS)
    return nullptr;
  const int64_t shape[3] = {batch, rows, cols};
  if (gatherStrided(*t.gpu, t.stream, dst, src, shape, strides, 3,
                    sizeof(float), t.watchdog, error) != PIPE_RT_OK) {
    t.gpu->pool->release(dst);
    return nullptr;
  }
  return dst;
}

} // namespace

extern "C" void pipe_rt_cuda_gemm(const float *a, const float *b, float *c,
                                  const int64_t *dims, const int64_t *aStrides,
                                  const int64_t *bStrides,
                                  const int64_t *cStrides, int32_t compute) {
  int64_t batch = dims[0], m = dims[1], n = dims[2], k = dims[3];
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0)
    return; // C += nothing
  // cuBLAS (like CBLAS) needs C contiguous along n: a C contiguous along m
  // is the transpose of one, C^T += B^T * A^T.
  if (m > 1 && n > 1 && cStrides[2] != 1 && cStrides[1] == 1) {
    const int64_t swappedDims[4] = {batch, n, m, k};
    const int64_t swappedA[3] = {bStrides[0], bStrides[2], bStrides[1]};
    const int64_t swappedB[3] = {aStrides[0], aStrides[2], aStrides[1]};
    const int64_t swappedC[3] = {cStrides[0], cStrides[2], cStrides[1]};
    pipe_rt_cuda_gemm(b, a, c, swappedDims, swappedA, swappedB, swappedC,
                      compute);
    return;
  }
  Target t;
  if (!target(t))
    return;
  auto [sam, sak, sbk, sbn, scm, scn] =
      pipe_rt::normalizedStrides(m, n, k, aStrides, bStrides, cStrides);
  if (scn != 1 || scm < n) {
    reportError(format("pipe_rt_cuda_gemm: C strides (%lld, %lld) have no "
                       "unit dimension (unsupported)",
                       (long long)cStrides[1], (long long)cStrides[2]));
    return;
  }
  std::string error;
  std::vector<void *> temps;
  auto cleanup = [&] {
    if (temps.empty())
      return;
    // The temporaries are read by the queued GEMM: wait before reuse.
    std::string e;
    if (waitStream(t.stream, t.watchdog, "pipe_rt_cuda_gemm", e) != 0) {
      reportError(e);
      return; // leaked rather than reused while in use
    }
    for (void *p : temps)
      t.gpu->pool->release(p);
  };
  bool ta, tb;
  int64_t lda = 0, ldb = 0;
  int64_t strideA = aStrides[0], strideB = bStrides[0];
  if (!blasMatrixLayout(sam, sak, m, k, ta, lda)) {
    const int64_t st[3] = {aStrides[0], aStrides[1], aStrides[2]};
    void *p = pack(t, a, batch, m, k, st, error);
    if (!p) {
      reportError("pipe_rt_cuda_gemm: packing A: " + error);
      return;
    }
    temps.push_back(p);
    a = static_cast<const float *>(p);
    ta = false;
    lda = std::max<int64_t>(k, 1);
    strideA = m * k;
  }
  if (!blasMatrixLayout(sbk, sbn, k, n, tb, ldb)) {
    const int64_t st[3] = {bStrides[0], bStrides[1], bStrides[2]};
    void *p = pack(t, b, batch, k, n, st, error);
    if (!p) {
      cleanup();
      reportError("pipe_rt_cuda_gemm: packing B: " + error);
      return;
    }
    temps.push_back(p);
    b = static_cast<const float *>(p);
    tb = false;
    ldb = std::max<int64_t>(n, 1);
    strideB = k * n;
  }
  const float one = 1.0f;
  {
    std::lock_guard<std::mutex> lock(*t.mu);
    cublasSetStream(t.handle, t.stream);
    // A C shared by every batch (stride 0) must be accumulated in turn.
    int64_t calls = cStrides[0] == 0 && batch > 1 ? batch : 1;
    int64_t perCall = calls == 1 ? batch : 1;
    for (int64_t i = 0; i < calls; ++i) {
      cublasStatus_t s = cublasGemmStridedBatchedEx_64(
          t.handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
          ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b + i * strideB,
          CUDA_R_32F, ldb, strideB, a + i * strideA, CUDA_R_32F, lda, strideA,
          &one, c, CUDA_R_32F, scm, cStrides[0], perCall, computeType(compute),
          CUBLAS_GEMM_DEFAULT);
      if (s != CUBLAS_STATUS_SUCCESS) {
        error =
            blasError("cublasGemmStridedBatchedEx", s) +
            format(" (batch %lld, m %lld, n %lld, k %lld)", (long long)batch,
                   (long long)m, (long long)n, (long long)k);
        break;
      }
    }
  }
  cleanup();
  if (!error.empty()) {
    reportError("pipe_rt_cuda_gemm: " + error);
    return;
  }
  if (t.sync &&
      waitStream(t.stream, t.watchdog, "pipe_rt_cuda_gemm", error) != 0)
    reportError(error);
}
