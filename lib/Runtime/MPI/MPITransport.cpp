//===- MPITransport.cpp - pipe_rt::Transport over MPI ---------------------===//
//
// A duplicate of MPI_COMM_WORLD per Transport::Channel, so that the tags of
// transfers, meetings and agreements never meet. Point to point: the
// ranks' agreements are built on it (Ranks.cpp) so that a stuck peer is
// named, which a blocking MPI collective cannot do (the one blocking
// collective, MPI_Comm_split at start-up under NCCL's rules, comes right
// after an agreement of every rank). Device threads post and
// test concurrently; one mutex serialises the MPI calls (needs at least
// MPI_THREAD_SERIALIZED; requests MPI_THREAD_MULTIPLE), and completion is
// polled with MPI_Test so that no thread ever blocks inside MPI holding it.
// Errors are returned (MPI_ERRORS_RETURN), not fatal. With transfers by
// order (NCCL's rules, to check a program for NCCL on CPUs) a transfer's
// tag names only its device pair and its send is synchronous (MPI_Issend),
// and data-parallel buckets of device buffers are summed as NCCL sums
// them: an all-reduce in place (MPI_Iallreduce) on a communicator of each
// device's replicas.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/MPI.h"

#include "pipe/Runtime/Comm.h"
#include "pipe/Runtime/Status.h"

#include "../Backend.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>

using namespace pipe_rt;

namespace {

std::string mpiError(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    length = 0;
  return std::string(what) + ": " + std::string(text, size_t(length));
}

class MPITransport final : public Transport {
public:
  MPITransport(bool initialized, bool transfersByOrder)
      : initialized(initialized), transfersByOrder(transfersByOrder) {
    MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    // The ranks sharing this host's memory: their order picks the GPUs.
    MPI_Comm host;
    hostFound =
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, myRank,
                            MPI_INFO_NULL, &host) == MPI_SUCCESS;
    if (hostFound) {
      MPI_Comm_rank(host, &hostRank);
      MPI_Comm_free(&host);
    }
    for (MPI_Comm &comm : comms) {
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    int *ub = nullptr, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    tagUpperBound = found && ub ? *ub : 32767;
  }
  ~MPITransport() override {
    for (MPI_Comm &comm : comms)
      MPI_Comm_free(&comm);
    for (auto &[device, comm] : replicaComms)
      MPI_Comm_free(&comm);
    if (initialized)
      MPI_Finalize();
  }

  const char *name() const override {
    return transfersByOrder ? "MPI with transfers in order" : "MPI";
  }
  int rank() const override { return myRank; }
  int size() const override { return worldSize; }
  int localRank() const override { return hostRank; }
  /// Whether MPI told which ranks share this host.
  bool knowsHost() const { return hostFound; }
  int maxTag() const override { return tagUpperBound; }
  bool matchesTransfersByOrder() const override { return transfersByOrder; }
  /// Under NCCL's rules it carries device buffers as NCCL would, where
  /// they are host memory (the staged backend); MPI is not asked to read
  /// GPU memory.
  bool carriesDeviceMemory(const DeviceMemory &memory) const override {
    return transfersByOrder && memory.hostBacked();
  }

  /// Under NCCL's rules, as NCCL would (f32 only: what MPI sums natively
  /// among the runtime's gradient types).
  bool reducesBuckets(const DeviceMemory &memory, int dtype) const override {
    return transfersByOrder && memory.hostBacked() &&
           dtype == PIPE_RT_DTYPE_F32;
  }

  int connectReplicas(const std::vector<std::vector<int>> &groups,
                      const std::vector<int> &, std::string &error) override {
    if (!transfersByOrder)
      return PIPE_RT_OK;
    for (size_t d = 0; d < groups.size(); ++d) {
      const std::vector<int> &group = groups[d];
      auto at = std::find(group.begin(), group.end(), myRank);
      bool member = at != group.end();
      MPI_Comm comm = MPI_COMM_NULL;
      // Collective over every rank; ordered by replica within the group.
      if (int st = checked(
              "MPI_Comm_split",
              MPI_Comm_split(MPI_COMM_WORLD, member ? int(d) : MPI_UNDEFINED,
                             member ? int(at - group.begin()) : 0, &comm),
              error))
        return st;
      if (member) {
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        replicaComms[int(d)] = comm;
      }
    }
    return PIPE_RT_OK;
  }

