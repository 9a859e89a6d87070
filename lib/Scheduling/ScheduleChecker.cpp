//===- ScheduleChecker.cpp - Checks a schedule by playing it --------------===//

#include "pipe/Scheduling/ScheduleChecker.h"

#include "llvm/ADT/DenseSet.h"

#include <set>

using namespace mlir;
using namespace mlir::pipe;

namespace {
using TransferKey = ScheduleAction::TransferKey;
/// (stage, micro-batch, step).
using WorkKey = std::tuple<int, int, unsigned>;

class Checker {
public:
  Checker(const Pipeline &pipeline, const Schedule &schedule,
          const MachineModel *machine, const ScheduleCheckOptions &options)
      : pipeline(pipeline), schedule(schedule), machine(machine),
        options(options) {}

  SmallVector<ScheduleViolation> run() {
    if (!checkStatic())
      return std::move(violations);
    if (options.checkPeerOrder) {
      checkPeerOrder();
      if (!violations.empty())
        return std::move(violations);
    }
    play();
    return std::move(violations);
  }

private:
  std::string stageName(int s) const {
    if (s < 0 || s >= (int)pipeline.getNumStages())
      return "@?";
    return "@" + pipeline.stages[s].name;
  }
  std::string where(unsigned d, int index) const {
    return "device " + std::to_string(d) + ": " +
           schedule.devices[d][index].describe(pipeline);
  }
  void report(unsigned d, int index, const Twine &reason) {
    ScheduleViolation violation;
    violation.device = d;
    violation.action = index;
    if (index >= 0)
      violation.message = (where(d, index) + " " + reason).str();
    else
      violation.message = ("device " + Twine(d) + " " + reason).str();
    violations.push_back(std::move(violation));
  }

  /// Stage placement, indices, and each required action exactly once.
  bool checkStatic();
  /// Between two devices, the sends of one and the recvs of the other in
  /// the same order (NCCL matches point-to-point messages only by order).
  void checkPeerOrder();
  void play();
  bool isReady(unsigned d, const ScheduleAction &action, std::string &why);
  void execute(unsigned d, int index);
  bool activationsPresent(unsigned d, int index, const ScheduleAction &action);
  bool paramsPresent(unsigned d, int index, const ScheduleAction &action);
  /// Parameter-server stages: a recompute or backward computes on the
  /// weight version its forward used.
  void sameLoadedVersion(unsigned d, int index, const ScheduleAction &action);
  /// The first micro-batch of `step` whose (weight-)backward of `stage` has
  /// not run yet, or -1 when every one has (the stage's gradients are
  /// final).
  int firstMissingBackward(int stage, unsigned step) const {
    for (int m = 0; m < (int)schedule.microbatches; ++m)
      if (!backwardWeightDone.count({stage, m, step}))
        return m;
    return -1;
  }
  bool received(bool gradient, int src, int dst, int mb, unsigned step) {
    return recvWaited.count({gradient, src, dst, mb, step});
  }

  const Pipeline &pipeline;
  const Schedule &schedule;
  const MachineModel *machine;
  const ScheduleCheckOptions &options;
  SmallVector<ScheduleViolation> violations;

  // Static facts.
  std::set<WorkKey> hasRecompute;
  SmallVector<bool> managedStage;

  // Play state.
  std::map<TransferKey, std::pair<unsigned, int>> sendsIssued, recvsIssued;
  std::set<TransferKey> recvWaited;
  /// (device, token) -> index of the action that produced it.
  std::map<std::pair<unsigned, int>, int> tokenAction;
  std::set<WorkKey> forwardDone, backwardInputDone, backwardWeightDone,
      recomputeDone, offloaded, prefetchIssued, prefetchWaited;
  std::map<WorkKey, int> forwardVersion;
  /// Weight prediction: per predicted forward, how far it looked ahead and
  /// the stage's updates at that point.
  std::map<WorkKey, std::pair<int, int>> forwardPrediction;
  std::map<std::pair<int, unsigned>, bool> pushDone;
  std::set<std::pair<int, unsigned>> hostReduced;
  SmallVector<int> updates;
  /// Per stage: 0 not loaded, 1 load issued, 2 load waited.
  SmallVector<int> residency;
  /// Per parameter-server stage: the weight version its latest load reads,
  /// and the one each forward computed on (its recompute and backward must
  /// compute on the same).
  SmallVector<int> loadedVersion;
  std::map<WorkKey, int> forwardLoadedVersion;
  /// Per stage: the token and step of its last ps.update while not waited
  /// on.
  std::map<int, std::pair<int, unsigned>> unwaitedHostUpdate;
  std::map<std::pair<unsigned, int>, std::set<WorkKey>> unusedReleases;
  std::set<std::tuple<unsigned, int, unsigned>> reduced;
  /// (device, param, step) of every reduction issued (reduce_grad or a
  /// bucket's start): a second would sum the gradient again.
  std::set<std::tuple<unsigned, int, unsigned>> reductionIssued;
  /// Reports a reduction of `param` in `step` issued before on `d`.
  void reducedOnce(unsigned d, int index, int param, unsigned step);
  std::map<std::pair<int, unsigned>, std::set<unsigned>> reduceArrived;
  SmallVector<bool> memoryReported;
};
} // namespace

