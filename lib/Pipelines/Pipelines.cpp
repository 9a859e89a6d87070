//===- Pipelines.cpp - The compile pipelines of pipe-train ----------------===//

#include "pipe/Pipelines/Pipelines.h"

#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Partitioning/Partitioner.h"
#include "pipe/Scheduling/ScheduleGenerator.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::pipe;

/// "OPTION: 'VALUE' is not one of A, B" unless `value` is one of `allowed`.
static llvm::Error checkOneOf(StringRef option, StringRef value,
                              ArrayRef<StringRef> allowed) {
  if (llvm::is_contained(allowed, value))
    return llvm::Error::success();
  return llvm::createStringError(option + ": '" + value +
                                 "' is not one of " +
                                 llvm::join(allowed, ", "));
}

static llvm::Error checkPositive(StringRef option, unsigned value) {
  if (value > 0)
    return llvm::Error::success();
  return llvm::createStringError(option + ": must be at least 1");
}

/// The options' values that name something, checked before any pass runs.
static llvm::Error checkIngestOptions(const IngestPipelineOptions &options) {
  if (!options.loss.empty())
    if (llvm::Error err = checkOneOf("loss", options.loss,
                                     {"cross-entropy", "nll", "mse"}))
      return err;
  if (llvm::Error err =
          checkOneOf("loss-reduction", options.lossReduction, {"mean", "sum"}))
    return err;
  for (const std::string &metric : options.metrics) {
    if (llvm::Error err = checkOneOf("metrics", metric, {"accuracy"}))
      return err;
    if (options.loss != "cross-entropy" && options.loss != "nll")
      return llvm::createStringError(
          "metrics: " + metric +
          " needs an attached loss of class scores (loss=cross-entropy or "
          "nll)");
  }
  if (llvm::Error err = checkOneOf("granularity", options.granularity,
                                   {"op", "layer", "coarse"}))
    return err;
  if (!options.init.empty())
    if (llvm::Error err = checkOneOf(
            "init", options.init,
            {"normal", "xavier-uniform", "kaiming-uniform", "zeros"}))
      return err;
  return llvm::Error::success();
}

llvm::Error pipe::buildLiftPipeline(OpPassManager &pm,
                                    const IngestPipelineOptions &options) {
  if (llvm::Error err = checkIngestOptions(options))
    return err;
  pm.addPass(createPipeCheckInput());
  if (!options.loss.empty()) {
    PipeAttachLossOptions loss;
    loss.kind = options.loss;
    loss.reduction = options.lossReduction;
    loss.resultIndex = options.lossResult;
    loss.metrics.assign(options.metrics.begin(), options.metrics.end());
    pm.addPass(createPipeAttachLoss(loss));
  }
  PipeLiftParamsOptions lift;
  lift.init = options.init;
  lift.initSeed = options.initSeed;
  lift.liftSplats = options.liftSplats;
  pm.addPass(createPipeLiftParams(lift));
  if (!options.freeze.empty()) {
    PipeFreezeParamsOptions freeze;
    freeze.patterns.assign(options.freeze.begin(), options.freeze.end());
    pm.addPass(createPipeFreezeParams(freeze));
  }
  return llvm::Error::success();
}

llvm::Error pipe::buildBlocksPipeline(OpPassManager &pm,
                                      const IngestPipelineOptions &options) {
  if (llvm::Error err = checkIngestOptions(options))
    return err;
  PipeFormBlocksOptions blocks;
  blocks.granularity = options.granularity;
  blocks.numBlocks = options.numBlocks;
  pm.addPass(createPipeFormBlocks(blocks));
  pm.addPass(createPipeAnnotateCosts());
  pm.addPass(createPipeDifferentiate());
  return llvm::Error::success();
}

llvm::Error pipe::buildIngestPipeline(OpPassManager &pm,
                                      const IngestPipelineOptions &options) {
  if (llvm::Error err = buildLiftPipeline(pm, options))
    return err;
  return buildBlocksPipeline(pm, options);
}

llvm::Error pipe::checkPartitionAndScheduleOptions(
    const PartitionAndSchedulePipelineOptions &options) {
  SmallVector<std::string> kinds = getScheduleGeneratorNames();
  if (!llvm::is_contained(kinds, options.schedule))
    return llvm::createStringError("schedule: '" + options.schedule +
                                   "' is not a schedule kind (" +
                                   llvm::join(kinds, ", ") + ")");
  if (!options.partitioner.empty() &&
      !partitioning::createPartitioner(options.partitioner))
    return llvm::createStringError(
        "partitioner: '" + options.partitioner + "' is not a partitioner (" +
        partitioning::getPartitionerNames() + ")");
  // The reports are the partitioner's: without one they would silently not
  // be written (the text report's default, standard output, is not a
  // request).
  if (options.partitioner.empty())
    for (auto [option, value] :
         {std::pair<StringRef, StringRef>{"partition-report",
                                          options.partitionReport},
          {"partition-text-report", options.partitionTextReport}})
      if (!value.empty() && value != "-")
        return llvm::createStringError(
            option + "=" + value +
            ": the report is the partitioner's; choose one with "
            "partitioner=<name>");
  if (llvm::Error err = checkOneOf("async-weights", options.asyncWeights,
                                   {"stash", "stale", "predict"}))
    return err;
  if (llvm::Error err =
          checkOneOf("l2l-update", options.hostUpdate,
                     {"plain", "overlap", "delayed"}))
    return err;
  for (auto [option, value] :
       {std::pair<StringRef, unsigned>{"devices", options.devices},
        {"stages-per-device", options.stagesPerDevice},
        {"replicas", options.replicas},
        {"microbatches", options.microbatches},
        {"async-steps", options.asyncSteps},
        {"l2l-steps", options.l2lSteps}})
    if (llvm::Error err = checkPositive(option, value))
      return err;
  return llvm::Error::success();
}

