//===- Transfers.cpp - The transfers room of a run ------------------------===//
//
// The room's state (Transfers.h), the in-process Communicator, the transport
// ABI's entry points (pipe/Runtime/Comm.h) and the transfer actions:
// pipe_rt_act_wait, offload and prefetch.
//
//===----------------------------------------------------------------------===//

#include "Transfers.h"

#include "Actions.h"
#include "Format.h"
#include "Ranks.h"

#include <cstring>
#include <optional>

using namespace pipe_rt;

namespace {

class InProcessCommunicator final : public Communicator {
public:
  explicit InProcessCommunicator(pipe_rt_devices *devs) : devs(devs) {}
  int send(int device, const pipe_rt_channel_key &key, const void *payload,
           uint64_t bytes, pipe_rt_token &token, std::string &error) override {
    int st = pipe_rt_send(devs, device, &key, payload, bytes, &token);
    if (st != PIPE_RT_OK)
      error = pipe_rt_last_error(devs);
    return st;
  }
  int recv(int device, const pipe_rt_channel_key &key, void *target,
           uint64_t bytes, pipe_rt_token &token, std::string &error) override {
    int st = pipe_rt_recv(devs, device, &key, target, bytes, &token);
    if (st != PIPE_RT_OK)
      error = pipe_rt_last_error(devs);
    return st;
  }
  int wait(int device, pipe_rt_token token, std::string &error) override {
    int st = pipe_rt_wait(devs, device, token);
    if (st != PIPE_RT_OK)
      error = pipe_rt_last_error(devs);
    return st;
  }

private:
  pipe_rt_devices *devs;
};

} // namespace

std::unique_ptr<Communicator>
pipe_rt::inProcessCommunicator(pipe_rt_devices *devs) {
  return std::make_unique<InProcessCommunicator>(devs);
}

namespace {
/// In-process replicas send the same (kind, stages, micro-batch, step)
/// messages: each replica's go on its own channels, the step's key being
/// step x replicas + replica (what a channel's errors then print).
class ReplicaCommunicator final : public Communicator {
public:
  ReplicaCommunicator(std::unique_ptr<Communicator> inner, int devices,
                      int replicas)
      : inner(std::move(inner)), devices(devices), replicas(replicas) {}
  int send(int device, const pipe_rt_channel_key &key, const void *payload,
           uint64_t bytes, pipe_rt_token &token, std::string &error) override {
    return inner->send(device, ofReplica(device, key), payload, bytes, token,
                       error);
  }
  int recv(int device, const pipe_rt_channel_key &key, void *target,
           uint64_t bytes, pipe_rt_token &token, std::string &error) override {
    return inner->recv(device, ofReplica(device, key), target, bytes, token,
                       error);
  }
  int wait(int device, pipe_rt_token token, std::string &error) override {
    return inner->wait(device, token, error);
  }

private:
  pipe_rt_channel_key ofReplica(int device,
                                const pipe_rt_channel_key &key) const {
    pipe_rt_channel_key k = key;
    k.step = key.step * replicas + device / devices;
    return k;
  }
  std::unique_ptr<Communicator> inner;
  int devices, replicas;
};
} // namespace

std::unique_ptr<Communicator>
pipe_rt::replicaCommunicator(std::unique_ptr<Communicator> inner, int devices,
                             int replicas) {
  return std::make_unique<ReplicaCommunicator>(std::move(inner), devices,
                                               replicas);
}

//===----------------------------------------------------------------------===//
// The room
//===----------------------------------------------------------------------===//

Transfers::Transfers(int numDevices, std::unique_ptr<Communicator> channels,
                     bool byReference)
    : comm(std::move(channels)), byRef(byReference), engines(numDevices) {
  for (Engines &e : engines) {
    e.h2d = std::make_unique<JobQueue>();
    e.d2h = std::make_unique<JobQueue>();
  }
}

Transfers::~Transfers() { drain(); }

void Transfers::drain() {
  for (Engines &e : engines) {
    e.h2d.reset();
    e.d2h.reset();
  }
}

int64_t Transfers::addToken(int device, std::shared_ptr<PendingToken> t) {
  Engines &e = engines[device];
  int64_t id = e.nextToken++;
  e.tokens.emplace(id, std::move(t));
  return id;
}

std::shared_ptr<PendingToken> Transfers::takeToken(int device, int64_t token) {
  Engines &e = engines[device];
  auto it = e.tokens.find(token);
  if (it == e.tokens.end())
    return nullptr;
  std::shared_ptr<PendingToken> t = std::move(it->second);
  e.tokens.erase(it);
  return t;
}