bool Checker::checkStatic() {
  unsigned numStages = pipeline.getNumStages();
  managedStage.assign(numStages, false);
  std::map<std::pair<WorkKey, ActionKind>, std::pair<unsigned, int>> seen;
  std::map<std::pair<int, unsigned>, unsigned> updatesSeen;
  // (is a send, message) -> where it was first issued.
  std::map<std::pair<bool, TransferKey>, std::pair<unsigned, int>>
      transfersSeen;
  bool ok = true;
  for (unsigned d = 0; d < schedule.devices.size(); ++d) {
    llvm::DenseSet<int> tokensDefined, tokensWaited;
    for (int i = 0, e = schedule.devices[d].size(); i < e; ++i) {
      const ScheduleAction &a = schedule.devices[d][i];
      // Play indexes per-stage state with `stage`: every kind but transfers
      // (src, dst), waits and reductions (param) needs a real one.
      bool transfer = a.kind == ActionKind::Send || a.kind == ActionKind::Recv;
      bool needsStage = !transfer && a.kind != ActionKind::Wait &&
                        a.kind != ActionKind::ReduceGrad &&
                        a.kind != ActionKind::ReduceBucket;
      if (a.stage >= (int)numStages || a.src >= (int)numStages ||
          a.dst >= (int)numStages || a.stage < (needsStage ? 0 : -1) ||
          a.src < (transfer ? 0 : -1) || a.dst < (transfer ? 0 : -1)) {
        report(d, i, "names a stage the pipeline does not have");
        ok = false;
        continue;
      }
      if (a.stage >= 0 && pipeline.stages[a.stage].device != d) {
        report(d, i,
               "runs " + stageName(a.stage) + ", which is placed on device " +
                   Twine(pipeline.stages[a.stage].device));
        ok = false;
      }
      if (a.microbatch >= (int)schedule.microbatches ||
          a.step >= schedule.steps) {
        report(d, i,
               "is outside the schedule's " + Twine(schedule.microbatches) +
                   " micro-batches and " + Twine(schedule.steps) + " steps");
        ok = false;
      }
      if (a.kind == ActionKind::Load)
        managedStage[a.stage] = true;
      if (a.kind == ActionKind::Recompute)
        hasRecompute.insert({a.stage, a.microbatch, a.step});
      if (a.token >= 0 && !tokensDefined.insert(a.token).second) {
        report(d, i, "reuses token " + Twine(a.token));
        ok = false;
      }
      if (a.kind == ActionKind::Wait)
        for (int t : a.waits)
          if (!tokensDefined.count(t) || !tokensWaited.insert(t).second) {
            report(d, i,
                   "waits on a token that is not produced before it or is "
                   "already waited on");
            ok = false;
          }
      if (a.kind == ActionKind::Update || a.kind == ActionKind::HostUpdate)
        ++updatesSeen[{a.stage, a.step}];
      if (transfer) {
        // Each message is sent once and received once: transports match
        // them by what they are (or, untagged, by order).
        auto [it, inserted] = transfersSeen.try_emplace(
            {a.kind == ActionKind::Send, a.getTransferKey()}, d, i);
        if (!inserted) {
          report(d, i,
                 "repeats a transfer; the first is action " +
                     Twine(it->second.second) + " of device " +
                     Twine(it->second.first));
          ok = false;
        }
      }
      bool counted = a.kind == ActionKind::Forward ||
                     a.kind == ActionKind::Backward ||
                     a.kind == ActionKind::BackwardInput ||
                     a.kind == ActionKind::BackwardWeight;
      if (!counted)
        continue;
      auto [it, inserted] =
          seen.try_emplace({{a.stage, a.microbatch, a.step}, a.kind}, d, i);
      if (!inserted) {
        report(d, i,
               "repeats an action; the first is action " +
                   Twine(it->second.second) + " of device " +
                   Twine(it->second.first));
        ok = false;
      }
    }
    for (int t : tokensDefined)
      if (!tokensWaited.count(t)) {
        for (int i = 0, e = schedule.devices[d].size(); i < e; ++i)
          if (schedule.devices[d][i].token == t)
            report(d, i, "produces a token that is never waited on");
        ok = false;
      }
  }
  // Every required action, once per micro-batch and step.
  for (unsigned step = 0; step < schedule.steps; ++step)
    for (unsigned s = 0; s < numStages; ++s) {
      unsigned d = pipeline.stages[s].device;
      auto missing = [&](StringRef what, int mb) {
        std::string text =
            ("never runs the " + what + " of " + stageName(s)).str();
        if (mb >= 0)
          text += " for micro-batch " + std::to_string(mb);
        if (schedule.steps > 1)
          text += " in step " + std::to_string(step);
        report(d, -1, text);
        ok = false;
      };
      for (int mb = 0; mb < (int)schedule.microbatches; ++mb) {
        WorkKey key{(int)s, mb, step};
        auto has = [&](ActionKind kind) { return seen.count({key, kind}); };
        if (!has(ActionKind::Forward))
          missing("forward", mb);
        if (schedule.forwardOnly)
          continue;
        bool full = has(ActionKind::Backward);
        bool split =
            has(ActionKind::BackwardInput) || has(ActionKind::BackwardWeight);
        if (full && split) {
          report(d, -1,
                 "runs both a full and a split backward of " + stageName(s) +
                     " for micro-batch " + Twine(mb));
          ok = false;
        } else if (!full && !split) {
          missing("backward", mb);
        } else if (split && !has(ActionKind::BackwardInput)) {
          missing("input-gradient backward", mb);
        } else if (split && !has(ActionKind::BackwardWeight)) {
          missing("weight-gradient backward", mb);
        }
      }
      if (!schedule.forwardOnly && updatesSeen[{(int)s, step}] != 1) {
        if (updatesSeen[{(int)s, step}] == 0)
          missing("update (pipe.update or pipe.ps.update)", -1);
        else {
          report(d, -1,
                 "updates " + stageName(s) + " more than once in step " +
                     Twine(step));
          ok = false;
        }
      }
    }
  return ok;
}

