//===- CudaRuntimeTest.cpp - PipeRuntimeCUDA on a GPU ---------------------===//
//
// Every test skips (GTEST_SKIP, naming the reason) when no GPU is usable:
// no driver, the driver stub of a build machine (cuInit fails), or no
// device. On a GPU: the memory pool, copies, a hand-written PTX kernel
// through the mgpu* ABI, the watchdog, pipe_rt_cuda_gemm against the CPU
// gemm in f32/tf32/bf16, NCCL on one rank, and whole training runs of the
// tiny program (TinyProgram.h) on the GPU against the CPU runtime.
//
//===----------------------------------------------------------------------===//

#define PIPE_TINY_PROGRAM_CUDA
#include "../TinyProgram.h"

#include "pipe/Runtime/CUDA.h"

#include "Bf16.h"
#include "Session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace {

class Cuda : public testing::Test {
protected:
  void SetUp() override {
    char error[512] = "";
    if (pipe_rt_cuda_device_count(error, sizeof(error)) == 0)
      GTEST_SKIP() << "no usable CUDA device: " << error;
    pipe_rt_cuda_set_watchdog(30);
    pipe_rt_cuda_last_error(); // clear
  }
  void TearDown() override {
    std::string e = pipe_rt_cuda_last_error();
    EXPECT_EQ(e, "") << "an mgpu*/gemm call reported an error";
  }
};

//===--- Pool and copies --------------------------------------------------===//

TEST_F(Cuda, PoolCountsAndReuses) {
  uint64_t use0, peak0, res0;
  ASSERT_EQ(pipe_rt_cuda_pool_stats(0, &use0, &peak0, &res0), PIPE_RT_OK);
  void *a = mgpuMemAlloc(1000, nullptr, false);
  void *b = mgpuMemAlloc(3 << 20, nullptr, false);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  uint64_t use1, peak1, res1;
  pipe_rt_cuda_pool_stats(0, &use1, &peak1, &res1);
  EXPECT_EQ(use1, use0 + 1000 + (3u << 20));
  EXPECT_GE(peak1, use1);
  EXPECT_GE(res1, res0 + 1000 + (3u << 20));
  mgpuMemFree(b, nullptr);
  mgpuMemFree(a, nullptr);
  uint64_t use2, peak2, res2;
  pipe_rt_cuda_pool_stats(0, &use2, &peak2, &res2);
  EXPECT_EQ(use2, use0);
  EXPECT_EQ(peak2, peak1);
  EXPECT_EQ(res2, res1); // cached, not returned
  // The same sizes come from the cache.
  void *c = mgpuMemAlloc(3 << 20, nullptr, false);
  uint64_t res3;
  pipe_rt_cuda_pool_stats(0, nullptr, nullptr, &res3);
  EXPECT_EQ(res3, res1);
  mgpuMemFree(c, nullptr);
  pipe_rt_cuda_pool_trim(0);
  uint64_t res4;
  pipe_rt_cuda_pool_stats(0, nullptr, nullptr, &res4);
  EXPECT_LT(res4, res1);
}

TEST_F(Cuda, MemcpyRoundTrip) {
  const size_t n = (1 << 20) + 3;
  std::vector<float> host(n), back(n, -1);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(i) * 0.25f - 7;
  void *s = mgpuStreamCreate();
  auto *d1 = static_cast<float *>(mgpuMemAlloc(n * 4, s, false));
  auto *d2 = static_cast<float *>(mgpuMemAlloc(n * 4, s, false));
  mgpuMemcpy(d1, host.data(), n * 4, s);
  mgpuMemcpy(d2, d1, n * 4, s);
  mgpuMemcpy(back.data(), d2, n * 4, s);
  mgpuStreamSynchronize(s);
  EXPECT_EQ(host, back);
  // memset32 of 1.0f, and events ordering a second stream.
  mgpuMemset32(d1, 0x3f800000u, n, s);
  void *e = mgpuEventCreate();
  mgpuEventRecord(e, s);
  void *s2 = mgpuStreamCreate();
  mgpuStreamWaitEvent(s2, e);
  mgpuMemcpy(back.data(), d1, n * 4, s2);
  mgpuStreamSynchronize(s2);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[n - 1], 1.0f);
  mgpuEventSynchronize(e);
  mgpuEventDestroy(e);
  mgpuMemFree(d1, s);
  mgpuMemFree(d2, s);
  mgpuStreamDestroy(s2);
  mgpuStreamDestroy(s);
}

