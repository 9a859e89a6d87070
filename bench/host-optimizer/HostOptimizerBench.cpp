//===- HostOptimizerBench.cpp - AdamW throughput of the host optimizer ----===//
//
// Usage: bench-host-optimizer [options]
//   --params N        parameters (302000000: the BERT-Large-shaped encoder of
//                     docs/hardware.md)
//   --steps S         timed steps per row after one warm-up step; the best
//                     is reported (5)
//   --threads LIST    optimizer worker counts, e.g. 1,2,16 (1,2)
//   --isa LIST        baseline,avx2,avx512 or all (all available here)
//   --grad LIST       fp32,bf16 (both)
//   --copies LIST     off,on (both): "on" runs --copy-threads threads that
//                     memcpy a --copy-mb buffer in a loop during the row,
//                     standing in for the pinned host<->device DMA of L2L
//   --copy-mb MB      size of each copy buffer (25, one BERT-Large layer in
//                     bf16)
//   --copy-threads K  copy threads when copies are on (1)
//   --hugepages       ask for transparent huge pages for the arrays (Linux
//                     madvise); default 4 KiB pages, like cudaHostAlloc
//   --in-cache-only   print only the first table
//
// First table: each ISA's AdamW kernel alone (no thread pool) on one thread,
// over 4096 parameters that stay in L1/L2, i.e. the compute ceiling per
// core; "bc2=1" is a step late enough that the bias correction rounds to
// 1.0f and one division per element is skipped (HostOptimizerKernels.inc).
//
// For each row prints the best ms/step, Gparam/s, the optimizer's own memory
// traffic in GB/s (28 bytes/param with fp32 gradients, 26 with bf16: read
// p, m, v, g, write p, m, v) and, with copies, the bytes memcpy'd per second
// over the timed steps (counted per finished memcpy, so meaningful only when
// a step lasts many copies, e.g. the default 302M parameters). Needs
// params x 18 bytes of memory (+ 2 x copy-mb per copy thread).
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/HostOptimizer.h"

#include "HostOptimizerKernels.h" // lib/Runtime: the per-ISA kernels

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// 2 MiB-aligned arrays (so huge pages can back them), freed on scope exit.
template <typename T> struct Array {
  T *data = nullptr;
  explicit Array(size_t n, bool hugePages) {
    const size_t align = size_t(2) << 20;
    size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    data = static_cast<T *>(std::aligned_alloc(align, bytes));
    if (!data) {
      std::fprintf(stderr, "error: out of memory (%zu bytes)\n", bytes);
      std::exit(1);
    }
#ifdef MADV_HUGEPAGE
    if (hugePages)
      madvise(data, bytes, MADV_HUGEPAGE);
#else
    (void)hugePages;
#endif
  }
  ~Array() { std::free(data); }
  Array(const Array &) = delete;
  Array &operator=(const Array &) = delete;
};

std::vector<std::string> splitList(const char *arg) {
  std::vector<std::string> out;
  std::string cur;
  for (const char *c = arg;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
      if (*c == '\0')
        break;
    } else {
      cur += *c;
    }
  }
  return out;
}

bool parseSize(const char *s, size_t &out) {
  char *end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (!end || *end != '\0' || end == s)
    return false;
  out = size_t(v);
  return true;
}

/// Threads that memcpy between two buffers in a loop, like the L2L copy
/// engine moving layers through pinned host memory; `copied` counts bytes.
struct CopyLoad {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> copied{0};
  std::vector<std::thread> threads;

  void start(unsigned numThreads, size_t bytes) {
    stop = false;
    for (unsigned t = 0; t < numThreads; ++t)
      threads.emplace_back([this, bytes] {
        std::vector<unsigned char> src(bytes, 1), dst(bytes, 0);
        while (!stop.load(std::memory_order_relaxed)) {
          std::memcpy(dst.data(), src.data(), bytes);
          copied.fetch_add(bytes, std::memory_order_relaxed);
          std::swap(src, dst); // alternate directions
        }
      });
  }
  void finish() {
    stop = true;
    for (std::thread &t : threads)
      t.join();
    threads.clear();
  }
};