void Checker::checkPeerOrder() {
  for (const PeerOrderMismatch &m :
       findPeerOrderMismatches(pipeline, schedule)) {
    if (m.send < 0 || m.recv < 0) {
      bool extraSend = m.send >= 0;
      report(extraSend ? m.sender : m.receiver, extraSend ? m.send : m.recv,
             "is message " + Twine(m.place + 1) + " from device " +
                 Twine(m.sender) + " to device " + Twine(m.receiver) +
                 ", but device " + Twine(extraSend ? m.receiver : m.sender) +
                 (extraSend ? " receives only " : " sends only ") +
                 Twine(m.place) + (extraSend ? " from it" : " to it"));
      continue;
    }
    report(m.sender, m.send,
           "is message " + Twine(m.place + 1) + " from device " +
               Twine(m.sender) + " to device " + Twine(m.receiver) +
               ", but that device's recv " + Twine(m.place + 1) +
               " from it is " +
               schedule.devices[m.receiver][m.recv].describe(pipeline) +
               ": NCCL matches the messages of a device pair in order, so "
               "both sides must issue them in the same order (generate it with "
               "pipe-schedule peer-order=true)");
  }
}

bool Checker::isReady(unsigned d, const ScheduleAction &a, std::string &why) {
  switch (a.kind) {
  case ActionKind::Recv:
    if (sendsIssued.count(a.getTransferKey()))
      return true;
    why = "its matching send is never issued";
    return false;
  case ActionKind::Wait:
    for (int t : a.waits) {
      auto it = tokenAction.find({d, t});
      if (it == tokenAction.end())
        return false;
      const ScheduleAction &producer = schedule.devices[d][it->second];
      if (producer.kind == ActionKind::Send &&
          !recvsIssued.count(producer.getTransferKey())) {
        why = "it waits on " + producer.describe(pipeline) +
              ", whose matching recv is never issued";
        return false;
      }
    }
    return true;
  case ActionKind::ReduceGrad: {
    if (a.param < 0 || a.param >= (int)pipeline.sharedParams.size())
      return true;
    std::set<unsigned> participants;
    for (unsigned s : pipeline.sharedParams[a.param].stages)
      participants.insert(pipeline.stages[s].device);
    std::set<unsigned> &arrived = reduceArrived[{a.param, a.step}];
    arrived.insert(d);
    for (unsigned other : participants)
      if (!arrived.count(other)) {
        why = "device " + std::to_string(other) +
              " never reaches its gradient reduction of @" +
              pipeline.sharedParams[a.param].name;
        return false;
      }
    return true;
  }
  default:
    return true;
  }
}