//===--- Kernels through the mgpu* ABI ------------------------------------===//

// Hand-written PTX (JIT-compiled by the driver): y[i] = x[i] + 1, and a
// kernel that spins for a number of clock cycles.
const char kPtx[] = R"(
.version 8.0
.target sm_80
.address_size 64

.visible .entry add_one(.param .u64 px, .param .u64 py, .param .u32 pn)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [py];
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f1, [%rd6];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd7], %f2;
DONE:
  ret;
}

.visible .entry spin(.param .u64 pcycles)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [pcycles];
  mov.u64 %rd2, %clock64;
LOOP:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.s64 %p, %rd4, %rd1;
  @%p bra LOOP;
  ret;
}
)";

TEST_F(Cuda, PtxKernelLaunch) {
  void *module = mgpuModuleLoadJIT(const_cast<char *>(kPtx), 2);
  void *fn = mgpuModuleGetFunction(module, "add_one");
  const unsigned n = 1000;
  std::vector<float> x(n), y(n);
  for (unsigned i = 0; i < n; ++i)
    x[i] = float(i);
  void *s = mgpuStreamCreate();
  void *dx = mgpuMemAlloc(n * 4, s, false), *dy = mgpuMemAlloc(n * 4, s, false);
  mgpuMemcpy(dx, x.data(), n * 4, s);
  unsigned count = n;
  void *params[] = {&dx, &dy, &count};
  mgpuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, nullptr,
                   3);
  mgpuMemcpy(y.data(), dy, n * 4, s);
  mgpuStreamSynchronize(s);
  for (unsigned i = 0; i < n; ++i)
    ASSERT_EQ(y[i], x[i] + 1) << i;
  mgpuMemFree(dx, s);
  mgpuMemFree(dy, s);
  mgpuStreamDestroy(s);
  mgpuModuleUnload(module);
}

TEST_F(Cuda, WatchdogNamesTheStuckWait) {
  void *module = mgpuModuleLoadJIT(const_cast<char *>(kPtx), 2);
  void *fn = mgpuModuleGetFunction(module, "spin");
  void *s = mgpuStreamCreate();
  uint64_t cycles = 3000000000ull; // ~1.5 s at 2 GHz
  void *params[] = {&cycles};
  mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr, 1);
  pipe_rt_cuda_set_watchdog(0.2);
  mgpuStreamSynchronize(s);
  std::string e = pipe_rt_cuda_last_error();
  EXPECT_NE(e.find("mgpuStreamSynchronize did not finish within 0.2 s"),
            std::string::npos)
      << e;
  pipe_rt_cuda_set_watchdog(30);
  mgpuStreamSynchronize(s); // now it ends
  mgpuStreamDestroy(s);
  mgpuModuleUnload(module);
}

//===--- GEMM -------------------------------------------------------------===//

struct GemmCase {
  const char *name;
  int64_t batch, m, n, k;
  bool transA, transB, colC, strided;
};

/// Element strides of a [batch, rows, cols] operand: row-major, its
/// transpose, or every element two apart (no unit stride: packed).
void layout(int64_t rows, int64_t cols, bool trans, bool strided, int64_t *st,
            int64_t &extent) {
  int64_t gap = strided ? 2 : 1;
  if (trans) {
    st[1] = gap;
    st[2] = rows * gap;
  } else {
    st[1] = cols * gap;
    st[2] = gap;
  }
  st[0] = rows * cols * gap;
  extent = st[0];
}

