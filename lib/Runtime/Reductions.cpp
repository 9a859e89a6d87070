//===- Reductions.cpp - Gradient sums over devices and replicas -----------===//
//
// The reductions room: what makes a gradient the sum over the devices that
// hold its param and over the data-parallel replicas before the update
// reads it. reduce_grad's pipe_rt_comm_grad_buffer and
// pipe_rt_comm_allreduce, a bucket's pipe_rt_comm_bucket_buffer and
// pipe_rt_comm_allreduce_start, and the global gradient norm of clipping;
// devices of this process meet at a rendezvous, other ranks' through the
// transport (Ranks.h). Every sum adds in device order, then replica order,
// so that every place computes the same bits. See docs/distributed.md.
//
//===----------------------------------------------------------------------===//

#include "Actions.h"
#include "Format.h"
#include "Ranks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

using namespace pipe_rt;

namespace {

/// Waits until every device in `participants` arrived at rendezvous `key`
/// (after `deposit`), then calls `collect`. In a distributed run only the
/// participants of this rank meet; `remote` then receives what the others
/// sent in exchange for `mine` (`bytes`, null: zeros).
int rendezvous(pipe_rt_device_ctx *ctx, std::pair<int, int> key,
               const std::set<int> &participants, const void *mine,
               uint64_t bytes,
               std::map<int, std::vector<unsigned char>> &remote,
               const std::function<void(Rendezvous::Meeting &)> &deposit,
               const std::function<int(Rendezvous::Meeting &)> &collect,
               const std::string &what) {
  RunState &run = *ctx->run;
  std::string error;
  std::set<int> local = participants;
  if (run.ranks.transport) {
    local.clear();
    for (int d : participants)
      if (run.ranks.isLocal(d))
        local.insert(d);
    int slot = key.first < 0 ? int(run.m->params.size()) : key.first;
    if (local.size() != participants.size())
      if (int st = exchangeWithRemote(run, ctx->device, slot, key.second,
                                      participants, mine, bytes, remote, error))
        return fail(ctx, st, what + ": " + error);
  }
  // In-process replicas: the program devices of this device's replica.
  if (run.localReplicas > 1) {
    local.clear();
    for (int d : participants)
      local.insert(run.sameReplica(ctx->device, d));
  }
  int st = run.rendezvous.meet(
      {key.first, key.second, run.replicaOf(ctx->device)}, ctx->device, local,
      run.session->options.watchdog_seconds, deposit, collect, error);
  if (st != PIPE_RT_OK && !error.empty())
    return fail(ctx, st, what + error);
  return st;
}

/// What another rank sent (`t.bytes()` at `received`) as a buffer of
/// `ctx`'s device, to add like the local ones.
int receivedBuffer(pipe_rt_device_ctx *ctx, const TypeInfo &t,
                   const std::string &what, const unsigned char *received,
                   BufferPtr &out) {
  std::string error;
  if (int st = ctx->run->memory.alloc(ctx->device, t.bytes(), what.c_str(), out,
                                      error))
    return fail(ctx, st, what + ": " + error);
  if (int st = ctx->run->memory.hostWrite(Lane::Compute, *out, received,
                                          t.bytes(), error))
    return fail(ctx, st, what + ": " + error);
  return PIPE_RT_OK;
}

/// total += `g`, a buffer of any device (pulled to `ctx`'s first).
int addPeerInto(pipe_rt_device_ctx *ctx, Buffer &total, const BufferPtr &g,
                const TypeInfo &t, const std::string &what) {
  RunState &run = *ctx->run;
  std::string error;
  BufferPtr local;
  if (int st = run.transfers->pullPeer(run.memory, ctx->device, g, what.c_str(),
                                       local, error))
    return fail(ctx, st, what + ": " + error);
  if (int st = addInto(total, *local, t, error))
    return fail(ctx, st, what + ": " + error);
  return PIPE_RT_OK;
}

/// sumOverReplicas for replicas in this process: every replica's copy of
/// the device meets, and each sums the copies' gradients in replica order,
/// as the ranks of a distributed run do (the same totals, bit for bit).
int sumOverLocalReplicas(pipe_rt_device_ctx *ctx, int param, int step,
                         const TypeInfo &t, const std::string &what,
                         BufferPtr grad) {
  RunState &run = *ctx->run;
  DeviceState &ds = deviceOf(ctx);
  int d = run.programDevice(ctx->device), devices = run.schedule->devices;
  std::set<int> copies;
  for (int r = 0; r < run.localReplicas; ++r)
    copies.insert(r * devices + d);
  double t0 = run.now();
  std::string error;
  int st = run.rendezvous.meet(
      {param, step, -1 - d}, ctx->device, copies,
      run.session->options.watchdog_seconds,
      [&](Rendezvous::Meeting &r) { r.grads[ctx->device] = grad; },
      [&](Rendezvous::Meeting &r) {
        if (!grad)
          return int(PIPE_RT_OK);
        BufferPtr total;
        if (int st = zeros(ctx, t, what, total))
          return st;
        for (int copy : copies) {
          auto it = r.grads.find(copy);
          if (it != r.grads.end() && it->second)
            if (int st = addPeerInto(ctx, *total, it->second, t, what))
              return st;
        }
        std::lock_guard<std::mutex> lock(ds.mu);
        ds.grads[{param, step}] = total;
        return int(PIPE_RT_OK);
      },
      error);
  if (st != PIPE_RT_OK)
    return error.empty() ? st : fail(ctx, st, what + error);
  run.traceEvent(traceName(what + " (replica all-reduce)"), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

/// Makes the sum over the ranks' replicas, in replica order, of `grad`
/// (this replica's) and the others' copies (`theirs(q)`: replica q's
/// bytes) the device's gradient of `param` at `step`.
int storeReplicaSum(pipe_rt_device_ctx *ctx, int param, int step,
                    const TypeInfo &t, const std::string &what,
                    const BufferPtr &grad,
                    const std::function<const unsigned char *(int)> &theirs) {
  RunState &run = *ctx->run;
  BufferPtr total;
  if (int st = zeros(ctx, t, what, total))
    return st;
  std::string error;
  for (int q = 0; q < run.ranks.replicas; ++q) {
    BufferPtr g = grad;
    if (q != run.ranks.replica())
      if (int st = receivedBuffer(ctx, t, what, theirs(q), g))
        return st;
    if (int st = addInto(*total, *g, t, error))
      return fail(ctx, st, what + ": " + error);
  }
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> lock(ds.mu);
  ds.grads[{param, step}] = total;
  return PIPE_RT_OK;
}

/// The bytes of the gradients of `params`, packed one after the other.
uint64_t packedBytes(const Manifest &m, const std::vector<int> &params) {
  uint64_t bytes = 0;
  for (int p : params)
    bytes += m.types[m.params[p].type].bytes();
  return bytes;
}

/// The gradients of `params` at `step` on `ctx`'s device packed in order
/// into host memory (zeros for a param without one).
int packGradients(pipe_rt_device_ctx *ctx, const std::vector<int> &params,
                  int step, std::vector<unsigned char> &packed,
                  std::string &error) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  packed.assign(packedBytes(m, params), 0);
  uint64_t offset = 0;
  for (int p : params) {
    const TypeInfo &t = m.types[m.params[p].type];
    if (BufferPtr grad = gradientOf(ctx, p, step))
      if (int st = run.memory.hostRead(Lane::Compute, packed.data() + offset,
                                       *grad, t.bytes(), error))
        return st;
    offset += t.bytes();
  }
  return PIPE_RT_OK;
}

/// A bucket's packed gradients split into one contiguous range of whole
/// elements per replica, of nearly equal counts: replica q owns bytes
/// [at[q], at[q + 1]).
std::vector<uint64_t>
bucketRanges(const Manifest &m, const std::vector<int> &params, int replicas) {
  uint64_t numel = 0;
  for (int p : params)
    numel += uint64_t(m.types[m.params[p].type].numel);
  auto byteOffset = [&](uint64_t element) {
    uint64_t bytes = 0;
    for (int p : params) {
      const TypeInfo &t = m.types[m.params[p].type];
      if (element <= uint64_t(t.numel))
        return bytes + element * t.elemSize;
      element -= uint64_t(t.numel);
      bytes += t.bytes();
    }
    return bytes;
  };
  std::vector<uint64_t> at;
  for (int q = 0; q <= replicas; ++q)
    at.push_back(byteOffset(numel * uint64_t(q) / uint64_t(replicas)));
  return at;
}

/// out[i] = the sum over the replicas, in replica order and from zero, of
/// parts[q][i], for n elements of T: the adds of storeReplicaSum, element by
/// element, with the replicas in the outer loop.
template <typename T>
void sumReplicas(unsigned char *out, uint64_t n,
                 const std::vector<const unsigned char *> &parts) {
  std::vector<T> total(n, T(0)), values(n);
  for (const unsigned char *part : parts) {
    std::memcpy(values.data(), part, n * sizeof(T));
    for (uint64_t i = 0; i < n; ++i)
      total[i] += values[i];
  }
  std::memcpy(out, total.data(), n * sizeof(T));
}

/// Writes over bytes [lo, hi) of the packed bucket at `packed` the sum over
/// the replicas, in replica order, of their values there (`parts[q]`:
/// replica q's bytes from lo on), in each param's type.
void sumOwnedRange(const Manifest &m, const std::vector<int> &params,
                   uint64_t lo, uint64_t hi,
                   const std::vector<const unsigned char *> &parts,
                   unsigned char *packed) {
  uint64_t start = 0;
  for (int p : params) {
    const TypeInfo &t = m.types[m.params[p].type];
    uint64_t begin = std::max(lo, start), end = std::min(hi, start + t.bytes());
    start += t.bytes();
    if (begin >= end || !t.isFloat())
      continue;
    std::vector<const unsigned char *> at;
    for (const unsigned char *part : parts)
      at.push_back(part + (begin - lo));
    uint64_t n = (end - begin) / t.elemSize;
    if (t.dtype == DType::F64)
      sumReplicas<double>(packed + begin, n, at);
    else
      sumReplicas<float>(packed + begin, n, at);
  }
}

/// Data parallelism over R > 2 replicas on ranks, with a ring all-reduce's
/// volume (2 (R - 1) / R of the bytes each way): each replica owns a range
/// of the packed gradients `packed` (bucketRanges); this sends every other
/// owner this replica's values of its range and receives those of its own
/// range, into `x`; finishOwnedBucket completes it.
int startOwnedBucket(RunState &run, int device, const std::vector<int> &params,
                     int step, std::vector<unsigned char> &packed, Exchange &x,
                     std::string &error) {
  replicaExchange(run, device, params.front(), step, x);
  std::vector<uint64_t> at = bucketRanges(*run.m, params, run.ranks.replicas);
  size_t me = size_t(run.ranks.replica());
  for (Exchange::Peer &peer : x.peers) {
    peer.out = packed.data() + at[size_t(peer.key)];
    peer.outBytes = at[size_t(peer.key) + 1] - at[size_t(peer.key)];
    peer.inBytes = at[me + 1] - at[me];
  }
  return startExchangeEach(run, x, error);
}

/// Completes a bucket summed over R > 2 replicas of other ranks by owners
/// (startOwnedBucket sent each owner its range): sums this replica's range,
/// sends the sum to every other replica and takes theirs, and makes each
/// param's gradient the summed values. The same bits as finishRemoteBucket:
/// each element is added in replica order from zero.
int finishOwnedBucket(pipe_rt_device_ctx *ctx, const std::vector<int> &params,
                      int step, Exchange &toOwners, Exchange &fromOwners,
                      std::vector<unsigned char> &packed,
                      const std::string &what, std::string &error) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  double t0 = run.now();
  int replicas = run.ranks.replicas, me = run.ranks.replica();
  std::vector<uint64_t> at = bucketRanges(m, params, replicas);
  if (int st = finishExchange(run, toOwners, error))
    return st;
  uint64_t lo = at[size_t(me)], hi = at[size_t(me) + 1];
  std::vector<const unsigned char *> parts;
  for (int q = 0; q < replicas; ++q)
    parts.push_back(q == me ? packed.data() + lo : toOwners.theirs[q].data());
  sumOwnedRange(m, params, lo, hi, parts, packed.data());
  fromOwners.peers = toOwners.peers;
  for (Exchange::Peer &peer : fromOwners.peers) {
    peer.out = packed.data() + lo;
    peer.outBytes = hi - lo;
    peer.inBytes = at[size_t(peer.key) + 1] - at[size_t(peer.key)];
  }
  if (int st = startExchangeEach(run, fromOwners, error))
    return st;
  if (int st = finishExchange(run, fromOwners, error))
    return st;
  for (auto &[q, sum] : fromOwners.theirs)
    std::memcpy(packed.data() + at[size_t(q)], sum.data(), sum.size());
  uint64_t offset = 0;
  DeviceState &ds = deviceOf(ctx);
  for (int p : params) {
    const TypeInfo &t = m.types[m.params[p].type];
    uint64_t from = offset;
    offset += t.bytes();
    // No gradient here means none on any replica (the same program).
    if (!gradientOf(ctx, p, step) || !m.params[p].trainable)
      continue;
    BufferPtr total;
    if (int st = receivedBuffer(ctx, t, what, packed.data() + from, total)) {
      error = ctx->error;
      return st;
    }
    std::lock_guard<std::mutex> lock(ds.mu);
    ds.grads[{p, step}] = total;
  }
  run.traceEvent(traceName(what + " (replica all-reduce)"), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

/// The gradients of `params` at `step` packed in order into one buffer of
/// `ctx`'s device (zeros for a param without one), for the transport to sum
/// in place.
int packGradientsOnDevice(pipe_rt_device_ctx *ctx,
                          const std::vector<int> &params, int step,
                          const std::string &what, BufferPtr &packed,
                          std::string &error) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  if (int st = run.memory.alloc(ctx->device, packedBytes(m, params),
                                what.c_str(), packed, error))
    return st;
  uint64_t offset = 0;
  for (int p : params) {
    uint64_t n = m.types[m.params[p].type].bytes();
    void *slot = static_cast<unsigned char *>(packed->data) + offset;
    BufferPtr grad = gradientOf(ctx, p, step);
    if (int st =
            grad ? run.memory.copy(ctx->device, Lane::Compute, slot, grad->data,
                                   n, error)
                 : run.memory->zero(ctx->device, Lane::Compute, slot, n, error))
      return st;
    offset += n;
  }
  return PIPE_RT_OK;
}

/// Completes a bucket the transport sums in place (`summed`, started by
/// startReplicaReduce as `request` at `t0`): waits for it, then each
/// trainable param's gradient becomes its slice. A failed wait leaves the
/// buffer with the run: a collective cannot be cancelled.
int finishSummedBucket(pipe_rt_device_ctx *ctx, const std::vector<int> &params,
                       int step, const BufferPtr &summed, uint64_t request,
                       double t0, const std::string &what, std::string &error) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  if (int st = finishReplicaReduce(run, ctx->device, request, error)) {
    std::lock_guard<std::mutex> lock(run.abandonedMu);
    run.abandoned.push_back(summed);
    return st;
  }
  uint64_t offset = 0;
  for (int p : params) {
    uint64_t n = m.types[m.params[p].type].bytes();
    const void *slice =
        static_cast<const unsigned char *>(summed->data) + offset;
    offset += n;
    // No gradient here means none on any replica (the same program).
    if (!gradientOf(ctx, p, step) || !m.params[p].trainable)
      continue;
    BufferPtr total;
    if (int st = run.memory.alloc(ctx->device, n, what.c_str(), total, error))
      return st;
    if (int st = run.memory.copy(ctx->device, Lane::Compute, total->data, slice,
                                 n, error))
      return st;
    DeviceState &ds = deviceOf(ctx);
    std::lock_guard<std::mutex> lock(ds.mu);
    ds.grads[{p, step}] = total;
  }
  run.traceEvent(traceName(what + " (replica all-reduce)"), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

/// Data parallelism: the device's gradient of `param` in `step` becomes the
/// sum of every replica's, added in replica order (the same total on every
/// replica). Nothing to do with one replica, or where the step left the
/// param without a gradient (then on every replica alike: they run one
/// program).
int sumOverReplicas(pipe_rt_device_ctx *ctx, int param, int step,
                    const TypeInfo &t, const std::string &what) {
  RunState &run = *ctx->run;
  BufferPtr grad = gradientOf(ctx, param, step);
  if (run.localReplicas > 1)
    return sumOverLocalReplicas(ctx, param, step, t, what, grad);
  if (run.ranks.replicas == 1 || !grad)
    return PIPE_RT_OK;
  std::string error;
  if (transportReducesBuckets(run, commDtype(t.dtype))) {
    // The transport sums it in place on the device, as a bucket of one.
    double t0 = run.now();
    BufferPtr onDevice;
    uint64_t request = 0;
    int st = packGradientsOnDevice(ctx, {param}, step, what, onDevice, error);
    if (st == PIPE_RT_OK)
      st = startReplicaReduce(run, ctx->device, onDevice->data,
                              uint64_t(t.numel), commDtype(t.dtype), request,
                              error);
    if (st == PIPE_RT_OK)
      st = finishSummedBucket(ctx, {param}, step, onDevice, request, t0, what,
                              error);
    return st == PIPE_RT_OK ? st : fail(ctx, st, what + ": " + error);
  }
  if (run.ranks.replicas > 2) {
    // The param as a bucket of one, summed by owners at once.
    std::vector<unsigned char> packed;
    Exchange toOwners, fromOwners;
    int st = packGradients(ctx, {param}, step, packed, error);
    if (st == PIPE_RT_OK)
      st = startOwnedBucket(run, ctx->device, {param}, step, packed, toOwners,
                            error);
    if (st == PIPE_RT_OK)
      st = finishOwnedBucket(ctx, {param}, step, toOwners, fromOwners, packed,
                             what, error);
    return st == PIPE_RT_OK ? st : fail(ctx, st, what + ": " + error);
  }
  std::map<int, std::vector<unsigned char>> theirs;
  double t0 = run.now();
  std::vector<unsigned char> staging;
  int st;
  const unsigned char *mine =
      run.memory.hostView(Lane::Compute, *grad, staging, error, st);
  if (st != PIPE_RT_OK)
    return fail(ctx, st, what + ": " + error);
  if (int st = exchangeWithReplicas(run, ctx->device, param, step, mine,
                                    t.bytes(), theirs, error))
    return fail(ctx, st, what + ": " + error);
  if (int st = storeReplicaSum(ctx, param, step, t, what, grad,
                               [&](int q) { return theirs[q].data(); }))
    return st;
  run.traceEvent(traceName(what + " (replica all-reduce)"), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

/// "device 1: reduce_bucket ['w0', 'b0'] step 0".
std::string describeBucket(pipe_rt_device_ctx *ctx,
                           const std::vector<int> &params, int step) {
  const Manifest &m = *ctx->run->m;
  std::string names;
  for (int p : params)
    names += (names.empty() ? "'" : ", '") + m.params[p].name + "'";
  return format("device %d: reduce_bucket [%s] step %d", ctx->device,
                names.c_str(), step);
}

/// The message a bucket of `params` is, as the lowering counts it: the
/// elements of their common type, else bytes.
std::pair<int64_t, int32_t> bucketMessage(const Manifest &m,
                                          const std::vector<int> &params) {
  int64_t numel = 0, bytes = 0;
  int32_t dtype = -1;
  for (int p : params) {
    const TypeInfo &t = m.types[m.params[p].type];
    numel += t.numel;
    bytes += int64_t(t.bytes());
    int32_t d = commDtype(t.dtype);
    dtype = dtype < 0 || dtype == d ? d : PIPE_RT_DTYPE_BYTES;
  }
  if (dtype == PIPE_RT_DTYPE_BYTES)
    return {bytes, dtype};
  return {numel, dtype};
}

/// Completes a bucket whose bytes went to the other ranks' replicas
/// (`x`): each param's gradient becomes the sum over the replicas in
/// replica order, as sumOverReplicas computes it.
int finishRemoteBucket(pipe_rt_device_ctx *ctx, const std::vector<int> &params,
                       int step, Exchange &x, const std::string &what,
                       std::string &error) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  double t0 = run.now();
  if (int st = finishExchange(run, x, error))
    return st;
  uint64_t offset = 0;
  for (int p : params) {
    const TypeInfo &t = m.types[m.params[p].type];
    uint64_t at = offset;
    offset += t.bytes();
    BufferPtr grad = gradientOf(ctx, p, step);
    // No gradient here means none on any replica (the same program).
    if (!grad || !m.params[p].trainable)
      continue;
    if (int st = storeReplicaSum(ctx, p, step, t, what, grad, [&](int q) {
          return x.theirs[q].data() + at;
        })) {
      error = ctx->error;
      return st;
    }
  }
  run.traceEvent(traceName(what + " (replica all-reduce)"), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

} // namespace

int pipe_rt::clipGradients(pipe_rt_device_ctx *ctx, int step,
                           const std::string &what) {
  RunState &run = *ctx->run;
  DeviceState &ds = deviceOf(ctx);
  double local = 0;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    for (auto &[key, g] : ds.grads) {
      // Each param counted once: by the lowest device holding it.
      if (key.second != step ||
          *run.holders[key.first].begin() != run.programDevice(ctx->device))
        continue;
      std::vector<unsigned char> staging;
      std::string error;
      int st;
      const float *p = reinterpret_cast<const float *>(
          run.memory.hostView(Lane::Compute, *g, staging, error, st));
      if (st != PIPE_RT_OK)
        return fail(ctx, st, what + ": " + error);
      int64_t n = run.m->types[run.m->params[key.first].type].numel;
      for (int64_t i = 0; i < n; ++i)
        local += double(p[i]) * p[i];
    }
  }
  double total = 0;
  std::map<int, std::vector<unsigned char>> remote;
  int st = rendezvous(
      ctx, {-1, step}, run.clipDevices, &local, sizeof(local), remote,
      [&](Rendezvous::Meeting &r) { r.sums[ctx->device] = local; },
      [&](Rendezvous::Meeting &r) {
        // In device order, wherever the devices run: the same norm on all.
        for (int d : run.clipDevices) {
          double s = 0;
          if (auto it = remote.find(d); it != remote.end())
            std::memcpy(&s, it->second.data(), sizeof(s));
          else
            s = r.sums[run.sameReplica(ctx->device, d)];
          total += s;
        }
        return int(PIPE_RT_OK);
      },
      what + " (gradient clipping)");
  if (st != PIPE_RT_OK)
    return st;
  double norm = std::sqrt(total);
  double clip = run.session->options.clip_norm;
  ds.clipScale = float(std::min(1.0, clip / (norm + 1e-6)));
  ds.clippedSteps.insert(step);
  return PIPE_RT_OK;
}

extern "C" {

/// "device 1: reduce_grad 'w0' step 0", or an error for a bad param or step.
static int describeReduce(pipe_rt_device_ctx *ctx, int32_t param, int32_t step,
                          std::string &what) {
  const Manifest &m = *ctx->run->m;
  what = format("device %d: reduce_grad", ctx->device);
  if (param < 0 || param >= int(m.params.size()))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no such param");
  what += " '" + m.params[param].name + "'" + format(" step %d", step);
  if (step < 0 || step >= ctx->run->schedule->steps)
    return fail(
        ctx, PIPE_RT_INVALID_ARGUMENT,
        what + format(": step out of range (%d)", ctx->run->schedule->steps));
  return PIPE_RT_OK;
}

int32_t pipe_rt_comm_grad_buffer(pipe_rt_device_ctx *ctx, int32_t param,
                                 int32_t step, void **buffer) {
  if (!ctx || !buffer)
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  std::string what;
  if (int st = describeReduce(ctx, param, step, what))
    return st;
  if (!run.holders[param].count(run.programDevice(ctx->device)))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the device does not hold the param");
  BufferPtr gradient = gradientOf(ctx, param, step);
  void *grad = gradient ? gradient->data : nullptr;
  ctx->comm.reduce = {param, step, grad};
  *buffer = grad;
  return PIPE_RT_OK;
}

int32_t pipe_rt_comm_allreduce(pipe_rt_comm *comm, void *buffer, int64_t count,
                               int32_t dtype) {
  if (!comm)
    return PIPE_RT_INVALID_ARGUMENT;
  pipe_rt_device_ctx *ctx = comm->ctx;
  int param = comm->reduce.param, step = comm->reduce.step;
  if (param < 0 || buffer != comm->reduce.buffer)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                format("device %d: pipe_rt_comm_allreduce of a buffer that "
                       "the device's last pipe_rt_comm_grad_buffer did not "
                       "return",
                       ctx->device));
  comm->reduce = {};
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  std::string what;
  if (int st = describeReduce(ctx, param, step, what))
    return st;
  const TypeInfo &t = m.types[m.params[param].type];
  if (count != t.numel || dtype != commDtype(t.dtype))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": pipe_rt_comm_allreduce of %lld elements of "
                              "dtype %d, but the param has %lld of dtype %d",
                              (long long)count, dtype, (long long)t.numel,
                              commDtype(t.dtype)));
  if (!m.params[param].trainable)
    return PIPE_RT_OK;
  const std::set<int> &participants = run.holders[param];
  DeviceState &ds = deviceOf(ctx);
  BufferPtr mine = gradientOf(ctx, param, step);
  if (participants.size() == 1)
    return sumOverReplicas(ctx, param, step, t, what);
  double t0 = run.now();
  std::map<int, std::vector<unsigned char>> remote;
  // What participants on other ranks get: the gradient's bytes in host
  // memory.
  std::vector<unsigned char> staging;
  const unsigned char *mineOnHost = nullptr;
  bool elsewhere = std::any_of(participants.begin(), participants.end(),
                               [&](int d) { return !run.ranks.isLocal(d); });
  if (mine && elsewhere) {
    std::string error;
    int st;
    mineOnHost = run.memory.hostView(Lane::Compute, *mine, staging, error, st);
    if (st != PIPE_RT_OK)
      return fail(ctx, st, what + ": " + error);
  }
  int st = rendezvous(
      ctx, {param, step}, participants, mineOnHost, t.bytes(), remote,
      [&](Rendezvous::Meeting &r) { r.grads[ctx->device] = mine; },
      [&](Rendezvous::Meeting &r) {
        // Every device sums in device order: identical totals everywhere.
        BufferPtr total;
        if (int st = zeros(ctx, t, what, total))
          return st;
        std::string error;
        for (int d : participants) {
          BufferPtr g;
          if (auto it = remote.find(d); it != remote.end()) {
            if (int st = receivedBuffer(ctx, t, what, it->second.data(), g))
              return st;
          } else if (auto it = r.grads.find(run.sameReplica(ctx->device, d));
                     it != r.grads.end()) {
            g = it->second;
          }
          if (g)
            if (int st = addPeerInto(ctx, *total, g, t, what))
              return st;
        }
        std::lock_guard<std::mutex> lock(ds.mu);
        ds.grads[{param, step}] = total;
        return int(PIPE_RT_OK);
      },
      what);
  run.traceEvent(traceName(what), "collective", TrackKind::Compute, ctx->device,
                 t0, run.now());
  if (st != PIPE_RT_OK)
    return st;
  return sumOverReplicas(ctx, param, step, t, what);
}

int32_t pipe_rt_comm_bucket_buffer(pipe_rt_device_ctx *ctx,
                                   const int32_t *params, int32_t num_params,
                                   int32_t step, void **buffer) {
  if (!ctx || !buffer || (!params && num_params > 0))
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  ctx->comm.bucket = {};
  std::string what = format("device %d: reduce_bucket", ctx->device);
  if (num_params <= 0)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": an empty bucket");
  if (step < 0 || step >= run.schedule->steps)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(" step %d: step out of range (%d)", step,
                              run.schedule->steps));
  std::vector<int> ids;
  for (int32_t i = 0; i < num_params; ++i) {
    int p = params[i];
    if (p < 0 || p >= int(m.params.size()))
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + format(": no such param %d", p));
    const std::string &name = m.params[p].name;
    if (std::find(ids.begin(), ids.end(), p) != ids.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": lists '" + name + "' twice");
    const std::set<int> &holders = run.holders[p];
    if (!holders.count(run.programDevice(ctx->device)))
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": the device does not hold '" + name + "'");
    if (holders.size() > 1)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": '" + name +
                      "' is read on several devices of the pipeline; a "
                      "bucket is summed over the replicas only");
    ids.push_back(p);
  }
  what = describeBucket(ctx, ids, step);
  ctx->comm.bucket.params = ids;
  ctx->comm.bucket.step = step;
  // In-process replicas meet at the wait and read the gradients there: the
  // buffer only names the bucket.
  if (run.localReplicas > 1) {
    ctx->comm.bucket.packed = std::make_shared<std::vector<unsigned char>>(1);
    *buffer = ctx->comm.bucket.packed->data();
    return PIPE_RT_OK;
  }
  std::string error;
  if (transportReducesBuckets(run, bucketMessage(m, ids).second)) {
    BufferPtr onDevice;
    if (int st = packGradientsOnDevice(ctx, ids, step, what, onDevice, error))
      return fail(ctx, st, what + ": " + error);
    *buffer = onDevice->data;
    ctx->comm.bucket.onDevice = std::move(onDevice);
    return PIPE_RT_OK;
  }
  auto packed = std::make_shared<std::vector<unsigned char>>();
  if (int st = packGradients(ctx, ids, step, *packed, error))
    return fail(ctx, st, what + ": " + error);
  ctx->comm.bucket.packed = packed;
  *buffer = packed->data();
  return PIPE_RT_OK;
}

