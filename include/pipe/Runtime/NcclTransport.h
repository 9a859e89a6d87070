//===- NcclTransport.h - Transfers between ranks' GPUs over NCCL -*- C++
//-*-===//
//
// PipeRuntimeCUDA's pipe_rt::Transport for runs with one process per group
// of GPUs (`mpirun ... pipe-runner-cuda --transport nccl`): the transfers
// between devices of different ranks go GPU to GPU through NCCL, and the
// data-parallel buckets are summed by ncclAllReduce; the ranks' agreements
// and the gradient meetings go through a bootstrap transport (MPI), or
// through NCCL too where the ranks were started without MPI. See
// docs/distributed.md, "NCCL between processes".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_NCCLTRANSPORT_H
#define PIPE_RUNTIME_NCCLTRANSPORT_H

#include "pipe/Runtime/Launch.h"
#include "pipe/Runtime/Transport.h"

#include <memory>
#include <string>

struct pipe_rt_session;

namespace pipe_rt {

/// The NCCL transport of `session`, which must run on GPUs
/// (pipe_rt_cuda_session_enable), over `bootstrap`; null with `error` when
/// the runtime was built without NCCL. Its communicators are made when
/// attachTransport connects it.
std::shared_ptr<Transport>
createNcclTransport(pipe_rt_session *session,
                    std::shared_ptr<Transport> bootstrap, std::string &error);

/// The same without a bootstrap, for ranks started by a launcher without
/// MPI (`launch`, readLaunchEnvironment): makes the communicator of all
/// ranks now, from NCCL's unique id that every rank makes or that rank 0
/// writes to a file (ncclIdSource decides, from the environment;
/// shareThroughFile; the file is removed once every rank joined), waiting
/// at most `watchdogSeconds` for the others. Every other message goes
/// through it too, so each rank must run one device.
std::shared_ptr<Transport> createNcclTransport(pipe_rt_session *session,
                                               const LaunchEnvironment &launch,
                                               double watchdogSeconds,
                                               std::string &error);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_NCCLTRANSPORT_H
