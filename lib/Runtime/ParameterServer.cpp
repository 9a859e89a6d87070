//===- ParameterServer.cpp - The parameter server of a run ----------------===//
//
// The room's state (ParameterServer.h) and the actions of ps stages:
// pipe_rt_act_ps_load, ps_push, ps_update and ps_release.
//
//===----------------------------------------------------------------------===//

#include "ParameterServer.h"

#include "Actions.h"
#include "Bf16.h"
#include "Cores.h"
#include "Format.h"
#include "Ranks.h"

#include <algorithm>
#include <atomic>
#include <thread>

using namespace pipe_rt;

namespace {

/// sum[i] += the i-th element of a pushed gradient copy (f32 or bf16).
void addPushed(float *sum, const Buffer &pushed, bool bf16, int64_t n) {
  if (bf16) {
    addFromBf16(sum, static_cast<const uint16_t *>(pushed.data), n);
    return;
  }
  const float *g = static_cast<const float *>(pushed.data);
  for (int64_t i = 0; i < n; ++i)
    sum[i] += g[i];
}

/// dst = bf16(src) for each span, on every core: the parameter server's
/// shadows when a run starts (302M params take ~0.1 s on one thread).
struct NarrowSpan {
  uint16_t *dst;
  const float *src;
  int64_t n;
};
void narrowInParallel(const std::vector<NarrowSpan> &spans) {
  constexpr int64_t kPiece = int64_t(1) << 20;
  std::vector<NarrowSpan> pieces;
  for (const NarrowSpan &s : spans)
    for (int64_t at = 0; at < s.n; at += kPiece)
      pieces.push_back({s.dst + at, s.src + at, std::min(kPiece, s.n - at)});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < pieces.size();)
      narrowToBf16(pieces[i].dst, pieces[i].src, pieces[i].n);
  };
  size_t threads = std::min<size_t>(processCores(), pieces.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

/// Whether param `pid` of the parameter server crosses the link as bf16:
/// ps_transfer = bf16 and an f32 param (others move their own bytes).
bool wantsBf16(const RunState &run, int pid) {
  return run.session->options.ps_transfer == PIPE_RT_PS_TRANSFER_BF16 &&
         run.m->types[run.m->params[pid].type].dtype == DType::F32;
}

} // namespace

//===----------------------------------------------------------------------===//
// The room
//===----------------------------------------------------------------------===//

int ParameterServer::start(RunState &run, std::string &error) {
  pipe_rt_session &session = *run.session;
  const Manifest &m = *run.m;
  queue = std::make_unique<JobQueue>();
  if (run.ranks.replicas > 1)
    rankQueue = std::make_unique<JobQueue>();
  std::vector<NarrowSpan> spans;
  for (size_t p = 0; p < held.size(); ++p) {
    if (!held[p])
      continue;
    const SessionParam &sp = session.params[p];
    Master &master = masters[int(p)];
    master.value = sp.value.data();
    master.step = sp.step;
    master.versions = {master.value};
    if (!wantsBf16(run, int(p)))
      continue;
    // The session's shadow, narrowed again only when it does not match the
    // weights; invalid until this run commits (update() rewrites it).
    pipe_rt_session::PsShadow &cache = session.psShadows[p];
    uint64_t bytes = sp.value.size() / 2;
    if (cache.bytes != bytes) {
      if (cache.data)
        cache.free(cache.data);
      cache = {run.memory->allocHost(bytes), bytes,
               run.memory->hostFreeFunction(), false};
      if (!cache.data) {
        cache = {};
        error =
            "param '" + m.params[p].name + "' bf16 shadow: host out of memory";
        return PIPE_RT_OUT_OF_MEMORY;
      }
    }
    if (!cache.valid)
      spans.push_back({static_cast<uint16_t *>(cache.data),
                       reinterpret_cast<const float *>(sp.value.data()),
                       int64_t(sp.value.size() / 4)});
    cache.valid = false;
    shadows[int(p)] = run.memory.adopt(-1, cache.data, bytes, /*owned=*/false);
  }
  narrowInParallel(spans);
  // Every ps.load copies the masters to devices (bf16 params: their
  // shadows, already page-locked): page-locked for the run where that makes
  // the copies faster.
  for (auto &[pid, master] : masters)
    if (!shadows.count(pid))
      run.memory->registerHost(session.params[pid].value.data(),
                               session.params[pid].value.size());
  return PIPE_RT_OK;
}