void runGemm(const GemmCase &g, int32_t compute, double relTol) {
  SCOPED_TRACE(g.name);
  int64_t as[3], bs[3], cs[3], ea, eb, ec;
  layout(g.m, g.k, g.transA, g.strided, as, ea);
  layout(g.k, g.n, g.transB, false, bs, eb);
  layout(g.m, g.n, g.colC, false, cs, ec);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(ea * g.batch), b(eb * g.batch), c(ec * g.batch);
  for (float &v : a)
    v = u(rng);
  for (float &v : b)
    v = u(rng);
  for (float &v : c)
    v = u(rng); // accumulates into C
  std::vector<float> ref = c, got(c.size());
  const int64_t dims[4] = {g.batch, g.m, g.n, g.k};
  pipe_rt_gemm_f32(a.data(), b.data(), ref.data(), dims, as, bs, cs);

  void *s = mgpuStreamCreate();
  auto *da = static_cast<float *>(mgpuMemAlloc(a.size() * 4, s, false));
  auto *db = static_cast<float *>(mgpuMemAlloc(b.size() * 4, s, false));
  auto *dc = static_cast<float *>(mgpuMemAlloc(c.size() * 4, s, false));
  mgpuMemcpy(da, a.data(), a.size() * 4, s);
  mgpuMemcpy(db, b.data(), b.size() * 4, s);
  mgpuMemcpy(dc, c.data(), c.size() * 4, s);
  mgpuStreamSynchronize(s);
  pipe_rt_cuda_gemm(da, db, dc, dims, as, bs, cs, compute);
  mgpuMemcpy(got.data(), dc, c.size() * 4, s);
  mgpuStreamSynchronize(s);
  // Error relative to sum |a||b| over k (the scale of the rounding).
  double worst = 0;
  for (int64_t bi = 0; bi < g.batch; ++bi)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double scale = 1e-6;
        for (int64_t p = 0; p < g.k; ++p)
          scale += std::fabs(a[bi * as[0] + i * as[1] + p * as[2]] *
                             b[bi * bs[0] + p * bs[1] + j * bs[2]]);
        int64_t at = bi * cs[0] + i * cs[1] + j * cs[2];
        worst = std::max(worst, std::fabs(got[at] - ref[at]) / scale);
      }
  EXPECT_LE(worst, relTol) << "compute " << compute;
  mgpuMemFree(da, s);
  mgpuMemFree(db, s);
  mgpuMemFree(dc, s);
  mgpuStreamDestroy(s);
}

const GemmCase kCases[] = {
    {"plain", 1, 64, 48, 80, false, false, false, false},
    {"transA", 1, 33, 17, 65, true, false, false, false},
    {"transB", 1, 31, 70, 9, false, true, false, false},
    {"transAB batched", 3, 20, 24, 28, true, true, false, false},
    {"column-major C", 2, 16, 12, 40, false, false, true, false},
    {"vector m=1", 1, 1, 300, 50, false, false, false, false},
    {"strided A (packed)", 2, 10, 11, 12, false, false, false, true},
    {"large", 1, 512, 384, 1024, false, true, false, false},
};

TEST_F(Cuda, GemmF32MatchesCpu) {
  for (const GemmCase &g : kCases)
    runGemm(g, PIPE_RT_CUDA_COMPUTE_F32, 1e-5);
}
TEST_F(Cuda, GemmTf32WithinTolerance) {
  for (const GemmCase &g : kCases)
    runGemm(g, PIPE_RT_CUDA_COMPUTE_TF32, 2e-3);
}
TEST_F(Cuda, GemmBf16WithinTolerance) {
  for (const GemmCase &g : kCases)
    runGemm(g, PIPE_RT_CUDA_COMPUTE_BF16, 1.6e-2);
}
TEST_F(Cuda, GemmF16WithinTolerance) {
  for (const GemmCase &g : kCases)
    runGemm(g, PIPE_RT_CUDA_COMPUTE_F16, 2e-3);
}

//===--- NCCL -------------------------------------------------------------===//

