//===- Partition.cpp - Partition a costed block graph into stages ---------===//
//
// The pass is a thin driver: it builds the plain C++ partitioning problem
// from the IR and the device model, runs a registered algorithm
// (pipe/Partitioning) and writes the answer back as a pipe.placement, with
// a text and a JSON report of the predicted figures. pipe-place runs the
// same driver (partitionGraph, Partition.h).
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Partition.h"
#include "pipe/Analysis/DeviceModel.h"
#include "pipe/Dialect/Pipe/IR/PlanLimits.h"
#include "pipe/Dialect/Pipe/Transforms/PartitionIR.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Partitioning/Algorithms.h"
#include "pipe/Partitioning/FromDeviceModel.h"
#include "pipe/Partitioning/Partitioner.h"
#include "pipe/Partitioning/SimulatedStepTime.h"
#include "pipe/Scheduling/Pipeline.h"
#include "pipe/Support/OutputFile.h"

#include "mlir/IR/Threading.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEPARTITION
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;

namespace {

/// "s0,s5" for the stages on `device`.
std::string stagesOn(const Partition &partition, unsigned device) {
  std::string result;
  for (unsigned s = 0; s < partition.getNumStages(); ++s)
    if (partition.deviceOf[s] == device) {
      if (!result.empty())
        result += ",";
      result += "s" + std::to_string(s);
    }
  return result.empty() ? "-" : result;
}

/// One data-parallel degree the partitioner tried: `replicas` copies of a
/// pipeline on `devices` devices, each running `microbatches` per step.
struct ReplicaCandidate {
  unsigned replicas = 1, devices = 1, microbatches = 1;
  PartitionProblem problem;
  std::optional<PartitionResult> result;
  /// Why no partition fits, when `result` is empty.
  std::string failure;
  /// The replicas' gradient all-reduce on its own, and the step with it:
  /// simulated with the schedule's bucketed all-reduces overlapping the
  /// backward where step times are simulated, else their sum.
  double allReduceSeconds = 0, stepSeconds = 0;
  /// The step's time beyond one replica's pipeline step.
  double getExposedAllReduceSeconds() const {
    return result ? std::max(0.0, stepSeconds - result->evaluation.stepSeconds)
                  : 0.0;
  }
};

/// The gradients' all-reduce over `replicas` copies of a pipeline on
/// `devices` devices, as the simulator plays it: replica r runs pipeline
/// device d as device r * devices + d of `machine`, each device's parameter
/// bytes go round the ring of its copies, and the devices reduce in
/// parallel.
double getReplicaAllReduceSeconds(const MachineModel &machine,
                                  unsigned replicas, unsigned devices,
                                  const Evaluation &eval) {
  double slowest = 0;
  for (unsigned d = 0; d < devices; ++d)
    slowest = std::max(slowest, machine.getReplicaAllReduceTime(
                                    d, devices, replicas,
                                    double(eval.devices[d].paramBytes)));
  return slowest;
}

struct ReportContext {
  StringRef graphName, placementName, deviceModel, dtype;
  const PartitionProblem &problem;
  const PartitionResult &result;
  ArrayRef<RunOp> runs;
  /// With replicas=0: every degree tried.
  ArrayRef<ReplicaCandidate> candidates;
  /// The chosen degree.
  const ReplicaCandidate &chosen;
};

void printTextReport(raw_ostream &os, const ReportContext &ctx) {
  const PartitionProblem &problem = ctx.problem;
  const PartitionResult &result = ctx.result;
  const Evaluation &eval = result.evaluation;
  const Partition &partition = result.partition;
  unsigned m = problem.schedule.microbatches;
  os << llvm::formatv(
      "pipe-partition: graph @{0} -> placement @{1}\n"
      "  algorithm {2}; {3} blocks; {4} devices of {5} ({6}); schedule {7}, "
      "{8} micro-batches{10}; optimizer {9}\n",
      ctx.graphName, ctx.placementName, result.algorithm,
      problem.graph->getNumNodes(), problem.cluster.size(), ctx.deviceModel,
      ctx.dtype, problem.schedule.getKind(), m,
      problem.memory.name,
      problem.schedule.recompute ? ", stage recomputation" : "");
  os << llvm::formatv("stages: {0}\n", partition.getNumStages());
  os << "  stage   device  blocks  forward      backward     saved/mb    "
        "params      height  in-flight\n";
  for (unsigned s = 0; s < partition.getNumStages(); ++s) {
    const StageReport &st = eval.stages[s];
    os << llvm::formatv("  {0,-7} {1,-7} {2,-7} {3,-12} {4,-12} {5,-11} "
                        "{6,-11} {7,-7} {8}\n",
                        "s" + std::to_string(s), st.device, st.numNodes,
                        formatSeconds(st.forwardSeconds),
                        formatSeconds(st.backwardSeconds),
                        formatBytes(st.savedBytes), formatBytes(st.paramBytes),
                        st.height, st.activationsInFlight);
  }
  os << "stage -> device: [";
  for (unsigned s = 0; s < partition.getNumStages(); ++s)
    os << (s ? "," : "") << partition.deviceOf[s];
  os << "]\n";
  os << "devices:\n";
  os << "  device  stages       compute/mb   recv/mb      send/mb      "
        "cost/mb      memory      capacity\n";
  for (unsigned d = 0; d < problem.cluster.size(); ++d) {
    const DeviceReport &dev = eval.devices[d];
    os << llvm::formatv(
        "  {0,-7} {1,-12} {2,-12} {3,-12} {4,-12} {5,-12} {6,-11} {7}\n", d,
        stagesOn(partition, d),
        formatSeconds(dev.forwardSeconds + dev.backwardSeconds),
        formatSeconds(dev.recvSeconds), formatSeconds(dev.sendSeconds),
        formatSeconds(dev.costSeconds), formatBytes(dev.memoryBytes),
        formatBytes(dev.capacityBytes));
  }
  os << llvm::formatv("communication: {0} per micro-batch each way; {1} "
                      "parameters reduced across devices ({2}, {3} per "
                      "step)\n",
                      formatBytes(eval.commBytesPerMicrobatch),
                      eval.numSplitParams, formatBytes(eval.reductionBytes),
                      formatSeconds(eval.reductionSeconds));
  os << llvm::formatv("bottleneck {0} per micro-batch; critical path {1}\n",
                      formatSeconds(eval.bottleneckSeconds),
                      formatSeconds(eval.pathSeconds));
  os << llvm::formatv("predicted step time: {0} ({1}; analytic {2}); "
                      "throughput {3:f2} micro-batches/s\n",
                      formatSeconds(eval.stepSeconds),
                      eval.simulated ? "simulated" : "analytic",
                      formatSeconds(eval.analyticStepSeconds),
                      eval.stepSeconds > 0 ? m / eval.stepSeconds : 0.0);
  if (ctx.chosen.replicas > 1)
    os << llvm::formatv("data parallelism: {0} replicas of these {1} devices, "
                        "{2} micro-batches each; gradient all-reduce {3} "
                        "({4} exposed); step time {5}\n",
                        ctx.chosen.replicas, problem.cluster.size(), m,
                        formatSeconds(ctx.chosen.allReduceSeconds),
                        formatSeconds(ctx.chosen.getExposedAllReduceSeconds()),
                        formatSeconds(ctx.chosen.stepSeconds));
  if (!ctx.candidates.empty()) {
    os << "data-parallel degrees tried (replicas x pipeline devices):\n";
    for (const ReplicaCandidate &c : ctx.candidates) {
      os << llvm::formatv("  {0,3} x {1,-4} {2,3} micro-batches each: ",
                          c.replicas, c.devices, c.microbatches);
      if (!c.result)
        os << "does not fit (" << StringRef(c.failure).split('\n').first
           << ")\n";
      else
        os << llvm::formatv(
            "step {0} (pipeline {1}, all-reduce {2}, {3} exposed){4}\n",
            formatSeconds(c.stepSeconds),
            formatSeconds(c.result->evaluation.stepSeconds),
            formatSeconds(c.allReduceSeconds),
            formatSeconds(c.getExposedAllReduceSeconds()),
            c.replicas == ctx.chosen.replicas ? "  <- chosen" : "");
    }
  }
  os << llvm::formatv("partitioning time: {0}\n",
                      formatSeconds(result.seconds));
  for (const std::string &note : result.notes)
    os << "note: " << note << "\n";
}

void writeJSONReport(raw_ostream &os, const ReportContext &ctx) {
  const PartitionProblem &problem = ctx.problem;
  const PartitionResult &result = ctx.result;
  const Evaluation &eval = result.evaluation;
  const Partition &partition = result.partition;
  unsigned m = problem.schedule.microbatches;
  llvm::json::OStream json(os, 2);
  json.object([&] {
    json.attribute("graph", ctx.graphName);
    json.attribute("placement", ctx.placementName);
    json.attribute("algorithm", result.algorithm);
    json.attribute("device_model", ctx.deviceModel);
    json.attribute("dtype", ctx.dtype);
    json.attribute("devices", int64_t(problem.cluster.size()));
    json.attribute("schedule", problem.schedule.getKind());
    json.attribute("microbatches", int64_t(m));
    json.attribute("optimizer", problem.memory.name);
    json.attribute("weight_stashing", problem.schedule.weightStashing);
    json.attribute("recompute", problem.schedule.recompute);
    json.attribute("blocks", int64_t(problem.graph->getNumNodes()));
    json.attribute("step_seconds", eval.stepSeconds);
    json.attribute("analytic_step_seconds", eval.analyticStepSeconds);
    json.attribute("simulated", eval.simulated);
    json.attribute("microbatches_per_second",
                   eval.stepSeconds > 0 ? m / eval.stepSeconds : 0.0);
    json.attribute("bottleneck_seconds", eval.bottleneckSeconds);
    // FTPipe's planner figure: the compute of all devices per micro-batch
    // (recomputation included, communication not) over the bottleneck
    // device's cost; P for a perfectly balanced, communication-free split.
    double sequential = 0;
    for (const DeviceReport &dev : eval.devices)
      sequential += dev.forwardSeconds + dev.backwardSeconds;
    json.attribute("sequential_seconds_per_microbatch", sequential);
    json.attribute(
        "bottleneck_speedup",
        eval.bottleneckSeconds > 0 ? sequential / eval.bottleneckSeconds : 0.0);
    // FTPipe's definition: the sequential time of the model over the
    // slowest device's, both forward and backward under one cost model,
    // without recomputation or communication.
    double total = 0, slowest = 0;
    SmallVector<double> work(eval.devices.size(), 0);
    for (const StageReport &stage : eval.stages) {
      double seconds = stage.forwardSeconds + stage.backwardSeconds -
                       (stage.recomputed ? stage.forwardSeconds : 0);
      work[stage.device] += seconds;
      total += seconds;
    }
    for (double seconds : work)
      slowest = std::max(slowest, seconds);
    json.attribute("balance_speedup", slowest > 0 ? total / slowest : 0.0);
    json.attribute("critical_path_seconds", eval.pathSeconds);
    json.attribute("reduction_seconds", eval.reductionSeconds);
    json.attribute("comm_bytes_per_microbatch",
                   int64_t(eval.commBytesPerMicrobatch));
    json.attribute("reduction_bytes", int64_t(eval.reductionBytes));
    json.attribute("split_params", int64_t(eval.numSplitParams));
    json.attribute("partitioning_seconds", result.seconds);
    json.attribute("replicas", int64_t(ctx.chosen.replicas));
    json.attribute("all_reduce_seconds", ctx.chosen.allReduceSeconds);
    json.attribute("exposed_all_reduce_seconds",
                   ctx.chosen.getExposedAllReduceSeconds());
    json.attribute("data_parallel_step_seconds", ctx.chosen.stepSeconds);
    if (!ctx.candidates.empty())
      json.attributeArray("data_parallel_candidates", [&] {
        for (const ReplicaCandidate &c : ctx.candidates)
          json.object([&] {
            json.attribute("replicas", int64_t(c.replicas));
            json.attribute("devices", int64_t(c.devices));
            json.attribute("microbatches", int64_t(c.microbatches));
            json.attribute("fits", bool(c.result));
            if (c.result) {
              json.attribute("step_seconds", c.stepSeconds);
              json.attribute("all_reduce_seconds", c.allReduceSeconds);
              json.attribute("exposed_all_reduce_seconds",
                             c.getExposedAllReduceSeconds());
            } else {
              json.attribute("failure", c.failure);
            }
          });
      });
    json.attributeArray("stage_to_device", [&] {
      for (unsigned d : partition.deviceOf)
        json.value(int64_t(d));
    });
    json.attributeArray("stages", [&] {
      for (unsigned s = 0; s < partition.getNumStages(); ++s) {
        const StageReport &st = eval.stages[s];
        json.object([&] {
          json.attribute("name", "s" + std::to_string(s));
          json.attribute("device", int64_t(st.device));
          json.attribute("forward_seconds", st.forwardSeconds);
          json.attribute("backward_seconds", st.backwardSeconds);
          json.attribute("saved_bytes", int64_t(st.savedBytes));
          json.attribute("param_bytes", int64_t(st.paramBytes));
          json.attribute("height", int64_t(st.height));
          json.attribute("activations_in_flight",
                         int64_t(st.activationsInFlight));
          json.attributeArray("blocks", [&] {
            for (auto [node, run] : llvm::enumerate(ctx.runs))
              if (partition.stageOf[node] == s)
                json.value(RunOp(run).getInstance());
          });
        });
      }
    });
    json.attributeArray("device_reports", [&] {
      for (unsigned d = 0; d < problem.cluster.size(); ++d) {
        const DeviceReport &dev = eval.devices[d];
        json.object([&] {
          json.attribute("device", int64_t(d));
          json.attribute("stages", int64_t(dev.numStages));
          json.attribute("forward_seconds", dev.forwardSeconds);
          json.attribute("backward_seconds", dev.backwardSeconds);
          json.attribute("recv_seconds", dev.recvSeconds);
          json.attribute("send_seconds", dev.sendSeconds);
          json.attribute("cost_seconds", dev.costSeconds);
          json.attribute("param_bytes", int64_t(dev.paramBytes));
          json.attribute("memory_bytes", int64_t(dev.memoryBytes));
          json.attribute("param_memory_bytes", int64_t(dev.paramMemoryBytes));
          json.attribute("activation_memory_bytes",
                         int64_t(dev.activationMemoryBytes));
          json.attribute("capacity_bytes", int64_t(dev.capacityBytes));
          json.attribute("sent_bytes", int64_t(dev.sentBytes));
          json.attribute("received_bytes", int64_t(dev.receivedBytes));
        });
      }
    });
    json.attributeArray("notes", [&] {
      for (const std::string &note : result.notes)
        json.value(note);
    });
  });
  os << "\n";
}

LogicalResult writeReportFile(Operation *anchor, StringRef passName,
                              StringRef path, StringRef deviceModel,
                              llvm::function_ref<void(raw_ostream &)> write) {
  if (llvm::Error error =
          checkReportPath(path, anchor, {{"device-model", deviceModel}}))
    return mlir::emitError(anchor->getLoc(), passName)
           << ": " << llvm::toString(std::move(error));
  if (llvm::Error error = writeOutputFile(path, write))
    return anchor->emitError(passName)
           << ": " << llvm::toString(std::move(error));
  return success();
}

} // namespace

