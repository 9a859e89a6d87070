//===- Nccl.cpp - NCCL in one process, with a watchdog --------------------===//
//
// pipe_rt_cuda_nccl_self_test: what one GPU can check of NCCL (two ranks on
// one GPU are not allowed): a single-rank communicator from
// ncclCommInitAll, a self send/recv in one group and an all-reduce.
// NcclCopies (Driver.h): the device-to-device copies of a session's
// transfers and reductions as NCCL send/recv pairs. Both wait by polling
// the stream and ncclCommGetAsyncError against a deadline (a hung
// operation is aborted with ncclCommAbort and reported, never waited on
// forever). Built without NCCL (PIPE_RT_HAVE_NCCL undefined) they report
// that.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "pipe/Runtime/CUDA.h"
#include "pipe/Runtime/Status.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#ifdef PIPE_RT_HAVE_NCCL
#include <nccl.h>
#endif

using namespace pipe_rt;
using namespace pipe_rt::cuda;

namespace {

void writeError(char *error, size_t size, const std::string &msg) {
  if (error && size)
    std::snprintf(error, size, "%s", msg.c_str());
}

} // namespace

#ifndef PIPE_RT_HAVE_NCCL

const char *const kWithoutNccl =
    "PipeRuntimeCUDA was built without NCCL (set "
    "PIPE_CUDA_NCCL_INCLUDE_DIR and PIPE_CUDA_NCCL_LIBRARY)";

extern "C" int pipe_rt_cuda_nccl_self_test(int, uint64_t, double, char *error,
                                           size_t errorSize) {
  writeError(error, errorSize, kWithoutNccl);
  return PIPE_RT_DEVICE_ERROR;
}

std::unique_ptr<NcclCopies>
pipe_rt::cuda::NcclCopies::create(const std::vector<Gpu *> &,
                                  std::string &error) {
  error = kWithoutNccl;
  return nullptr;
}

bool pipe_rt::cuda::NcclCopies::built(std::string &error) {
  error = kWithoutNccl;
  return false;
}

#else