  int allReduce(int device, void *data, uint64_t count, int dtype,
                uint64_t &request, std::string &error) override {
    auto it = replicaComms.find(device);
    if (it == replicaComms.end() || dtype != PIPE_RT_DTYPE_F32 ||
        count > uint64_t(INT_MAX)) {
      error = "MPI: no all-reduce of device " + std::to_string(device) +
              "'s replicas of that type or size";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    std::lock_guard<std::mutex> lock(mu);
    Posted p{MPI_REQUEST_NULL, 0, -1, false, true};
    if (int st =
            checked("MPI_Iallreduce",
                    MPI_Iallreduce(MPI_IN_PLACE, data, int(count), MPI_FLOAT,
                                   MPI_SUM, it->second, &p.request),
                    error))
      return st;
    request = nextRequest++;
    requests.emplace(request, p);
    return PIPE_RT_OK;
  }

  int isend(Channel channel, int peer, int tag, const void *data,
            uint64_t bytes, uint64_t &request, std::string &error) override {
    return postMessage(true, channel, peer, tag, const_cast<void *>(data),
                       bytes, request, error);
  }
  int irecv(Channel channel, int peer, int tag, void *data, uint64_t bytes,
            uint64_t &request, std::string &error) override {
    return postMessage(false, channel, peer, tag, data, bytes, request, error);
  }

  int test(uint64_t request, bool &done, std::string &error) override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = requests.find(request);
    if (it == requests.end()) {
      error = "MPI: unknown request";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    Posted &p = it->second;
    int flag = 0;
    MPI_Status status;
    int rc = MPI_Test(&p.request, &flag, &status);
    done = flag != 0;
    if (rc == MPI_SUCCESS && done && p.receiving) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (uint64_t(count) != p.bytes) {
        error = "MPI: rank " + std::to_string(p.peer) + " sent " +
                std::to_string(count) + " bytes, " + std::to_string(p.bytes) +
                " expected (another program on that rank?)";
        requests.erase(it);
        return PIPE_RT_SIZE_MISMATCH;
      }
    }
    if (rc != MPI_SUCCESS) {
      int errorClass = 0;
      MPI_Error_class(rc, &errorClass);
      error = mpiError(p.collective  ? "MPI_Iallreduce"
                       : p.receiving ? "MPI_Irecv"
                                     : "MPI_Isend",
                       rc);
      requests.erase(it);
      return errorClass == MPI_ERR_TRUNCATE ? PIPE_RT_SIZE_MISMATCH
                                            : PIPE_RT_INVALID_ARGUMENT;
    }
    if (done)
      requests.erase(it);
    return PIPE_RT_OK;
  }

  /// Cancels every posted request and waits a moment for them to end
  /// (cancelled or completed). A collective cannot be cancelled (MPI's
  /// rule): one still running keeps its buffer (false).
  bool abortTransfers() override {
    std::lock_guard<std::mutex> lock(mu);
    for (auto &[id, p] : requests)
      if (!p.collective)
        MPI_Cancel(&p.request);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!requests.empty() && std::chrono::steady_clock::now() < deadline)
      for (auto it = requests.begin(); it != requests.end();) {
        int flag = 0;
        MPI_Test(&it->second.request, &flag, MPI_STATUS_IGNORE);
        it = flag ? requests.erase(it) : std::next(it);
      }
    return requests.empty();
  }

  [[noreturn]] void abortJob(int exitCode) override {
    MPI_Abort(MPI_COMM_WORLD, exitCode);
    std::_Exit(exitCode);
  }

private:
  struct Posted {
    MPI_Request request;
    uint64_t bytes;
    int peer;
    bool receiving;
    bool collective = false;
  };

  int checked(const char *what, int rc, std::string &error) {
    if (rc == MPI_SUCCESS)
      return PIPE_RT_OK;
    error = mpiError(what, rc);
    return PIPE_RT_INVALID_ARGUMENT;
  }

  int postMessage(bool sending, Channel channel, int peer, int tag, void *data,
                  uint64_t bytes, uint64_t &request, std::string &error) {
    if (bytes > uint64_t(INT_MAX) || tag < 0 || tag > tagUpperBound ||
        peer < 0 || peer >= worldSize) {
      error = "MPI: message out of range (bytes, tag or rank)";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    MPI_Comm comm = comms[int(channel)];
    std::lock_guard<std::mutex> lock(mu);
    Posted p{MPI_REQUEST_NULL, bytes, peer, !sending};
    // NCCL's send completes once received: a synchronous send.
    bool synchronous = transfersByOrder && channel == Channel::Transfers;
    int rc = !sending ? MPI_Irecv(data, int(bytes), MPI_BYTE, peer, tag, comm,
                                  &p.request)
             : synchronous ? MPI_Issend(data, int(bytes), MPI_BYTE, peer, tag,
                                        comm, &p.request)
                           : MPI_Isend(data, int(bytes), MPI_BYTE, peer, tag,
                                       comm, &p.request);
    if (int st = checked(sending ? "MPI_Isend" : "MPI_Irecv", rc, error))
      return st;
    request = nextRequest++;
    requests.emplace(request, p);
    return PIPE_RT_OK;
  }

  bool initialized, transfersByOrder;
  int myRank = 0, worldSize = 1, hostRank = 0, tagUpperBound = 32767;
  bool hostFound = false;
  MPI_Comm comms[3] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
  /// Program device -> the communicator of its replicas (this rank's
  /// devices; connectReplicas).
  std::map<int, MPI_Comm> replicaComms;
  std::mutex mu;
  std::map<uint64_t, Posted> requests;
  uint64_t nextRequest = 1;
};

} // namespace

bool pipe_rt::launchedByMpiLauncher() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

std::shared_ptr<Transport> pipe_rt::createMpiTransport(int *argc, char ***argv,
                                                       std::string &error,
                                                       bool transfersByOrder) {
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS) {
      error = "MPI_Init_thread failed";
      return nullptr;
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      error = "the MPI library gives no thread support (MPI_THREAD_SERIALIZED "
              "or better is needed)";
      MPI_Finalize();
      return nullptr;
    }
  }
  auto transport = std::make_shared<MPITransport>(!already, transfersByOrder);
  if (!transport->knowsHost()) {
    error = "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed: the ranks "
            "sharing this host are unknown";
    return nullptr;
  }
  return transport;
}