llvm::Error pipe::buildPartitionAndSchedulePipeline(
    OpPassManager &pm, const PartitionAndSchedulePipelineOptions &options) {
  if (llvm::Error err = checkPartitionAndScheduleOptions(options))
    return err;
  ScheduleTraits traits =
      getScheduleTraits(options.schedule).value_or(ScheduleTraits());
  // The pass options are typed, so that no option's text can reach a
  // pipeline string.
  if (!options.partitioner.empty()) {
    PipePartitionOptions partition;
    partition.algorithm = options.partitioner;
    partition.devices = options.devices;
    partition.replicas = options.replicas;
    partition.reduceBucketBytes = options.reduceBucketBytes;
    partition.schedule = options.schedule;
    partition.microbatches = options.microbatches;
    partition.recompute = options.recompute;
    if (!options.deviceModel.empty())
      partition.deviceModel = options.deviceModel;
    partition.report = options.partitionReport;
    partition.textReport = options.partitionTextReport;
    pm.addPass(createPipePartition(partition));
  } else {
    PipePlaceOptions place;
    place.devices = options.devices;
    place.stagesPerDevice = options.stagesPerDevice;
    place.replicas = options.replicas;
    // A parameter-server schedule (L2L) streams each block's weights from
    // the host to one device, so it runs every block instance as its own
    // stage there.
    if (traits.parameterServer) {
      place.devices = 1;
      place.stagesPerDevice = 0;
    }
    pm.addPass(createPipePlace(place));
  }
  PipeScheduleOptions train;
  train.kind = options.schedule;
  train.microbatches = options.microbatches;
  train.recompute = options.recompute;
  train.constantMemory = options.constantMemory;
  train.weights = options.asyncWeights;
  train.hostUpdate = options.hostUpdate;
  train.reduceBucketBytes = options.reduceBucketBytes;
  train.peerOrder = options.peerOrder;
  train.steps = traits.asynchronous ? unsigned(options.asyncSteps) : 1;
  // Overlapped and delayed host updates reach into the next step only
  // within one schedule: it covers several.
  if (traits.parameterServer && options.hostUpdate != "plain")
    train.steps = options.l2lSteps;
  // Evaluation runs the forward passes only; gpipe's order does for any
  // placement. A parameter-server schedule (L2L) streams each block's
  // weights from the host as its training does, so that the run's peak
  // stays constant in depth.
  PipeScheduleOptions eval;
  eval.kind =
      traits.parameterServer ? std::string(options.schedule) : "gpipe";
  eval.forwardOnly = true;
  eval.microbatches = options.microbatches;
  eval.peerOrder = options.peerOrder;
  PipeVerifyScheduleOptions verify;
  verify.peerOrder = options.peerOrder;
  if (!options.deviceModel.empty()) {
    train.deviceModel = options.deviceModel;
    eval.deviceModel = options.deviceModel;
    verify.deviceModel = options.deviceModel;
  }
  pm.addPass(createPipeSchedule(train));
  // Delayed updates warm up on plain ones (pipe-train --l2l-delay-after):
  // the same L2L schedule, one step per run on the latest weights.
  if (traits.parameterServer && options.hostUpdate == "delayed" &&
      train.steps > 1) {
    PipeScheduleOptions warmup = train;
    warmup.hostUpdate = "plain";
    warmup.steps = 1;
    pm.addPass(createPipeSchedule(warmup));
  }
  if (options.eval)
    pm.addPass(createPipeSchedule(eval));
  pm.addPass(createPipeVerifySchedule(verify));
  return llvm::Error::success();
}

/// Registers `name` built by `build`, whose error goes to the pass
/// manager's error handler (as "pipe-ingest: loss: ..."), so that a bad
/// option value is a diagnostic of pipe-opt's option parser.
template <typename Options>
static void registerPipeline(
    StringRef name, StringRef description,
    llvm::Error (*build)(OpPassManager &, const Options &)) {
  registerPassPipeline(
      name, description,
      [name, build](OpPassManager &pm, StringRef text,
                    function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (llvm::Error err = build(pm, options))
          return errorHandler(name + ": " + llvm::toString(std::move(err)));
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(Options());
      });
}

void pipe::registerCompilePipelines() {
  registerPipeline<IngestPipelineOptions>(
      "pipe-ingest",
      "Prepares a forward function for training as pipe-train does: "
      "check-input, attach-loss (with loss=), lift-params (with init=), "
      "blocks (granularity=, layer by default), costs, differentiate",
      buildIngestPipeline);
  registerPipeline<PartitionAndSchedulePipelineOptions>(
      "pipe-partition-and-schedule",
      "Places or partitions differentiated blocks and writes and verifies "
      "the training and evaluation schedules, as pipe-train does",
      buildPartitionAndSchedulePipeline);
}
