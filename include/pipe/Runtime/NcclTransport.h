//===- NcclTransport.h - Transfers between ranks' GPUs over NCCL -*- C++
//-*-===//
//
// PipeRuntimeCUDA's pipe_rt::Transport for runs with one process per group
// of GPUs (`mpirun ... pipe-runner-cuda --transport nccl`): the transfers
// between devices of different ranks go GPU to GPU through NCCL; the ranks'
// agreements and the gradient meetings and buckets go through a bootstrap
// transport (MPI). See docs/distributed.md, "NCCL between processes".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_NCCLTRANSPORT_H
#define PIPE_RUNTIME_NCCLTRANSPORT_H

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

} // namespace pipe_rt

#endif // PIPE_RUNTIME_NCCLTRANSPORT_H
