//===- ComputeActions.cpp - Forward, backward, update and reductions ------===//
//
// The compute actions of device programs: pipe_rt_act_forward, recompute,
// backward, update (with global gradient-norm clipping) and reduce_grad's
// all-reduce (pipe_rt_comm_grad_buffer and pipe_rt_comm_allreduce).
// They call the block functions of the manifest and own the per-device
// values, stashes and gradients (DeviceState, Executor.h).
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

/// Where micro-batch `mb` of `step` is among the run's inputs and losses:
/// each step's micro-batches, and with in-process replicas each replica's
/// share of the step in replica order (a step of R replicas with M
/// micro-batches each trains on the micro-batches a one-replica step of
/// R x M would).
size_t microbatchIndex(const RunState &run, pipe_rt_device_ctx *ctx, int step,
                       int mb) {
  return (size_t(step) * run.localReplicas + run.replicaOf(ctx->device)) *
             run.schedule->microbatches +
         size_t(mb);
}

/// Calls block function `fid` with `args`; fills `results` with buffers the
/// runtime owns (adopted hook allocations or copies).
int callBlock(pipe_rt_device_ctx *ctx, int fid,
              const std::vector<BufferPtr> &args,
              std::vector<BufferPtr> &results, const std::string &what) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  const FunctionInfo &f = m.functions[fid];
  auto fn = reinterpret_cast<void (*)(void **)>(run.session->functions[fid]);
  std::vector<std::vector<int64_t>> descs(args.size());
  std::vector<void *> argv(1 + args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    const TypeInfo &t = m.types[f.args[i]];
    auto &d = descs[i];
    auto ptr = reinterpret_cast<int64_t>(args[i]->data);
    d = {ptr, ptr, 0};
    d.insert(d.end(), t.shape.begin(), t.shape.end());
    std::vector<int64_t> strides(t.shape.size());
    int64_t s = 1;
    for (size_t k = t.shape.size(); k-- > 0;) {
      strides[k] = s;
      s *= t.shape[k];
    }
    d.insert(d.end(), strides.begin(), strides.end());
    argv[1 + i] = d.data();
  }
  size_t words = 0;
  for (int tid : f.results)
    words += 3 + 2 * m.types[tid].shape.size();
  std::vector<int64_t> res(words, 0);
  argv[0] = words ? res.data() : nullptr;

  std::string label = what + " (" + f.symbol + ")";
  CallScope scope(run.memory.backend(), ctx->device, label);
  run.memory->beginCall(ctx->device);
  scope.enter();
  fn(argv.data());
  scope.leave();
  std::string error;
  // Waits for the device work the block queued (a GPU's kernels).
  int status = run.memory->endCall(ctx->device, error);
  if (status != PIPE_RT_OK)
    error = label + ": " + error;

  results.clear();
  size_t o = 0;
  for (size_t j = 0; j < f.results.size(); ++j) {
    const TypeInfo &t = m.types[f.results[j]];
    size_t rank = t.shape.size();
    void *alloc = reinterpret_cast<void *>(res[o]);
    char *aligned = reinterpret_cast<char *>(res[o + 1]);
    int64_t offset = res[o + 2];
    const int64_t *sizes = &res[o + 3];
    const int64_t *strides = &res[o + 3 + rank];
    o += 3 + 2 * rank;
    bool dense = true, shapeOk = true;
    int64_t expect = 1;
    for (size_t k = rank; k-- > 0;) {
      shapeOk &= sizes[k] == t.shape[k];
      if (sizes[k] != 1 && strides[k] != expect)
        dense = false;
      expect *= t.shape[k];
    }
    if (!shapeOk && status == PIPE_RT_OK) {
      status = PIPE_RT_INVALID_ARGUMENT;
      error = format("%s: result %zu has the wrong shape", label.c_str(), j);
    }
    if (status != PIPE_RT_OK) {
      results.push_back(nullptr);
      continue;
    }
    if (dense && offset == 0 && alloc == aligned && scope.adopt(alloc)) {
      results.push_back(run.memory.adopt(ctx->device, alloc, t.bytes()));
      continue;
    }
    BufferPtr b;
    status = run.memory.alloc(ctx->device, t.bytes(), label.c_str(), b, error);
    if (status == PIPE_RT_OK)
      status = run.memory->gather(ctx->device, b->data,
                                  aligned + offset * t.elemSize, t.shape,
                                  strides, t.elemSize, error);
    results.push_back(std::move(b));
  }
  // The scope frees the temporaries the block did not free (and results it
  // aliased) when it goes.
  if (!scope.error().empty())
    return fail(ctx, scope.errorStatus(), what + ": " + scope.error());
  if (status != PIPE_RT_OK)
    return fail(ctx, status, what + ": " + error);
  return PIPE_RT_OK;
}

