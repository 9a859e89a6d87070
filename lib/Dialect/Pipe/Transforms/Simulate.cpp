//===- Simulate.cpp - Simulates schedules on a device model ---------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Support/OutputFile.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Scheduling/Simulator.h"


namespace mlir::pipe {
#define GEN_PASS_DEF_PIPESIMULATE
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct SimulatePass : public pipe::impl::PipeSimulateBase<SimulatePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    std::vector<std::pair<std::string, SimulationReport>> reports;
    for (ScheduleOp scheduleOp : module.getOps<ScheduleOp>()) {
      auto placement = symbols.lookup<PlacementOp>(scheduleOp.getPlacement());
      auto graph =
          placement ? symbols.lookup<GraphOp>(placement.getGraph()) : GraphOp();
      if (!graph) {
        scheduleOp.emitOpError("has no resolvable placement and graph");
        return signalPassFailure();
      }
      // Times come from the model's compute rates either way; `ideal`
      // drops communication, copies and optimizer costs.
      FailureOr<PlacedPipeline> placed =
          buildPlacedPipeline(placement, graph, deviceModel, scheduleOp);
      if (failed(placed))
        return signalPassFailure();
      MachineModel &machine = placed->machine;
      if (ideal) {
        MachineModel free = MachineModel::makeIdeal(placement.getDevices());
        for (unsigned d = 0; d < free.devices.size(); ++d)
          free.devices[d].memoryBytes = machine.getDevice(d).memoryBytes;
        machine = free;
      }
      FailureOr<Schedule> schedule =
          readSchedule(scheduleOp, placed->pipeline, placed->stages);
      if (failed(schedule))
        return signalPassFailure();
      SimulationOptions options;
      options.microbatchSize = microbatchSize;
      options.recordTrace = !traceFile.empty();
      FailureOr<SimulationReport> report =
          simulate(placed->pipeline, *schedule, machine, options,
                   [&](const Twine &message) {
                     scheduleOp.emitError("cannot simulate schedule @")
                         << scheduleOp.getSymName() << ": " << message;
                   });
      if (failed(report))
        return signalPassFailure();
      if (reportFile.empty()) {
        llvm::outs() << "@" << scheduleOp.getSymName() << " on " << machine.name
                     << ": ";
        report->print(llvm::outs());
      }
      reports.push_back({scheduleOp.getSymName().str(), std::move(*report)});
    }

    auto write = [&](StringRef path,
                     llvm::function_ref<void(llvm::raw_ostream &)> body) {
      llvm::Error error =
          checkReportPath(path, module, {{"device-model", deviceModel}});
      if (!error)
        error = writeOutputFile(path, body);
      if (error) {
        mlir::emitError(module.getLoc()) << llvm::toString(std::move(error));
        return false;
      }
      return true;
    };
    if (!reportFile.empty() && !write(reportFile, [&](llvm::raw_ostream &os) {
          llvm::json::OStream json(os, 2);
          json.object([&] {
            json.attributeArray("schedules", [&] {
              for (auto &[name, report] : reports) {
                json.object([&] {
                  json.attribute("name", name);
                  json.attributeBegin("report");
                  report.writeJSON(json);
                  json.attributeEnd();
                });
              }
            });
          });
          os << "\n";
        }))
      return signalPassFailure();
    if (!traceFile.empty() && !write(traceFile, [&](llvm::raw_ostream &os) {
          llvm::json::OStream json(os);
          json.object([&] {
            json.attribute("displayTimeUnit", "ms");
            json.attributeArray("traceEvents", [&] {
              for (unsigned i = 0; i < reports.size(); ++i)
                reports[i].second.writeTraceEvents(json, i,
                                                   "@" + reports[i].first);
            });
          });
          os << "\n";
        }))
      return signalPassFailure();
  }
};
} // namespace
