//===- VerifySchedule.cpp - Checks schedules by playing them --------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Scheduling/ScheduleChecker.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEVERIFYSCHEDULE
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct VerifySchedulePass
    : public pipe::impl::PipeVerifyScheduleBase<VerifySchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    bool failedAny = false;
    for (ScheduleOp scheduleOp : module.getOps<ScheduleOp>()) {
      auto placement = symbols.lookup<PlacementOp>(scheduleOp.getPlacement());
      auto graph =
          placement ? symbols.lookup<GraphOp>(placement.getGraph()) : GraphOp();
      if (!graph) {
        scheduleOp.emitOpError("has no resolvable placement and graph");
        failedAny = true;
        continue;
      }
      FailureOr<StageGraph> stages = StageGraph::build(placement, graph);
      if (failed(stages)) {
        failedAny = true;
        continue;
      }
      MachineModel machine = MachineModel::makeIdeal(placement.getDevices());
      if (!deviceModel.empty()) {
        std::string error;
        FailureOr<MachineModel> found =
            MachineModel::lookup(deviceModel, placement.getDevices(),
                                 [&](const Twine &m) { error = m.str(); });
        if (failed(found)) {
          scheduleOp.emitError(error);
          return signalPassFailure();
        }
        machine = *found;
      }
      FailureOr<Pipeline> pipeline = buildPipeline(placement, *stages, machine);
      if (failed(pipeline)) {
        failedAny = true;
        continue;
      }
      FailureOr<Schedule> schedule =
          readSchedule(scheduleOp, *pipeline, *stages);
      if (failed(schedule)) {
        failedAny = true;
        continue;
      }
      ScheduleCheckOptions options;
      options.checkMemory = !deviceModel.empty() || memoryLimit > 0;
      options.memoryLimit = memoryLimit;
      options.checkPeerOrder = peerOrder;
      DenseMap<uint64_t, DeviceOp> deviceOps;
      for (DeviceOp device : scheduleOp.getBody().getOps<DeviceOp>())
        deviceOps[device.getDevice()] = device;
      for (const ScheduleViolation &violation :
           checkSchedule(*pipeline, *schedule, &machine, options)) {
        failedAny = true;
        Operation *at = scheduleOp;
        if (violation.action >= 0)
          at = schedule->devices[violation.device][violation.action].op;
        else if (DeviceOp device = deviceOps.lookup(violation.device))
          at = device;
        at->emitError("schedule @")
            << scheduleOp.getSymName() << ": " << violation.message;
      }
    }
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