/// The value of param `pid` this device computes with at `version`.
int getParam(pipe_rt_device_ctx *ctx, int pid, int version,
             const std::string &what, BufferPtr &out) {
  DeviceState &ds = deviceOf(ctx);
  const std::string &name = ctx->run->m->params[pid].name;
  std::lock_guard<std::mutex> lock(ds.mu);
  auto it = ds.params.find(pid);
  if (it == ds.params.end() || !it->second.value)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": param '" + name + "' is not on the device" +
                    (ctx->run->ps.holds(pid) ? " (missing ps.load?)" : ""));
  DeviceParam &dp = it->second;
  if (version < 0 || version == dp.updates) {
    out = dp.value;
    return PIPE_RT_OK;
  }
  if (version > dp.updates)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": weight version %d of param '%s' is ahead of "
                              "its %d update(s)",
                              version, name.c_str(), dp.updates));
  auto v = dp.versions.find(version);
  if (v == dp.versions.end())
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": weight version %d of param '%s' was not "
                              "kept",
                              version, name.c_str()));
  out = v->second;
  return PIPE_RT_OK;
}

/// Weight prediction (pipe.forward `predict`): `value`, the latest weights
/// of param `pid` after `version` updates, extrapolated `ahead` updates
/// along the optimizer's current direction with no new gradient (FTPipe's
/// weight prediction), into a new buffer the forward computes on; the true
/// weights are untouched. Update k ahead uses the learning rate of its own
/// step. Momentum SGD: w - sum_k lr_k m^k v (v the momentum buffer; no
/// weight-decay or dampening term, as FTPipe). AdamW: k = 1..ahead AdamW
/// steps with exp_avg decayed by beta1^k and exp_avg_sq as it is. Without
/// optimizer state yet (no update so far, or plain SGD) there is nothing to
/// extrapolate: `out` is `value` itself.
int predictParam(pipe_rt_device_ctx *ctx, int pid, int version, int ahead,
                 const BufferPtr &value, const std::string &what,
                 BufferPtr &out) {
  RunState &run = *ctx->run;
  const ParamInfo &p = run.m->params[pid];
  const TypeInfo &t = run.m->types[p.type];
  if (t.dtype != DType::F32)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": weight prediction of param '" + p.name +
                    "', which is not f32");
  size_t n = size_t(t.numel);
  const auto &states = run.deviceOptState[ctx->device];
  auto found = states.find(pid);
  pipe_rt_optim_update u{};
  setParamOptimizer(*run.session, pid, version, u);
  bool sgd = u.kind == PIPE_RT_OPTIM_SGD && u.sgd.momentum != 0;
  bool adamw = u.kind == PIPE_RT_OPTIM_ADAMW;
  if (!p.trainable || found == states.end() || found->second.step == 0 ||
      found->second.state0.size() != n ||
      (adamw && found->second.state1.size() != n) || !(sgd || adamw)) {
    out = value;
    return PIPE_RT_OK;
  }
  const SessionParam &state = found->second;
  std::string error;
  std::vector<float> w(n);
  if (int st =
          run.memory.toHost(Lane::Compute, w.data(), *value, t.bytes(), error))
    return fail(ctx, st, what + ": predicting '" + p.name + "': " + error);
  if (sgd) {
    double coefficient = 0, power = 1;
    for (int k = 1; k <= ahead; ++k) {
      setParamOptimizer(*run.session, pid, version + k - 1, u);
      power *= u.sgd.momentum;
      coefficient += double(u.sgd.lr) * power;
    }
    float c = float(coefficient);
    for (size_t i = 0; i < n; ++i)
      w[i] -= c * state.state0[i];
  } else {
    for (int k = 1; k <= ahead; ++k) {
      setParamOptimizer(*run.session, pid, version + k - 1, u);
      const pipe_rt_adamw_config &a = u.adamw;
      double stepNo = double(state.step + k);
      float decay = float(1.0 - double(a.lr) * double(a.weight_decay));
      float b1k = float(std::pow(double(a.beta1), k));
      float negStep =
          float(-double(a.lr) / (1.0 - std::pow(double(a.beta1), stepNo)));
      float bc2Sqrt = float(std::sqrt(1.0 - std::pow(double(a.beta2), stepNo)));
      for (size_t i = 0; i < n; ++i) {
        float denom = std::sqrt(state.state1[i]) / bc2Sqrt + a.eps;
        w[i] = w[i] * decay + negStep * ((b1k * state.state0[i]) / denom);
      }
    }
  }
  if (int st = run.memory.alloc(ctx->device, t.bytes(), "predicted weights",
                                out, error))
    return fail(ctx, st, what + ": " + error);
  if (int st =
          run.memory.toDevice(Lane::Compute, *out, w.data(), t.bytes(), error))
    return fail(ctx, st, what + ": predicting '" + p.name + "': " + error);
  return PIPE_RT_OK;
}

