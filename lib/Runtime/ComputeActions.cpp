//===- ComputeActions.cpp - Forward, backward and update ------------------===//
//
// The compute actions of device programs: pipe_rt_act_forward, recompute,
// backward and update (after global gradient-norm clipping, Reductions.cpp).
// They call the block functions of the manifest and own the per-device
// values, stashes and gradients (DeviceState, Executor.h).
//
//===----------------------------------------------------------------------===//

#include "Actions.h"
#include "Format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

} // extern "C"
