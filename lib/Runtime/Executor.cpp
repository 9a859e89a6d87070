//===- Executor.cpp - Running device programs of a compiled schedule ------===//
//
// pipe_rt_session_run's driver: composes a RunState of its rooms (Executor.h),
// runs every device's program on its thread, commits the params of a
// successful run, and keeps the copy counters (pipe_rt_session_copy_bytes).
// The actions live with the rooms they use: ComputeActions.cpp,
// Reductions.cpp, Transfers.cpp, ParameterServer.cpp. See "Executing
// programs" in docs/runtime.md for the semantics.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "Cores.h"
#include "Format.h"
#include "Ranks.h"

#include <algorithm>
#include <cstring>

using namespace pipe_rt;

//===----------------------------------------------------------------------===//
// Run state
//===----------------------------------------------------------------------===//

RunState::~RunState() {
  // Jobs may hold buffers: finish them before the arenas go.
  ps.drain();
  if (transfers)
    transfers->drain();
  devices.clear();
  rendezvous.clear();
  transfers.reset();
  ps.clear();
  // Buffers are gone: the memory (which may hold the arenas) goes next.
  memory.release();
  if (devs)
    pipe_rt_devices_destroy(devs);
}

double RunState::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       session->traceEpoch)
      .count();
}

void RunState::traceEvent(const std::string &name, const char *category,
                          TrackKind kind, int index, double start, double end,
                          int64_t workingBytes) {
  if (!session->tracing)
    return;
  std::lock_guard<std::mutex> lock(session->traceMu);
  session->trace.push_back(
      {name, category, kind, index, start, end, workingBytes});
}

int RunState::linkIndex(int from, int to) {
  std::lock_guard<std::mutex> lock(session->traceMu);
  auto &links = session->traceLinks;
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i] == std::make_pair(from, to))
      return int(i);
  links.push_back({from, to});
  return int(links.size()) - 1;
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

namespace {

int runDevice(int device, void *userData) {
  auto &run = *static_cast<RunState *>(userData);
  if (!run.ranks.isLocal(run.programDevice(device)))
    return PIPE_RT_OK;
  if (run.ranks.transport && device < 64)
    run.ranks.transport->devicesRan |= uint64_t(1) << device;
  pipe_rt_device_ctx *ctx = run.ctxs[device].get();
  auto program = reinterpret_cast<int32_t (*)(pipe_rt_device_ctx *)>(
      run.session->programs[run.scheduleIndex][run.programDevice(device)]);
  int st = program(ctx);
  if (st == PIPE_RT_OK)
    return st;
  if (ctx->error.empty())
    ctx->error = format("device %d: the program failed with '%s'", device,
                        pipe_rt_status_string(st));
  run.failed = true;
  run.rendezvous.abort();
  run.ps.abandonJoints();
  // Report the original error in preference to the aborts it caused.
  std::lock_guard<std::mutex> lock(run.errorMu);
  if (run.firstStatus == PIPE_RT_OK ||
      (run.firstStatus == PIPE_RT_ABORTED && st != PIPE_RT_ABORTED)) {
    run.firstStatus = st;
    run.firstError = ctx->error;
  }
  return st;
}

} // namespace