void ParameterServer::finish(RunState &run) {
  for (auto &[pid, master] : masters)
    if (!shadows.count(pid))
      run.memory->unregisterHost(run.session->params[pid].value.data());
}

void ParameterServer::commit(pipe_rt_session &session, int pid) const {
  const Master &master = masters.at(pid);
  SessionParam &sp = session.params[pid];
  SessionParam &spare = session.psSpare[pid];
  if (master.value == spare.value.data())
    sp.value.swap(spare.value);
  else if (master.value == session.psSecondSpare[pid].data())
    sp.value.swap(session.psSecondSpare[pid]);
  if (master.wroteState0)
    sp.state0.swap(spare.state0);
  if (master.wroteState1)
    sp.state1.swap(spare.state1);
  sp.step = master.step;
  // Narrowed when the run started or rewritten by its updates.
  if (shadows.count(pid))
    session.psShadows[pid].valid = true;
}

void ParameterServer::clear() {
  shadows.clear();
  grads.clear(); // pushed but not consumed: a failed run
  joints.clear();
}

bool ParameterServer::replicaGradients(int pid, std::vector<float> &all,
                                       size_t &n) const {
  n = 0;
  for (int r = 0; r < replicas; ++r)
    if (auto it = grads.find({pid, r}); it != grads.end())
      n = it->second.elements();
  if (n == 0)
    return false;
  all.assign(size_t(replicas) * n, 0.0f);
  for (int r = 0; r < replicas; ++r) {
    auto it = grads.find({pid, r});
    if (it == grads.end())
      continue;
    const Gradient &g = it->second;
    float *at = all.data() + size_t(r) * n;
    if (g.pushed)
      addPushed(at, *g.pushed, g.bf16, int64_t(n));
    else
      std::copy(g.sum.begin(), g.sum.end(), at);
  }
  return true;
}

void ParameterServer::setReduced(int pid, std::vector<float> total) {
  for (int r = 1; r < replicas; ++r)
    grads.erase({pid, r});
  Gradient &g = grads[{pid, 0}];
  g.pushed.reset();
  g.sum = std::move(total);
}

namespace {
/// total[i] += the i-th element of each of `blocks` `n`-element blocks, in
/// block order.
void addBlocks(std::vector<float> &total, const float *blocks, int count,
               size_t n) {
  for (int b = 0; b < count; ++b)
    for (size_t i = 0; i < n; ++i)
      total[i] += blocks[size_t(b) * n + i];
}
} // namespace

void ParameterServer::reduce(int pid) {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<float> all;
  size_t n;
  if (!replicaGradients(pid, all, n))
    return;
  std::vector<float> total(n, 0.0f);
  addBlocks(total, all.data(), replicas, n);
  setReduced(pid, std::move(total));
}

int ParameterServer::reduceAcrossRanks(RunState &run, int pid, int step,
                                       std::string &error) {
  std::vector<float> mine;
  size_t n;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!replicaGradients(pid, mine, n))
      return PIPE_RT_OK; // no gradient this step, on every replica alike
  }
  // The ps stages' device: every rank runs it.
  int device = run.m->stages[size_t(run.m->paramReaders[pid].front())].device;
  std::map<int, std::vector<unsigned char>> theirs;
  uint64_t bytes = mine.size() * sizeof(float);
  if (int st = exchangeWithReplicas(run, device, pid, step, mine.data(), bytes,
                                    theirs, error))
    return st;
  // Replica q * replicas + r of the whole run is rank q's replica r.
  std::vector<float> total(n, 0.0f);
  for (int q = 0; q < run.ranks.replicas; ++q) {
    const float *g = mine.data();
    if (q != run.ranks.replica()) {
      if (theirs[q].size() != bytes) {
        error = "rank " + std::to_string(q) + " sent " +
                std::to_string(theirs[q].size()) +
                " bytes of the gradients of '" + run.m->params[pid].name +
                "', not " + std::to_string(bytes);
        return PIPE_RT_INVALID_ARGUMENT;
      }
      g = reinterpret_cast<const float *>(theirs[q].data());
    }
    addBlocks(total, g, replicas, n);
  }
  std::lock_guard<std::mutex> lock(mu);
  setReduced(pid, std::move(total));
  return PIPE_RT_OK;
}

