//===- Schedule.cpp - Per-device action lists and their builder -----------===//

#include "pipe/Scheduling/Schedule.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

llvm::StringRef mlir::pipe::getActionName(ActionKind kind) {
  switch (kind) {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  case ActionKind::KIND:                                                       \
    return MNEMONIC;
#include "pipe/Support/Actions.def"
  }
  return "unknown";
}

llvm::StringRef mlir::pipe::getActionEntry(ActionKind kind) {
  switch (kind) {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  case ActionKind::KIND:                                                       \
    return "pipe_rt_" #ENTRY;
#include "pipe/Support/Actions.def"
  }
  return "unknown";
}

bool mlir::pipe::isComputeAction(ActionKind kind) {
  switch (kind) {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  case ActionKind::KIND:                                                       \
    return COMPUTE;
#include "pipe/Support/Actions.def"
  }
  return false;
}

bool mlir::pipe::producesToken(ActionKind kind) {
  switch (kind) {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  case ActionKind::KIND:                                                       \
    return TOKEN;
#include "pipe/Support/Actions.def"
  }
  return false;
}

std::string ScheduleAction::describe(const Pipeline &pipeline) const {
  auto stageName = [&](int s) -> std::string {
    if (s < 0 || s >= (int)pipeline.stages.size())
      return "@?";
    return "@" + pipeline.stages[s].name;
  };
  std::string result = ("pipe." + getActionName(kind)).str();
  if (kind == ActionKind::Send || kind == ActionKind::Recv) {
    result += gradient ? " gradient " : " activation ";
    result += stageName(src) + " -> " + stageName(dst);
  } else if (kind == ActionKind::ReduceGrad) {
    if (param >= 0 && param < (int)pipeline.sharedParams.size())
      result += " @" + pipeline.sharedParams[param].name;
  } else if (kind == ActionKind::ReduceBucket) {
    result += " [";
    for (size_t i = 0; i < params.size(); ++i) {
      if (i)
        result += ", ";
      result += params[i] >= 0 && params[i] < (int)pipeline.sharedParams.size()
                    ? "@" + pipeline.sharedParams[params[i]].name
                    : std::string("@?");
    }
    result += "]";
  } else if (kind == ActionKind::Wait) {
    result += " on " + std::to_string(waits.size()) + " token(s)";
  } else if (stage >= 0) {
    result += " " + stageName(stage);
  }
  if (microbatch >= 0)
    result += " mb " + std::to_string(microbatch);
  if (step > 0)
    result += " step " + std::to_string(step);
  return result;
}

unsigned Schedule::count(ActionKind kind, int device) const {
  unsigned n = 0;
  for (unsigned d = 0; d < devices.size(); ++d)
    if (device < 0 || (unsigned)device == d)
      for (const ScheduleAction &action : devices[d])
        n += action.kind == kind;
  return n;
}

//===----------------------------------------------------------------------===//
// ScheduleBuilder
//===----------------------------------------------------------------------===//

ScheduleBuilder::ScheduleBuilder(const Pipeline &pipeline, StringRef kind,
                                 unsigned microbatches, unsigned steps,
                                 bool forwardOnly)
    : pipeline(pipeline) {
  schedule.kind = kind.str();
  schedule.microbatches = microbatches;
  schedule.steps = steps;
  schedule.forwardOnly = forwardOnly;
  schedule.devices.resize(pipeline.numDevices);
  nextToken.assign(pipeline.numDevices, 0);
  pending.resize(pipeline.numDevices);
}

int ScheduleBuilder::append(unsigned device, ScheduleAction action) {
  if (producesToken(action.kind))
    action.token = nextToken[device]++;
  schedule.devices[device].push_back(std::move(action));
  return schedule.devices[device].back().token;
}

int ScheduleBuilder::append(unsigned device, ActionKind kind, int stage,
                            int microbatch, unsigned step) {
  ScheduleAction action;
  action.kind = kind;
  action.stage = stage;
  action.microbatch = microbatch;
  action.step = step;
  return append(device, std::move(action));
}

void ScheduleBuilder::wait(unsigned device, ArrayRef<int> tokens) {
  if (tokens.empty())
    return;
  ScheduleAction action;
  action.kind = ActionKind::Wait;
  action.waits.assign(tokens.begin(), tokens.end());
  append(device, std::move(action));
}

void ScheduleBuilder::defer(unsigned device, int token) {
  pending[device].push_back(token);
}

void ScheduleBuilder::flush(unsigned device) {
  wait(device, pending[device]);
  pending[device].clear();
}

