//===- Cores.cpp - Core policy and intra-op helper threads ----------------===//

#include "Cores.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <system_error>
#include <thread>
#include <vector>

namespace pipe_rt {

unsigned processCores() {
  unsigned cpus = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    cpus = unsigned(CPU_COUNT(&set));
  if (cpus == 0)
    cpus = std::max(1u, std::thread::hardware_concurrency());
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_SIZE"})
    if (const char *local = std::getenv(name)) {
      long ranks = std::strtol(local, nullptr, 10);
      if (ranks > 1)
        return std::max(1u, unsigned(cpus / std::min<long>(ranks, cpus)));
      break;
    }
  return cpus;
}

unsigned defaultIntraOpHelpers(unsigned busyDevices) {
  if (const char *env = std::getenv("PIPE_INTRA_OP_THREADS")) {
    char *end = nullptr;
    long helpers = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && helpers >= 0 &&
        helpers <= long(kMaxIntraOpHelpers))
      return unsigned(helpers);
    static std::once_flag warned;
    std::call_once(warned, [env] {
      std::fprintf(stderr,
                   "pipe runtime: ignoring PIPE_INTRA_OP_THREADS='%s' (not an "
                   "integer in [0, %u]); using the core policy\n",
                   env, kMaxIntraOpHelpers);
    });
  }
  unsigned cores = processCores();
  return cores > busyDevices ? cores - busyDevices : 0;
}

namespace {

/// Helper threads that wait for a job and take its chunks. One job at a
/// time: a second device thread that finds the pool busy runs its chunks
/// alone, which is what it would do without helpers.
class HelperPool {
public:
  void resize(unsigned helpers) {
    std::lock_guard<std::mutex> lock(mu);
    // A helper the system refuses to start is one fewer helper: the chunks
    // are the same, only fewer threads run them.
    try {
      while (threads.size() < helpers)
        threads.emplace_back(
            [this, index = unsigned(threads.size())] { work(index); });
    } catch (const std::system_error &) {
    }
    target = std::min<unsigned>(helpers, unsigned(threads.size()));
  }

  void run(int64_t n, const std::function<void(int64_t)> &fn) {
    std::unique_lock<std::mutex> busy(submit, std::try_to_lock);
    if (n <= 1 || !busy.owns_lock() || activeHelpers() == 0) {
      for (int64_t i = 0; i < n; ++i)
        fn(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      job = &fn;
      chunks = n;
      next.store(0);
      done.store(0);
      ++generation;
    }
    wake.notify_all();
    takeChunks(fn, n);
    // Chunks a helper took are finished by it; they are short, so spin.
    while (done.load(std::memory_order_acquire) < n)
      std::this_thread::yield();
    // No helper may still hold `fn` (or reach into the counters, which the
    // next job resets) when this returns.
    std::unique_lock<std::mutex> lock(mu);
    job = nullptr;
    idle.wait(lock, [&] { return inFlight == 0; });
  }

private:
  unsigned activeHelpers() {
    std::lock_guard<std::mutex> lock(mu);
    return target;
  }

  void takeChunks(const std::function<void(int64_t)> &fn, int64_t n) {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      fn(i);
      done.fetch_add(1, std::memory_order_release);
    }
  }

  void work(unsigned index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t)> *fn;
      int64_t n;
      {
        std::unique_lock<std::mutex> lock(mu);
        wake.wait(lock,
                  [&] { return generation != seen && job && index < target; });
        seen = generation;
        fn = job;
        n = chunks;
        ++inFlight;
      }
      takeChunks(*fn, n);
      std::lock_guard<std::mutex> lock(mu);
      if (--inFlight == 0)
        idle.notify_all();
    }
  }

  std::mutex submit;
  std::mutex mu;
  std::condition_variable wake, idle;
  unsigned inFlight = 0;
  std::vector<std::thread> threads;
  unsigned target = 0;
  uint64_t generation = 0;
  const std::function<void(int64_t)> *job = nullptr;
  int64_t chunks = 0;
  std::atomic<int64_t> next{0}, done{0};
};

HelperPool &pool() {
  // Never destroyed: helpers block in wait() for the life of the process.
  static HelperPool *instance = new HelperPool;
  return *instance;
}

} // namespace

void setIntraOpHelpers(unsigned helpers) { pool().resize(helpers); }

void parallelChunks(int64_t n, const std::function<void(int64_t)> &fn) {
  pool().run(n, fn);
}

} // namespace pipe_rt