int ParameterServer::updatesFor(const std::vector<int> &pids, int replica,
                                int version,
                                std::vector<JobQueue::Pending> &updates,
                                std::string &error) {
  std::lock_guard<std::mutex> lock(mu);
  for (int pid : pids) {
    const std::vector<JobQueue::Pending> &queued = queuedUpdates[pid];
    // Another replica may be steps ahead: this one's loads follow its own
    // program order.
    size_t issued = issuedUpdates[{pid, replica}];
    if (version < 0) {
      if (issued > 0)
        updates.push_back(queued[issued - 1]);
      continue;
    }
    masters[pid].versioned = true;
    if (size_t(version) > issued) {
      error = "weight version " + std::to_string(version) +
              " needs that many ps.updates of its params before the load; " +
              std::to_string(issued) + " are issued";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    if (version > 0)
      updates.push_back(queued[size_t(version) - 1]);
  }
  return PIPE_RT_OK;
}

void ParameterServer::loading(const std::vector<int> &pids, int replica,
                              JobQueue *q, const JobQueue::JobPtr &job) {
  std::lock_guard<std::mutex> lock(mu);
  for (int pid : pids)
    pendingLoads[{pid, replica}].push_back({q, job});
}

const unsigned char *ParameterServer::master(int pid, int version) {
  std::lock_guard<std::mutex> lock(mu);
  const Master &m = masters[pid];
  if (version < 0)
    return m.value;
  return size_t(version) < m.versions.size() ? m.versions[size_t(version)]
                                             : nullptr;
}

bool ParameterServer::versionedLoads(int pid) {
  std::lock_guard<std::mutex> lock(mu);
  return masters[pid].versioned;
}

void ParameterServer::recordVersion(Master &master, bool wrote) {
  if (wrote)
    for (const unsigned char *&older : master.versions)
      if (older == master.value)
        older = nullptr;
  master.versions.push_back(master.value);
}

BufferPtr ParameterServer::shadow(int pid) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = shadows.find(pid);
  return it == shadows.end() ? nullptr : it->second;
}

void ParameterServer::addPush(int pid, int replica, BufferPtr host, bool isBf16,
                              int64_t n) {
  Gradient *grad;
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto [it, fresh] = grads.try_emplace({pid, replica});
    grad = &it->second;
    first = fresh;
  }
  if (first) {
    grad->pushed = std::move(host);
    grad->bf16 = isBf16;
    return;
  }
  // A second push before the update: sum in f32.
  if (grad->pushed) {
    grad->sum.assign(size_t(n), 0.0f);
    addPushed(grad->sum.data(), *grad->pushed, grad->bf16, n);
    grad->pushed.reset();
  }
  if (host)
    addPushed(grad->sum.data(), *host, isBf16, n);
}

void ParameterServer::pushing(const std::vector<int> &pids, int replica,
                              JobQueue *q, const JobQueue::JobPtr &job) {
  std::lock_guard<std::mutex> lock(mu);
  for (int pid : pids)
    pendingPushes[{pid, replica}].push_back({q, job});
}

int ParameterServer::join(JointKind kind, bool isUpdate, int stage, int step,
                          int replica, const std::vector<int> &pids,
                          const std::function<JobQueue::JobPtr(Deps)> &create,
                          const std::vector<JobQueue::Pending> &deps,
                          JobQueue::JobPtr &job, std::string &error) {
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = joints.try_emplace({kind, stage, step});
  Joint &j = it->second;
  if (fresh) {
    j.queue = kind == JointKind::RankReduce ? rankQueue.get() : queue.get();
    j.deps = std::make_shared<std::vector<JobQueue::Pending>>();
    j.job = create(j.deps);
    // The actions a kind does not take count as joined.
    j.reduced.assign(size_t(replicas), kind == JointKind::Update);
    j.updated.assign(size_t(replicas), kind == JointKind::RankReduce);
    if (kind != JointKind::RankReduce)
      for (int pid : pids)
        queuedUpdates[pid].push_back({queue.get(), j.job});
  }
  std::vector<bool> &joined = isUpdate ? j.updated : j.reduced;
  if (joined[size_t(replica)]) {
    error = "issued twice by the same replica";
    return PIPE_RT_INVALID_ARGUMENT;
  }
  bool reducedFirst = j.reduced[size_t(replica)];
  if (kind == JointKind::Update) {
    auto r = joints.find({JointKind::RankReduce, stage, step});
    reducedFirst = r != joints.end() && r->second.reduced[size_t(replica)];
  }
  if (isUpdate && !reducedFirst) {
    error = "the replicas' gradients are not reduced: a ps.reduce of the "
            "stage and step must come before the update";
    return PIPE_RT_INVALID_ARGUMENT;
  }
  joined[size_t(replica)] = true;
  if (isUpdate)
    for (int pid : pids)
      ++issuedUpdates[{pid, replica}];
  j.deps->insert(j.deps->end(), deps.begin(), deps.end());
  // The rank queue stays FIFO: its jobs wait for their dependences
  // themselves.
  if (kind != JointKind::RankReduce)
    j.queue->extend(j.job, deps);
  j.queue->release(j.job);
  job = j.job;
  return PIPE_RT_OK;
}