/// Weight stash (the schedule keeps versions): counts the forwards of
/// stage `sid` that read `version` and whose backward has not run, by
/// `delta`. A version kept for them is freed with the last one, at that
/// backward, so a device holds one copy per version still in flight.
/// Caller holds `ds.mu`.
void countVersionUsers(RunState &run, DeviceState &ds, int sid, int version,
                       int delta) {
  if (!run.trackVersions || version < 0)
    return;
  for (int rid : run.m->stages[sid].runs)
    for (int pid : run.m->runs[rid].params) {
      auto it = ds.params.find(pid);
      if (it == ds.params.end())
        continue;
      DeviceParam &dp = it->second;
      if ((dp.versionUsers[version] += delta) > 0)
        continue;
      dp.versionUsers.erase(version);
      dp.versions.erase(version);
    }
}

/// Forward (or recompute) of a stage.
int runStage(pipe_rt_device_ctx *ctx, int sid, int mb, int step, int version,
             int predict, bool keep, bool recompute, const std::string &what) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  const StageInfo &stage = m.stages[sid];
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> compute(ds.computeMu);
  auto key = std::make_tuple(sid, step, mb);
  std::map<int, BufferPtr> locals;
  int forwardVersion = version; // a recompute's stash keeps its forward's
  if (recompute) {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.stashes.find(key);
    if (it == ds.stashes.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": nothing stashed (missing forward?)");
    if (it->second.full)
      return PIPE_RT_OK;
    locals = it->second.external;
    forwardVersion = it->second.version;
  }
  bool stashAll = keep || recompute;
  bool stashInputs = stashAll || !run.schedule->forwardOnly;
  StageStash stash;
  stash.full = stashAll;
  stash.version = forwardVersion;
  if (stashAll)
    stash.runs.resize(stage.runs.size());
  // Weight prediction: once per param, however many runs read it.
  std::map<int, BufferPtr> predicted;
  for (size_t i = 0; i < stage.runs.size(); ++i) {
    const RunInfo &r = m.runs[stage.runs[i]];
    std::vector<BufferPtr> args;
    for (int pid : r.params) {
      BufferPtr p;
      if (int st = getParam(ctx, pid, version, what, p))
        return st;
      if (predict > 0 && !recompute) {
        BufferPtr &copy = predicted[pid];
        if (!copy)
          if (int st = predictParam(ctx, pid, version, predict, p, what, copy))
            return st;
        p = copy;
      }
      args.push_back(std::move(p));
    }
    for (int vid : r.inputs) {
      auto it = locals.find(vid);
      if (it == locals.end()) {
        BufferPtr b;
        const TypeInfo &t = valueType(m, vid);
        if (recompute)
          return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                      what + format(": value %d was not stashed", vid));
        if (int k = m.inputIndex[vid]; k >= 0) {
          std::string error;
          if (int st = run.memory.alloc(ctx->device, t.bytes(), "graph input",
                                        b, error))
            return fail(ctx, st, what + ": " + error);
          const void *src =
              run.inputs[microbatchIndex(run, ctx, step, mb) * m.inputs.size() +
                         k];
          if (!src)
            return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                        what + format(": graph input %d is null", k));
          if (int st =
                  run.memory.toDevice(Lane::Compute, *b, src, t.bytes(), error))
            return fail(ctx, st, what + ": graph input: " + error);
        } else {
          std::lock_guard<std::mutex> lock(ds.mu);
          auto v = ds.values.find(std::make_tuple(vid, step, mb));
          if (v == ds.values.end()) {
            int p = m.producer[vid];
            return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                        what + format(": value %d (from stage '%s') is not "
                                      "on the device (missing recv or "
                                      "forward?)",
                                      vid,
                                      p >= 0 ? m.stages[p].name.c_str() : "?"));
          }
          b = v->second.first;
          if (--v->second.second <= 0)
            ds.values.erase(v);
        }
        it = locals.emplace(vid, b).first;
        if (stashInputs)
          stash.external[vid] = b;
      }
      args.push_back(it->second);
    }
    std::vector<BufferPtr> results;
    if (int st = callBlock(ctx, r.forward, args, results,
                           what + " run '" + r.name + "'"))
      return st;
    for (size_t j = 0; j < r.outputs.size(); ++j)
      locals[r.outputs[j]] = results[j];
    if (stashAll) {
      stash.runs[i].inputs.assign(args.begin() + r.params.size(), args.end());
      stash.runs[i].saved.assign(results.begin() + r.outputs.size(),
                                 results.end());
    }
  }
  std::lock_guard<std::mutex> lock(ds.mu);
  if (!recompute) {
    // Publish what other stages read, and the loss.
    for (int rid : stage.runs)
      for (int vid : m.runs[rid].outputs) {
        if (!m.consumers[vid].empty())
          ds.values[std::make_tuple(vid, step, mb)] = {
              locals[vid], int(m.consumers[vid].size())};
        size_t idx = microbatchIndex(run, ctx, step, mb);
        std::string error;
        for (size_t k = 0; k < m.metrics.size(); ++k) {
          if (m.metrics[k].value != vid)
            continue;
          int64_t *counts = &run.metricCounts[(idx * m.metrics.size() + k) * 2];
          if (int st = run.memory.toHost(Lane::Compute, counts, *locals[vid],
                                         2 * sizeof(int64_t), error))
            return fail(ctx, st,
                        what + ": reading metric '" + m.metrics[k].name +
                            "': " + error);
        }
        if (vid != m.lossValue)
          continue;
        if (int st = run.memory.toHost(Lane::Compute, &run.losses[idx],
                                       *locals[vid], 4, error))
          return fail(ctx, st, what + ": reading the loss: " + error);
        run.lossSeen[idx] = true;
        if (run.schedule->forwardOnly)
          continue;
        BufferPtr seed;
        if (int st = run.memory.alloc(ctx->device, 4, "loss seed", seed, error))
          return fail(ctx, st, what + ": " + error);
        // A mean over every replica's micro-batches: the replicas' summed
        // gradients are then the whole step's.
        float seedValue = float(
            m.lossSeed / (run.schedule->microbatches * run.totalReplicas()));
        if (int st =
                run.memory.toDevice(Lane::Compute, *seed, &seedValue, 4, error))
          return fail(ctx, st, what + ": loss seed: " + error);
        ds.cotangents[std::make_tuple(vid, step, mb, -1)] = seed;
      }
  }
  if (stashInputs) {
    if (!recompute && !run.schedule->forwardOnly)
      countVersionUsers(run, ds, sid, version, +1);
    ds.stashes[key] = std::move(stash);
  }
  return PIPE_RT_OK;
}