TEST_F(Cuda, NcclSelfSendRecv) {
  char error[512] = "";
  int st = pipe_rt_cuda_nccl_self_test(0, 1 << 20, 30, error, sizeof(error));
  if (st != PIPE_RT_OK &&
      std::string(error).find("without NCCL") != std::string::npos)
    GTEST_SKIP() << error;
  EXPECT_EQ(st, PIPE_RT_OK) << error;
}

//===--- Sessions on the GPU vs the CPU runtime
//----------------------------===//

int enableCuda(pipe_rt_session *s, std::string &error) {
  char buf[512] = "";
  int st = pipe_rt_cuda_session_enable(s, nullptr, buf, sizeof(buf));
  error = buf;
  return st;
}

class CudaProgram : public testing::TestWithParam<tiny::Sched> {
protected:
  void SetUp() override {
    char error[512] = "";
    if (pipe_rt_cuda_device_count(error, sizeof(error)) == 0)
      GTEST_SKIP() << "no usable CUDA device: " << error;
  }
};

/// Devices' copies of each other's buffers as NCCL send/recv pairs.
int enableCudaWithNccl(pipe_rt_session *s, std::string &error) {
  if (int st = enableCuda(s, error))
    return st;
  char buf[512] = "";
  int st = pipe_rt_cuda_session_use_nccl(s, buf, sizeof(buf));
  error = buf;
  return st;
}

/// Trains the schedule on the CPU and on the GPU (enabled by `enable`) and
/// compares losses and weights.
void expectGpuEqualsCpu(tiny::Sched sched,
                        int (*enable)(pipe_rt_session *, std::string &)) {
  std::string w = tiny::writeWeights(testing::TempDir());
  tiny::Program cpu = tiny::makeProgram<false>(sched);
  tiny::Program gpu = tiny::makeProgram<true>(sched);
  std::vector<float> lc, pc, lg, pg;
  tiny::Options onGpu;
  onGpu.enable = enable;
  ASSERT_EQ(tiny::train(cpu, w, 3, lc, pc), "");
  ASSERT_EQ(tiny::train(gpu, w, 3, lg, pg, onGpu), "");
  ASSERT_EQ(lc.size(), lg.size());
  for (size_t i = 0; i < lc.size(); ++i)
    EXPECT_NEAR(lg[i], lc[i], 1e-5 * (1 + std::fabs(lc[i]))) << "loss " << i;
  for (size_t i = 0; i < pc.size(); ++i)
    EXPECT_NEAR(pg[i], pc[i], 1e-5) << "param element " << i;
}

TEST_P(CudaProgram, GpuEqualsCpu) {
  expectGpuEqualsCpu(GetParam(), enableCuda);
}

/// The same with every copy between devices through NCCL (self send/recv
/// on one GPU: the calls `pipe-runner-cuda --transport nccl` makes).
TEST_P(CudaProgram, GpuWithNcclCopiesEqualsCpu) {
  char error[512] = "";
  if (pipe_rt_cuda_nccl_self_test(0, 4, 30, error, sizeof(error)) !=
          PIPE_RT_OK &&
      std::string(error).find("without NCCL") != std::string::npos)
    GTEST_SKIP() << error;
  expectGpuEqualsCpu(GetParam(), enableCudaWithNccl);
}

INSTANTIATE_TEST_SUITE_P(Schedules, CudaProgram,
                         testing::Values(tiny::Sched::OneDevice,
                                         tiny::Sched::TwoDevices,
                                         tiny::Sched::Tied,
                                         tiny::Sched::PipeDream,
                                         tiny::Sched::L2L));

//===--- bf16 parameter-server transfers ----------------------------------===//