JobQueue::JobPtr ParameterServer::jointJob(JointKind kind, int stage,
                                           int step) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = joints.find({kind, stage, step});
  return it == joints.end() ? nullptr : it->second.job;
}

void ParameterServer::abandonJoints() {
  std::lock_guard<std::mutex> lock(mu);
  for (auto &[key, j] : joints)
    j.queue->abandon(j.job);
}

std::string ParameterServer::unjoined(const Manifest &m) {
  std::lock_guard<std::mutex> lock(mu);
  for (auto &[key, j] : joints) {
    auto all = [](const std::vector<bool> &v) {
      return std::all_of(v.begin(), v.end(), [](bool b) { return b; });
    };
    if (!all(j.reduced) || !all(j.updated))
      return "stage '" + m.stages[size_t(std::get<1>(key))].name +
             "' step " + std::to_string(std::get<2>(key)) +
             (all(j.reduced) ? " (no ps.update)" : " (no ps.reduce)");
  }
  return "";
}

namespace {
std::vector<JobQueue::Pending>
take(std::map<std::pair<int, int>, std::vector<JobQueue::Pending>> &pending,
     const std::vector<int> &pids, int replica) {
  std::vector<JobQueue::Pending> taken;
  for (int pid : pids) {
    auto it = pending.find({pid, replica});
    if (it == pending.end())
      continue;
    taken.insert(taken.end(), it->second.begin(), it->second.end());
    pending.erase(it);
  }
  return taken;
}
} // namespace

std::vector<JobQueue::Pending>
ParameterServer::takePushes(const std::vector<int> &pids, int replica) {
  std::lock_guard<std::mutex> lock(mu);
  return take(pendingPushes, pids, replica);
}

std::vector<JobQueue::Pending>
ParameterServer::takeLoads(const std::vector<int> &pids, int replica) {
  std::lock_guard<std::mutex> lock(mu);
  return take(pendingLoads, pids, replica);
}

void ParameterServer::updating(const std::vector<int> &pids,
                               const JobQueue::JobPtr &job) {
  std::lock_guard<std::mutex> lock(mu);
  for (int pid : pids)
    queuedUpdates[pid].push_back({queue.get(), job});
}

void ParameterServer::issuedUpdate(const std::vector<int> &pids, int replica) {
  std::lock_guard<std::mutex> lock(mu);
  for (int pid : pids)
    ++issuedUpdates[{pid, replica}];
}

/// Out of place from the session's committed weights and state into its
/// spare copy the first time in a run, in place on the spare copy after
/// that; weights `outOfPlace` always, into the spare that does not hold the
/// latest ones.
pipe_rt_optim_update ParameterServer::prepare(pipe_rt_session &session, int pid,
                                              int step, Master &ps,
                                              const Gradient &grad,
                                              bool outOfPlace) {
  SessionParam &committed = session.params[pid];
  SessionParam &spare = session.psSpare[pid];
  pipe_rt_optim_update u{};
  setParamOptimizer(session, pid, step, u);
  u.step = ps.step + 1;
  size_t n = grad.elements();
  u.grad = grad.sum.data();
  u.grad_dtype = PIPE_RT_GRAD_F32;
  if (grad.pushed) {
    u.grad = grad.pushed->data;
    u.grad_dtype = grad.bf16 ? PIPE_RT_GRAD_BF16 : PIPE_RT_GRAD_F32;
  }
  u.grad_scale = 1.0f;
  u.n = n;
  bool adam = u.kind == PIPE_RT_OPTIM_ADAMW;
  // One state array: in place on the spare copy once it holds the latest
  // values (or zeros for a state the session does not have yet), else out
  // of place from the committed one.
  auto state = [&](bool needed, std::vector<float> &out,
                   const std::vector<float> &in, bool &wrote,
                   const float *&from) {
    if (!needed)
      return (float *)nullptr;
    out.resize(n);
    if (!wrote && in.empty())
      std::fill(out.begin(), out.end(), 0.0f);
    else if (!wrote)
      from = in.data();
    wrote = true;
    return out.data();
  };
  u.state0 = state(adam || u.sgd.momentum != 0, spare.state0, committed.state0,
                   ps.wroteState0, u.state0_in);
  u.state1 =
      state(adam, spare.state1, committed.state1, ps.wroteState1, u.state1_in);
  spare.value.resize(committed.value.size());
  u.param = reinterpret_cast<float *>(spare.value.data());
  if (outOfPlace) {
    std::vector<unsigned char> &second = session.psSecondSpare[pid];
    second.resize(committed.value.size());
    if (ps.value == spare.value.data())
      u.param = reinterpret_cast<float *>(second.data());
    u.param_in = reinterpret_cast<const float *>(ps.value);
  } else if (!ps.updated) {
    u.param_in = reinterpret_cast<const float *>(committed.value.data());
  }
  return u;
}