namespace {

/// NCCL work queued on `stream` (of `gpu`) for communicator `comm`.
struct NcclWork {
  ncclComm_t &comm;
  CUstream stream;
  Gpu &gpu;
};

/// Polls the streams and the communicators of `work` until all of it is
/// done; on an error of any or the watchdog, aborts (and nulls) every one.
int waitNccl(const std::vector<NcclWork> &work, double seconds,
             const std::string &what, std::string &error) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto abortAll = [&] {
    for (const NcclWork &w : work)
      if (w.comm) {
        ncclCommAbort(w.comm);
        w.comm = nullptr;
      }
  };
  while (true) {
    bool done = true;
    for (const NcclWork &w : work) {
      makeCurrent(w.gpu);
      CUresult r = cuStreamQuery(w.stream);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
        error = what + ": " + driverError("cuStreamQuery", r);
        abortAll();
        return PIPE_RT_DEVICE_ERROR;
      }
      done &= r == CUDA_SUCCESS;
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(w.comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        error = what + ": NCCL: " + ncclGetErrorString(async);
        abortAll();
        return PIPE_RT_DEVICE_ERROR;
      }
    }
    if (done)
      return PIPE_RT_OK;
    if (std::chrono::steady_clock::now() > deadline) {
      error = format("%s did not finish within %g s (watchdog); the "
                     "communicator was aborted",
                     what.c_str(), seconds);
      abortAll();
      return PIPE_RT_TIMEOUT;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

class NcclCopiesImpl final : public NcclCopies {
public:
  explicit NcclCopiesImpl(std::vector<Gpu *> gpus) : members(std::move(gpus)) {}

  ~NcclCopiesImpl() override {
    for (size_t i = 0; i < members.size(); ++i) {
      if (comms[i])
        ncclCommDestroy(comms[i]);
      if (sendStreams[i]) {
        makeCurrent(*members[i]);
        cuStreamDestroy(sendStreams[i]);
      }
    }
  }

  int init(std::string &error) {
    size_t n = members.size();
    comms.assign(n, nullptr);
    sendStreams.assign(n, nullptr);
    std::vector<int> ordinals;
    for (Gpu *g : members)
      ordinals.push_back(g->ordinal);
    if (ncclResult_t r =
            ncclCommInitAll(comms.data(), int(n), ordinals.data())) {
      comms.assign(n, nullptr);
      error = std::string("ncclCommInitAll: ") + ncclGetErrorString(r);
      return PIPE_RT_DEVICE_ERROR;
    }
    // A copy between two GPUs sends on a stream of the source GPU, apart
    // from the streams the source device's own thread uses.
    for (size_t i = 0; i < n; ++i) {
      makeCurrent(*members[i]);
      if (CUresult r =
              cuStreamCreate(&sendStreams[i], CU_STREAM_NON_BLOCKING)) {
        error = format("GPU %d: ", members[i]->ordinal) +
                driverError("cuStreamCreate", r);
        return PIPE_RT_DEVICE_ERROR;
      }
    }
    return PIPE_RT_OK;
  }

  const std::vector<Gpu *> &gpus() const override { return members; }
  bool aborted() const override {
    std::lock_guard<std::mutex> lock(mu);
    return wasAborted;
  }

  int copy(Gpu &to, CUstream stream, void *dst, Gpu &from, const void *src,
           uint64_t bytes, double watchdog, const std::string &what,
           std::string &error) override {
    if (!bytes)
      return PIPE_RT_OK;
    std::lock_guard<std::mutex> lock(mu);
    int dstRank = rankOf(to), srcRank = rankOf(from);
    if (dstRank < 0 || srcRank < 0) {
      error = what + ": GPU " +
              std::to_string(dstRank < 0 ? to.ordinal : from.ordinal) +
              " has no NCCL communicator";
      return PIPE_RT_DEVICE_ERROR;
    }
    if (wasAborted) {
      error = what + ": the NCCL communicators were aborted by an earlier "
                     "error";
      return PIPE_RT_DEVICE_ERROR;
    }
    // A self send/recv stays on one stream, as one rank's pair must.
    CUstream sendStream = srcRank == dstRank ? stream : sendStreams[srcRank];
    ncclGroupStart();
    ncclResult_t s =
        ncclSend(src, bytes, ncclInt8, dstRank, comms[srcRank], sendStream);
    ncclResult_t r =
        ncclRecv(dst, bytes, ncclInt8, srcRank, comms[dstRank], stream);
    ncclResult_t e = ncclGroupEnd();
    int status = PIPE_RT_OK;
    for (ncclResult_t x : {s, r, e})
      if (x != ncclSuccess && status == PIPE_RT_OK) {
        error = what + ": NCCL send/recv: " + ncclGetErrorString(x);
        status = PIPE_RT_DEVICE_ERROR;
      }
    if (status == PIPE_RT_OK) {
      std::vector<NcclWork> work = {{comms[dstRank], stream, to}};
      if (sendStream != stream)
        work.push_back({comms[srcRank], sendStream, from});
      status = waitNccl(work, watchdog, what, error);
    }
    if (status != PIPE_RT_OK)
      abortAll();
    // The group and the polling may leave another GPU current.
    makeCurrent(to);
    return status;
  }

private:
  int rankOf(const Gpu &g) const {
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == &g)
        return int(i);
    return -1;
  }
  /// After an error no later copy may meet a half-finished one.
  void abortAll() {
    wasAborted = true;
    for (ncclComm_t &c : comms)
      if (c) {
        ncclCommAbort(c);
        c = nullptr;
      }
  }

  std::vector<Gpu *> members;
  std::vector<ncclComm_t> comms;
  std::vector<CUstream> sendStreams;
  mutable std::mutex mu;
  bool wasAborted = false;
};

} // namespace

std::unique_ptr<NcclCopies>
pipe_rt::cuda::NcclCopies::create(const std::vector<Gpu *> &gpus,
                                  std::string &error) {
  auto copies = std::make_unique<NcclCopiesImpl>(gpus);
  if (copies->init(error) != PIPE_RT_OK)
    return nullptr;
  return copies;
}

