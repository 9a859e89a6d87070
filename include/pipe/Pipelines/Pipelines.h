//===- Pipelines.h - The compile pipelines of pipe-train -------*- C++ -*-===//
//
// The pass pipelines that take a model's forward function to a verified
// training schedule, with typed options. pipe-train builds them from its
// flags, pipe-opt registers them (`--pipe-ingest{...}`,
// `--pipe-partition-and-schedule{...}`) and the Python API runs pipe-opt
// with them, so the three compile a model the same way and no caller
// assembles pass lists as text.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PIPELINES_PIPELINES_H
#define PIPE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

namespace mlir::pipe {

/// Options of `--pipe-ingest`: from the model's forward function to
/// differentiated layer blocks with costs.
struct IngestPipelineOptions
    : public PassPipelineOptions<IngestPipelineOptions> {
  Option<std::string> loss{
      *this, "loss",
      llvm::cl::desc("The function returns logits or activations: train on "
                     "this loss of them against a new last input "
                     "(cross-entropy, nll, mse; pipe-attach-loss). Empty: "
                     "the function returns its loss"),
      llvm::cl::init("")};
  Option<std::string> lossReduction{
      *this, "loss-reduction",
      llvm::cl::desc("Reduction of the attached loss (mean, sum)"),
      llvm::cl::init("mean")};
  Option<unsigned> lossResult{
      *this, "loss-result",
      llvm::cl::desc("Which result of the function the attached loss reads"),
      llvm::cl::init(0)};
  ListOption<std::string> metrics{
      *this, "metrics",
      llvm::cl::desc("Task metrics the attached loss also returns "
                     "(accuracy; pipe-attach-loss metrics=)")};
  Option<std::string> init{
      *this, "init",
      llvm::cl::desc("Initialise the weights without data (pipe-lift-params "
                     "init: normal, xavier-uniform, kaiming-uniform, zeros); "
                     "empty: such weights are an error"),
      llvm::cl::init("")};
  Option<uint64_t> initSeed{*this, "init-seed",
                            llvm::cl::desc("Seed of init's draws"),
                            llvm::cl::init(0)};
  Option<bool> liftSplats{
      *this, "lift-splats",
      llvm::cl::desc("Also lift splat constants, each use its own parameter "
                     "(pipe-lift-params lift-splats)"),
      llvm::cl::init(false)};
  ListOption<std::string> freeze{
      *this, "freeze",
      llvm::cl::desc("Parameters to freeze (pipe-freeze-params patterns: "
                     "globs on the whole name or re:<regex>)")};
  Option<std::string> granularity{
      *this, "granularity",
      llvm::cl::desc("Block granularity (pipe-form-blocks: op, layer, "
                     "coarse)"),
      llvm::cl::init("layer")};
  Option<int64_t> numBlocks{
      *this, "num-blocks",
      llvm::cl::desc("Number of blocks for granularity=coarse"),
      llvm::cl::init(8)};
};

/// Options of `--pipe-partition-and-schedule`: from differentiated blocks
/// to a placement, the training schedule, a forward-only evaluation
/// schedule and their verification. The names are pipe-train's flags.
struct PartitionAndSchedulePipelineOptions
    : public PassPipelineOptions<PartitionAndSchedulePipelineOptions> {
  Option<std::string> partitioner{
      *this, "partitioner",
      llvm::cl::desc("FTPipe partitioner (pipe-partition: mixed, seq, "
                     "exact) driven by device-model; empty: balanced "
                     "placement (pipe-place)"),
      llvm::cl::init("")};
  Option<unsigned> devices{
      *this, "devices",
      llvm::cl::desc("Number of devices (balanced placement for a "
                     "parameter-server schedule such as l2l: one)"),
      llvm::cl::init(2)};
  Option<unsigned> stagesPerDevice{
      *this, "stages-per-device",
      llvm::cl::desc("Balanced placement: stages per device, round-robin "
                     "(a parameter-server schedule such as l2l: one per "
                     "block instance)"),
      llvm::cl::init(1)};
  Option<unsigned> replicas{
      *this, "replicas",
      llvm::cl::desc("Data-parallel copies of the placement (pipe.placement "
                     "replicas)"),
      llvm::cl::init(1)};
  Option<std::string> deviceModel{
      *this, "device-model",
      llvm::cl::desc("Device model preset or JSON file for partitioning, "
                     "scheduling and memory verification (empty: each "
                     "pass's default, no memory check)"),
      llvm::cl::init("")};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Training schedule kind (a registered generator)"),
      llvm::cl::init("1f1b")};
  Option<unsigned> microbatches{*this, "microbatches",
                                llvm::cl::desc("Micro-batches per step"),
                                llvm::cl::init(4)};
  Option<bool> recompute{
      *this, "recompute",
      llvm::cl::desc("Recompute each stage's forward before its backward"),
      llvm::cl::init(false)};
  Option<std::string> asyncWeights{
      *this, "async-weights",
      llvm::cl::desc("pipedream-async: 'stash' weight versions, use "
                     "'stale' ones, or 'predict' them from the optimizer's "
                     "state"),
      llvm::cl::init("stash")};
  Option<unsigned> asyncSteps{
      *this, "async-steps",
      llvm::cl::desc("pipedream-async: optimizer steps per pipeline fill"),
      llvm::cl::init(4)};
  Option<bool> constantMemory{
      *this, "constant-memory",
      llvm::cl::desc("l2l: offload boundary activations to the host"),
      llvm::cl::init(false)};
  Option<std::string> hostUpdate{
      *this, "l2l-update",
      llvm::cl::desc("l2l: 'plain', 'overlap' or 'delayed' host updates "
                     "(pipe-schedule host-update)"),
      llvm::cl::init("plain")};
  Option<unsigned> l2lSteps{
      *this, "l2l-steps",
      llvm::cl::desc("l2l with overlapped or delayed host updates: optimizer "
                     "steps per schedule"),
      llvm::cl::init(4)};
  Option<uint64_t> reduceBucketBytes{
      *this, "reduce-bucket-bytes",
      llvm::cl::desc("With replicas: the largest bucket of gradients summed "
                     "over them by one all-reduce (pipe-schedule "
                     "reduce-bucket-bytes; 0: one blocking reduction per "
                     "parameter)"),
      llvm::cl::init(uint64_t(25) << 20)};
  Option<bool> peerOrder{
      *this, "peer-order",
      llvm::cl::desc("Post each device's recvs from a peer in the peer's send "
                     "order, and verify it (pipe-schedule peer-order; for "
                     "transports without message tags)"),
      llvm::cl::init(false)};
  Option<bool> eval{
      *this, "eval",
      llvm::cl::desc("Also write the forward-only evaluation schedule"),
      llvm::cl::init(true)};
  Option<std::string> partitionReport{
      *this, "partition-report",
      llvm::cl::desc("pipe-partition's JSON report file (empty: none)"),
      llvm::cl::init("")};
  Option<std::string> partitionTextReport{
      *this, "partition-text-report",
      llvm::cl::desc("pipe-partition's text report ('-': standard output, "
                     "empty: none)"),
      llvm::cl::init("-")};
};