int ParameterServer::update(pipe_rt_session &session, int pid, int step,
                            bool outOfPlace, std::string &error) {
  Gradient *grad;
  Master *master;
  BufferPtr shadow; // bf16 transfers
  {
    std::lock_guard<std::mutex> lock(mu);
    master = &masters[pid];
    for (int r = 1; r < replicas; ++r)
      if (grads.count({pid, r})) {
        error = "param '" + session.manifest.params[pid].name + "': replica " +
                std::to_string(r) +
                "'s pushed gradient was never reduced (ps.reduce)";
        return PIPE_RT_INVALID_ARGUMENT;
      }
    auto it = grads.find({pid, 0});
    if (it == grads.end()) {
      // No gradient pushed: skipped, as torch skips None; the next version
      // is the same weights.
      recordVersion(*master, /*wrote=*/false);
      return PIPE_RT_OK;
    }
    grad = &it->second;
    auto sh = shadows.find(pid);
    if (sh != shadows.end())
      shadow = sh->second;
  }
  pipe_rt_optim_update u =
      prepare(session, pid, step, *master, *grad, outOfPlace);
  // The next ps.load of the param copies its bf16 rounding: written by the
  // optimizer's workers, once per update, not per load.
  if (shadow)
    u.param_bf16 = static_cast<uint16_t *>(shadow->data);
  int st = pipe_rt_host_optimizer_run(session.optimizer, &u);
  if (st != PIPE_RT_OK) {
    error = "host optimizer rejected the update of '" +
            session.manifest.params[pid].name + "'";
    return st;
  }
  std::lock_guard<std::mutex> lock(mu);
  master->value = reinterpret_cast<const unsigned char *>(u.param);
  master->updated = true;
  ++master->step;
  recordVersion(*master, /*wrote=*/true);
  grads.erase({pid, 0});
  return PIPE_RT_OK;
}

//===----------------------------------------------------------------------===//
// Actions of ps stages
//===----------------------------------------------------------------------===//