/// A session's cuBLAS handle gets its workspace from the pool, so the pool's
/// figures (a profile's peak device memory) count it, and gives it back.
TEST_F(Cuda, BlasWorkspaceComesFromThePool) {
  std::string w = tiny::writeWeights(testing::TempDir());
  tiny::Program p = tiny::makeProgram<true>(tiny::Sched::OneDevice);
  uint64_t before = 0, during = 0, after = 0;
  pipe_rt_cuda_pool_stats(0, &before, nullptr, nullptr);
  {
    tiny::Options o;
    o.enable = enableCuda;
    tiny::Session s(p, w, o);
    std::vector<float> losses;
    ASSERT_TRUE(s.error.empty() && s.run(losses)) << s.error;
    pipe_rt_cuda_pool_stats(0, &during, nullptr, nullptr);
  }
  pipe_rt_cuda_pool_stats(0, &after, nullptr, nullptr);
  EXPECT_GE(during, before + (uint64_t(32) << 20));
  EXPECT_EQ(after, before);
}

/// Three runs of the tiny L2L program on the GPU (or the CPU runtime) with
/// the given ps_transfer, and the bytes device 0's copy lanes moved.
struct L2LRun {
  std::string error;
  std::vector<float> losses, params;
  uint64_t h2d = 0, d2h = 0;
};
L2LRun trainL2L(tiny::Program &p, const std::string &weights, bool gpu,
                pipe_rt_ps_transfer transfer) {
  tiny::Options o;
  o.transfer = transfer;
  o.enable = gpu ? enableCuda : nullptr;
  tiny::Session s(p, weights, o);
  L2LRun r;
  for (int i = 0; i < 3 && s.error.empty(); ++i)
    s.run(r.losses);
  r.error = s.error;
  if (r.error.empty()) {
    r.params = s.params();
    pipe_rt_session_copy_bytes(s.s, 0, &r.h2d, &r.d2h, nullptr);
  }
  return r;
}

float floatOf(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// The CUDA backend's narrowBf16 / widenBf16 (the kernels of
/// Bf16Kernels.ptx) give the host rounding of Bf16.h bit for bit (NaN:
/// some NaN), for counts that exercise the grid-stride loop and the odd
/// tail, and charge nothing themselves.
TEST_F(Cuda, Bf16KernelsMatchHostRounding) {
  tiny::Program p = tiny::makeProgram<true>(tiny::Sched::L2L);
  std::string w = tiny::writeWeights(testing::TempDir());
  pipe_rt_session_options o;
  pipe_rt_session_options_init(&o);
  o.weights_path = w.c_str();
  pipe_rt_session *s = nullptr;
  char buf[512] = "";
  ASSERT_EQ(pipe_rt_session_create(tiny::Program::lookup, &p, &o, &s, buf,
                                   sizeof(buf)),
            PIPE_RT_OK)
      << buf;
  std::string error;
  ASSERT_EQ(enableCuda(s, error), PIPE_RT_OK) << error;
  uint64_t cap = UINT64_MAX;
  std::unique_ptr<pipe_rt::DeviceMemory> mem;
  ASSERT_EQ(s->backend->createMemory(nullptr, 1, &cap, {}, 30, mem, error),
            PIPE_RT_OK)
      << error;
  const uint32_t special[] = {0x3f808000, 0x3f818000, 0x3f808001, 0x3f817fff,
                              0x7f7fffff, 0x7f7f7fff, 0x00012345, 0x80018000,
                              0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
                              0x7f800001, 0xff800001};
  std::mt19937 rng(5);
  for (int64_t n : {int64_t(1), int64_t(2), int64_t(3), int64_t(1000),
                    int64_t((1 << 21) + 3)}) {
    std::vector<float> in(n), back(n);
    std::vector<uint16_t> narrow(n);
    for (int64_t i = 0; i < n; ++i)
      in[i] = i < int64_t(std::size(special)) && n > 3
                  ? floatOf(special[i])
                  : floatOf(uint32_t(rng())); // any bits, NaNs included
    void *f = nullptr, *h = nullptr, *g = nullptr;
    ASSERT_EQ(mem->alloc(0, n * 4, "f32", &f, error), PIPE_RT_OK) << error;
    ASSERT_EQ(mem->alloc(0, n * 2, "bf16", &h, error), PIPE_RT_OK) << error;
    ASSERT_EQ(mem->alloc(0, n * 4, "widened", &g, error), PIPE_RT_OK) << error;
    uint64_t inUse = 0;
    mem->usage(0, &inUse, nullptr);
    EXPECT_EQ(inUse, uint64_t(n) * 10);
    using pipe_rt::Lane;
    ASSERT_EQ(mem->copy(0, Lane::H2D, f, in.data(), n * 4, error), PIPE_RT_OK)
        << error;
    ASSERT_EQ(mem->narrowBf16(0, Lane::D2H, h, f, n, error), PIPE_RT_OK)
        << error;
    ASSERT_EQ(mem->widenBf16(0, Lane::H2D, g, h, n, error), PIPE_RT_OK)
        << error;
    ASSERT_EQ(mem->copy(0, Lane::D2H, narrow.data(), h, n * 2, error),
              PIPE_RT_OK)
        << error;
    ASSERT_EQ(mem->copy(0, Lane::D2H, back.data(), g, n * 4, error), PIPE_RT_OK)
        << error;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t want = pipe_rt::f32ToBf16(in[i]);
      if (std::isnan(in[i])) {
        ASSERT_TRUE(std::isnan(pipe_rt::bf16ToF32(narrow[i])))
            << "n " << n << " element " << i;
        ASSERT_TRUE(std::isnan(back[i])) << "n " << n << " element " << i;
        continue;
      }
      ASSERT_EQ(narrow[i], want) << "n " << n << " element " << i;
      float wide = pipe_rt::bf16ToF32(want);
      ASSERT_EQ(std::memcmp(&back[i], &wide, 4), 0)
          << "n " << n << " element " << i;
    }
    mem->free(0, f);
    mem->free(0, h);
    mem->free(0, g);
  }
  mem.reset();
  pipe_rt_session_destroy(s);
}

