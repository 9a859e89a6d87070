//===- MPI.h - The MPI transport of distributed runs ------------*- C++ -*-===//
//
// PipeRuntimeMPI (lib/Runtime/MPI): a pipe_rt::Transport over MPI, for runs
// launched by mpirun (or srun) with one process per group of devices. Built
// only when an MPI library is found; the runtime itself never needs libmpi.
// See docs/distributed.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_MPI_H
#define PIPE_RUNTIME_MPI_H

#include "pipe/Runtime/Transport.h"

#include <memory>
#include <string>

namespace pipe_rt {

/// True when this process was started by an MPI launcher (Open MPI's
/// mpirun, MPICH's hydra, Slurm's PMI): its environment names a world.
bool launchedByMpiLauncher();

/// Initialises MPI (MPI_THREAD_MULTIPLE) and returns the transport over
/// MPI_COMM_WORLD; null with `error` when MPI cannot run. MPI is finalised
/// when the last reference goes. `transfersByOrder`: NCCL's rules for
/// transfers (Transport::matchesTransfersByOrder; synchronous sends), so
/// that a run on CPUs shows whether a program can run over NCCL.
std::shared_ptr<Transport> createMpiTransport(int *argc, char ***argv,
                                              std::string &error,
                                              bool transfersByOrder = false);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_MPI_H
