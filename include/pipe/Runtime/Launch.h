//===- Launch.h - A process's place in a run started without MPI -*- C++
//-*-===//
//
// NCCL between processes needs no MPI (docs/distributed.md, "NCCL without
// MPI"): a launcher (torchrun, srun, mpirun used only to start processes,
// or a script) tells each process its rank in environment variables, and
// the ranks share NCCL's unique id through NCCL_COMM_ID or a file. This is
// the part of that which needs neither a GPU nor NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_LAUNCH_H
#define PIPE_RUNTIME_LAUNCH_H

#include <cstddef>
#include <functional>
#include <string>

namespace pipe_rt {

/// This process's place among the processes of a run.
struct LaunchEnvironment {
  int rank = 0, size = 1, localRank = 0;
  /// The variables it came from, "RANK/WORLD_SIZE/LOCAL_RANK" (for
  /// messages).
  std::string source;
  /// What tells this run from an earlier one, where the launcher says it:
  /// PIPE_RUN_ID, torchrun's TORCHELASTIC_RUN_ID (but its default "none"),
  /// SLURM_JOB_ID.SLURM_STEP_ID, or Open MPI's PMIX_NAMESPACE; empty
  /// without. Only letters, digits and ._:- (others become _).
  std::string runId;
};

/// Reads the first of these sets whose rank and size variables are both
/// set: PIPE_RANK/PIPE_WORLD_SIZE/PIPE_LOCAL_RANK, RANK/WORLD_SIZE/
/// LOCAL_RANK (torchrun), SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun),
/// OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK (Open MPI's mpirun). Without the
/// local rank (the place among the host's processes, which picks the GPU)
/// it is the rank: one host. `found` is false when no set is complete; a
/// malformed value (not a number, rank outside [0, size), or half a set of
/// PIPE_*) is an error naming the variable. `get` reads a variable (null:
/// unset), std::getenv in a program.
bool readLaunchEnvironment(const std::function<const char *(const char *)> &get,
                           LaunchEnvironment &env, bool &found,
                           std::string &error);

/// Where the ranks of `launch` get NCCL's unique id: every rank makes the
/// same one itself (`idFile` empty) when there is one rank or NCCL_COMM_ID
/// names rank 0's host and a free port (NCCL's own variable); else rank 0
/// writes it to the file PIPE_NCCL_ID_FILE names (`idFile`). False with
/// `error` when several ranks have neither.
bool ncclIdSource(const LaunchEnvironment &launch,
                  const std::function<const char *(const char *)> &get,
                  std::string &idFile, std::string &error);

/// Shares `bytes` bytes (an NCCL unique id) through the file `path`, which
/// every rank can read (a shared file system across hosts), marked with
/// `runId` (LaunchEnvironment::runId). The writer (rank 0) writes it whole
/// (a temporary file linked into place); a file already there is an
/// earlier run's when both have run ids and they differ (then replaced),
/// else refused (another run may be using it). The others wait up to
/// `timeoutSeconds` for a file of their run (with run ids, an earlier
/// run's is not taken), then read `data`. A file that is not one written
/// here, or of another size, is an error naming the file. PIPE_RT_* status.
int shareThroughFile(const std::string &path, bool writer, void *data,
                     size_t bytes, double timeoutSeconds,
                     const std::string &runId, std::string &error);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_LAUNCH_H