/// The L2L program with bf16 transfers on the GPU against the CPU runtime
/// with bf16 transfers (the loaded weights are the same bf16 numbers), and
/// the copy engines move half the parameter server's bytes.
TEST_F(Cuda, L2LBf16TransfersMatchCpu) {
  std::string w = tiny::writeWeights(testing::TempDir());
  tiny::Program cpu = tiny::makeProgram<false>(tiny::Sched::L2L);
  tiny::Program gpu = tiny::makeProgram<true>(tiny::Sched::L2L);
  L2LRun c = trainL2L(cpu, w, false, PIPE_RT_PS_TRANSFER_BF16);
  L2LRun g = trainL2L(gpu, w, true, PIPE_RT_PS_TRANSFER_BF16);
  L2LRun f = trainL2L(gpu, w, true, PIPE_RT_PS_TRANSFER_F32);
  ASSERT_EQ(c.error + g.error + f.error, "");
  ASSERT_EQ(c.losses.size(), g.losses.size());
  for (size_t i = 0; i < c.losses.size(); ++i)
    EXPECT_NEAR(g.losses[i], c.losses[i], 1e-5 * (1 + std::fabs(c.losses[i])))
        << "loss " << i;
  for (size_t i = 0; i < c.params.size(); ++i)
    EXPECT_NEAR(g.params[i], c.params[i], 1e-5) << "param element " << i;
  // 3 runs of 4 ps.load and 2 ps.push of 8-byte params: bf16 saves half.
  EXPECT_EQ(f.h2d - g.h2d, 3u * 16);
  EXPECT_EQ(f.d2h - g.d2h, 3u * 8);
}

TEST(CudaSession, EnableWithoutGpuFailsCleanly) {
  char error[512] = "";
  if (pipe_rt_cuda_device_count(error, sizeof(error)) > 0)
    GTEST_SKIP() << "a GPU is present";
  tiny::Program p = tiny::makeProgram<false>(tiny::Sched::OneDevice);
  std::string w = tiny::writeWeights(testing::TempDir());
  std::vector<float> l, params;
  tiny::Options o;
  o.enable = enableCuda;
  std::string e = tiny::train(p, w, 1, l, params, o);
  EXPECT_NE(e.find("no usable GPU"), std::string::npos) << e;
}

} // namespace