/// Whether a weight gradient of run `r` reaches the optimizer: a run whose
/// differentiated params are all frozen (a frozen layer sharing its block
/// with trainable ones) skips the weight-gradient computation.
bool hasTrainableGradient(const Manifest &m, const RunInfo &r) {
  return std::any_of(r.diffParams.begin(), r.diffParams.end(), [&](int64_t p) {
    return m.params[r.params[p]].trainable;
  });
}

int runBackward(pipe_rt_device_ctx *ctx, int sid, int mb, int step, int version,
                int part, const std::string &what) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  const StageInfo &stage = m.stages[sid];
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> compute(ds.computeMu);
  auto key = std::make_tuple(sid, step, mb);
  StageStash *stash;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.stashes.find(key);
    if (it == ds.stashes.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": no stashed activations (missing forward?)");
    stash = &it->second;
  }
  auto argsOf = [&](const RunInfo &r, StageStash::Run &sr,
                    std::vector<BufferPtr> &args) {
    for (int pid : r.params) {
      BufferPtr p;
      if (int st = getParam(ctx, pid, version, what, p))
        return st;
      args.push_back(std::move(p));
    }
    args.insert(args.end(), sr.inputs.begin(), sr.inputs.end());
    args.insert(args.end(), sr.cotangents.begin(), sr.cotangents.end());
    args.insert(args.end(), sr.saved.begin(), sr.saved.end());
    return int(PIPE_RT_OK);
  };
  if (part != 2) {
    if (!stash->full)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": only the stage inputs are stashed (missing "
                         "recompute?)");
    if (stash->inputDone)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": input gradients already computed");
    for (size_t i = stage.runs.size(); i-- > 0;) {
      const RunInfo &r = m.runs[stage.runs[i]];
      StageStash::Run &sr = stash->runs[i];
      sr.cotangents.clear();
      for (int idx : r.diffResults) {
        int vid = r.outputs[idx];
        BufferPtr c;
        {
          std::lock_guard<std::mutex> lock(ds.mu);
          auto it = ds.cotangents.find(std::make_tuple(vid, step, mb, -1));
          if (it != ds.cotangents.end()) {
            c = it->second;
            ds.cotangents.erase(it);
          }
        }
        if (!c)
          if (int st = zeros(ctx, valueType(m, vid), what + " cotangent", c))
            return st;
        sr.cotangents.push_back(std::move(c));
      }
      bool needed = false;
      for (int idx : r.diffInputs)
        needed |= m.inputIndex[r.inputs[idx]] < 0;
      // A full backward runs the fused function: one reverse sweep instead
      // of two that would each redo the cotangent chain.
      bool fused = part == 0 && r.bwdFused >= 0 && hasTrainableGradient(m, r);
      if (!fused && (r.bwdInput < 0 || !needed))
        continue;
      std::vector<BufferPtr> args, results;
      if (int st = argsOf(r, sr, args))
        return st;
      if (int st = callBlock(ctx, fused ? r.bwdFused : r.bwdInput, args,
                             results, what + " run '" + r.name + "'"))
        return st;
      std::lock_guard<std::mutex> lock(ds.mu);
      if (fused) {
        sr.weightDone = true;
        for (size_t j = 0; j < r.diffParams.size(); ++j) {
          int pid = r.params[r.diffParams[j]];
          std::string error;
          if (m.params[pid].trainable)
            if (int st = accumulate(ds.grads[{pid, step}],
                                    results[r.diffInputs.size() + j],
                                    m.types[m.params[pid].type], error))
              return fail(ctx, st, what + ": " + error);
        }
      }
      for (size_t j = 0; j < r.diffInputs.size(); ++j) {
        int vid = r.inputs[r.diffInputs[j]];
        if (m.inputIndex[vid] >= 0)
          continue;
        int producer = m.producer[vid];
        int tag = producer >= 0 && m.stages[producer].device ==
                                       run.programDevice(ctx->device)
                      ? -1
                      : sid;
        std::string error;
        if (int st =
                accumulate(ds.cotangents[std::make_tuple(vid, step, mb, tag)],
                           results[j], valueType(m, vid), error))
          return fail(ctx, st, what + ": " + error);
      }
    }
    stash->inputDone = true;
  }
  if (part == 1)
    return PIPE_RT_OK;
  if (!stash->inputDone)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": weight gradients before input gradients (missing "
                       "backward part 1?)");
  for (size_t i = stage.runs.size(); i-- > 0;) {
    const RunInfo &r = m.runs[stage.runs[i]];
    if (r.bwdWeight < 0 || !hasTrainableGradient(m, r) ||
        stash->runs[i].weightDone)
      continue;
    std::vector<BufferPtr> args, results;
    if (int st = argsOf(r, stash->runs[i], args))
      return st;
    if (int st = callBlock(ctx, r.bwdWeight, args, results,
                           what + " run '" + r.name + "'"))
      return st;
    std::lock_guard<std::mutex> lock(ds.mu);
    for (size_t j = 0; j < r.diffParams.size(); ++j) {
      int pid = r.params[r.diffParams[j]];
      if (!m.params[pid].trainable)
        continue;
      std::string error;
      if (int st = accumulate(ds.grads[{pid, step}], results[j],
                              m.types[m.params[pid].type], error))
        return fail(ctx, st, what + ": " + error);
    }
  }
  std::lock_guard<std::mutex> lock(ds.mu);
  countVersionUsers(run, ds, sid, stash->version, -1);
  ds.stashes.erase(key);
  return PIPE_RT_OK;
}