namespace {

int checkPsStage(pipe_rt_device_ctx *ctx, const std::string &what, int stage,
                 int step) {
  if (int st = checkAction(ctx, what, stage, -1, step))
    return st;
  if (!ctx->run->schedule->psStage[stage])
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the stage does not use the parameter server");
  return PIPE_RT_OK;
}

/// ps.load of a bf16 param: the shadow (host) into `staging` (device,
/// allocated on first use for the largest shadow of the job, `maxBytes`) on
/// the h2d lane, then widened into the param's buffer `dst` on the device.
int loadBf16(RunState &run, int device, Buffer &dst, const Buffer &shadow,
             uint64_t maxBytes, BufferPtr &staging, std::string &error) {
  if (!staging)
    if (int st = run.memory.alloc(device, maxBytes, "ps.load bf16 staging",
                                  staging, error))
      return st;
  if (int st = run.memory.copy(device, Lane::H2D, staging->data, shadow.data,
                               shadow.bytes, error))
    return st;
  return run.memory->widenBf16(device, Lane::H2D, dst.data, staging->data,
                               int64_t(dst.bytes / 4), error);
}

/// The trainable params of the parameter server whose update `stage`
/// owns.
std::vector<int> updatedParams(const RunState &run, int stage) {
  std::vector<int> owned;
  for (int pid : run.schedule->owns[stage])
    if (run.ps.holds(pid) && run.m->params[pid].trainable)
      owned.push_back(pid);
  return owned;
}

/// The host's update of `owned` in `step`, after the pushes and loads in
/// `after`.
int updateOnHost(RunState &run, int step, const std::vector<int> &owned,
                 const std::vector<JobQueue::Pending> &after,
                 std::string &error) {
  if (int st = waitFor(after)) {
    error = "a ps.push or ps.load of these params failed";
    return st;
  }
  for (int pid : owned)
    if (int st = run.ps.update(*run.session, pid, step,
                               run.ps.versionedLoads(pid), error))
      return st;
  return PIPE_RT_OK;
}

/// Data parallelism: joins this replica's ps.reduce (`isUpdate` false) or
/// ps.update of `stage` in `step` to the joint job that sums every
/// replica's pushes of `owned` in replica order and the one that updates
/// them: in one process a single host job takes both; across ranks the
/// sum exchanges the ranks' gradients on the rank queue, and the update
/// (a host job) waits for it.
int joinReplicas(pipe_rt_device_ctx *ctx, int stage, int step, bool isUpdate,
                 const std::vector<int> &owned,
                 const std::vector<JobQueue::Pending> &deps,
                 JobQueue::JobPtr &job, std::string &error) {
  RunState *run = ctx->run;
  ParameterServer &ps = run->ps;
  int replicas = ps.replicaCount();
  std::string where = " stage '" + run->m->stages[size_t(stage)].name +
                      "' step " + std::to_string(step);
  auto sum = [run, owned, step](std::string &error) {
    for (int pid : owned) {
      if (run->ranks.replicas == 1)
        run->ps.reduce(pid);
      else if (int st = run->ps.reduceAcrossRanks(*run, pid, step, error))
        return st;
    }
    return int(PIPE_RT_OK);
  };
  // Each waits for its dependences first: the host queue may start a job
  // before they are done, the rank queue always does.
  auto body = [run, sum, owned, step](ParameterServer::Deps all, bool reduce,
                                      bool update, const std::string &label) {
    return [=](std::string &error) {
      double t0 = run->now();
      if (int st = waitFor(*all)) {
        error = "a ps.push or ps.load of these params failed";
        return st;
      }
      int st = reduce ? sum(error) : int(PIPE_RT_OK);
      if (st == PIPE_RT_OK && update)
        st = updateOnHost(*run, step, owned, {}, error);
      run->traceEvent(label, "host", TrackKind::Host, 0, t0, run->now());
      return st;
    };
  };
  using Kind = ParameterServer::JointKind;
  int replica = run->replicaOf(ctx->device);
  if (run->ranks.replicas == 1)
    return ps.join(
        Kind::ReduceAndUpdate, isUpdate, stage, step, replica, owned,
        [&](ParameterServer::Deps all) {
          return ps.hostQueue().submit(
              body(all, true, true, "ps.reduce+update" + where),
              {step, stage}, {}, 2 * replicas);
        },
        deps, job, error);
  if (!isUpdate)
    return ps.join(
        Kind::RankReduce, false, stage, step, replica, owned,
        [&](ParameterServer::Deps all) {
          return ps.rankReduceQueue().submit(
              body(all, true, false, "ps.reduce (ranks)" + where), {0, 0}, {},
              replicas);
        },
        deps, job, error);
  // The update waits for the rank reduce of its stage and step (without
  // one, join() refuses it).
  std::vector<JobQueue::Pending> after = deps;
  if (JobQueue::JobPtr reduce = ps.jointJob(Kind::RankReduce, stage, step))
    after.push_back({&ps.rankReduceQueue(), reduce});
  return ps.join(
      Kind::Update, true, stage, step, replica, owned,
      [&](ParameterServer::Deps all) {
        return ps.hostQueue().submit(body(all, false, true, "ps.update" + where),
                                     {step, stage}, {}, replicas);
      },
      after, job, error);
}

} // namespace