void Transfers::addPosted(int device, const void *buffer, PostedBuffer posted) {
  engines[device].posted[buffer] = std::move(posted);
}

bool Transfers::takePosted(int device, const void *buffer,
                           PostedBuffer &posted) {
  Engines &e = engines[device];
  auto it = e.posted.find(buffer);
  if (it == e.posted.end())
    return false;
  posted = std::move(it->second);
  e.posted.erase(it);
  return true;
}

uint64_t Transfers::putInFlight(int device, std::vector<BufferPtr> buffers) {
  std::lock_guard<std::mutex> lock(inFlightMu);
  uint64_t id = nextInFlight++;
  inFlight[id] = {device, std::move(buffers)};
  return id;
}

bool Transfers::takeInFlight(uint64_t id, size_t count, int &srcDevice,
                             std::vector<BufferPtr> &buffers) {
  std::lock_guard<std::mutex> lock(inFlightMu);
  auto it = inFlight.find(id);
  if (it == inFlight.end() || it->second.second.size() != count)
    return false;
  srcDevice = it->second.first;
  buffers = std::move(it->second.second);
  inFlight.erase(it);
  return true;
}

int Transfers::pullPeer(RunMemory &memory, int device, const BufferPtr &src,
                        const char *what, BufferPtr &out, std::string &error) {
  out = src;
  if (src->device == device || !byRef)
    return PIPE_RT_OK;
  if (int st = memory.alloc(device, src->bytes, what, out, error))
    return st;
  return memory.copyPeer(device, out->data, src->device, src->data,
                         src->bytes, error);
}

int64_t pipe_rt::addJobToken(pipe_rt_device_ctx *ctx, JobQueue &queue,
                             JobQueue::JobPtr job, const std::string &what) {
  auto t = std::make_shared<PendingToken>();
  t->what = what;
  t->queue = &queue;
  t->job = std::move(job);
  return ctx->run->transfers->addToken(ctx->device, std::move(t));
}

int64_t pipe_rt::submitJob(pipe_rt_device_ctx *ctx, JobQueue &queue,
                           TrackKind kind, const char *category,
                           const std::string &what,
                           std::function<int(std::string &)> work,
                           JobQueue::JobPtr *submitted,
                           std::pair<int64_t, int64_t> priority,
                           std::vector<JobQueue::Pending> after) {
  RunState *run = ctx->run;
  int device = ctx->device;
  std::string label = traceName(what);
  auto t = std::make_shared<PendingToken>();
  t->what = what;
  t->queue = &queue;
  t->job = queue.submit(
      [=](std::string &error) {
        double t0 = run->now();
        int st = work(error);
        run->traceEvent(label, category, kind,
                        kind == TrackKind::Host ? 0 : device, t0, run->now());
        return st;
      },
      priority, std::move(after));
  if (submitted)
    *submitted = t->job;
  return run->transfers->addToken(device, std::move(t));
}

//===----------------------------------------------------------------------===//
// Transfer actions
//===----------------------------------------------------------------------===//

namespace {

/// The checks a send and a recv share; names the transfer in `what` and
/// finds the values it carries (activations travel src -> dst along edge
/// (src, dst), gradients back along the same edge).
int checkTransfer(pipe_rt_device_ctx *ctx, bool sending, int kind, int src,
                  int dst, int mb, int step, std::string &what,
                  const std::vector<int> *&values) {
  const char *name = sending
                         ? (kind == 0 ? "send activation" : "send gradient")
                         : (kind == 0 ? "recv activation" : "recv gradient");
  int local = sending ? src : dst, peer = sending ? dst : src;
  what = describe(ctx, name, local, mb, step);
  if (int st = checkAction(ctx, what, local, mb, step))
    return st;
  const Manifest &m = *ctx->run->m;
  if ((kind != 0 && kind != 1) || peer < 0 || peer >= int(m.stages.size()))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + (sending ? ": bad kind or dst" : ": bad kind or src"));
  what +=
      (sending ? " to stage '" : " from stage '") + m.stages[peer].name + "'";
  auto edge = m.edges.find(kind == 0 ? std::make_pair(src, dst)
                                     : std::make_pair(dst, src));
  if (edge == m.edges.end())
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no such edge");
  values = &edge->second;
  return PIPE_RT_OK;
}