bool pipe_rt::cuda::NcclCopies::built(std::string &) { return true; }

extern "C" int pipe_rt_cuda_nccl_self_test(int ordinal, uint64_t bytes,
                                           double watchdog, char *error,
                                           size_t errorSize) {
  std::string message;
  Gpu *g = gpu(ordinal, message);
  if (!g) {
    writeError(error, errorSize, message);
    return PIPE_RT_DEVICE_ERROR;
  }
  makeCurrent(*g);
  bytes = (bytes + 3) / 4 * 4;
  size_t count = bytes / 4;
  std::string where = format("GPU %d: NCCL", ordinal);
  ncclComm_t comm = nullptr;
  int devs[1] = {ordinal};
  if (ncclResult_t r = ncclCommInitAll(&comm, 1, devs)) {
    writeError(error, errorSize,
               where + ": ncclCommInitAll: " + ncclGetErrorString(r));
    return PIPE_RT_DEVICE_ERROR;
  }
  makeCurrent(*g);
  CUstream stream = nullptr;
  void *buffers[3] = {nullptr, nullptr, nullptr}; // send, recv, reduced
  int status = PIPE_RT_OK;
  auto failWith = [&](int st, const std::string &msg) {
    if (status == PIPE_RT_OK) {
      status = st;
      message = msg;
    }
  };
  if (CUresult r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))
    failWith(PIPE_RT_DEVICE_ERROR, driverError("cuStreamCreate", r));
  for (void *&b : buffers)
    if (status == PIPE_RT_OK && g->pool->alloc(bytes, &b, message))
      failWith(PIPE_RT_DEVICE_ERROR, message);
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i)
    host[i] = float(i % 1000) * 0.5f;
  if (status == PIPE_RT_OK) {
    cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(buffers[0]), host.data(), bytes);
    cuMemsetD8(reinterpret_cast<CUdeviceptr>(buffers[1]), 0, bytes);
    ncclGroupStart();
    ncclResult_t s = ncclSend(buffers[0], count, ncclFloat, 0, comm, stream);
    ncclResult_t r = ncclRecv(buffers[1], count, ncclFloat, 0, comm, stream);
    ncclResult_t e = ncclGroupEnd();
    for (ncclResult_t x : {s, r, e})
      if (x != ncclSuccess)
        failWith(PIPE_RT_DEVICE_ERROR,
                 std::string("send/recv: ") + ncclGetErrorString(x));
  }
  if (status == PIPE_RT_OK) {
    std::string e;
    if (int st = waitNccl({{comm, stream, *g}}, watchdog,
                          where + " self send/recv", e))
      failWith(st, e);
  }
  if (status == PIPE_RT_OK) {
    if (ncclResult_t x = ncclAllReduce(buffers[1], buffers[2], count, ncclFloat,
                                       ncclSum, comm, stream))
      failWith(PIPE_RT_DEVICE_ERROR,
               std::string("all-reduce: ") + ncclGetErrorString(x));
    std::string e;
    if (status == PIPE_RT_OK)
      if (int st = waitNccl({{comm, stream, *g}}, watchdog,
                            where + " all-reduce", e))
        failWith(st, e);
  }
  if (status == PIPE_RT_OK) {
    std::vector<float> back(count);
    for (int i : {1, 2}) {
      cuMemcpyDtoH(back.data(), reinterpret_cast<CUdeviceptr>(buffers[i]),
                   bytes);
      if (back != host) {
        failWith(PIPE_RT_DEVICE_ERROR,
                 i == 1 ? "self send/recv delivered wrong data"
                        : "single-rank all-reduce changed the data");
        break;
      }
    }
  }
  if (comm) // null once aborted
    ncclCommDestroy(comm);
  for (void *b : buffers)
    if (b)
      g->pool->release(b);
  if (stream)
    cuStreamDestroy(stream);
  if (status != PIPE_RT_OK)
    writeError(error, errorSize, where + ": " + message);
  return status;
}

#endif