void ScheduleBuilder::compute(const ComputeItem &item) {
  const PipelineStage &stage = pipeline.stages[item.stage];
  unsigned device = stage.device;
  auto transfer = [&](ActionKind kind, unsigned src, unsigned dst,
                      bool gradient) {
    ScheduleAction action;
    action.kind = kind;
    action.stage = kind == ActionKind::Send ? src : dst;
    action.src = src;
    action.dst = dst;
    action.gradient = gradient;
    action.microbatch = item.microbatch;
    action.step = item.step;
    return append(pipeline.stages[action.stage].device, std::move(action));
  };

  bool isForward = item.kind == ActionKind::Forward;
  bool needsGradients = item.kind == ActionKind::Backward ||
                        item.kind == ActionKind::BackwardInput;
  // Inputs from other devices: activations for a forward, gradients for
  // the (input-)backward.
  SmallVector<int> received;
  if (isForward) {
    for (unsigned p : pipeline.getProducers(item.stage))
      if (pipeline.stages[p].device != device)
        received.push_back(
            transfer(ActionKind::Recv, p, item.stage, /*gradient=*/false));
  } else if (needsGradients) {
    for (unsigned c : pipeline.getConsumers(item.stage))
      if (pipeline.stages[c].device != device)
        received.push_back(
            transfer(ActionKind::Recv, c, item.stage, /*gradient=*/true));
  }
  wait(device, received);

  ScheduleAction action;
  action.kind = item.kind;
  action.stage = item.stage;
  action.microbatch = item.microbatch;
  action.step = item.step;
  action.version = item.version;
  action.predict = item.predict;
  append(device, std::move(action));

  if (isForward) {
    for (unsigned c : pipeline.getConsumers(item.stage))
      if (pipeline.stages[c].device != device)
        defer(device,
              transfer(ActionKind::Send, item.stage, c, /*gradient=*/false));
  } else if (needsGradients && !schedule.forwardOnly) {
    for (unsigned p : pipeline.getProducers(item.stage))
      if (pipeline.stages[p].device != device)
        defer(device,
              transfer(ActionKind::Send, item.stage, p, /*gradient=*/true));
  }
}

void ScheduleBuilder::reduceSharedFor(unsigned stage, unsigned step) {
  unsigned device = pipeline.stages[stage].device;
  for (unsigned p : pipeline.getSharedParamsOf(stage))
    reduce(device, p, step);
}

void ScheduleBuilder::reduce(unsigned device, unsigned param, unsigned step) {
  auto &done = reduced[{device, step}];
  done.resize(pipeline.sharedParams.size(), false);
  if (param >= done.size() || done[param])
    return;
  done[param] = true;
  ScheduleAction action;
  action.kind = ActionKind::ReduceGrad;
  action.param = param;
  action.step = step;
  append(device, std::move(action));
}

void ScheduleBuilder::finishStep(unsigned device, unsigned step) {
  flush(device);
  if (schedule.forwardOnly)
    return;
  // Every device reduces in the order of Pipeline::sharedParams, so the
  // collectives line up across devices.
  for (unsigned p = 0; p < pipeline.sharedParams.size(); ++p)
    if (llvm::any_of(pipeline.sharedParams[p].stages, [&](unsigned s) {
          return pipeline.stages[s].device == device;
        }))
      reduce(device, p, step);
  for (unsigned s : pipeline.getStagesOnDevice(device))
    append(device, ActionKind::Update, s, -1, step);
}

Schedule ScheduleBuilder::take() {
  for (unsigned d = 0; d < schedule.devices.size(); ++d)
    flush(d);
  return std::move(schedule);
}

Schedule mlir::pipe::lowerComputeOrders(
    const Pipeline &pipeline, StringRef kind, unsigned microbatches,
    unsigned steps, bool forwardOnly, bool recompute,
    ArrayRef<SmallVector<ComputeItem>> orders, bool asynchronous) {
  ScheduleBuilder builder(pipeline, kind, microbatches, steps, forwardOnly);
  for (unsigned d = 0; d < orders.size(); ++d) {
    ArrayRef<ComputeItem> order = orders[d];
    // A step ends on this device where no later item belongs to it or an
    // earlier step (asynchronous kinds interleave steps: no end there).
    SmallVector<unsigned> laterMinStep(order.size() + 1, ~0u);
    for (unsigned i = order.size(); i-- > 0;)
      laterMinStep[i] = std::min(laterMinStep[i + 1], order[i].step);
    for (unsigned i = 0; i < order.size(); ++i) {
      const ComputeItem &item = order[i];
      bool isBackward = item.kind == ActionKind::Backward ||
                        item.kind == ActionKind::BackwardInput;
      if (recompute && isBackward &&
          !pipeline.getConsumers(item.stage).empty()) {
        ComputeItem again = item;
        again.kind = ActionKind::Recompute;
        builder.compute(again);
      }
      if (item.kind == ActionKind::ReduceGrad) {
        builder.reduce(d, item.param, item.step);
        continue;
      }
      if (item.kind == ActionKind::Update) {
        // Outstanding sends carry activations and gradients, not weights:
        // the update need not wait for them (and waiting could deadlock
        // against a receiver that is a step behind).
        builder.reduceSharedFor(item.stage, item.step);
        builder.append(d, ActionKind::Update, item.stage, -1, item.step);
        continue;
      }
      builder.compute(item);
      bool lastOfStep = laterMinStep[i + 1] > item.step;
      if (lastOfStep && !asynchronous &&
          !llvm::any_of(order, [&](const ComputeItem &other) {
            return other.kind == ActionKind::Update;
          }))
        builder.finishStep(d, item.step);
    }
    if (order.empty() && !forwardOnly && !asynchronous)
      for (unsigned step = 0; step < steps; ++step)
        builder.finishStep(d, step);
  }
  return builder.take();
}