extern "C" {

int64_t pipe_rt_act_ps_load(pipe_rt_device_ctx *ctx, int32_t stage,
                            int32_t step, int32_t version) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.load", stage, -1, step);
  if (version >= 0)
    what += " version " + std::to_string(version);
  if (int st = checkPsStage(ctx, what, stage, step))
    return -st;
  if (version < -1)
    return -fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                 what + ": weight version " + std::to_string(version) +
                     " is negative");
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  DeviceState &ds = deviceOf(ctx);
  std::vector<std::pair<int, BufferPtr>> copies;
  for (int pid : m.stages[stage].params) {
    std::lock_guard<std::mutex> lock(ds.mu);
    DeviceParam &dp = ds.params[pid];
    if (dp.loads++ > 0)
      continue;
    std::string error;
    std::string label = "param '" + m.params[pid].name + "'";
    if (int st =
            run.memory.alloc(ctx->device, m.types[m.params[pid].type].bytes(),
                             label.c_str(), dp.value, error)) {
      ds.params.erase(pid);
      return -fail(ctx, st, what + ": " + error);
    }
    copies.push_back({pid, dp.value});
  }
  RunState *runp = &run;
  int device = ctx->device;
  // A version counts the updates of trainable params; frozen ones never
  // change, so every version of them is the latest, and no update writes
  // what the load reads.
  std::vector<int> trainable;
  std::vector<int> versionOf(copies.size(), -1);
  for (size_t i = 0; i < copies.size(); ++i) {
    int pid = copies[i].first;
    if (m.params[pid].trainable) {
      trainable.push_back(pid);
      versionOf[i] = version;
    }
    if (version >= 0 && run.ps.bf16(pid))
      return -fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                   what + ": param '" + m.params[pid].name +
                       "' crosses the link as bf16, whose one shadow per "
                       "param holds only the latest weights; versioned loads "
                       "(delayed updates) need f32 transfers");
  }
  std::vector<JobQueue::Pending> updates;
  {
    std::string error;
    if (int st = run.ps.updatesFor(trainable, run.replicaOf(device), version,
                                   updates, error))
      return -fail(ctx, st, what + ": " + error);
  }
  JobQueue::JobPtr job;
  int64_t token = submitJob(
      ctx, run.transfers->h2d(device), TrackKind::H2D, "h2d", what,
      [runp, device, copies, updates, versionOf](std::string &error) {
        if (int st = waitFor(updates)) {
          error = "an earlier ps.update of these params failed";
          return st;
        }
        // bf16 params: one device staging buffer for the job, charged while
        // the job runs.
        std::vector<BufferPtr> shadows;
        uint64_t maxBytes = 0;
        for (auto &[pid, b] : copies) {
          shadows.push_back(runp->ps.shadow(pid));
          if (shadows.back())
            maxBytes = std::max(maxBytes, shadows.back()->bytes);
        }
        // One batch for the stage's params: a GPU queues every copy (and
        // widening) on the lane and waits once, not once per tensor.
        BufferPtr staging;
        runp->memory->beginBatch(device, Lane::H2D);
        int st = PIPE_RT_OK;
        for (size_t i = 0; i < copies.size() && st == PIPE_RT_OK; ++i) {
          auto &[pid, b] = copies[i];
          if (shadows[i]) {
            st = loadBf16(*runp, device, *b, *shadows[i], maxBytes, staging,
                          error);
            continue;
          }
          const unsigned char *weights = runp->ps.master(pid, versionOf[i]);
          if (!weights) {
            error = "param '" + runp->m->params[pid].name +
                    "': weight version " + std::to_string(versionOf[i]) +
                    " was overwritten by a later ps.update (the parameter "
                    "server keeps the latest two versions)";
            st = PIPE_RT_INVALID_ARGUMENT;
            break;
          }
          st = runp->memory.toDevice(Lane::H2D, *b, weights, b->bytes, error);
        }
        std::string drained;
        int end = runp->memory->endBatch(device, Lane::H2D,
                                         st == PIPE_RT_OK ? error : drained);
        return st != PIPE_RT_OK ? st : end;
      },
      &job);
  if (token > 0)
    run.ps.loading(trainable, run.replicaOf(device),
                   &run.transfers->h2d(device), job);
  return token;
}

