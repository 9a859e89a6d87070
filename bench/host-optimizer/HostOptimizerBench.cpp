//===- HostOptimizerBench.cpp - AdamW throughput of the host optimizer ----===//
//
// Usage: bench-host-optimizer [params] [steps] [threads...]
// Defaults: 302000000 parameters (the BERT-Large-shaped encoder of
// BACKGROUND.md section 4), 3 timed steps after one warm-up step, threads 1 2.
// For each thread count and gradient type (fp32, bf16) prints the best
// ms/step and Gparam/s. Needs params x 16 bytes (fp32 grads) of memory.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/HostOptimizer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

int main(int argc, char **argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 302000000ull;
  int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<unsigned> threads;
  for (int i = 3; i < argc; ++i)
    threads.push_back(unsigned(std::atoi(argv[i])));
  if (threads.empty())
    threads = {1, 2};
  if (n == 0 || steps < 1) {
    std::fprintf(stderr, "usage: %s [params>0] [steps>0] [threads...]\n",
                 argv[0]);
    return 1;
  }

  // Plain arrays, filled here so that pages are touched before timing.
  std::unique_ptr<float[]> p(new float[n]), m(new float[n]), v(new float[n]);
  std::unique_ptr<float[]> g32(new float[n]);
  std::unique_ptr<uint16_t[]> g16(new uint16_t[n]);
  for (size_t i = 0; i < n; ++i) {
    p[i] = 0.01f * float(int(i % 2001) - 1000) / 1000.0f;
    m[i] = 0.0f;
    v[i] = 0.0f;
    g32[i] = 1e-3f * float(int((i * 7919) % 2001) - 1000) / 1000.0f;
    g16[i] = uint16_t(0x3a83u + (i % 64)); // ~1e-3, varied
  }

  std::printf("params %zu, %d timed steps (best reported), chunk %zu\n", n,
              steps, pipe_rt_host_optimizer_chunk_size());
  std::printf("%-8s %-5s %12s %12s\n", "threads", "grad", "ms/step",
              "Gparam/s");
  int64_t stepCount = 0;
  for (unsigned t : threads) {
    pipe_rt_host_optimizer *opt = pipe_rt_host_optimizer_create(t);
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      pipe_rt_optim_update u = {};
      u.kind = PIPE_RT_OPTIM_ADAMW;
      u.adamw = {1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f};
      u.param = p.get();
      u.state0 = m.get();
      u.state1 = v.get();
      u.grad = bf16 ? static_cast<const void *>(g16.get()) : g32.get();
      u.grad_dtype = bf16 ? PIPE_RT_GRAD_BF16 : PIPE_RT_GRAD_F32;
      u.grad_scale = 1.0f;
      u.n = n;
      double best = 1e30;
      for (int s = 0; s <= steps; ++s) {
        u.step = ++stepCount;
        auto t0 = std::chrono::steady_clock::now();
        int rc = pipe_rt_host_optimizer_run(opt, &u);
        auto t1 = std::chrono::steady_clock::now();
        if (rc != PIPE_RT_OK) {
          std::fprintf(stderr, "error: %s\n", pipe_rt_status_string(rc));
          return 1;
        }
        double sec = std::chrono::duration<double>(t1 - t0).count();
        if (s > 0 && sec < best) // step 0 is the warm-up
          best = sec;
      }
      std::printf("%-8u %-5s %12.1f %12.3f\n",
                  pipe_rt_host_optimizer_num_threads(opt),
                  bf16 ? "bf16" : "fp32", best * 1e3, double(n) / best / 1e9);
      std::fflush(stdout);
    }
    pipe_rt_host_optimizer_destroy(opt);
  }
  return 0;
}