int pipe_rt::executeRun(pipe_rt_session *session, int x,
                        const void *const *inputs, float *losses) {
  const Manifest &m = session->manifest;
  const ScheduleInfo &sched = m.schedules[x];
  auto runFail = [&](int status, const std::string &msg) {
    session->error = "schedule '" + sched.name + "': " + msg;
    return status;
  };
  if (session->options.clip_norm > 0 &&
      (sched.hasPsStages() || sched.steps > 1))
    return runFail(PIPE_RT_INVALID_ARGUMENT,
                   "gradient clipping needs a synchronous schedule (no ps "
                   "stages, one step)");
  if (!inputs && !m.inputs.empty())
    return runFail(PIPE_RT_INVALID_ARGUMENT, "no inputs given");
  // Without a transport, the replicas a program was compiled for run in
  // this process, as devices of one run (attachTransport checked the ranks'
  // layout against the program).
  if (session->ranks.transport &&
      !checkScheduleReplicas(sched,
                             session->ranks.replicas *
                                 session->ranks.replicasPerRank,
                             session->error))
    return PIPE_RT_INVALID_ARGUMENT;
  int localReplicas = inProcessReplicas(*session, sched);
  int slots = sched.devices * localReplicas;

  auto run = std::make_unique<RunState>();
  run->session = session;
  run->m = &m;
  run->schedule = &sched;
  run->scheduleIndex = x;
  run->inputs = inputs;
  size_t numLosses = size_t(sched.steps) * sched.microbatches;
  run->losses.assign(numLosses * localReplicas, 0.0f);
  run->lossSeen.assign(numLosses * localReplicas, 0);
  run->metricCounts.assign(numLosses * localReplicas * m.metrics.size() * 2, 0);
  run->trackVersions = sched.keepsWeightVersions;
  run->ranks = session->ranks;
  run->localReplicas = localReplicas;

  // Who holds which param.
  std::vector<bool> psParam(m.params.size(), false);
  session->psSpare.resize(m.params.size());
  session->psSecondSpare.resize(m.params.size());
  session->psShadows.resize(m.params.size());
  run->holders.assign(m.params.size(), {});
  for (size_t s = 0; s < m.stages.size(); ++s)
    for (int pid : m.stages[s].params) {
      if (sched.psStage[s])
        psParam[pid] = true;
      else
        run->holders[pid].insert(m.stages[s].device);
    }
  for (size_t p = 0; p < m.params.size(); ++p) {
    if (psParam[p] && !run->holders[p].empty())
      return runFail(PIPE_RT_INVALID_ARGUMENT,
                     "param '" + m.params[p].name +
                         "' is read by a parameter "
                         "server stage and by a device stage");
    if (m.params[p].trainable)
      run->clipDevices.insert(run->holders[p].begin(), run->holders[p].end());
  }
  run->ps.assign(std::move(psParam), localReplicas);

  std::vector<uint64_t> caps(slots);
  for (int d = 0; d < slots; ++d) {
    uint64_t c = session->options.capacity_bytes > 0
                     ? session->options.capacity_bytes
                     : sched.capacity[run->programDevice(d)];
    caps[d] = c ? c : UINT64_MAX;
  }
  std::shared_ptr<Backend> backend = backendOf(*session);
  // A backend with its own memory gets the capacities; the simulated
  // devices then only carry channels, threads and the watchdog.
  std::vector<uint64_t> unlimited(slots, UINT64_MAX);
  run->devs = pipe_rt_devices_create(
      slots, backend->usesArenas() ? caps.data() : unlimited.data(),
      session->options.watchdog_seconds);
  if (!run->devs)
    return runFail(PIPE_RT_INVALID_ARGUMENT, "cannot create the devices");
  std::vector<int> hostSlots = placesOnHost(run->ranks, slots, sched.devices);
  {
    std::string error;
    if (int st = run->memory.create(*backend, run->devs, slots, caps.data(),
                                    hostSlots,
                                    session->options.watchdog_seconds, error))
      return runFail(st, std::string(backend->name()) + ": " + error);
  }
  std::unique_ptr<Communicator> channels = inProcessCommunicator(run->devs);
  if (localReplicas > 1)
    channels =
        replicaCommunicator(std::move(channels), sched.devices, localReplicas);
  if (run->ranks.transport)
    channels = rankCommunicator(run->ranks, m, sched, std::move(channels),
                                session->options.watchdog_seconds, run->failed,
                                transportCarriesDeviceBuffers(*run));
  run->transfers = std::make_unique<Transfers>(slots, std::move(channels),
                                               !run->memory->hostAccessible());
  run->deviceOptState.resize(slots);
  for (int d = 0; d < slots; ++d) {
    auto ds = std::make_unique<DeviceState>();
    ds->index = d;
    run->devices.push_back(std::move(ds));
    auto ctx = std::make_unique<pipe_rt_device_ctx>();
    ctx->run = run.get();
    ctx->device = d;
    run->ctxs.push_back(std::move(ctx));
  }
  // Device copies of the params (and their optimizer state).
  for (size_t p = 0; p < m.params.size(); ++p) {
    const SessionParam &sp = session->params[p];
    std::string label = "param '" + m.params[p].name + "'";
    for (int d : run->localHolders(int(p))) {
      DeviceParam &dp = run->devices[d]->params[int(p)];
      std::string error;
      if (int st = run->memory.alloc(d, sp.value.size(), label.c_str(),
                                     dp.value, error))
        return runFail(st, error);
      if (int st = run->memory.toDevice(Lane::H2D, *dp.value, sp.value.data(),
                                        sp.value.size(), error))
        return runFail(st, label + ": " + error);
      SessionParam &state = run->deviceOptState[d][int(p)];
      state.state0 = sp.state0;
      state.state1 = sp.state1;
      state.step = sp.step;
    }
  }
  {
    std::string error;
    if (int st = run->ps.start(*run, error))
      return runFail(st, error);
  }

  // Cores beyond one per computing device thread of this process take
  // parts of that device's large GEMMs (Cores.h).
  unsigned busyDevices = 0;
  for (int d = 0; d < slots; ++d)
    busyDevices += run->ranks.isLocal(run->programDevice(d));
  setIntraOpHelpers(defaultIntraOpHelpers(busyDevices));
  int status = pipe_rt_run_devices(run->devs, runDevice, run.get());
  std::string error;
  // Let outstanding copies finish before looking at the results.
  run->ps.drain();
  run->transfers->drain();
  run->ps.finish(*run);
  // This run's memory figures: per device of the program, the peak and the
  // bytes per lane (in-process replicas: the highest peak of the replicas'
  // copies of the device, and the bytes all of them copied).
  RunFigures figures;
  figures.peak.assign(size_t(sched.devices), 0);
  figures.copied.assign(size_t(sched.devices) * 3, 0.0);
  for (int slot = 0; slot < slots; ++slot) {
    int d = run->programDevice(slot);
    uint64_t peak = 0;
    run->memory->usage(slot, nullptr, &peak);
    figures.peak[d] = std::max(figures.peak[d], int64_t(peak));
    for (int lane = 0; lane < 3; ++lane)
      figures.copied[d * 3 + lane] +=
          double(run->memory.copied(slot, Lane(lane)));
  }
  if (status == PIPE_RT_OK)
    if (std::string missing = run->ps.unjoined(m); !missing.empty()) {
      status = PIPE_RT_INVALID_ARGUMENT;
      error = "the replicas' host reduce and update of " + missing +
              " was not issued by every replica";
    }
  // Across ranks, every loss goes to its replica's place in the whole
  // run's layout (zero elsewhere), so the ranks' agreement only gathers
  // them, and the means below add them up in the order one process does.
  int lossReplicas = run->totalReplicas();
  if (run->ranks.transport && lossReplicas > 1) {
    size_t mbs = size_t(sched.microbatches);
    std::vector<float> all(numLosses * lossReplicas, 0.0f);
    std::vector<uint8_t> seen(all.size(), 0);
    for (size_t i = 0; i < run->losses.size(); ++i) {
      size_t step = i / mbs / localReplicas, mb = i % mbs;
      size_t replica = run->ranks.replica() * localReplicas +
                       i / mbs % localReplicas;
      size_t at = (step * lossReplicas + replica) * mbs + mb;
      all[at] = run->losses[i];
      seen[at] = run->lossSeen[i];
    }
    run->losses = std::move(all);
    run->lossSeen = std::move(seen);
  }
  run->metricTotals.assign(m.metrics.size() * 2, 0);
  for (size_t i = 0; i < run->metricCounts.size(); ++i)
    run->metricTotals[i % run->metricTotals.size()] += run->metricCounts[i];
  if (status == PIPE_RT_OK && run->ranks.transport)
    status = agreeAfterRun(*run, figures, error);
  for (int d = 0; d < sched.devices && d < int(session->peak.size()); ++d)
    session->peak[d] = std::max(session->peak[d], uint64_t(figures.peak[d]));
  if (session->copyBytes.size() < session->peak.size())
    session->copyBytes.resize(session->peak.size(), {0, 0, 0});
  for (int d = 0; d < sched.devices && d < int(session->copyBytes.size()); ++d)
    for (int lane = 0; lane < 3; ++lane)
      session->copyBytes[d][lane] += uint64_t(figures.copied[d * 3 + lane]);
  if (status != PIPE_RT_OK) {
    if (error.empty())
      error = run->firstError.empty() ? pipe_rt_last_error(run->devs)
                                      : run->firstError;
    // Messages to or from other ranks may still be posted on this run's
    // buffers: stop them, or keep the buffers (the job ends after a failed
    // distributed run).
    if (run->ranks.transport && !run->ranks.transport->abortTransfers())
      (void)run.release();
    return runFail(status, error);
  }
  if (m.lossValue >= 0)
    for (size_t i = 0; i < run->lossSeen.size(); ++i)
      if (!run->lossSeen[i])
        return runFail(
            PIPE_RT_INVALID_ARGUMENT,
            format("no loss computed for step %d mb %d%s",
                   int(i / sched.microbatches / lossReplicas),
                   int(i % sched.microbatches),
                   lossReplicas > 1
                       ? format(" of replica %d",
                                int(i / sched.microbatches % lossReplicas))
                             .c_str()
                       : ""));
  // Each slot reports the mean over the replicas of that micro-batch of the
  // step.
  if (lossReplicas > 1) {
    std::vector<float> means(numLosses);
    size_t mbs = size_t(sched.microbatches);
    for (size_t i = 0; i < numLosses; ++i) {
      double sum = 0;
      for (int r = 0; r < lossReplicas; ++r)
        sum += run->losses[(i / mbs * lossReplicas + r) * mbs + i % mbs];
      means[i] = float(sum / lossReplicas);
    }
    run->losses = std::move(means);
  }

  // Success: commit the params and optimizer state. Replicas must agree.
  // Every device copy is read back first, so a failing copy commits nothing.
  // Each param's copy is its lowest local holder's (all holders' agree);
  // ranks holding none keep theirs until shareParams.
  std::vector<int> owner(m.params.size(), -1);
  std::vector<std::vector<unsigned char>> finals(m.params.size());
  for (size_t p = 0; p < m.params.size(); ++p) {
    std::vector<int> holders = run->localHolders(int(p));
    if (holders.empty())
      continue;
    owner[p] = holders.front();
    int first = owner[p];
    const Buffer &v = *run->devices[first]->params[int(p)].value;
    finals[p].resize(v.bytes);
    if (int st =
            run->memory.toHost(Lane::D2H, finals[p].data(), v, v.bytes, error))
      return runFail(st, "reading param '" + m.params[p].name +
                             "' back: " + error);
    for (int d : holders) {
      const Buffer &o = *run->devices[d]->params[int(p)].value;
      std::vector<unsigned char> staging;
      int st;
      const unsigned char *other =
          run->memory.hostView(Lane::D2H, o, staging, error, st);
      if (st != PIPE_RT_OK)
        return runFail(st, "reading param '" + m.params[p].name +
                               "' back: " + error);
      if (std::memcmp(finals[p].data(), other, v.bytes) != 0)
        return runFail(PIPE_RT_INVALID_ARGUMENT,
                       format("the copies of param '%s' on devices %d and "
                              "%d differ (an update or reduce_grad missing "
                              "on one of them?)",
                              m.params[p].name.c_str(), first, d));
    }
  }
  for (size_t p = 0; p < m.params.size(); ++p) {
    SessionParam &sp = session->params[p];
    if (!run->holders[p].empty()) {
      if (owner[p] < 0)
        continue;
      sp.value.swap(finals[p]);
      session->psShadows[p].valid = false;
      SessionParam &state = run->deviceOptState[owner[p]][int(p)];
      sp.state0.swap(state.state0);
      sp.state1.swap(state.state1);
      sp.step = state.step;
    } else if (run->ps.holds(int(p))) {
      run->ps.commit(*session, int(p));
    }
  }
  if (losses)
    std::copy_n(run->losses.begin(), numLosses, losses);
  session->metricTotals = std::move(run->metricTotals);
  session->error.clear();
  return PIPE_RT_OK;
}

int pipe_rt_session_copy_bytes(pipe_rt_session *session, int device,
                               uint64_t *h2d, uint64_t *d2h,
                               uint64_t *compute) {
  if (!session || device < 0 || device >= int(session->peak.size()))
    return PIPE_RT_INVALID_ARGUMENT;
  std::array<uint64_t, 3> bytes = {0, 0, 0};
  if (device < int(session->copyBytes.size()))
    bytes = session->copyBytes[device];
  if (compute)
    *compute = bytes[int(Lane::Compute)];
  if (h2d)
    *h2d = bytes[int(Lane::H2D)];
  if (d2h)
    *d2h = bytes[int(Lane::D2H)];
  return PIPE_RT_OK;
}