/// Moves the buffers of a stash between the arena and host memory.
int moveStash(RunState *run, int device, int stage, int mb, int step,
              bool toHost, std::string &error) {
  DeviceState &ds = *run->devices[device];
  std::lock_guard<std::mutex> compute(ds.computeMu);
  std::set<Buffer *> buffers;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.stashes.find(std::make_tuple(stage, step, mb));
    if (it == ds.stashes.end()) {
      error = "nothing stashed for this micro-batch";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    for (auto &[v, b] : it->second.external)
      buffers.insert(b.get());
    for (auto &r : it->second.runs)
      for (auto *list : {&r.inputs, &r.saved, &r.cotangents})
        for (auto &b : *list)
          buffers.insert(b.get());
  }
  for (Buffer *b : buffers) {
    if ((b->device < 0) == toHost)
      continue;
    void *dst = nullptr;
    DeviceMemory &mem = run->memory.backend();
    if (toHost) {
      dst = mem.allocHost(b->bytes);
      if (!dst) {
        error = "host out of memory";
        return PIPE_RT_OUT_OF_MEMORY;
      }
    } else if (int st = mem.alloc(device, b->bytes, "prefetched activation",
                                  &dst, error)) {
      return st;
    }
    if (int st = run->memory.copy(device, toHost ? Lane::D2H : Lane::H2D, dst,
                                  b->data, b->bytes, error)) {
      toHost ? mem.freeHost(dst) : mem.free(device, dst);
      return st;
    }
    if (toHost)
      mem.free(device, b->data);
    else
      mem.freeHost(b->data);
    b->data = dst;
    b->device = toHost ? -1 : device;
  }
  return PIPE_RT_OK;
}

/// offload (to host memory, on the d2h lane) or prefetch (back, on the h2d
/// lane) of a stash: the asynchronous part of the action.
int64_t submitStashMove(pipe_rt_device_ctx *ctx, const char *kind,
                        int32_t stage, int32_t mb, int32_t step, bool toHost) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, kind, stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return -st;
  RunState *run = ctx->run;
  int device = ctx->device;
  return submitJob(
      ctx, toHost ? run->transfers->d2h(device) : run->transfers->h2d(device),
      toHost ? TrackKind::D2H : TrackKind::H2D, toHost ? "d2h" : "h2d", what,
      [=](std::string &error) {
        return moveStash(run, device, stage, mb, step, toHost, error);
      });
}

/// The element type and count of the message that carries `values`.
void messageShape(const Manifest &m, const std::vector<int> &values,
                  int64_t &count, int32_t &dtype, uint64_t &bytes) {
  count = 0;
  bytes = 0;
  std::optional<DType> common;
  bool mixed = false;
  for (int vid : values) {
    const TypeInfo &t = valueType(m, vid);
    count += t.numel;
    bytes += t.bytes();
    mixed |= common && *common != t.dtype;
    common = t.dtype;
  }
  dtype = common && !mixed ? commDtype(*common) : PIPE_RT_DTYPE_BYTES;
  if (dtype == PIPE_RT_DTYPE_BYTES)
    count = int64_t(bytes);
}

/// Whether a transfer with program device `peer` moves its buffers by
/// reference: when the host cannot address device memory and the peer runs
/// in this process. A peer on another rank gets the bytes, staged through
/// host memory.
bool movesByReference(const RunState &run, int peer) {
  return run.transfers->byReference() && run.ranks.isLocal(peer);
}

/// Whether a transfer with program device `peer` on another rank moves
/// device buffers through a transport that carries them (NCCL), instead of
/// bytes staged through host memory.
bool movesDeviceBuffers(const RunState &run, int peer) {
  return !run.ranks.isLocal(peer) && transportCarriesDeviceBuffers(run);
}

/// Registers `posted` under the address the program moves it by.
int32_t postBuffer(pipe_rt_device_ctx *ctx, PostedBuffer posted,
                   void **buffer) {
  void *at = posted.sending ? posted.token->keepAlive
                                  ? posted.token->keepAlive->data
                                  : static_cast<void *>(posted.payload.data())
             : posted.token->inFlightId
                 ? static_cast<void *>(posted.token->inFlightId.get())
                 : posted.token->keepAlive->data;
  ctx->run->transfers->addPosted(ctx->device, at, std::move(posted));
  *buffer = at;
  return PIPE_RT_OK;
}

