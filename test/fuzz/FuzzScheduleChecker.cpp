//===- FuzzScheduleChecker.cpp - libFuzzer: the schedule verifier ---------===//
//
// mlir::pipe::checkSchedule on a small schedule problem decoded from the
// fuzz bytes: a pipeline (stages on devices, stage edges, shared params; kept
// only if Pipeline::validate accepts it, as every caller ensures), a
// schedule (micro-batches, steps, forward-only) whose per-device action lists
// are either decoded action by action, any field value in range or not, or
// a correct GPipe-like schedule (lowerComputeOrders) the remaining bytes then
// damage (actions dropped, duplicated, swapped, moved, fields rewritten), and
// optionally a machine with small memory. The checker must report, never crash
// or hang, whatever it is given; its violations must name a device of the
// schedule or pipeline. A schedule it accepts must stay correct, and be in
// peer order, once orderRecvsBySender reordered its recvs.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleChecker.h"

#include <cstdlib>

using llvm::SmallVector;

using namespace mlir::pipe;

namespace {

/// Reads the fuzz bytes; 0 once they run out.
class Reader {
public:
  Reader(const uint8_t *data, size_t size) : p(data), end(data + size) {}
  bool empty() const { return p == end; }
  unsigned byte() { return p == end ? 0 : *p++; }
  /// A value in [lo, lo + count).
  int pick(int lo, unsigned count) { return lo + int(byte() % count); }

private:
  const uint8_t *p, *end;
};

/// Sets every field of `a` from the bytes, in range or (a little) beyond.
void decodeAction(ScheduleAction &a, const Pipeline &pipeline,
                  const Schedule &schedule, Reader &in) {
  int numStages = int(pipeline.getNumStages());
  a.kind = ActionKind(in.byte() % (unsigned(ActionKind::Wait) + 1));
  a.stage = in.pick(-2, numStages + 3);
  a.src = in.pick(-2, numStages + 3);
  a.dst = in.pick(-2, numStages + 3);
  unsigned flags = in.byte();
  a.gradient = flags & 1;
  a.microbatch = in.pick(-2, schedule.microbatches + 3);
  a.step = in.pick(0, schedule.steps + 2);
  a.version = (flags & 2) ? in.pick(-2, 5) : -1;
  a.param = in.pick(-2, pipeline.sharedParams.size() + 3);
  a.token = (flags & 4) ? in.pick(-2, 10) : -1;
  a.waits.clear();
  if (a.kind == ActionKind::Wait)
    for (unsigned k = 0, n = in.pick(0, 3); k < n; ++k)
      a.waits.push_back(in.pick(-2, 10));
}

/// A correct schedule: on every device, the forwards of its stages for each
/// micro-batch in topological order, then the backwards (full or split) in
/// reverse, per step; `how` picks split backwards and recomputation.
Schedule correctSchedule(const Pipeline &pipeline, const Schedule &shape,
                         unsigned how) {
  SmallVector<unsigned> topo = pipeline.getTopologicalOrder();
  SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
  bool split = how & 1, recompute = how & 2;
  for (unsigned step = 0; step < shape.steps; ++step)
    for (unsigned d = 0; d < pipeline.numDevices; ++d) {
      auto add = [&](ActionKind kind, unsigned s, unsigned mb) {
        ComputeItem item;
        item.kind = kind;
        item.stage = s;
        item.microbatch = mb;
        item.step = step;
        orders[d].push_back(item);
      };
      for (unsigned mb = 0; mb < shape.microbatches; ++mb)
        for (unsigned s : topo)
          if (pipeline.stages[s].device == d)
            add(ActionKind::Forward, s, mb);
      if (shape.forwardOnly)
        continue;
      for (unsigned mb = 0; mb < shape.microbatches; ++mb)
        for (unsigned s : llvm::reverse(topo)) {
          if (pipeline.stages[s].device != d)
            continue;
          if (!split) {
            add(ActionKind::Backward, s, mb);
            continue;
          }
          add(ActionKind::BackwardInput, s, mb);
          add(ActionKind::BackwardWeight, s, mb);
        }
    }
  return lowerComputeOrders(pipeline, "fuzz", shape.microbatches, shape.steps,
                            shape.forwardOnly, recompute, orders);
}

/// One damage to a schedule with at least one device.
void damage(Schedule &schedule, Reader &in) {
  SmallVector<ScheduleAction> &list =
      schedule.devices[in.byte() % schedule.devices.size()];
  unsigned op = in.byte() % 6;
  if (list.empty())
    return;
  unsigned i = in.byte() % list.size();
  switch (op) {
  case 0: // drop
    list.erase(list.begin() + i);
    break;
  case 1: // duplicate
    list.insert(list.begin() + i, list[i]);
    break;
  case 2: // swap with the next
    if (i + 1 < list.size())
      std::swap(list[i], list[i + 1]);
    break;
  case 3: { // move to another device's end
    ScheduleAction a = list[i];
    list.erase(list.begin() + i);
    schedule.devices[in.byte() % schedule.devices.size()].push_back(a);
    break;
  }
  case 4: // rewrite the micro-batch, step or token
    list[i].microbatch = in.pick(-1, schedule.microbatches + 2);
    list[i].step = in.pick(0, schedule.steps + 1);
    if (in.byte() & 1)
      list[i].token = in.pick(-1, 12);
    break;
  default: // rewrite the kind and stage
    list[i].kind = ActionKind(in.byte() % (unsigned(ActionKind::Wait) + 1));
    list[i].stage = in.pick(-1, 8);
    break;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader in(data, size);
  Pipeline pipeline;
  unsigned numStages = in.pick(1, 6);
  pipeline.numDevices = in.pick(1, 4);
  for (unsigned s = 0; s < numStages; ++s) {
    PipelineStage stage;
    stage.name = "s" + std::to_string(s);
    stage.device = in.pick(0, pipeline.numDevices + 1);
    stage.paramBytes = in.byte() * 64;
    stage.savedBytes = in.byte() * 64;
    stage.inputBytes = in.byte() * 16;
    stage.outputBytes = in.byte() * 16;
    pipeline.stages.push_back(stage);
  }
  for (unsigned e = 0, n = in.pick(0, 8); e < n; ++e)
    pipeline.edges.push_back({unsigned(in.pick(0, numStages + 1)),
                              unsigned(in.pick(0, numStages + 1)),
                              in.byte() * 16u});
  for (unsigned i = 0, n = in.pick(0, 3); i < n; ++i) {
    SharedParam param;
    param.name = "p" + std::to_string(i);
    param.bytes = in.byte() * 64;
    for (unsigned k = 0, m = in.pick(0, 4); k < m; ++k)
      param.stages.push_back(in.pick(0, numStages + 1));
    pipeline.sharedParams.push_back(param);
  }
  if (failed(pipeline.validate([](const llvm::Twine &) {})))
    return 0;

  Schedule schedule;
  schedule.kind = "fuzz";
  schedule.microbatches = in.pick(1, 4);
  schedule.steps = in.pick(1, 2);
  schedule.forwardOnly = in.byte() & 1;
  unsigned numDevices = schedule.devices.size();
  if (in.byte() & 1) {
    schedule = correctSchedule(pipeline, schedule, in.byte());
    numDevices = schedule.devices.size();
    while (numDevices && !in.empty())
      damage(schedule, in);
  } else {
    numDevices = in.pick(0, pipeline.numDevices + 2);
    schedule.devices.resize(numDevices);
    while (numDevices && !in.empty()) {
      SmallVector<ScheduleAction> &list =
          schedule.devices[in.byte() % numDevices];
      list.push_back(ScheduleAction());
      decodeAction(list.back(), pipeline, schedule, in);
    }
  }

  MachineModel machine = MachineModel::makeIdeal(pipeline.numDevices);
  for (MachineModel::Device &device : machine.devices)
    device.memoryBytes = 1024;
  ScheduleCheckOptions options;
  options.memoryLimit = (size & 1) ? 512 : 0;
  for (const MachineModel *m :
       {(const MachineModel *)nullptr, (const MachineModel *)&machine}) {
    for (const ScheduleViolation &v :
         checkSchedule(pipeline, schedule, m, options))
      if (v.message.empty() ||
          (v.device >= numDevices && v.device >= pipeline.numDevices))
        std::abort();
  }

  // A correct schedule stays correct with its recvs in peer order, and is
  // then in peer order.
  ScheduleCheckOptions plain;
  plain.checkMemory = false;
  if (checkSchedule(pipeline, schedule, nullptr, plain).empty()) {
    plain.checkPeerOrder = true;
    if (!checkSchedule(pipeline, orderRecvsBySender(pipeline, schedule),
                       nullptr, plain)
             .empty())
      std::abort();
  }
  return 0;
}
