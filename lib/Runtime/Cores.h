//===- Cores.h - How the runtime's threads share the cores ------*- C++ -*-===//
//
// One core policy for every thread pool of the runtime: the device threads,
// the intra-op helpers that take part of a device's GEMMs, the host
// optimizer's workers and the bf16 narrowing of parameter-server transfers.
// The cores a process may use are the CPUs of its affinity mask, shared
// with the other MPI ranks of its host, so that nothing oversubscribes.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_RUNTIME_CORES_H
#define PIPE_LIB_RUNTIME_CORES_H

#include <cstdint>
#include <functional>

namespace pipe_rt {

/// The cores this process may use: the CPUs it may run on (sched_getaffinity,
/// so taskset and cgroup cpusets count), divided among the MPI ranks of this
/// host (OMPI_COMM_WORLD_LOCAL_SIZE, or a launcher's LOCAL_SIZE); at least 1.
unsigned processCores();

/// The most helpers PIPE_INTRA_OP_THREADS may ask for.
constexpr unsigned kMaxIntraOpHelpers = 1024;

/// Intra-op helper threads for `busyDevices` device threads that compute at
/// the same time: the cores left over after one per device, 0 when there are
/// none. PIPE_INTRA_OP_THREADS (0 to kMaxIntraOpHelpers) overrides it: 0
/// turns the helpers off; any other value is ignored with a warning.
unsigned defaultIntraOpHelpers(unsigned busyDevices);

/// Sets how many helper threads parallelChunks may use (started lazily,
/// kept for the process; as many as the system lets it start).
void setIntraOpHelpers(unsigned helpers);

/// Runs fn(0), ..., fn(n - 1), each exactly once, returning when all are
/// done. The calling thread runs chunks itself; idle helpers take the others.
/// Chunks must be independent; how the work is split into chunks is the
/// caller's (fixed by the problem, never by the number of helpers, so that
/// results do not depend on the thread count).
void parallelChunks(int64_t n, const std::function<void(int64_t)> &fn);

} // namespace pipe_rt

#endif // PIPE_LIB_RUNTIME_CORES_H
