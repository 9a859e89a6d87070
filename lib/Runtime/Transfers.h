//===- Transfers.h - The transfers room of a run ----------------*- C++ -*-===//
//
// Private to the runtime. The room that moves data between devices and
// between a device and host memory asynchronously: the sends and recvs of
// activations and gradients over a Communicator, the buffers a by-reference
// send leaves in flight, each device's copy engines (h2d, d2h job queues)
// and the tokens that pipe_rt_act_wait completes. Distributed execution
// puts a second Communicator (MPI, NCCL) behind the same room.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_TRANSFERS_H
#define PIPE_RUNTIME_TRANSFERS_H

#include "JobQueue.h"
#include "Memory.h"

#include "pipe/Runtime/Devices.h"
#include "pipe/Runtime/Program.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pipe_rt {

enum class TrackKind;

/// Channels between the devices of a run: a send and the recv with the same
/// key meet, the payload lands in the recv's target. Thread-safe; each
/// device calls it from its own thread. Errors set `error`.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int send(int device, const pipe_rt_channel_key &key,
                   const void *payload, uint64_t bytes, pipe_rt_token &token,
                   std::string &error) = 0;
  /// `target` (`bytes`) must stay valid until wait() returned.
  virtual int recv(int device, const pipe_rt_channel_key &key, void *target,
                   uint64_t bytes, pipe_rt_token &token,
                   std::string &error) = 0;
  /// Blocks until the transfer completed; PIPE_RT_ABORTED when another
  /// device failed first, PIPE_RT_TIMEOUT past the watchdog.
  virtual int wait(int device, pipe_rt_token token, std::string &error) = 0;
};

/// The channels of the simulated devices (pipe_rt_send/recv/wait): every
/// device of the run in this process.
std::unique_ptr<Communicator> inProcessCommunicator(pipe_rt_devices *devs);
/// `inner`'s channels for `replicas` in-process replicas of a program of
/// `devices` devices (device r * devices + d is replica r's device d): each
/// replica's messages on channels of their own.
std::unique_ptr<Communicator>
replicaCommunicator(std::unique_ptr<Communicator> inner, int devices,
                    int replicas);

/// An asynchronous action waiting for pipe_rt_act_wait.
struct PendingToken {
  pipe_rt_token channel = 0; // a send/recv, or 0 for a job
  JobQueue *queue = nullptr;
  JobQueue::JobPtr job;
  /// Runs on the device thread once the transfer/job succeeded.
  std::function<int(std::string &)> onDone;
  BufferPtr keepAlive; // a recv's target, or a send's packed device buffer
  std::shared_ptr<uint64_t> inFlightId; // a by-reference recv's target
  std::string what;
  double start = 0;
  int link = -1;
};

/// A transfer's buffer between its query (pipe_rt_comm_send_buffer /
/// recv_buffer) and the send or recv that moves it.
struct PostedBuffer {
  bool sending = false;
  pipe_rt_channel_key key{};
  /// What the message is, as the send or recv must name it.
  int64_t count = 0;
  int32_t dtype = 0;
  int peerDevice = -1;
  /// The bytes that travel: a send's packed values or, by reference, the
  /// id of its in-flight buffers; a recv's target is in `token`, of
  /// `bytes`.
  std::vector<unsigned char> payload;
  uint64_t bytes = 0;
  std::shared_ptr<PendingToken> token;
};

/// The transfers of one run. Each device's tokens are only touched by its
/// own thread; `inFlightMu` guards the in-flight buffers.
class Transfers {
public:
  /// `byReference`: sends carry buffers by reference (an id into the
  /// in-flight table), the receiver copies them device to device; for
  /// memory the host cannot address.
  Transfers(int numDevices, std::unique_ptr<Communicator> channels,
            bool byReference);
  ~Transfers();

  bool byReference() const { return byRef; }
  Communicator &channels() { return *comm; }
  /// The copy engines of `device`.
  JobQueue &h2d(int device) { return *engines[device].h2d; }
  JobQueue &d2h(int device) { return *engines[device].d2h; }
  /// Runs every queued copy job, then stops the engines.
  void drain();

  /// A token of `device` for pipe_rt_act_wait; takeToken removes it (null
  /// when unknown).
  int64_t addToken(int device, std::shared_ptr<PendingToken> token);
  std::shared_ptr<PendingToken> takeToken(int device, int64_t token);

  /// The buffers `device` obtained and has not moved yet, by address;
  /// takePosted removes one (false when `buffer` is none of them).
  void addPosted(int device, const void *buffer, PostedBuffer posted);
  bool takePosted(int device, const void *buffer, PostedBuffer &posted);

  /// By reference: keeps a send's buffers (null: zeros) until the receiver
  /// takes them; returns their id.
  uint64_t putInFlight(int device, std::vector<BufferPtr> buffers);
  /// The buffers of in-flight id `id` and the device that sent them; false
  /// when gone or not `count` of them.
  bool takeInFlight(uint64_t id, size_t count, int &srcDevice,
                    std::vector<BufferPtr> &buffers);

  /// `src`, a buffer of any device, as `device` may read it: `src` itself
  /// when it is there or the devices share memory (not by reference), else
  /// a copy into `device`'s memory on its compute lane (reduce_grad).
  int pullPeer(RunMemory &memory, int device, const BufferPtr &src,
               const char *what, BufferPtr &out, std::string &error);

private:
  struct Engines {
    std::unique_ptr<JobQueue> h2d, d2h;
    std::map<int64_t, std::shared_ptr<PendingToken>> tokens;
    int64_t nextToken = 1;
    std::map<const void *, PostedBuffer> posted;
  };
  std::unique_ptr<Communicator> comm;
  bool byRef;
  std::vector<Engines> engines;
  std::mutex inFlightMu;
  std::map<uint64_t, std::pair<int, std::vector<BufferPtr>>> inFlight;
  uint64_t nextInFlight = 1;
};

/// Queues `work` on `queue` as the asynchronous part of an action of
/// `ctx`'s device; traced on `kind`'s track. Returns its token.
/// A token of `ctx`'s device for `job` of `queue`, submitted elsewhere (a
/// joint job that several devices wait for).
int64_t addJobToken(pipe_rt_device_ctx *ctx, JobQueue &queue,
                    JobQueue::JobPtr job, const std::string &what);

int64_t submitJob(pipe_rt_device_ctx *ctx, JobQueue &queue, TrackKind kind,
                  const char *category, const std::string &what,
                  std::function<int(std::string &)> work,
                  JobQueue::JobPtr *submitted = nullptr,
                  std::pair<int64_t, int64_t> priority = {0, 0},
                  std::vector<JobQueue::Pending> after = {});

} // namespace pipe_rt

#endif // PIPE_RUNTIME_TRANSFERS_H