/// Adds the ingestion: check-input, attach-loss (with a loss), lift-params,
/// freeze-params (with patterns),
/// form-blocks at the chosen granularity, annotate-costs, differentiate. Fails
/// with a message naming the option on an invalid value.
llvm::Error buildIngestPipeline(OpPassManager &pm,
                                const IngestPipelineOptions &options);

/// The two halves of the ingestion, for a driver that chooses the
/// granularity after lifting: check-input, attach-loss and lift-params;
/// then form-blocks, annotate-costs and differentiate.
llvm::Error buildLiftPipeline(OpPassManager &pm,
                              const IngestPipelineOptions &options);
llvm::Error buildBlocksPipeline(OpPassManager &pm,
                                const IngestPipelineOptions &options);

/// Fails with a message naming the option ("schedule: 'x' is not a
/// schedule kind (...)") unless `options` name things that exist and
/// counts that are positive.
llvm::Error
checkPartitionAndScheduleOptions(const PartitionAndSchedulePipelineOptions &);

/// Adds pipe-partition (with a partitioner) or pipe-place (for a
/// parameter-server schedule: one device, one stage per block instance),
/// pipe-schedule
/// for training and, with `eval`, for evaluation (forward only: gpipe, or
/// l2l for l2l), and pipe-verify-schedule. Checks the options first.
llvm::Error buildPartitionAndSchedulePipeline(
    OpPassManager &pm, const PartitionAndSchedulePipelineOptions &options);

/// Registers `--pipe-ingest` and `--pipe-partition-and-schedule`.
void registerCompilePipelines();

} // namespace mlir::pipe

#endif // PIPE_PIPELINES_PIPELINES_H