/// Waits until every device in `participants` arrived at rendezvous `key`
/// (after `deposit`), then calls `collect`. In a distributed run only the
/// participants of this rank meet; `remote` then receives what the others
/// sent in exchange for `mine` (`bytes`, null: zeros).
int rendezvous(pipe_rt_device_ctx *ctx, std::pair<int, int> key,
               const std::set<int> &participants, const void *mine,
               uint64_t bytes, std::map<int, std::vector<unsigned char>> &remote,
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
                                      participants, mine, bytes, remote,
                                      error))
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

/// Global gradient-norm clipping before the first update of `step`.
int clipGradients(pipe_rt_device_ctx *ctx, int step, const std::string &what) {
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

int startOwnedBucket(RunState &run, int device, const std::vector<int> &params,
                     int step, std::vector<unsigned char> &packed, Exchange &x,
                     std::string &error);
int finishOwnedBucket(pipe_rt_device_ctx *ctx, const std::vector<int> &params,
                      int step, Exchange &toOwners, Exchange &fromOwners,
                      std::vector<unsigned char> &packed,
                      const std::string &what, std::string &error);

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
  if (run.ranks.replicas > 2) {
    // The param as a bucket of one, summed by owners at once.
    std::vector<unsigned char> packed(t.bytes());
    Exchange toOwners, fromOwners;
    int st = run.memory.hostRead(Lane::Compute, packed.data(), *grad, t.bytes(),
                                 error);
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

pipe_rt_optim_update makeUpdate(pipe_rt_session *session, int pid, int step,
                                float *param, SessionParam &state,
                                const float *grad, size_t n, float scale) {
  pipe_rt_optim_update u{};
  setParamOptimizer(*session, pid, step, u);
  u.step = state.step + 1;
  u.param = param;
  bool adam = u.kind == PIPE_RT_OPTIM_ADAMW;
  if (adam || u.sgd.momentum != 0)
    state.state0.resize(n, 0.0f);
  if (adam)
    state.state1.resize(n, 0.0f);
  u.state0 = state.state0.empty() ? nullptr : state.state0.data();
  u.state1 = state.state1.empty() ? nullptr : state.state1.data();
  u.grad = grad;
  u.grad_dtype = PIPE_RT_GRAD_F32;
  u.grad_scale = scale;
  u.n = n;
  return u;
}

/// The working memory of a compute action, measured while tracing: the
/// most bytes the action's device held above what it held when it began.
class WorkingSet {
public:
  explicit WorkingSet(pipe_rt_device_ctx *ctx) : ctx(ctx) {
    if (ctx->run->tracing())
      start = ctx->run->memory->startWindow(ctx->device);
  }
  int64_t bytes() const {
    if (!ctx->run->tracing())
      return -1;
    return int64_t(ctx->run->memory->windowPeak(ctx->device) - start);
  }

private:
  pipe_rt_device_ctx *ctx;
  uint64_t start = 0;
};

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
    if (int st = run.memory.alloc(ctx->device, t.bytes(), what.c_str(), total,
                                  error))
      return st;
    if (int st = run.memory.hostWrite(Lane::Compute, *total,
                                      packed.data() + from, t.bytes(), error))
      return st;
    std::lock_guard<std::mutex> lock(ds.mu);
    ds.grads[{p, step}] = total;
  }
  run.traceEvent(traceName(what + " (replica all-reduce)"), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

} // namespace

extern "C" {

int32_t pipe_rt_act_forward(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                            int32_t step, int32_t version, int32_t keep,
                            int32_t predict) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "forward", stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return st;
  if (mb < 0)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no micro-batch");
  if (predict < 0 ||
      (predict > 0 && (version < 0 || ctx->run->schedule->forwardOnly)))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": weight prediction %d ahead needs a weight "
                              "version and a training schedule",
                              predict));
  double t0 = ctx->run->now();
  WorkingSet working(ctx);
  int st =
      runStage(ctx, stage, mb, step, version, predict, keep != 0, false, what);
  ctx->run->traceEvent(traceName(what), "compute", TrackKind::Compute,
                       ctx->device, t0, ctx->run->now(), working.bytes());
  return st;
}