LogicalResult mlir::pipe::partitionGraph(ModuleOp module, GraphOp graph,
                                         const PipePartitionOptions &options,
                                         const PartitionCaller &caller) {
  StringRef pass = caller.passName;
  // The options first, before any work: each data-parallel degree below
  // builds its own model for its share of the micro-batches.
  llvm::Expected<ScheduleModel> scheduleModel =
      ScheduleModel::forSchedule(options.schedule, options.microbatches,
                                 options.weightStashing, options.recompute);
  if (!scheduleModel)
    return mlir::emitError(module.getLoc(), pass)
           << ": " << llvm::toString(scheduleModel.takeError());
  bool chooseReplicas = options.replicas == 0;
  if (chooseReplicas && caller.placementOnly)
    return mlir::emitError(module.getLoc(), pass)
           << ": replicas=0 (choose the data-parallel degree) needs "
              "--pipe-partition, which predicts step times";
  std::optional<TrainingMemory> memory =
      TrainingMemory::lookup(options.optimizer);
  if (!memory)
    return mlir::emitError(module.getLoc(), pass)
           << ": unknown optimizer '" << options.optimizer << "' (expected "
           << TrainingMemory::getNames() << ")";
  if (options.devices == 0 || options.microbatches == 0)
    return mlir::emitError(module.getLoc(), pass)
           << ": devices and microbatches must be at least 1";
  if (options.devices > kMaxPlanDevices || options.replicas > kMaxPlanDevices ||
      uint64_t(options.devices) * std::max(options.replicas, 1u) >
          kMaxPlanDevices)
    return mlir::emitError(module.getLoc(), pass)
           << ": devices=" << options.devices
           << " times replicas=" << options.replicas << " is more than the "
           << kMaxPlanDevices << " machine devices a plan may use";
  if (options.microbatches > kMaxMicrobatches)
    return mlir::emitError(module.getLoc(), pass)
           << ": microbatches=" << options.microbatches << " is more than "
           << kMaxMicrobatches;
  // Up to 16 PiB of device memory, and a reserve below it.
  constexpr double kMaxGiB = double(1 << 24);
  auto number = [](double value) {
    return llvm::formatv("{0}", llvm::format("%g", value)).str();
  };
  if (!(options.memoryGiB >= 0 && options.memoryGiB <= kMaxGiB))
    return mlir::emitError(module.getLoc(), pass)
           << ": memory-gib=" << number(options.memoryGiB)
           << " is not a number of GiB in [0, " << number(kMaxGiB) << "]";
  if (!(options.reserveMiB >= 0 && options.reserveMiB <= kMaxGiB * 1024))
    return mlir::emitError(module.getLoc(), pass)
           << ": reserve-mib=" << number(options.reserveMiB)
           << " is not a number of MiB in [0, " << number(kMaxGiB * 1024)
           << "]";
  if (!llvm::is_contained({"f64", "f32", "tf32", "bf16", "f16", "f8", "i8"},
                          options.dtype))
    return mlir::emitError(module.getLoc(), pass)
           << ": dtype '" << options.dtype
           << "' is not one of f64, f32, tf32, bf16, f16, f8, i8";
  if (!createPartitioner(options.algorithm))
    return mlir::emitError(module.getLoc(), pass)
           << ": unknown algorithm '" << options.algorithm
           << "' (known: " << getPartitionerNames() << ")";
  llvm::Expected<ClusterModel> model =
      ClusterModel::lookup(options.deviceModel);
  if (!model)
    return mlir::emitError(module.getLoc(), pass)
           << ": device model '" << options.deviceModel
           << "': " << llvm::toString(model.takeError());

  std::string name =
      options.placementName.empty()
          ? (graph.getSymName() + "_" + options.algorithm).str()
          : options.placementName;
  if (SymbolTable::lookupSymbolIn(module, name))
    return mlir::emitError(module.getLoc(), pass)
           << ": the module already has a symbol @" << name
           << "; choose another with placement=<name>";

  // The problem.
  SmallVector<RunOp> runs;
  FailureOr<BlockGraph> blockGraph =
      buildBlockGraph(graph, runs, /*allowUncosted=*/caller.placementOnly);
  if (failed(blockGraph))
    return failure();
  // One replica's problem: `devices` devices (the first of the model's),
  // `microbatches` micro-batches per step.
  auto makeProblem = [&](unsigned devices, const ScheduleModel &schedule) {
    PartitionProblem problem;
    problem.graph = &*blockGraph;
    problem.cluster = buildClusterInfo(*model, devices, options.dtype);
    for (DeviceInfo &device : problem.cluster.devices) {
      if (options.memoryGiB > 0)
        device.memoryBytes = uint64_t(options.memoryGiB * double(1ull << 30));
      device.reservedBytes = uint64_t(options.reserveMiB * double(1ull << 20));
    }
    problem.memory = *memory;
    problem.schedule = schedule;
    problem.stagesPerDevice = options.stagesPerDevice;
    problem.checkMemory = !caller.placementOnly;
    // Asynchronous kinds are simulated over several overlapping steps to
    // reach their steady state.
    if (options.simulate)
      problem.stepTime =
          makeSimulatedStepTime(problem.schedule.getKind().str(),
                                problem.schedule.isSynchronous() ? 1 : 4);
    return problem;
  };

  // The data-parallel degrees to try: the one given, or with replicas=0
  // every R that divides the cluster's devices and the step's micro-batches
  // (each replica then runs devices / R devices on microbatches / R).
  SmallVector<unsigned> degrees;
  if (!chooseReplicas)
    degrees.push_back(options.replicas);
  for (unsigned r = 1; chooseReplicas && r <= options.devices; ++r)
    if (options.devices % r == 0 && options.microbatches % r == 0)
      degrees.push_back(r);
  std::vector<ReplicaCandidate> candidates(degrees.size());
  for (auto [candidate, r] : llvm::zip_equal(candidates, degrees)) {
    candidate.replicas = r;
    candidate.devices = chooseReplicas ? options.devices / r : options.devices;
    candidate.microbatches =
        chooseReplicas ? options.microbatches / r : options.microbatches;
    llvm::Expected<ScheduleModel> schedule =
        ScheduleModel::forSchedule(options.schedule, candidate.microbatches,
                                   options.weightStashing, options.recompute);
    if (!schedule)
      return mlir::emitError(module.getLoc(), pass)
             << ": " << llvm::toString(schedule.takeError());
    candidate.problem = makeProblem(candidate.devices, *schedule);
  }
  // The degrees are independent problems: partition them in parallel (the
  // context's threads; --mlir-disable-threading runs them in turn). A degree
  // whose weights cannot fit by any split is not partitioned at all.
  mlir::parallelForEach(
      graph->getContext(), candidates, [&](ReplicaCandidate &candidate) {
        const PartitionProblem &problem = candidate.problem;
        uint64_t usable = 0;
        for (const DeviceInfo &device : problem.cluster.devices)
          usable = std::max(usable, device.getUsableBytes());
        if (uint64_t bound = computeMemoryLowerBound(problem);
            problem.checkMemory && chooseReplicas && bound > usable) {
          candidate.failure =
              llvm::formatv("no partition over {0} devices fits in less than "
                            "{1} per device ({2} usable)",
                            candidate.devices, formatBytes(bound),
                            formatBytes(usable));
          return;
        }
        llvm::Expected<PartitionResult> result =
            runPartitioner(options.algorithm, problem);
        if (!result) {
          candidate.failure = llvm::toString(result.takeError());
          return;
        }
        // Every replica's devices: replica r's device d is device
        // r * devices + d of the model.
        MachineModel replicated = buildMachineModel(buildClusterInfo(
            *model, candidate.replicas * candidate.devices, options.dtype));
        candidate.allReduceSeconds =
            getReplicaAllReduceSeconds(replicated, candidate.replicas,
                                       candidate.devices, result->evaluation);
        candidate.stepSeconds =
            result->evaluation.stepSeconds + candidate.allReduceSeconds;
        // Simulated step times play the replicated schedule itself: its
        // bucketed all-reduces overlap the backward where they can.
        if (problem.stepTime && candidate.replicas > 1)
          if (std::optional<double> step = simulateStepTime(
                  problem, result->partition, result->evaluation, replicated,
                  problem.schedule.getKind(),
                  problem.schedule.isSynchronous() ? 1 : 4, candidate.replicas,
                  options.reduceBucketBytes))
            candidate.stepSeconds = *step;
        candidate.result = std::move(*result);
      });
  std::optional<unsigned> best;
  for (auto [i, candidate] : llvm::enumerate(candidates))
    if (candidate.result &&
        (!best || candidate.stepSeconds < candidates[*best].stepSeconds))
      best = i;
  if (!best) {
    if (candidates.size() == 1)
      return graph.emitError(pass) << ": " << candidates.front().failure;
    InFlightDiagnostic diag = graph.emitError(pass)
                              << ": no data-parallel degree fits";
    for (const ReplicaCandidate &c : candidates)
      diag << "; " << c.replicas << " x " << c.devices << ": " << c.failure;
    return diag;
  }
  const ReplicaCandidate &chosen = candidates[*best];
  const PartitionProblem &problem = chosen.problem;
  const PartitionResult *result = &*chosen.result;
  unsigned replicas = chosen.replicas, devices = chosen.devices;
  unsigned microbatches = chosen.microbatches;

  OpBuilder builder(graph->getContext());
  builder.setInsertionPointAfter(graph);
  writePlacement(builder, graph.getLoc(), name, graph, runs, result->partition,
                 devices, caller.placementOnly ? 0u : microbatches, replicas);

  ReportContext ctx{graph.getSymName(),
                    name,
                    options.deviceModel,
                    options.dtype,
                    problem,
                    *result,
                    runs,
                    chooseReplicas ? ArrayRef(candidates)
                                   : ArrayRef<ReplicaCandidate>(),
                    chosen};
  if (options.textReport == "-") {
    printTextReport(llvm::errs(), ctx);
  } else if (!options.textReport.empty()) {
    if (failed(writeReportFile(
            module, pass, options.textReport, options.deviceModel,
            [&](raw_ostream &os) { printTextReport(os, ctx); })))
      return failure();
  }
  if (!options.report.empty() &&
      failed(
          writeReportFile(module, pass, options.report, options.deviceModel,
                          [&](raw_ostream &os) { writeJSONReport(os, ctx); })))
    return failure();
  return success();
}