/// Takes the buffer a send or recv moves and checks that the call names it
/// as it was obtained.
int takeBuffer(pipe_rt_comm *comm, bool sending, const void *buffer,
               int64_t count, int32_t dtype, int32_t peer,
               PostedBuffer &posted) {
  pipe_rt_device_ctx *ctx = comm->ctx;
  const char *call = sending ? "pipe_rt_comm_send" : "pipe_rt_comm_recv";
  if (!ctx->run->transfers->takePosted(ctx->device, buffer, posted) ||
      posted.sending != sending)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                format("device %d: %s of a buffer that no "
                       "pipe_rt_comm_%s_buffer of the device returned",
                       ctx->device, call, sending ? "send" : "recv"));
  if (count != posted.count || dtype != posted.dtype ||
      peer != posted.peerDevice)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                posted.token->what +
                    format(": %s of %lld elements of dtype %d with device %d, "
                           "but the buffer holds %lld of dtype %d for device "
                           "%d",
                           call, (long long)count, dtype, peer,
                           (long long)posted.count, posted.dtype,
                           posted.peerDevice));
  return PIPE_RT_OK;
}

} // namespace

extern "C" {

pipe_rt_comm *pipe_rt_comm_of(pipe_rt_device_ctx *ctx) {
  return ctx ? &ctx->comm : nullptr;
}

int32_t pipe_rt_comm_send_buffer(pipe_rt_device_ctx *ctx, int32_t kind,
                                 int32_t src, int32_t dst, int32_t mb,
                                 int32_t step, void **buffer) {
  if (!ctx || !buffer)
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  PostedBuffer posted;
  posted.sending = true;
  posted.token = std::make_shared<PendingToken>();
  std::string &what = posted.token->what;
  const std::vector<int> *values;
  if (int st = checkTransfer(ctx, /*sending=*/true, kind, src, dst, mb, step,
                             what, values))
    return st;
  messageShape(m, *values, posted.count, posted.dtype, posted.bytes);
  posted.peerDevice = m.stages[dst].device; // a device of the program
  bool byReference = movesByReference(run, posted.peerDevice);
  DeviceState &ds = deviceOf(ctx);
  // The buffers of the values (null: zeros), taken from the store; values
  // are never written once published, and a sent cotangent leaves the
  // store. A stash move (offload, prefetch) relocates buffers under the
  // compute lock, which is held until they are read.
  std::vector<BufferPtr> refs;
  std::lock_guard<std::mutex> compute(ds.computeMu);
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    for (int vid : *values) {
      const TypeInfo &t = valueType(m, vid);
      if (kind == 0) {
        auto v = ds.values.find(std::make_tuple(vid, step, mb));
        if (v == ds.values.end())
          return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                      what + format(": value %d not computed (missing "
                                    "forward?)",
                                    vid));
        refs.push_back(v->second.first);
        if (--v->second.second <= 0)
          ds.values.erase(v);
      } else {
        auto c = ds.cotangents.find(std::make_tuple(vid, step, mb, src));
        if (c == ds.cotangents.end()) {
          refs.push_back(nullptr);
          continue;
        }
        refs.push_back(t.isFloat() ? c->second : nullptr);
        ds.cotangents.erase(c);
      }
    }
  }
  std::vector<unsigned char> &payload = posted.payload;
  if (byReference) {
    // The receiver copies the buffers device to device; the payload is
    // their id in the in-flight table.
    uint64_t id = run.transfers->putInFlight(ctx->device, std::move(refs));
    payload.resize(sizeof(id));
    std::memcpy(payload.data(), &id, sizeof(id));
  } else if (movesDeviceBuffers(run, posted.peerDevice)) {
    // One device buffer of the values packed, which the transport sends and
    // the token keeps until the wait.
    BufferPtr packed;
    std::string error;
    if (int st = run.memory.alloc(ctx->device, posted.bytes, what.c_str(),
                                  packed, error))
      return fail(ctx, st, what + ": " + error);
    uint64_t at = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      uint64_t bytes = valueType(m, (*values)[i]).bytes();
      void *slot = static_cast<unsigned char *>(packed->data) + at;
      int st = refs[i] ? run.memory.copy(ctx->device, Lane::Compute, slot,
                                         refs[i]->data, bytes, error)
                       : run.memory->zero(ctx->device, Lane::Compute, slot,
                                          bytes, error);
      if (st != PIPE_RT_OK)
        return fail(ctx, st, what + ": " + error);
      at += bytes;
    }
    posted.token->keepAlive = std::move(packed);
  } else {
    payload.assign(posted.bytes, 0);
    uint64_t at = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      uint64_t bytes = valueType(m, (*values)[i]).bytes();
      std::string error;
      if (refs[i])
        if (int st = run.memory.hostRead(Lane::Compute, payload.data() + at,
                                         *refs[i], bytes, error))
          return fail(ctx, st, what + ": " + error);
      at += bytes;
    }
  }
  posted.key = {kind, src, dst, mb, step};
  return postBuffer(ctx, std::move(posted), buffer);
}