int32_t pipe_rt_act_recompute(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t mb, int32_t step, int32_t version) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "recompute", stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return st;
  double t0 = ctx->run->now();
  WorkingSet working(ctx);
  int st = runStage(ctx, stage, mb, step, version, 0, true, true, what);
  ctx->run->traceEvent(traceName(what), "compute", TrackKind::Compute,
                       ctx->device, t0, ctx->run->now(), working.bytes());
  return st;
}

int32_t pipe_rt_act_backward(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                             int32_t step, int32_t version, int32_t part) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  const char *name = part == 1   ? "backward.input"
                     : part == 2 ? "backward.weight"
                                 : "backward";
  std::string what = describe(ctx, name, stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return st;
  if (part < 0 || part > 2)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": bad part");
  if (ctx->run->schedule->forwardOnly)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the schedule is forward-only");
  double t0 = ctx->run->now();
  WorkingSet working(ctx);
  int st = runBackward(ctx, stage, mb, step, version, part, what);
  ctx->run->traceEvent(traceName(what), "compute", TrackKind::Compute,
                       ctx->device, t0, ctx->run->now(), working.bytes());
  return st;
}

int32_t pipe_rt_act_update(pipe_rt_device_ctx *ctx, int32_t stage,
                           int32_t step) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "update", stage, -1, step);
  if (int st = checkAction(ctx, what, stage, -1, step))
    return st;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  DeviceState &ds = deviceOf(ctx);
  double t0 = run.now();
  if (run.session->options.clip_norm > 0 && !ds.clippedSteps.count(step))
    if (int st = clipGradients(ctx, step, what))
      return st;
  float scale = run.session->options.clip_norm > 0 ? ds.clipScale : 1.0f;
  for (int pid : run.schedule->owns[stage]) {
    const ParamInfo &p = m.params[pid];
    if (run.ps.holds(pid))
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": param '" + p.name +
                      "' is held by the parameter server (use ps.update)");
    if (!p.trainable)
      continue;
    std::unique_lock<std::mutex> lock(ds.mu);
    auto it = ds.params.find(pid);
    if (it == ds.params.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": param '" + p.name + "' is not on the device");
    DeviceParam &dp = it->second;
    // Tied params may be owned by several stages of one device: one update
    // per step.
    if (!dp.updatedSteps.insert(step).second)
      continue;
    const TypeInfo &t = m.types[p.type];
    if (run.trackVersions && dp.versionUsers.count(dp.updates)) {
      BufferPtr snap;
      std::string error;
      if (int st = run.memory.alloc(ctx->device, t.bytes(), "weight version",
                                    snap, error))
        return fail(ctx, st, what + ": " + error);
      if (int st = run.memory.copy(ctx->device, Lane::Compute, snap->data,
                                   dp.value->data, t.bytes(), error))
        return fail(ctx, st, what + ": weight version: " + error);
      dp.versions[dp.updates] = snap;
    }
    ++dp.updates;
    auto g = ds.grads.find({pid, step});
    if (g == ds.grads.end())
      continue; // no gradient: skipped, as torch skips params without grad
    BufferPtr grad = g->second;
    ds.grads.erase(g);
    lock.unlock();
    SessionParam &state = run.deviceOptState[ctx->device][pid];
    // The optimizer runs on the host (HostOptimizer.h): a device the host
    // cannot address gets the param and gradient staged through host memory.
    std::vector<unsigned char> paramStaging, gradStaging;
    std::string error;
    int st;
    auto *value =
        const_cast<float *>(reinterpret_cast<const float *>(run.memory.hostView(
            Lane::Compute, *dp.value, paramStaging, error, st)));
    if (st != PIPE_RT_OK)
      return fail(ctx, st, what + ": " + error);
    auto *gradValue = reinterpret_cast<const float *>(
        run.memory.hostView(Lane::Compute, *grad, gradStaging, error, st));
    if (st != PIPE_RT_OK)
      return fail(ctx, st, what + ": " + error);
    pipe_rt_optim_update u = makeUpdate(run.session, pid, step, value, state,
                                        gradValue, size_t(t.numel), scale);
    if (int st = pipe_rt_host_optimizer_run(run.session->optimizer, &u))
      return fail(ctx, st,
                  what + ": the optimizer rejected the update of '" + p.name +
                      "' (bad hyper-parameters?)");
    if (!paramStaging.empty())
      if (int st = run.memory.toDevice(Lane::Compute, *dp.value, value,
                                       t.bytes(), error))
        return fail(ctx, st, what + ": " + error);
    ++state.step;
  }
  run.traceEvent(traceName(what), "compute", TrackKind::Compute, ctx->device,
                 t0, run.now());
  return PIPE_RT_OK;
}

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
  uint64_t bytes = 0;
  for (int p : ids)
    bytes += m.types[m.params[p].type].bytes();
  auto packed = std::make_shared<std::vector<unsigned char>>(bytes, 0);
  uint64_t offset = 0;
  for (int p : ids) {
    const TypeInfo &t = m.types[m.params[p].type];
    BufferPtr grad = gradientOf(ctx, p, step);
    std::string error;
    if (grad)
      if (int st = run.memory.hostRead(Lane::Compute, packed->data() + offset,
                                       *grad, t.bytes(), error))
        return fail(ctx, st, what + ": " + error);
    offset += t.bytes();
  }
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
  int step = comm->bucket.step;
  comm->bucket = {};
  if (params.empty() || !packed || buffer != packed->data())
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
  if (run.localReplicas > 1) {
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