void Checker::reducedOnce(unsigned d, int index, int param, unsigned step) {
  if (param < 0 || param >= (int)pipeline.sharedParams.size())
    return;
  if (!reductionIssued.insert({d, param, step}).second)
    report(d, index,
           "reduces the gradient of @" + pipeline.sharedParams[param].name +
               " a second time in step " + Twine(step) +
               ", which would add it up again");
}

bool Checker::activationsPresent(unsigned d, int index,
                                 const ScheduleAction &a) {
  WorkKey key{a.stage, a.microbatch, a.step};
  if (offloaded.count(key) && !prefetchWaited.count(key)) {
    report(d, index,
           prefetchIssued.count(key)
               ? "uses offloaded activations before waiting for their "
                 "prefetch"
               : "uses activations that were offloaded and never prefetched");
    return false;
  }
  return true;
}

void Checker::sameLoadedVersion(unsigned d, int index,
                                const ScheduleAction &a) {
  if (!managedStage[a.stage])
    return;
  auto it = forwardLoadedVersion.find({a.stage, a.microbatch, a.step});
  if (it == forwardLoadedVersion.end() || it->second == loadedVersion[a.stage])
    return;
  report(d, index,
         "computes on weight version " + Twine(loadedVersion[a.stage]) +
             " of " + stageName(a.stage) + ", but its forward used version " +
             Twine(it->second) + "; the gradient would not be of the loss");
}

bool Checker::paramsPresent(unsigned d, int index, const ScheduleAction &a) {
  if (!managedStage[a.stage] || residency[a.stage] == 2)
    return true;
  report(d, index,
         residency[a.stage] == 1
             ? "uses the parameters of " + stageName(a.stage) +
                   " before waiting for their load"
             : "uses the parameters of " + stageName(a.stage) +
                   ", which are not loaded (never loaded, or released)");
  return false;
}