int64_t pipe_rt_comm_send(pipe_rt_comm *comm, const void *buffer, int64_t count,
                          int32_t dtype, int32_t peer) {
  if (!comm)
    return -PIPE_RT_INVALID_ARGUMENT;
  pipe_rt_device_ctx *ctx = comm->ctx;
  PostedBuffer posted;
  if (int st = takeBuffer(comm, /*sending=*/true, buffer, count, dtype, peer,
                          posted))
    return -st;
  RunState &run = *ctx->run;
  std::shared_ptr<PendingToken> t = std::move(posted.token);
  t->start = run.now();
  t->link = run.tracing()
                ? run.linkIndex(ctx->device, run.sameReplica(ctx->device, peer))
                : -1;
  std::string error;
  const void *payload =
      t->keepAlive ? t->keepAlive->data : posted.payload.data();
  uint64_t bytes = t->keepAlive ? posted.bytes : posted.payload.size();
  if (int st = run.transfers->channels().send(ctx->device, posted.key, payload,
                                              bytes, t->channel, error))
    return -fail(ctx, st, t->what + ": " + error);
  return run.transfers->addToken(ctx->device, std::move(t));
}

int32_t pipe_rt_comm_recv_buffer(pipe_rt_device_ctx *ctx, int32_t kind,
                                 int32_t src, int32_t dst, int32_t mb,
                                 int32_t step, void **buffer) {
  if (!ctx || !buffer)
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  PostedBuffer posted;
  posted.token = std::make_shared<PendingToken>();
  std::shared_ptr<PendingToken> &t = posted.token;
  const std::string &what = t->what;
  const std::vector<int> *values;
  if (int st = checkTransfer(ctx, /*sending=*/false, kind, src, dst, mb, step,
                             t->what, values))
    return st;
  messageShape(m, *values, posted.count, posted.dtype, posted.bytes);
  posted.peerDevice = m.stages[src].device; // a device of the program
  std::string error;
  // Bytes from another rank land in host memory when the host cannot
  // address the device's, unless the transport carries device buffers.
  bool byReference = movesByReference(run, posted.peerDevice);
  bool deviceBuffers = movesDeviceBuffers(run, posted.peerDevice);
  int landing = run.transfers->byReference() && !byReference && !deviceBuffers
                    ? -1
                    : ctx->device;
  if (byReference) {
    t->inFlightId = std::make_shared<uint64_t>(0);
    posted.bytes = sizeof(uint64_t);
  } else if (int st = run.memory.alloc(landing, posted.bytes, what.c_str(),
                                       t->keepAlive, error)) {
    return fail(ctx, st, what + ": " + error);
  }
  int device = ctx->device;
  BufferPtr target = t->keepAlive;
  std::shared_ptr<uint64_t> inFlightId = t->inFlightId;
  RunState *runp = &run;
  t->onDone = [runp, device, values, target, inFlightId, kind, mb, step,
               what = t->what](std::string &error) {
    RunState &run = *runp;
    const Manifest &m = *run.m;
    DeviceState &ds = *run.devices[device];
    std::lock_guard<std::mutex> compute(ds.computeMu);
    int srcDevice = -1;
    std::vector<BufferPtr> refs;
    if (inFlightId) {
      if (!run.transfers->takeInFlight(*inFlightId, values->size(), srcDevice,
                                       refs)) {
        error = "the sender's buffers are gone (size mismatch?)";
        return int(PIPE_RT_SIZE_MISMATCH);
      }
    }
    uint64_t at = 0;
    for (size_t i = 0; i < values->size(); ++i) {
      int vid = (*values)[i];
      const TypeInfo &t = valueType(m, vid);
      const unsigned char *src =
          target ? static_cast<const unsigned char *>(target->data) + at
                 : nullptr;
      at += t.bytes();
      if (kind == 1 && !t.isFloat())
        continue;
      BufferPtr b;
      if (int st = run.memory.alloc(device, t.bytes(), what.c_str(), b, error))
        return st;
      int st = PIPE_RT_OK;
      if (!inFlightId && target->device >= 0 && run.transfers->byReference())
        st = run.memory.copy(device, Lane::Compute, b->data, src, t.bytes(),
                             error); // a device buffer from another rank
      else if (!inFlightId)
        st = run.memory.hostWrite(Lane::Compute, *b, src, t.bytes(), error);
      else if (!refs[i])
        st = run.memory->zero(device, Lane::Compute, b->data, t.bytes(), error);
      else
        st = run.memory.copyPeer(device, b->data, srcDevice, refs[i]->data,
                                 t.bytes(), error);
      if (st != PIPE_RT_OK)
        return st;
      refs.empty() ? void() : refs[i].reset();
      std::lock_guard<std::mutex> lock(ds.mu);
      if (kind == 0) {
        auto &slot = ds.values[std::make_tuple(vid, step, mb)];
        if (!slot.first)
          slot.first = b;
        ++slot.second;
      } else if (int st = accumulate(
                     ds.cotangents[std::make_tuple(vid, step, mb, -1)], b, t,
                     error)) {
        return st;
      }
    }
    return int(PIPE_RT_OK);
  };
  posted.key = {kind, src, dst, mb, step};
  return postBuffer(ctx, std::move(posted), buffer);
}