int64_t pipe_rt_comm_allreduce_start(pipe_rt_comm *comm, void *buffer,
                                     int64_t count, int32_t dtype) {
  if (!comm)
    return -PIPE_RT_INVALID_ARGUMENT;
  pipe_rt_device_ctx *ctx = comm->ctx;
  RunState &run = *ctx->run;
  std::vector<int> params = std::move(comm->bucket.params);
  std::shared_ptr<std::vector<unsigned char>> packed =
      std::move(comm->bucket.packed);
  BufferPtr onDevice = std::move(comm->bucket.onDevice);
  int step = comm->bucket.step;
  comm->bucket = {};
  if (params.empty() || (onDevice ? buffer != onDevice->data
                                  : !packed || buffer != packed->data()))
    return -fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                 format("device %d: pipe_rt_comm_allreduce_start of a buffer "
                        "that the device's last pipe_rt_comm_bucket_buffer "
                        "did not return",
                        ctx->device));
  std::string what = describeBucket(ctx, params, step);
  auto [wantCount, wantDtype] = bucketMessage(*run.m, params);
  if (count != wantCount || dtype != wantDtype)
    return -fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                 what + format(": pipe_rt_comm_allreduce_start of %lld "
                               "elements of dtype %d, but the bucket has "
                               "%lld of dtype %d",
                               (long long)count, dtype, (long long)wantCount,
                               wantDtype));
  auto token = std::make_shared<PendingToken>();
  token->what = what;
  token->start = run.now();
  if (onDevice) {
    // The transport sums the device buffer in place (NCCL's all-reduce);
    // the token keeps it until the wait.
    uint64_t request = 0;
    std::string error;
    if (int st = startReplicaReduce(run, ctx->device, onDevice->data,
                                    uint64_t(count), dtype, request, error))
      return -fail(ctx, st, what + ": " + error);
    token->keepAlive = onDevice;
    double t0 = run.now();
    token->onDone = [ctx, params, step, what, onDevice, request,
                     t0](std::string &error) {
      return finishSummedBucket(ctx, params, step, onDevice, request, t0, what,
                                error);
    };
  } else if (run.localReplicas > 1) {
    // In-process replicas meet at the wait, param by param.
    token->onDone = [ctx, params, step, what](std::string &error) {
      const Manifest &m = *ctx->run->m;
      for (int p : params) {
        if (!m.params[p].trainable)
          continue;
        std::string one = what + ": '" + m.params[p].name + "'";
        if (int st =
                sumOverReplicas(ctx, p, step, m.types[m.params[p].type], one)) {
          error = ctx->error;
          return st;
        }
      }
      return int(PIPE_RT_OK);
    };
  } else if (run.ranks.transport && run.ranks.replicas == 2) {
    // The bytes leave now (all of them, the least two replicas can send);
    // the sum happens at the wait.
    auto x = std::make_shared<Exchange>();
    replicaExchange(run, ctx->device, params.front(), step, *x);
    std::string error;
    if (int st = startExchange(run, *x, packed->data(), packed->size(), error))
      return -fail(ctx, st, what + ": " + error);
    token->onDone = [ctx, params, step, what, x, packed](std::string &error) {
      return finishRemoteBucket(ctx, params, step, *x, what, error);
    };
  } else if (run.ranks.transport && run.ranks.replicas > 2) {
    // Each replica owns a range of the bucket: the others' values of it
    // leave now, and at the wait each owner's sum goes back to the others.
    // Both exchanges live with the token: a failed wait may leave messages
    // posted.
    auto x = std::make_shared<std::pair<Exchange, Exchange>>();
    std::string error;
    if (int st = startOwnedBucket(run, ctx->device, params, step, *packed,
                                  x->first, error))
      return -fail(ctx, st, what + ": " + error);
    token->onDone = [ctx, params, step, what, x, packed](std::string &error) {
      return finishOwnedBucket(ctx, params, step, x->first, x->second, *packed,
                               what, error);
    };
  }
  return run.transfers->addToken(ctx->device, std::move(token));
}
} // extern "C"