namespace {

struct PartitionPass : public pipe::impl::PipePartitionBase<PartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    GraphOp graph;
    if (!graphName.empty()) {
      graph = module.lookupSymbol<GraphOp>(graphName);
      if (!graph) {
        mlir::emitError(module.getLoc(),
                        "pipe-partition: no pipe.graph named @")
            << graphName;
        return signalPassFailure();
      }
    } else {
      for (GraphOp candidate : module.getOps<GraphOp>()) {
        if (graph) {
          candidate.emitError("pipe-partition: the module has several "
                              "pipe.graph ops; choose one with graph=<name>");
          return signalPassFailure();
        }
        graph = candidate;
      }
      if (!graph) {
        mlir::emitError(module.getLoc(),
                        "pipe-partition: the module has no pipe.graph; run "
                        "--pipe-form-blocks first");
        return signalPassFailure();
      }
    }
    if (failed(partitionGraph(module, graph, getOptions(), PartitionCaller())))
      signalPassFailure();
  }

  PipePartitionOptions getOptions() const {
    PipePartitionOptions options;
    options.algorithm = algorithm;
    options.devices = devices;
    options.deviceModel = deviceModel;
    options.dtype = dtype;
    options.schedule = schedule;
    options.microbatches = microbatches;
    options.optimizer = optimizer;
    options.weightStashing = weightStashing;
    options.recompute = recompute;
    options.memoryGiB = memoryGiB;
    options.reserveMiB = reserveMiB;
    options.simulate = simulate;
    options.stagesPerDevice = stagesPerDevice;
    options.replicas = replicas;
    options.reduceBucketBytes = reduceBucketBytes;
    options.graphName = graphName;
    options.placementName = placementName;
    options.report = report;
    options.textReport = textReport;
    return options;
  }
};

} // namespace