/// Best Gparam/s of `kernel` on `n` cache-resident parameters: repeats the
/// update until 0.2 s have passed, three times.
double inCacheRate(pipe_rt::optim::ChunkKernel kernel, bool bf16,
                   bool bc2IsOne) {
  const size_t n = 4096;
  std::vector<float> p(n, 0.01f), m(n, 0.0f), v(n, 0.0f), g32(n, 1e-3f);
  std::vector<uint16_t> g16(n, 0x3a83u);
  for (size_t i = 0; i < n; ++i) {
    p[i] = 0.01f * float(int(i % 2001) - 1000) / 1000.0f;
    g32[i] = 1e-3f * float(int((i * 7919) % 2001) - 1000) / 1000.0f;
    g16[i] = uint16_t(0x3a83u + (i % 64));
  }
  pipe_rt::optim::KernelArgs a = {};
  a.kind = pipe_rt::optim::KernelKind::AdamW;
  a.bf16 = bf16;
  a.param = p.data();
  a.state0 = m.data();
  a.state1 = v.data();
  // In place, as the parameter server's updates after the first of a run.
  a.paramIn = a.param;
  a.state0In = a.state0;
  a.state1In = a.state1;
  a.grad = bf16 ? static_cast<const void *>(g16.data()) : g32.data();
  a.n = n;
  // lr 1e-4, betas (0.9, 0.999), eps 1e-8, weight decay 0.01 at step 10
  // (bias correction sqrt(1 - 0.999^10) = 0.0998) or step > 16600 (1.0f).
  pipe_rt::optim::AdamWScalars &s = a.adamw;
  s.decay = 1.0f - 1e-6f;
  s.beta1 = 0.9f;
  s.oneMinusBeta1 = 0.1f;
  s.beta2 = 0.999f;
  s.oneMinusBeta2 = 0.001f;
  s.eps = 1e-8f;
  s.negStepSize = -1.5e-4f;
  s.bc2Sqrt = bc2IsOne ? 1.0f : 0.0998f;
  s.gradScale = 1.0f;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    size_t calls = 0;
    auto t0 = Clock::now();
    double sec = 0;
    do {
      for (int k = 0; k < 100; ++k)
        kernel(a, 0, n);
      calls += 100;
      sec = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (sec < 0.2);
    double rate = double(calls) * double(n) / sec / 1e9;
    best = rate > best ? rate : best;
  }
  return best;
}

int usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s [--params N] [--steps S] [--threads 1,2] "
               "[--isa baseline,avx2,avx512|all] [--grad fp32,bf16] "
               "[--copies off,on] [--copy-mb MB] [--copy-threads K] "
               "[--hugepages] [--in-cache-only]\n",
               argv0);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  size_t n = 302000000, steps = 5, copyMB = 25, copyThreads = 1;
  std::vector<unsigned> threads = {1, 2};
  std::vector<pipe_rt_optim_isa> isas;
  std::vector<bool> gradBF16 = {false, true};
  std::vector<bool> copyModes = {false, true};
  bool hugePages = false, inCacheOnly = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--hugepages" || a == "--in-cache-only") {
      (a == "--hugepages" ? hugePages : inCacheOnly) = true;
      continue;
    }
    if (i + 1 >= argc)
      return usage(argv[0]);
    const char *v = argv[++i];
    if (a == "--params") {
      if (!parseSize(v, n) || n == 0)
        return usage(argv[0]);
    } else if (a == "--steps") {
      if (!parseSize(v, steps) || steps == 0)
        return usage(argv[0]);
    } else if (a == "--copy-mb") {
      if (!parseSize(v, copyMB) || copyMB == 0)
        return usage(argv[0]);
    } else if (a == "--copy-threads") {
      if (!parseSize(v, copyThreads) || copyThreads == 0)
        return usage(argv[0]);
    } else if (a == "--threads") {
      threads.clear();
      for (const std::string &t : splitList(v)) {
        size_t k;
        if (!parseSize(t.c_str(), k) || k == 0)
          return usage(argv[0]);
        threads.push_back(unsigned(k));
      }
    } else if (a == "--isa") {
      for (const std::string &name : splitList(v)) {
        bool known = false;
        for (int k = PIPE_RT_OPTIM_ISA_BASELINE; k <= PIPE_RT_OPTIM_ISA_AVX512;
             ++k) {
          auto isa = pipe_rt_optim_isa(k);
          if (name == "all" || name == pipe_rt_optim_isa_name(isa)) {
            known = true;
            if (!pipe_rt_optim_isa_available(isa)) {
              if (name != "all")
                std::fprintf(stderr, "note: %s is not available here\n",
                             name.c_str());
              continue;
            }
            isas.push_back(isa);
          }
        }
        if (!known)
          return usage(argv[0]);
      }
    } else if (a == "--grad") {
      gradBF16.clear();
      for (const std::string &g : splitList(v)) {
        if (g != "fp32" && g != "bf16")
          return usage(argv[0]);
        gradBF16.push_back(g == "bf16");
      }
    } else if (a == "--copies") {
      copyModes.clear();
      for (const std::string &c : splitList(v)) {
        if (c != "off" && c != "on")
          return usage(argv[0]);
        copyModes.push_back(c == "on");
      }
    } else {
      return usage(argv[0]);
    }
  }
  if (isas.empty())
    for (int k = PIPE_RT_OPTIM_ISA_BASELINE; k <= PIPE_RT_OPTIM_ISA_AVX512; ++k)
      if (pipe_rt_optim_isa_available(pipe_rt_optim_isa(k)))
        isas.push_back(pipe_rt_optim_isa(k));

  std::printf("AdamW kernel in cache, 1 thread, no pool (Gparam/s):\n");
  std::printf("%-8s %10s %10s %10s %10s\n", "isa", "fp32", "bf16", "fp32 bc2=1",
              "bf16 bc2=1");
  for (pipe_rt_optim_isa isa : isas) {
    pipe_rt::optim::ChunkKernel kernel = pipe_rt::optim::kernelFor(isa);
    std::printf("%-8s", pipe_rt_optim_isa_name(isa));
    for (bool bc2IsOne : {false, true})
      for (bool bf16 : {false, true})
        std::printf(" %10.3f", inCacheRate(kernel, bf16, bc2IsOne));
    std::printf("\n");
    std::fflush(stdout);
  }
  if (inCacheOnly)
    return 0;
  std::printf("\n");

  // Filled here so that every page is touched before timing.
  Array<float> p(n, hugePages), m(n, hugePages), v(n, hugePages);
  Array<float> g32(n, hugePages);
  Array<uint16_t> g16(n, hugePages);
  for (size_t i = 0; i < n; ++i) {
    p.data[i] = 0.01f * float(int(i % 2001) - 1000) / 1000.0f;
    m.data[i] = 0.0f;
    v.data[i] = 0.0f;
    g32.data[i] = 1e-3f * float(int((i * 7919) % 2001) - 1000) / 1000.0f;
    g16.data[i] = uint16_t(0x3a83u + (i % 64)); // ~1e-3, varied
  }

  std::printf("params %zu, %zu timed steps (best reported), chunk %zu, "
              "default isa %s, %u hardware threads, %s pages\n",
              n, steps, pipe_rt_host_optimizer_chunk_size(),
              pipe_rt_optim_isa_name(pipe_rt_host_optimizer_default_isa()),
              std::thread::hardware_concurrency(),
              hugePages ? "huge" : "4 KiB");
  std::printf("copies: %zu thread(s) x memcpy of %zu MB in a loop\n",
              copyThreads, copyMB);
  std::printf("%-8s %-7s %-5s %-6s %9s %9s %8s %9s\n", "isa", "threads", "grad",
              "copies", "ms/step", "Gparam/s", "opt GB/s", "copy GB/s");
  int64_t stepCount = 0;
  for (bool copies : copyModes) {
    for (pipe_rt_optim_isa isa : isas) {
      for (unsigned t : threads) {
        pipe_rt_host_optimizer *opt = pipe_rt_host_optimizer_create(t);
        if (!opt || pipe_rt_host_optimizer_set_isa(opt, isa) != PIPE_RT_OK) {
          std::fprintf(stderr, "error: cannot create a %s optimizer\n",
                       pipe_rt_optim_isa_name(isa));
          return 1;
        }
        for (bool bf16 : gradBF16) {
          pipe_rt_optim_update u = {};
          u.kind = PIPE_RT_OPTIM_ADAMW;
          u.adamw = {1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f};
          u.param = p.data;
          u.state0 = m.data;
          u.state1 = v.data;
          u.grad = bf16 ? static_cast<const void *>(g16.data) : g32.data;
          u.grad_dtype = bf16 ? PIPE_RT_GRAD_BF16 : PIPE_RT_GRAD_F32;
          u.grad_scale = 1.0f;
          u.n = n;
          CopyLoad load;
          if (copies)
            load.start(unsigned(copyThreads), copyMB * 1000000);
          double best = 1e30, timed = 0;
          uint64_t copiedTimed = 0;
          for (size_t s = 0; s <= steps; ++s) {
            u.step = ++stepCount;
            uint64_t c0 = load.copied.load();
            auto t0 = Clock::now();
            int rc = pipe_rt_host_optimizer_run(opt, &u);
            auto t1 = Clock::now();
            uint64_t c1 = load.copied.load();
            if (rc != PIPE_RT_OK) {
              std::fprintf(stderr, "error: %s\n", pipe_rt_status_string(rc));
              return 1;
            }
            double sec = std::chrono::duration<double>(t1 - t0).count();
            if (s == 0)
              continue; // warm-up
            best = sec < best ? sec : best;
            timed += sec;
            copiedTimed += c1 - c0;
          }
          if (copies)
            load.finish();
          double bytesPerParam = bf16 ? 26.0 : 28.0;
          char copyRate[32] = "-";
          if (copies)
            std::snprintf(copyRate, sizeof(copyRate), "%.1f",
                          double(copiedTimed) / timed / 1e9);
          std::printf("%-8s %-7u %-5s %-6s %9.1f %9.3f %8.1f %9s\n",
                      pipe_rt_optim_isa_name(isa),
                      pipe_rt_host_optimizer_num_threads(opt),
                      bf16 ? "bf16" : "fp32", copies ? "on" : "off", best * 1e3,
                      double(n) / best / 1e9,
                      double(n) * bytesPerParam / best / 1e9, copyRate);
          std::fflush(stdout);
        }
        pipe_rt_host_optimizer_destroy(opt);
      }
    }
  }
  return 0;
}