void Checker::execute(unsigned d, int index) {
  const ScheduleAction &a = schedule.devices[d][index];
  WorkKey key{a.stage, a.microbatch, a.step};
  std::string s = a.stage >= 0 ? stageName(a.stage) : "";
  std::string mb = " micro-batch " + std::to_string(a.microbatch);
  if (a.token >= 0)
    tokenAction[{d, a.token}] = index;
  switch (a.kind) {
  case ActionKind::Forward: {
    for (unsigned p : pipeline.getProducers(a.stage)) {
      bool ready = pipeline.stages[p].device == d
                       ? forwardDone.count({(int)p, a.microbatch, a.step})
                       : received(false, p, a.stage, a.microbatch, a.step);
      if (!ready)
        report(d, index,
               "runs before its input from " + stageName(p) + " for" + mb +
                   (pipeline.stages[p].device == d
                        ? " is computed on this device"
                        : " is received (recv and wait)"));
    }
    paramsPresent(d, index, a);
    if (a.version >= 0 && a.version != updates[a.stage])
      report(d, index,
             "records weight version " + Twine(a.version) + ", but " + s +
                 " has been updated " + Twine(updates[a.stage]) +
                 " times at this point");
    forwardVersion[key] = a.version;
    if (managedStage[a.stage])
      forwardLoadedVersion[key] = loadedVersion[a.stage];
    if (a.predict > 0) {
      if (schedule.forwardOnly)
        report(d, index,
               "predicts weights in a forward-only schedule, where no "
               "update follows");
      else if (managedStage[a.stage])
        report(d, index,
               "predicts the weights of " + s +
                   ", a parameter-server stage (its optimizer state is on "
                   "the host)");
      else
        forwardPrediction[key] = {a.predict, int(updates[a.stage])};
    }
    forwardDone.insert(key);
    break;
  }
  case ActionKind::Recompute:
    if (!forwardDone.count(key))
      report(d, index, "recomputes" + mb + " before its forward");
    activationsPresent(d, index, a);
    paramsPresent(d, index, a);
    sameLoadedVersion(d, index, a);
    recomputeDone.insert(key);
    break;
  case ActionKind::Backward:
  case ActionKind::BackwardInput: {
    if (!forwardDone.count(key))
      report(d, index, "runs before the forward of " + s + " for" + mb);
    else if (hasRecompute.count(key) && !recomputeDone.count(key))
      report(d, index, "runs before the recompute of " + s + " for" + mb);
    for (unsigned c : pipeline.getConsumers(a.stage)) {
      bool ready = pipeline.stages[c].device == d
                       ? backwardInputDone.count({(int)c, a.microbatch, a.step})
                       : received(true, c, a.stage, a.microbatch, a.step);
      if (!ready)
        report(d, index,
               "runs before the gradient from " + stageName(c) + " for" + mb +
                   (pipeline.stages[c].device == d
                        ? " is computed on this device"
                        : " is received (recv and wait)"));
    }
    activationsPresent(d, index, a);
    paramsPresent(d, index, a);
    sameLoadedVersion(d, index, a);
    if (a.version >= 0 && a.version != forwardVersion[key] &&
        a.version != updates[a.stage])
      report(d, index,
             "records weight version " + Twine(a.version) +
                 ", neither the version its forward used (" +
                 Twine(forwardVersion[key]) + ") nor the latest (" +
                 Twine(updates[a.stage]) + ")");
    // A predicted forward looked ahead by the updates its backward sees.
    if (auto it = forwardPrediction.find(key); it != forwardPrediction.end()) {
      auto [ahead, atForward] = it->second;
      int seen = int(updates[a.stage]) - atForward;
      if (a.version >= 0 && a.version != int(updates[a.stage]))
        report(d, index,
               "computes on weight version " + Twine(a.version) +
                   " although its forward predicted the weights: a "
                   "predicted forward's backward uses the latest (" +
                   Twine(updates[a.stage]) + ")");
      else if (ahead != seen)
        report(d, index,
               "follows a forward that predicted " + Twine(ahead) +
                   " update(s) of " + s + " ahead, but " + Twine(seen) +
                   " came between them");
      forwardPrediction.erase(it);
    }
    backwardInputDone.insert(key);
    if (a.kind == ActionKind::Backward)
      backwardWeightDone.insert(key);
    break;
  }
  case ActionKind::BackwardWeight:
    if (!backwardInputDone.count(key))
      report(d, index,
             "runs before the input-gradient backward of " + s + " for" + mb);
    paramsPresent(d, index, a);
    backwardWeightDone.insert(key);
    break;
  case ActionKind::Send:
    if (!a.gradient && !forwardDone.count({a.src, a.microbatch, a.step}))
      report(d, index,
             "sends the activations of " + stageName(a.src) + " for" + mb +
                 " before computing them");
    if (a.gradient && !backwardInputDone.count({a.src, a.microbatch, a.step}))
      report(d, index,
             "sends the gradient of " + stageName(a.src) + " for" + mb +
                 " before computing it");
    sendsIssued[a.getTransferKey()] = {d, index};
    break;
  case ActionKind::Recv:
    recvsIssued[a.getTransferKey()] = {d, index};
    break;
  case ActionKind::Wait:
    for (int t : a.waits) {
      const ScheduleAction &producer = schedule.devices[d][tokenAction[{d, t}]];
      WorkKey pkey{producer.stage, producer.microbatch, producer.step};
      switch (producer.kind) {
      case ActionKind::Recv:
        recvWaited.insert(producer.getTransferKey());
        break;
      case ActionKind::Load:
        if (residency[producer.stage] == 1)
          residency[producer.stage] = 2;
        break;
      case ActionKind::HostUpdate: {
        auto it = unwaitedHostUpdate.find(producer.stage);
        if (it != unwaitedHostUpdate.end() &&
            it->second.first == producer.token)
          unwaitedHostUpdate.erase(it);
        break;
      }
      case ActionKind::Prefetch:
        prefetchWaited.insert(pkey);
        break;
      case ActionKind::ReduceBucket:
        for (int p : producer.params)
          reduced.insert({d, p, producer.step});
        break;
      default:
        break;
      }
    }
    break;
  case ActionKind::Load:
    if (a.version >= 0) {
      // A versioned load reads the weights after exactly `version` updates;
      // the parameter server keeps the latest two.
      if (a.version > updates[a.stage])
        report(d, index,
               "loads weight version " + Twine(a.version) + " of " + s +
                   ", but only " + Twine(updates[a.stage]) +
                   " updates of its parameters are issued before it");
      else if (a.version + 1 < updates[a.stage])
        report(d, index,
               "loads weight version " + Twine(a.version) + " of " + s +
                   " after " + Twine(updates[a.stage]) +
                   " updates of its parameters are issued; the parameter "
                   "server keeps only the latest two versions");
    } else if (!schedule.forwardOnly && updates[a.stage] < a.step) {
      // The runtime runs a load after the last ps.update of its params
      // issued before it, so step k's load must follow the k updates
      // before it.
      report(d, index,
             "loads " + s + " for step " + Twine(a.step) + " after only " +
                 Twine(updates[a.stage]) +
                 " updates of its parameters are issued; the load would "
                 "read weights that miss an earlier step's update");
    }
    loadedVersion[a.stage] = a.version >= 0 ? a.version : updates[a.stage];
    if (residency[a.stage] == 0)
      residency[a.stage] = 1;
    break;
  case ActionKind::Release:
    if (residency[a.stage] == 0)
      report(d, index, "releases " + s + ", whose parameters are not loaded");
    residency[a.stage] = 0;
    break;
  case ActionKind::Offload:
    if (!forwardDone.count(key))
      report(d, index, "offloads activations of" + mb + " before its forward");
    offloaded.insert(key);
    prefetchIssued.erase(key);
    prefetchWaited.erase(key);
    break;
  case ActionKind::Prefetch:
    if (!offloaded.count(key))
      report(d, index, "prefetches activations that were never offloaded");
    prefetchIssued.insert(key);
    break;
  case ActionKind::Push:
  case ActionKind::Update: {
    if (int m = firstMissingBackward(a.stage, a.step); m >= 0)
      report(d, index,
             (a.kind == ActionKind::Push ? "pushes the gradient of "
                                         : "updates ") +
                 s + " before the backward of micro-batch " + Twine(m));
    // Pushes of a shared parameter add up in the parameter server, which
    // is the reduction; the last ps.update of a stage reading it applies it.
    for (unsigned p : pipeline.getSharedParamsOf(a.stage))
      if (a.kind == ActionKind::Update && !reduced.count({d, (int)p, a.step}))
        report(
            d, index,
            "uses the gradient of shared parameter @" +
                pipeline.sharedParams[p].name +
                " before it is reduced (by pipe.reduce_grad, or by the wait of "
                "its pipe.reduce_bucket)");
    // The host sums a param's pushes until an update consumes them: a push
    // before an earlier step's update of a stage holding one of its params
    // is done would join that update.
    if (a.kind == ActionKind::Push)
      for (unsigned t : pipeline.getStagesSharingParamsWith(a.stage))
        if (auto it = unwaitedHostUpdate.find(t);
            it != unwaitedHostUpdate.end() && it->second.second < a.step) {
          report(d, index,
                 "pushes the gradient of " + s +
                     " before waiting for the previous ps.update of " +
                     (t == unsigned(a.stage) ? std::string("its")
                                             : stageName(t) + ", which shares") +
                     " parameters, which would consume this gradient too");
          break;
        }
    if (a.kind == ActionKind::Push)
      pushDone[{a.stage, a.step}] = true;
    else
      ++updates[a.stage];
    break;
  }
  case ActionKind::HostReduce:
    if (pipeline.replicas <= 1)
      report(d, index,
             "sums the replicas' gradients of " + s +
                 ", but the placement has one replica");
    if (!pushDone[{a.stage, a.step}])
      report(d, index, "runs before the gradient of " + s + " is pushed");
    hostReduced.insert({a.stage, a.step});
    break;
  case ActionKind::HostUpdate:
    if (!pushDone[{a.stage, a.step}])
      report(d, index, "runs before the gradient of " + s + " is pushed");
    // Every replica pushed its own gradient: an update before their sum
    // would apply this replica's alone.
    if (pipeline.replicas > 1 && !hostReduced.count({a.stage, a.step}))
      report(d, index,
             "updates " + s + " before a ps.reduce sums the " +
                 Twine(pipeline.replicas) + " replicas' gradients of it");
    ++updates[a.stage];
    unwaitedHostUpdate[a.stage] = {a.token, a.step};
    break;
  case ActionKind::ReduceBucket:
    for (int p : a.params)
      reducedOnce(d, index, p, a.step);
    if (pipeline.replicas <= 1)
      report(d, index,
             "sums gradients over the replicas, but the placement has one "
             "replica");
    for (int p : a.params) {
      if (p < 0 || p >= (int)pipeline.sharedParams.size()) {
        report(d, index, "names a parameter whose gradient is not reduced");
        continue;
      }
      const SharedParam &param = pipeline.sharedParams[p];
      for (unsigned st : param.stages) {
        if (pipeline.stages[st].device != d) {
          report(d, index,
                 "sums @" + param.name + " over the replicas only, but " +
                     stageName(st) + " on device " +
                     Twine(pipeline.stages[st].device) +
                     " reads it too (pipe.reduce_grad)");
          break;
        }
        if (int m = firstMissingBackward(st, a.step); m >= 0)
          report(d, index,
                 "starts before the backward of " + stageName(st) +
                     " for micro-batch " + Twine(m) +
                     " writes the gradient of @" + param.name);
      }
    }
    break;
  case ActionKind::ReduceGrad:
    reducedOnce(d, index, a.param, a.step);
    if (a.param >= 0 && a.param < (int)pipeline.sharedParams.size())
      for (unsigned st : pipeline.sharedParams[a.param].stages) {
        if (pipeline.stages[st].device != d)
          continue;
        if (int m = firstMissingBackward(st, a.step); m >= 0)
          report(d, index,
                 "runs before the backward of " + stageName(st) +
                     " for micro-batch " + Twine(m));
      }
    reduced.insert({d, a.param, a.step});
    break;
  }
}