int64_t pipe_rt_comm_recv(pipe_rt_comm *comm, void *buffer, int64_t count,
                          int32_t dtype, int32_t peer) {
  if (!comm)
    return -PIPE_RT_INVALID_ARGUMENT;
  pipe_rt_device_ctx *ctx = comm->ctx;
  PostedBuffer posted;
  if (int st = takeBuffer(comm, /*sending=*/false, buffer, count, dtype, peer,
                          posted))
    return -st;
  RunState &run = *ctx->run;
  std::shared_ptr<PendingToken> t = std::move(posted.token);
  t->start = run.now();
  std::string error;
  if (int st = run.transfers->channels().recv(ctx->device, posted.key, buffer,
                                              posted.bytes, t->channel, error))
    return -fail(ctx, st, t->what + ": " + error);
  return run.transfers->addToken(ctx->device, std::move(t));
}

int32_t pipe_rt_comm_group_start(pipe_rt_comm *comm) {
  if (!comm)
    return PIPE_RT_INVALID_ARGUMENT;
  ++comm->groupDepth;
  return PIPE_RT_OK;
}

int32_t pipe_rt_comm_group_end(pipe_rt_comm *comm) {
  if (!comm)
    return PIPE_RT_INVALID_ARGUMENT;
  if (comm->groupDepth == 0)
    return fail(comm->ctx, PIPE_RT_INVALID_ARGUMENT,
                format("device %d: pipe_rt_comm_group_end without a "
                       "pipe_rt_comm_group_start",
                       comm->ctx->device));
  --comm->groupDepth;
  return PIPE_RT_OK;
}

int32_t pipe_rt_act_wait(pipe_rt_device_ctx *ctx, int64_t token) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  std::shared_ptr<PendingToken> t =
      run.transfers->takeToken(ctx->device, token);
  if (!t)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                format("device %d: wait of unknown token %lld", ctx->device,
                       (long long)token));
  std::string error;
  if (t->channel) {
    int st = run.transfers->channels().wait(ctx->device, t->channel, error);
    if (st == PIPE_RT_ABORTED)
      return fail(ctx, st, t->what + ": aborted by an error elsewhere");
    if (st != PIPE_RT_OK)
      return fail(ctx, st, error);
    if (t->link >= 0)
      run.traceEvent(traceName(t->what), "transfer", TrackKind::Link, t->link,
                     t->start, run.now());
  } else if (t->job) {
    int st = t->queue->wait(t->job);
    if (st != PIPE_RT_OK)
      return fail(ctx, st, t->what + ": " + t->job->error);
  }
  if (t->onDone) {
    int st = t->onDone(error);
    if (st != PIPE_RT_OK)
      return fail(ctx, st, t->what + ": " + error);
  }
  return PIPE_RT_OK;
}

int64_t pipe_rt_act_offload(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                            int32_t step) {
  return submitStashMove(ctx, "offload", stage, mb, step, /*toHost=*/true);
}

int64_t pipe_rt_act_prefetch(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                             int32_t step) {
  return submitStashMove(ctx, "prefetch", stage, mb, step, /*toHost=*/false);
}

} // extern "C"