int64_t pipe_rt_act_ps_push(pipe_rt_device_ctx *ctx, int32_t stage,
                            int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.push", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return -st;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  DeviceState &ds = deviceOf(ctx);
  std::vector<std::pair<int, BufferPtr>> grads;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    for (int pid : m.stages[stage].params) {
      auto it = ds.grads.find({pid, step});
      if (it == ds.grads.end())
        continue;
      grads.push_back({pid, it->second});
      ds.grads.erase(it); // freed once copied
    }
  }
  RunState *runp = &run;
  int device = ctx->device;
  JobQueue::JobPtr job;
  int64_t token = submitJob(
      ctx, run.transfers->d2h(device), TrackKind::D2H, "d2h", what,
      [runp, device, grads](std::string &error) {
        // bf16 params: narrowed on the device first, into a staging buffer
        // allocated once for the job's largest one.
        uint64_t maxBf16 = 0;
        for (auto &[pid, g] : grads)
          if (runp->ps.bf16(pid))
            maxBf16 = std::max(maxBf16, g->bytes / 2);
        BufferPtr narrow;
        if (maxBf16)
          if (int st = runp->memory.alloc(
                  device, maxBf16, "ps.push bf16 staging", narrow, error))
            return st;
        for (auto &[pid, g] : grads) {
          int64_t n = int64_t(g->bytes / 4);
          bool bf16 = runp->ps.bf16(pid);
          // The copy the optimizer reads: host memory (page-locked on a
          // GPU), kept until the update.
          BufferPtr host;
          if (n > 0) {
            uint64_t bytes = uint64_t(n) * (bf16 ? 2 : 4);
            if (int st = runp->memory.alloc(-1, bytes, "ps.push host copy",
                                            host, error))
              return st;
            const void *from = g->data;
            if (bf16) {
              if (int st = runp->memory->narrowBf16(
                      device, Lane::D2H, narrow->data, g->data, n, error))
                return st;
              from = narrow->data;
            }
            if (int st = runp->memory.copy(device, Lane::D2H, host->data, from,
                                           bytes, error))
              return st;
          }
          runp->ps.addPush(pid, runp->replicaOf(device), std::move(host), bf16,
                           n);
        }
        return int(PIPE_RT_OK);
      },
      &job);
  if (token > 0) {
    std::vector<int> pids;
    for (auto &[pid, g] : grads)
      pids.push_back(pid);
    run.ps.pushing(pids, run.replicaOf(device), &run.transfers->d2h(device),
                   job);
  }
  return token;
}

int64_t pipe_rt_act_ps_update(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.update", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return -st;
  RunState *run = ctx->run;
  int replica = run->replicaOf(ctx->device);
  std::vector<int> owned = updatedParams(*run, stage);
  // An update may write the buffer an earlier load still reads.
  std::vector<JobQueue::Pending> loads = run->ps.takeLoads(owned, replica);
  if (run->totalReplicas() > 1) {
    JobQueue::JobPtr job;
    std::string error;
    if (int st = joinReplicas(ctx, stage, step, /*isUpdate=*/true, owned,
                              loads, job, error))
      return -fail(ctx, st, what + ": " + error);
    return addJobToken(ctx, run->ps.hostQueue(), job, what);
  }
  std::vector<JobQueue::Pending> pushes = run->ps.takePushes(owned, replica);
  std::vector<JobQueue::Pending> after = pushes;
  after.insert(after.end(), loads.begin(), loads.end());
  JobQueue::JobPtr job;
  int64_t token = submitJob(
      ctx, run->ps.hostQueue(), TrackKind::Host, "host", what,
      [run, step, owned, after](std::string &error) {
        return updateOnHost(*run, step, owned, after, error);
      },
      // The next step's forward needs the lowest stages first, and an L2L
      // backward pushes them last: among the updates whose pushes are
      // done, they jump the queue.
      &job, {step, stage}, after);
  if (token > 0) {
    run->ps.updating(owned, job);
    run->ps.issuedUpdate(owned, replica);
  }
  return token;
}

int32_t pipe_rt_act_ps_reduce(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t step) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.reduce", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return st;
  RunState *run = ctx->run;
  if (run->totalReplicas() == 1)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the run has one data-parallel replica, so there "
                       "are no replicas' gradients to sum");
  std::vector<int> owned = updatedParams(*run, stage);
  std::vector<JobQueue::Pending> pushes =
      run->ps.takePushes(owned, run->replicaOf(ctx->device));
  JobQueue::JobPtr job;
  std::string error;
  if (int st = joinReplicas(ctx, stage, step, /*isUpdate=*/false, owned,
                            pushes, job, error))
    return fail(ctx, st, what + ": " + error);
  return PIPE_RT_OK;
}

int32_t pipe_rt_act_ps_release(pipe_rt_device_ctx *ctx, int32_t stage,
                               int32_t step) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.release", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return st;
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> lock(ds.mu);
  for (int pid : ctx->run->m->stages[stage].params) {
    auto it = ds.params.find(pid);
    if (it == ds.params.end() || it->second.loads <= 0)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": param '" + ctx->run->m->params[pid].name +
                      "' is not loaded");
    if (--it->second.loads == 0)
      ds.params.erase(it);
  }
  return PIPE_RT_OK;
}

} // extern "C"