void Checker::play() {
  unsigned numDevices = schedule.devices.size();
  updates.assign(pipeline.getNumStages(), 0);
  residency.assign(pipeline.getNumStages(), 0);
  loadedVersion.assign(pipeline.getNumStages(), 0);
  memoryReported.assign(numDevices, false);
  std::optional<MemoryTracker> memory;
  if (machine)
    memory.emplace(pipeline, schedule);
  auto capacity = [&](unsigned d) -> uint64_t {
    if (options.memoryLimit)
      return options.memoryLimit;
    return machine->getDevice(d).memoryBytes;
  };

  SmallVector<unsigned> pc(numDevices, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (unsigned d = 0; d < numDevices; ++d) {
      while (pc[d] < schedule.devices[d].size()) {
        const ScheduleAction &a = schedule.devices[d][pc[d]];
        std::string why;
        if (!isReady(d, a, why))
          break;
        execute(d, pc[d]);
        if (memory) {
          auto checkCapacity = [&]() {
            if (options.checkMemory && !memoryReported[d] &&
                memory->getCurrent(d) > 0 &&
                (uint64_t)memory->getCurrent(d) > capacity(d)) {
              memoryReported[d] = true;
              report(d, pc[d],
                     "needs " + Twine(memory->getCurrent(d)) +
                         " bytes of device memory, more than the device's " +
                         Twine(capacity(d)) + " bytes");
            }
          };
          memory->begin(d, a);
          checkCapacity();
          // Timeless play: everything completes as soon as it is issued.
          memory->end(d, a);
          checkCapacity();
        }
        ++pc[d];
        progress = true;
      }
    }
  }
  for (unsigned d = 0; d < numDevices; ++d) {
    if (pc[d] == schedule.devices[d].size())
      continue;
    std::string why;
    const ScheduleAction &a = schedule.devices[d][pc[d]];
    isReady(d, a, why);
    unsigned stuck = 0;
    for (unsigned e = 0; e < numDevices; ++e)
      stuck += pc[e] < schedule.devices[e].size();
    report(d, pc[d],
           "deadlocks: it can never run because " + why + " (" + Twine(stuck) +
               " device(s) stuck)");
    return;
  }
}

SmallVector<ScheduleViolation>
mlir::pipe::checkSchedule(const Pipeline &pipeline, const Schedule &schedule,
                          const MachineModel *machine,
                          const ScheduleCheckOptions &options) {
  return Checker(pipeline, schedule, machine, options).run();
}
