//===- pipe-train.cpp - Compile a model and train it ----------------------===//
//
//   pipe-train [MODEL.mlir] [compile options] [training options]
//
// Builds the model (a torch-mlir linalg-on-tensors module, a pipe-gen preset,
// or by default a byte-level GPT for the text file given by --data), lifts
// its weights, forms blocks, differentiates, partitions or places it on the
// simulated devices, writes the training schedule and a forward-only
// evaluation schedule, verifies them, prints what it chose, lowers the
// program for the host and trains it: in-process through the JIT, or, with
// --artifact, as a shared library run by pipe-runner (the runtime-only
// runner the GPU machine also has). Both run the training loop of
// pipe/Runtime/Trainer.h. See docs/trainer.md.
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/ModelGen/TransformerGen.h"
#include "pipe/Pipelines/Pipelines.h"
#include "pipe/Runtime/Blas.h"
#include "pipe/Runtime/Trainer.h"
#include "pipe/Runtime/TrainerFlags.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Support/InputGuard.h"
#include "pipe/Support/NamePattern.h"
#include "pipe/Support/OutputFile.h"
#include "pipe/Target/CUDA/CudaPipeline.h"
#include "pipe/Target/Host/HostPipeline.h"
#include "pipe/Target/Host/HostTarget.h"
#include "pipe/Tools/FrontEnd.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <unistd.h>

using namespace mlir;
namespace modelgen = mlir::pipe::modelgen;

namespace {

const char *kUsage =
    R"(usage: pipe-train [MODEL.mlir] [compile options] [training options]

With no MODEL and no --preset: a byte-level GPT (4 layers, d 128, 4 heads,
ff 512, context 64) trained on --data (default
/usr/share/common-licenses/GPL-3).

Model:
  --preset NAME          a pipe-gen preset (tiny-gpt, gpt2, bert-base, ...)
  --layers N --d-model N --heads N --ff N --seq N
                         sizes of the default model / overrides of a preset
  --batch N              samples per optimizer step (default 16; split into
                         the micro-batches). A MODEL.mlir fixes the
                         micro-batch size itself.
  --classes C            the generated GPT as a sequence classifier: the
                         last position through score.weight [C, d]; trains
                         on cross-entropy against labels (the data's last
                         input, [N] ids in [0, C)) and reports accuracy
                         (docs/finetune.md)
  --pooling P            --classes: the hidden state of the last position
                         (last, default, as Hugging Face's GPT-2) or the
                         mean over the positions (mean)
  --loss KIND            MODEL.mlir returns logits or activations: train on
                         this loss of them against a new last input, the
                         target (cross-entropy, nll, mse; --pipe-attach-loss)
  --loss-reduction R     mean (default) or sum
  --loss-result N        which result of the function the loss reads
                         (default 0)
  --metric accuracy      with --loss cross-entropy or nll: also report the
                         share of targets whose score is the row's largest
                         at every evaluation (repeatable)
  --init KIND            initialise the weights MODEL.mlir has no data for
                         (elided): normal, xavier-uniform, kaiming-uniform,
                         zeros; by use: matrices by their fans, biases zero,
                         norm scales one (pipe-lift-params init=)
  --init-seed N          seed of --init (default 0)
  --lift-splats          also train the splat constants (all elements equal:
                         a fresh export's BatchNorm scales and shifts, zero
                         biases), each use its own parameter
  --save-init-weights PATH
                         write every parameter's initial value (a safetensors
                         file that --init-weights reloads)
  --freeze PATTERN       freeze the parameters PATTERN names (repeatable): a
                         glob on the whole name (h.0.*) or re:REGEX matched
                         anywhere; no gradient, no optimizer state, no
                         update (pipe-freeze-params); matching nothing is
                         an error
  --lr-group PATTERN=MULT
                         the parameters PATTERN names (as --freeze) train at
                         MULT times the learning rate (repeatable; MULT a
                         finite number >= 0; the schedule scales every group
                         alike); matching nothing, or a parameter in two
                         groups with different MULTs, is an error. Weight
                         decay: see --decay-all
  --granularity G        blocks: op, layer, coarse (one per stage) or auto
                         (default: layer, or op where that gives fewer
                         blocks than stages)
Placement and schedule:
  --devices N            simulated devices (default 2; l2l: one)
  --partitioner NAME     FTPipe partitioner (mixed, seq, exact) driven by
                         --device-model; default: balanced placement
  --device-model NAME    device model preset or JSON for partitioning,
                         memory verification and device capacities
                         (default: none, unlimited memory)
  --stages-per-device N  balanced placement (default 1; l2l: one per block,
                         which --devices, --stages-per-device and
                         --partitioner may not change)
  --schedule KIND        gpipe, 1f1b, interleaved-1f1b, zb-h1, mixed,
                         pipedream-async, l2l, looped-bfs (default 1f1b)
  --microbatches N       micro-batches per step (default 4)
  --recompute            recompute each stage's forward before its backward
  --async-weights W      pipedream-async: stash (default), stale, or
                         predict (stale weights; each forward on the
                         weights extrapolated, from the optimizer's momentum,
                         to the version its backward sees; docs/finetune.md)
  --async-steps N        pipedream-async: optimizer steps per pipeline fill
                         (default 4)
  --constant-memory      l2l: offload boundary activations to the host
  --l2l-update MODE      l2l: plain (default: each step waits for all host
                         updates), overlap (a layer's next forward waits
                         only for its own update; same results) or delayed
                         (step k of a run computes on the weights before
                         step k-1's update, which the host applies while
                         the device runs step k)
  --l2l-steps N          l2l overlap/delayed: optimizer steps per run
                         (default 4)
Output:
  --artifact DIR         write DIR/program.so, DIR/weights.safetensors and
                         DIR/scheduled.mlir and train with pipe-runner
                         (next to this executable) instead of the JIT
  --compile-only         stop after compiling (with --artifact: the runner
                         command is printed)
  --target cpu|cuda      cuda (with --artifact): block functions as sm_XX
                         kernels and cuBLAS calls (docs/cuda-lowering.md);
                         writes DIR/program.o and program.so for
                         pipe-runner-cuda, and DIR/cpu.so, the same program
                         for the CPU, as its reference (scripts/gpu-check)
  --ranks N              compile once, then train as N MPI ranks (one
                         process per device): mpirun -np N pipe-runner
                         with the artifact (docs/distributed.md); with
                         --target cuda the command for the GPU machine
  --data-parallel R      R replicas of the pipeline, each on its share of
                         every step's micro-batches (--batch is per
                         replica): in this process, or with --ranks each on
                         ranks/R ranks; under l2l, R devices streaming from
                         one parameter server, or with --ranks N, R/N on
                         each rank, each rank's from its own
  --reduce-bucket-bytes N
                         with --data-parallel: sum the replicas' gradients
                         of a device's own params in all-reduces of at most
                         N bytes, each started after the device's last
                         backward writing it (default 26214400; 0: one
                         blocking all-reduce per param at the step's end)
  --peer-order           schedules whose device pairs issue their transfers
                         in one order on both sides, as NCCL between
                         processes needs (pipe-runner-cuda --transport
                         nccl, pipe-runner --transport mpi-in-order)
  --chip sm_NN           CUDA architecture (default sm_90)
  --gemm-precision P     CUDA GEMMs: f32, tf32, bf16 or f16 (f32 accumulation)
  --emit-scheduled FILE  write the scheduled IR
  -O N                   LLVM optimisation level (default 3)

Training options are those of pipe-runner, with other defaults here:
--steps 1000 --lr 3e-3 --warmup 20 --lr-schedule cosine --min-lr 1e-3
(a third of a --lr below 1e-3) --eval-every 100, and for the default model (no MODEL.mlir, no --preset)
--weight-decay 0.1 unless --optimizer sgd.

)";

/// --loss, --loss-reduction, --loss-result, --init, --init-seed and --freeze
/// are the ingest flags of the base.
struct CompileFlags : pipe::ModelIngestFlags {
  std::string model, preset, artifact, emitScheduled;
  int64_t layers = 4, dModel = 128, heads = 4, ff = 512, seq = 64, batch = 16;
  int64_t classes = 0; // --classes: the generated GPT as a classifier
  std::string pooling; // --pooling of the classifier
  bool sizesGiven = false;
  int64_t devices = 2, stagesPerDevice = 1, microbatches = 4, asyncSteps = 4,
          l2lSteps = 4;
  int64_t ranks = 0; // 0: in this process
  int64_t dataParallel = 1;
  int64_t reduceBucketBytes = int64_t(25) << 20;
  // Given on the command line: L2L sets both itself and rejects them.
  bool devicesGiven = false, stagesPerDeviceGiven = false;
  std::string partitioner, deviceModel,
      schedule = "1f1b", asyncWeights = "stash", l2lUpdate = "plain";
  bool recompute = false, constantMemory = false, compileOnly = false;
  bool peerOrder = false;
  std::string target = "cpu", chip = "sm_90", gemmPrecision = "f32";
  unsigned optLevel = 3;
  std::string saveInitWeights, granularity = "auto";
  /// --lr-group PATTERN=MULT, as written, split.
  struct LrGroup {
    std::string flag; // "PATTERN=MULT"
    std::string pattern;
    float multiplier;
  };
  std::vector<LrGroup> lrGroups;
};

int fail(const llvm::Twine &message, int code = pipe_rt::ExitError) {
  llvm::errs() << "pipe-train: " << message << "\n";
  return code;
}

/// --lr-group PATTERN=MULT, split at the last '=' (a regex may hold one,
/// a number not); the pattern is checked here, what it matches later.
bool parseLrGroup(const std::string &text,
                  std::vector<CompileFlags::LrGroup> &groups,
                  std::string &error) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    error = "--lr-group '" + text + "': expected PATTERN=MULT";
    return false;
  }
  std::string pattern = text.substr(0, eq), multiplier = text.substr(eq + 1);
  double value;
  if (multiplier.empty() || StringRef(multiplier).getAsDouble(value)) {
    error = "--lr-group '" + text + "': '" + multiplier + "' is not a number";
    return false;
  }
  if (!std::isfinite(value) || value < 0 || !std::isfinite(float(value))) {
    error = "--lr-group '" + text +
            "': out of range, MULT must be a finite float >= 0";
    return false;
  }
  if (llvm::Expected<pipe::NamePattern> parsed =
          pipe::NamePattern::parse(pattern);
      !parsed) {
    error = "--lr-group '" + text + "': " + llvm::toString(parsed.takeError());
    return false;
  }
  groups.push_back({text, pattern, float(value)});
  return true;
}

/// Parses the compile flags; everything else is left for the trainer.
bool parseCompileFlags(int argc, char **argv, CompileFlags &flags,
                       std::vector<std::string> &rest, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc) {
        error = a + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    // Bounds keep every count far inside what the passes' unsigned
    // options and the schedule sizes they multiply into can hold.
    auto count = [&](int64_t &out, int64_t min = 1, int64_t max = 1 << 16) {
      std::string text;
      if (!value(text))
        return false;
      if (!llvm::to_integer(text, out, 10) || out < min || out > max) {
        error = a + " wants an integer in [" + std::to_string(min) + ", " +
                std::to_string(max) + "], got '" + text + "'";
        return false;
      }
      return true;
    };
    auto oneOf = [&](std::string &out, std::initializer_list<const char *> ok) {
      if (!value(out))
        return false;
      if (llvm::is_contained(ok, llvm::StringRef(out)))
        return true;
      error = a + " wants one of " +
              llvm::join(llvm::map_range(ok, [](const char *s) {
                           return std::string(s);
                         }),
                         ", ") +
              "; got '" + out + "'";
      return false;
    };
    bool ok = true;
    std::string text;
    if (a == "--preset")
      ok = value(flags.preset);
    else if (a == "--layers")
      ok = count(flags.layers, 1, 4096), flags.sizesGiven = true;
    else if (a == "--d-model")
      ok = count(flags.dModel, 1, 1 << 22), flags.sizesGiven = true;
    else if (a == "--heads")
      ok = count(flags.heads, 1, 4096), flags.sizesGiven = true;
    else if (a == "--ff")
      ok = count(flags.ff, 1, 1 << 22), flags.sizesGiven = true;
    else if (a == "--seq")
      ok = count(flags.seq), flags.sizesGiven = true;
    else if (a == "--batch")
      ok = count(flags.batch);
    else if (a == "--classes")
      ok = count(flags.classes, 2, 1 << 22);
    else if (a == "--pooling")
      ok = oneOf(flags.pooling, {"last", "mean"});
    else if (a == "--loss")
      ok = oneOf(flags.loss, {"cross-entropy", "nll", "mse"});
    else if (a == "--loss-reduction")
      ok = oneOf(flags.lossReduction, {"mean", "sum"});
    else if (a == "--loss-result")
      ok = count(flags.lossResult, 0, 4096);
    else if (a == "--metric")
      ok = oneOf(flags.metrics.emplace_back(), {"accuracy"});
    else if (a == "--init")
      ok = oneOf(flags.init,
                 {"normal", "xavier-uniform", "kaiming-uniform", "zeros"});
    else if (a == "--init-seed")
      ok = count(flags.initSeed, 0, std::numeric_limits<int64_t>::max());
    else if (a == "--lift-splats")
      flags.liftSplats = true;
    else if (a == "--save-init-weights")
      ok = value(flags.saveInitWeights);
    else if (a == "--freeze")
      ok = value(flags.freeze.emplace_back());
    else if (a == "--lr-group")
      ok = value(text) && parseLrGroup(text, flags.lrGroups, error);
    else if (a == "--granularity")
      ok = oneOf(flags.granularity, {"op", "layer", "coarse", "auto"});
    else if (a == "--devices")
      ok = count(flags.devices, 1, 4096), flags.devicesGiven = true;
    else if (a == "--partitioner")
      ok = value(flags.partitioner);
    else if (a == "--device-model")
      ok = value(flags.deviceModel);
    else if (a == "--stages-per-device") {
      ok = count(flags.stagesPerDevice, 1, 4096);
      flags.stagesPerDeviceGiven = true;
    } else if (a == "--schedule")
      ok = value(flags.schedule);
    else if (a == "--microbatches")
      ok = count(flags.microbatches);
    else if (a == "--recompute")
      flags.recompute = true;
    else if (a == "--async-weights")
      ok = oneOf(flags.asyncWeights, {"stash", "stale", "predict"});
    else if (a == "--async-steps")
      ok = count(flags.asyncSteps, 1, 1024);
    else if (a == "--l2l-update")
      ok = oneOf(flags.l2lUpdate, {"plain", "overlap", "delayed"});
    else if (a == "--l2l-steps")
      ok = count(flags.l2lSteps, 1, 1024);
    else if (a == "--constant-memory")
      flags.constantMemory = true;
    else if (a == "--artifact")
      ok = value(flags.artifact);
    else if (a == "--ranks")
      ok = count(flags.ranks, 1, 4096);
    else if (a == "--data-parallel")
      ok = count(flags.dataParallel, 1, 4096);
    else if (a == "--reduce-bucket-bytes")
      ok = count(flags.reduceBucketBytes, 0, int64_t(1) << 40);
    else if (a == "--peer-order")
      flags.peerOrder = true;
    else if (a == "--target")
      ok = oneOf(flags.target, {"cpu", "cuda"});
    else if (a == "--chip")
      ok = value(flags.chip);
    else if (a == "--gemm-precision")
      ok = value(flags.gemmPrecision);
    else if (a == "--compile-only")
      flags.compileOnly = true;
    else if (a == "--emit-scheduled")
      ok = value(flags.emitScheduled);
    else if (a == "-O") {
      int64_t level;
      ok = count(level, 0, 3);
      flags.optLevel = unsigned(level);
    } else if (i == 1 && !a.empty() && a[0] != '-')
      // Only first: other words may be values of training flags.
      flags.model = a;
    else
      rest.push_back(a);
    if (!ok)
      return false;
  }
  return true;
}

/// `--optimizer sgd` among the training flags: the default model's weight
/// decay is AdamW's.
bool choosesSgd(const std::vector<std::string> &args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--optimizer" && args[i + 1] == "sgd")
      return true;
  return false;
}

/// Bytes of host memory per parameter a run needs at least: the weights
/// file, the masters, their gradients and two AdamW moments (f32 each).
constexpr uint64_t kHostBytesPerParam = 5 * 4;

/// The resource budget of a run: its parameters must fit the machine's
/// physical memory, or it would die of std::bad_alloc (or be killed) after
/// minutes of work. docs/trainer.md "Resource limits".
bool fitsInHostMemory(uint64_t params, std::string &error) {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return true;
  uint64_t memory = uint64_t(pages) * uint64_t(pageSize);
  if (params <= memory / kHostBytesPerParam)
    return true;
  error = "the model has " + std::to_string(params) +
          " parameters; training it needs at least " +
          std::to_string(kHostBytesPerParam) + " bytes of host memory per " +
          "parameter (" + std::to_string(params / (1 << 20) * kHostBytesPerParam) +
          " MiB), more than this machine's " + std::to_string(memory >> 20) +
          " MiB: make it smaller (--layers, --d-model, --ff)";
  return false;
}

/// The model to train: parsed, or generated from a preset or the default.
OwningOpRef<ModuleOp> loadModel(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                                const CompileFlags &flags, std::string &error) {
  std::optional<StringRef> preset;
  if (!flags.preset.empty())
    preset = flags.preset;
  auto configure = [&](modelgen::TransformerConfig &config,
                       std::string &error) {
    if (!preset) {
      // Byte-level GPT: every byte is a token, so any file is data.
      config.name = "byte-gpt";
      config.family = modelgen::ModelFamily::Gpt2;
      config.vocab = 256;
    }
    if (!preset || flags.sizesGiven) {
      config.layers = flags.layers;
      config.dModel = flags.dModel;
      config.heads = flags.heads;
      config.ff = flags.ff;
      config.seq = flags.seq;
      config.maxPositions = std::max(config.maxPositions, flags.seq);
    }
    if (flags.batch % flags.microbatches != 0) {
      error = "--batch " + std::to_string(flags.batch) +
              " is not a multiple of --microbatches " +
              std::to_string(flags.microbatches);
      return false;
    }
    config.batch = flags.batch / flags.microbatches;
    config.classes = flags.classes;
    if (flags.pooling == "mean")
      config.pooling = modelgen::ClassifierPooling::Mean;
    if (llvm::Error err = modelgen::verifyConfig(config)) {
      error = llvm::toString(std::move(err));
      return false;
    }
    // Before generating: the generator itself holds every weight.
    return fitsInHostMemory(modelgen::countParameters(config).total(), error);
  };
  return pipe::loadModel(context, sourceMgr, flags.model, preset, configure,
                         error);
}

/// Stages the placement needs blocks for; a parameter-server schedule
/// (L2L) makes one per block, so any number of blocks does.
int64_t getStageCount(const CompileFlags &flags) {
  if (pipe::getScheduleTraits(flags.schedule)
          .value_or(pipe::ScheduleTraits())
          .parameterServer)
    return 1;
  return flags.devices * flags.stagesPerDevice;
}

/// Block instances of the model's graph.
int64_t countBlockInstances(ModuleOp module) {
  int64_t instances = 0;
  for (auto graph : module.getOps<pipe::GraphOp>())
    instances +=
        int64_t(llvm::range_size(graph.getBody().getOps<pipe::RunOp>()));
  return instances;
}

/// Runs `build`, half of the ingestion at `granularity`, on `module`.
int ingest(ModuleOp module, const CompileFlags &flags, StringRef granularity,
           llvm::Error (*build)(OpPassManager &,
                                const pipe::IngestPipelineOptions &)) {
  PassManager pm(module.getContext());
  pipe::IngestPipelineOptions options;
  pipe::setIngestOptions(flags, granularity,
                         flags.devices * flags.stagesPerDevice, options);
  if (llvm::Error err = build(pm, options))
    return fail(llvm::toString(std::move(err)), pipe_rt::ExitUsage);
  if (failed(pm.run(module)))
    return fail("the model could not be prepared for training (see above)");
  return pipe_rt::ExitOk;
}

/// What pipe-train inferred about a MODEL.mlir: the loss, the inputs and
/// targets, the parameters and the blocks, before the placement's summary.
void printInferred(ModuleOp module, const CompileFlags &flags,
                   StringRef granularity) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "== model: loss ";
  if (flags.loss.empty())
    os << "returned by the function";
  else
    os << flags.loss << " (" << flags.lossReduction << ") of result "
       << flags.lossResult << ", attached (--loss)";
  for (auto graph : module.getOps<pipe::GraphOp>()) {
    ArrayRef<Type> inputs = graph.getArgumentTypes();
    os << "\n   inputs:";
    for (auto [index, type] : llvm::enumerate(inputs)) {
      os << " " << index << ": " << type;
      if (!flags.loss.empty() && index + 1 == inputs.size())
        os << " (target)";
    }
  }
  uint64_t tensors = 0, elements = 0, frozen = 0;
  for (auto param : module.getOps<pipe::ParamOp>()) {
    ++tensors;
    elements += uint64_t(param.getTensorType().getNumElements());
    frozen += param.getFrozen();
  }
  os << "\n   parameters: " << elements << " in " << tensors << " tensors";
  if (!flags.init.empty())
    os << " (those without data: --init " << flags.init << ", seed "
       << flags.initSeed << ")";
  if (frozen)
    os << ", " << frozen << " frozen (no gradient, no update: "
       << (flags.freeze.empty() ? "BatchNorm running statistics"
                                : "--freeze and BatchNorm running statistics")
       << ")";
  os << "\n   blocks: " << countBlockInstances(module) << " (granularity "
     << granularity << ")\n";
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

/// Resolves --lr-group into the trainer's per-param multipliers (and the
/// --param-lr flags that carry them to pipe-runner), with the matcher of
/// --freeze, and reports each group.
bool resolveLrGroups(ModuleOp module, const CompileFlags &flags,
                     pipe_rt::TrainerOptions &trainer,
                     std::vector<std::string> &runnerArgs, std::string &error) {
  // Param name -> the group that set its multiplier.
  llvm::StringMap<const CompileFlags::LrGroup *> owner;
  std::vector<StringRef> order;
  for (const CompileFlags::LrGroup &group : flags.lrGroups) {
    pipe::NamePattern pattern =
        llvm::cantFail(pipe::NamePattern::parse(group.pattern));
    uint64_t params = 0, elements = 0;
    for (auto param : module.getOps<pipe::ParamOp>()) {
      StringRef name = param.getSymName();
      if (!pattern.matches(name))
        continue;
      auto [it, added] = owner.try_emplace(name, &group);
      if (!added && it->second->multiplier != group.multiplier) {
        error = "--lr-group '" + group.flag + "': parameter '" + name.str() +
                "' is also in --lr-group '" + it->second->flag +
                "', with another multiplier";
        return false;
      }
      if (added)
        order.push_back(name);
      ++params;
      elements += uint64_t(param.getTensorType().getNumElements());
    }
    if (params == 0) {
      error = "--lr-group '" + group.flag + "': '" + group.pattern +
              "' matches no parameter; the parameters are ";
      unsigned shown = 0;
      for (auto param : module.getOps<pipe::ParamOp>()) {
        if (shown == 8) {
          error += ", ...";
          break;
        }
        error += (shown++ ? ", " : "") + param.getSymName().str();
      }
      return false;
    }
    std::printf("== --lr-group '%s': %llu params, %llu elements at lr x%g\n",
                group.flag.c_str(), (unsigned long long)params,
                (unsigned long long)elements, double(group.multiplier));
  }
  std::fflush(stdout);
  for (StringRef name : order) {
    float multiplier = owner[name]->multiplier;
    trainer.paramLrScales.emplace_back(name.str(), multiplier);
    // %.9g: every float's shortest round trip through decimal.
    char text[32];
    std::snprintf(text, sizeof(text), "=%.9g", double(multiplier));
    runnerArgs.insert(runnerArgs.end(), {"--param-lr", name.str() + text});
  }
  return true;
}

/// The pipeline places a parameter-server schedule (L2L) itself: one
/// device, one stage per block instance.
void setScheduleOptions(const CompileFlags &flags,
                        pipe::PartitionAndSchedulePipelineOptions &options) {
  options.partitioner = flags.partitioner;
  options.devices = unsigned(flags.devices);
  options.stagesPerDevice = unsigned(flags.stagesPerDevice);
  options.replicas = unsigned(flags.dataParallel);
  options.reduceBucketBytes = uint64_t(flags.reduceBucketBytes);
  options.peerOrder = flags.peerOrder;
  options.deviceModel = flags.deviceModel;
  options.schedule = flags.schedule;
  options.microbatches = unsigned(flags.microbatches);
  options.recompute = flags.recompute;
  options.asyncWeights = flags.asyncWeights;
  options.asyncSteps = unsigned(flags.asyncSteps);
  options.constantMemory = flags.constantMemory;
  options.hostUpdate = flags.l2lUpdate;
  options.l2lSteps = unsigned(flags.l2lSteps);
}

/// --target cuda: DIR/program.o (+ .so where it links), DIR/cpu.so with
/// the same program for the host as the reference, DIR/args, and the
/// command that trains it on the GPU machine (with --ranks, as MPI ranks).
int compileForCuda(ModuleOp module, const CompileFlags &flags, StringRef dir,
                   const std::vector<std::string> &rest) {
  OwningOpRef<ModuleOp> cpu = module.clone();
  PassManager lowerCpu(module->getContext());
  pipe::buildHostToLLVMPipeline(lowerCpu);
  if (failed(lowerCpu.run(*cpu)))
    return fail("lowering the CPU reference failed (see above)");
  if (llvm::Error err = pipe::writeSharedLibrary(*cpu, (dir + "/cpu.so").str(),
                                                 flags.optLevel))
    return fail(llvm::toString(std::move(err)));
  PassManager lowerCuda(module->getContext());
  if (failed(pipe::buildHostToCudaPipeline(lowerCuda, flags.chip,
                                           flags.gemmPrecision)))
    return fail("invalid --chip or --gemm-precision", pipe_rt::ExitUsage);
  if (failed(lowerCuda.run(module)))
    return fail("lowering for CUDA failed (see above)");
  if (llvm::Error err = pipe::writeObjectFile(
          module, (dir + "/program.o").str(), flags.optLevel))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = pipe::writeSharedLibrary(
          module, (dir + "/program.so").str(), flags.optLevel))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err =
          pipe::writeOutputFile((dir + "/args").str(), [&](llvm::raw_ostream &os) {
            os << llvm::join(rest, " ") << "\n";
          }))
    return fail(llvm::toString(std::move(err)));
  std::printf("== CUDA artifact in %s: program.o/.so (%s, GEMMs %s), cpu.so "
              "(reference), weights.safetensors, args\n"
              "   check on the GPU machine: scripts/gpu-check prepare here, "
              "then scripts/gpu-check run OUT there\n",
              dir.str().c_str(), flags.chip.c_str(),
              flags.gemmPrecision.c_str());
  std::string launch =
      flags.ranks > 0 ? "mpirun -np " + std::to_string(flags.ranks) + " " : "";
  std::string distributed = flags.ranks > 0
                                ? " --transport mpi --data-parallel " +
                                      std::to_string(flags.dataParallel)
                                : "";
  std::printf("   train it there: cd %s && %spipe-runner-cuda ./program.so "
              "--weights weights.safetensors $(cat args)%s\n",
              dir.str().c_str(), launch.c_str(), distributed.c_str());
  if (flags.ranks > 0 && flags.peerOrder)
    std::printf("   or with the transfers between the ranks' GPUs through NCCL "
                "(never run yet): the same with --transport nccl\n");
  return pipe_rt::ExitOk;
}

/// L2L chooses its placement itself (one device per replica, one stage per
/// block); a flag that asks for another one is a usage error that says what
/// to change, not a placement failure after the model is built.
bool checkL2LFlags(const CompileFlags &flags, std::string &error) {
  if (!pipe::getScheduleTraits(flags.schedule)
           .value_or(pipe::ScheduleTraits())
           .parameterServer) {
    if (flags.l2lUpdate != "plain")
      error = "--l2l-update: only a parameter-server schedule (--schedule "
              "l2l) has host updates to overlap";
    return error.empty();
  }
  if (flags.devicesGiven && flags.devices != 1)
    error = "--devices " + std::to_string(flags.devices) +
            ": --schedule l2l runs one device per replica (its parameters "
            "stream from the host, one block at a time); for " +
            std::to_string(flags.devices) +
            " devices on one parameter server use --data-parallel " +
            std::to_string(flags.devices) + " instead of --devices";
  else if (flags.stagesPerDeviceGiven)
    error = "--stages-per-device: --schedule l2l makes one stage per block "
            "itself; drop --stages-per-device";
  else if (!flags.partitioner.empty())
    error = "--partitioner: --schedule l2l runs every block as its own stage "
            "on one device, so there is nothing to partition; drop "
            "--partitioner";
  return error.empty();
}

/// Checks what the flags name against what exists, before anything runs:
/// a misspelt schedule is a usage error, not a pass failure minutes later.
/// The pipeline's options are named as the flags are.
bool checkCompileFlags(const CompileFlags &flags, std::string &error) {
  pipe::PartitionAndSchedulePipelineOptions options;
  setScheduleOptions(flags, options);
  if (llvm::Error err = pipe::checkPartitionAndScheduleOptions(options)) {
    error = "--" + llvm::toString(std::move(err));
    return false;
  }
  return checkL2LFlags(flags, error);
}

/// The files pipe-train reads and writes itself (the model, a device-model
/// file, --emit-scheduled, --save-init-weights, the artifact's) joined to
/// the runner's, for checkOutputPaths: an output written over an input
/// loses the user's only copy, two outputs on one path lose one of them.
bool checkFilePaths(const CompileFlags &flags, pipe_rt::TrainerOptions &o,
                    std::string &error) {
  if (!flags.model.empty())
    o.inputs.emplace_back("MODEL.mlir", flags.model);
  if (!flags.deviceModel.empty() && llvm::sys::fs::exists(flags.deviceModel))
    o.inputs.emplace_back("--device-model", flags.deviceModel);
  if (!flags.emitScheduled.empty())
    o.callerOutputs.emplace_back("--emit-scheduled", flags.emitScheduled);
  if (!flags.saveInitWeights.empty())
    o.callerOutputs.emplace_back("--save-init-weights", flags.saveInitWeights);
  if (!flags.artifact.empty())
    for (llvm::StringRef name : {"scheduled.mlir", "weights.safetensors",
                                 "program.so", "program.o", "cpu.so", "args"}) {
      if (!flags.emitScheduled.empty() && name == "scheduled.mlir")
        continue;
      llvm::SmallString<128> path(flags.artifact);
      llvm::sys::path::append(path, name);
      o.callerOutputs.emplace_back("--artifact", path.str().str());
    }
  return pipe_rt::checkOutputPaths(o, error);
}

int compileAndTrain(char **argv, const CompileFlags &flags,
                    pipe_rt::TrainerFlags &trainer,
                    std::vector<std::string> rest,
                    std::chrono::steady_clock::time_point start) {
  std::string error;
  pipe::registerCompilerPasses();
  std::unique_ptr<MLIRContext> context = pipe::createCompilerContext();
  // Diagnostics of every pass quote the model's lines.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, context.get());
  OwningOpRef<ModuleOp> module = loadModel(*context, sourceMgr, flags, error);
  if (!module)
    return fail(error);

  // Work files go to the artifact directory or a scratch one.
  llvm::SmallString<128> dir(flags.artifact);
  bool scratch = dir.empty();
  if (scratch) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("pipe-train", dir))
      return fail("cannot create a scratch directory: " + ec.message());
  } else if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    return fail("cannot create " + dir + ": " + ec.message());
  }
  llvm::scope_exit cleanup([&] {
    if (scratch)
      llvm::sys::fs::remove_directories(dir);
  });
  std::string weights = (dir + "/weights.safetensors").str();

  std::printf("== compiling (host GEMMs: OpenBLAS, %s kernels)\n",
              pipe_rt_blas_kernels());
  std::fflush(stdout);
  // The checks name --pipe-import-tosa, which pipe-train runs itself.
  if (pipe::hasTosaOps(*module)) {
    std::printf("== TOSA input: lowering it to linalg (--pipe-import-tosa)\n");
    std::fflush(stdout);
    if (failed(pipe::importTosa(*module)))
      return fail("the TOSA model could not be lowered (see above)");
  }
  // auto: layers where there are enough of them for the stages, else one
  // block per op, which the placement balances.
  StringRef granularity =
      flags.granularity == "auto" ? "layer" : StringRef(flags.granularity);
  if (int rc = ingest(*module, flags, granularity, pipe::buildLiftPipeline))
    return rc;
  OwningOpRef<ModuleOp> lifted;
  if (flags.granularity == "auto" && getStageCount(flags) > 1)
    lifted = module->clone();
  if (int rc = ingest(*module, flags, granularity, pipe::buildBlocksPipeline))
    return rc;
  if (lifted && countBlockInstances(*module) < getStageCount(flags)) {
    std::printf("== granularity auto: %lld layer block(s) for %lld stages; "
                "one block per op instead (--granularity op)\n",
                (long long)countBlockInstances(*module),
                (long long)getStageCount(flags));
    std::fflush(stdout);
    module = std::move(lifted);
    granularity = "op";
    if (int rc = ingest(*module, flags, granularity, pipe::buildBlocksPipeline))
      return rc;
  }
  if (!flags.model.empty())
    printInferred(*module, flags, granularity);
  if (!resolveLrGroups(*module, flags, trainer.options, rest, error))
    return fail(error);
  uint64_t params = 0;
  for (auto param : module->getOps<pipe::ParamOp>())
    params += uint64_t(param.getTensorType().getNumElements());
  if (!fitsInHostMemory(params, error))
    return fail(error);
  PassManager scheduling(context.get());
  pipe::PartitionAndSchedulePipelineOptions scheduleOptions;
  setScheduleOptions(flags, scheduleOptions);
  if (llvm::Error err =
          pipe::buildPartitionAndSchedulePipeline(scheduling, scheduleOptions))
    return fail(llvm::toString(std::move(err)), pipe_rt::ExitUsage);
  scheduling.addPass(pipe::createPipePrintSummary());
  bool scheduled = succeeded(scheduling.run(*module));
  // pipe-print-summary wrote through llvm::outs().
  llvm::outs().flush();
  if (!scheduled)
    return fail("no valid partition and schedule (see above)");
  if (!flags.emitScheduled.empty() || !flags.artifact.empty()) {
    std::string path = !flags.emitScheduled.empty()
                           ? flags.emitScheduled
                           : (dir + "/scheduled.mlir").str();
    if (llvm::Error err = pipe::writeOutputFile(
            path, [&](llvm::raw_ostream &os) { module->print(os); }))
      return fail(llvm::toString(std::move(err)));
  }
  PassManager lowerToHost(context.get());
  pipe::PipeLowerToHostOptions lowerOptions;
  lowerOptions.weights = weights;
  // The run is held to the capacities the plan was checked against.
  lowerOptions.deviceModel = flags.deviceModel;
  lowerToHost.addPass(pipe::createPipeLowerToHost(lowerOptions));
  if (failed(lowerToHost.run(*module)))
    return fail("lowering for the host failed (see above)");
  // The weights file holds every parameter's initial value under its name,
  // which is what --init-weights reads.
  if (!flags.saveInitWeights.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::copy_file(weights, flags.saveInitWeights))
      return fail("--save-init-weights: cannot write " + flags.saveInitWeights +
                  ": " + ec.message());
    std::printf("== initial weights written to %s\n",
                flags.saveInitWeights.c_str());
    std::fflush(stdout);
  }
  if (flags.target == "cuda")
    return compileForCuda(*module, flags, dir, rest);
  PassManager lower(context.get());
  pipe::buildHostToLLVMPipeline(lower);
  if (failed(lower.run(*module)))
    return fail("lowering to LLVM failed (see above)");

  std::unique_ptr<pipe::HostJIT> jit;
  if (!flags.artifact.empty() || flags.ranks > 0) {
    std::string library = (dir + "/program.so").str();
    if (llvm::Error err =
            pipe::writeSharedLibrary(*module, library, flags.optLevel))
      return fail(llvm::toString(std::move(err)));
    // The runner that ships with this tool runs the artifact.
    std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&fail);
    llvm::SmallString<128> runner(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(runner, "pipe-runner");
    std::vector<std::string> command{runner.str().str(), library, "--weights",
                                     weights};
    command.insert(command.end(), rest.begin(), rest.end());
    if (flags.ranks > 0) {
      // One host: more ranks than cores is allowed (--oversubscribe).
      llvm::ErrorOr<std::string> mpirun =
          llvm::sys::findProgramByName("mpirun");
      if (!mpirun)
        return fail("--ranks: no mpirun on PATH (install openmpi-bin)");
      command.insert(command.begin(), {*mpirun, "-np",
                                       std::to_string(flags.ranks),
                                       "--oversubscribe"});
      command.insert(command.end(),
                     {"--transport", "mpi", "--data-parallel",
                      std::to_string(flags.dataParallel)});
    }
    double compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("== compiled in %.1f s: %s\n", compileSeconds,
                llvm::join(command, " ").c_str());
    std::fflush(stdout);
    if (flags.compileOnly)
      return pipe_rt::ExitOk;
    if (!llvm::sys::fs::can_execute(runner))
      return fail("no pipe-runner next to pipe-train (" + runner + ")");
    SmallVector<StringRef> args(command.begin(), command.end());
    std::string message;
    int rc = llvm::sys::ExecuteAndWait(command.front(), args, std::nullopt, {},
                                       0, 0, &message);
    if (rc < 0)
      return fail("running pipe-runner failed: " + message);
    return rc;
  }
  if (flags.compileOnly)
    return pipe_rt::ExitOk;

  auto created = pipe::HostJIT::create(*module, flags.optLevel);
  if (!created)
    return fail("JIT compilation failed: " +
                llvm::toString(created.takeError()));
  jit = std::move(*created);
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("== compiled in %.1f s\n", compileSeconds);
  std::fflush(stdout);

  pipe_rt_session_options options;
  pipe_rt_session_options_init(&options);
  trainer.applyTo(options);
  options.weights_path = weights.c_str();
  pipe_rt_session *session = nullptr;
  char message[4096] = {0};
  if (pipe_rt_session_create(&pipe::HostJIT::lookupCallback, jit.get(),
                             &options, &session, message,
                             sizeof(message)) != PIPE_RT_OK)
    return fail(message);
  llvm::scope_exit closeSession([&] { pipe_rt_session_destroy(session); });
  pipe_rt::TrainerSummary summary;
  if (!pipe_rt::runTraining(session, trainer.options, summary, error))
    return fail(error);
  std::printf("  compile time: %.1f s\n", compileSeconds);
  return summary.interrupted ? pipe_rt::ExitInterrupted : pipe_rt::ExitOk;
}

} // namespace

int main(int argc, char **argv) {
  pipe_rt_blas_configure(argv);
  auto start = std::chrono::steady_clock::now();
  CompileFlags flags;
  std::vector<std::string> rest;
  std::string error;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      std::printf("%s%s\n", kUsage, pipe_rt::trainerFlagsUsage());
      return pipe_rt::ExitOk;
    }
  if (!parseCompileFlags(argc, argv, flags, rest, error))
    return fail(error, pipe_rt::ExitUsage);
  // With no arguments pipe-train is the default run: byte-level GPT on
  // GPL-3, tuned on a validation slice of the training text to reach 2.3
  // nats/byte on the held-out text in about a minute (docs/benchmarks.md,
  // "Choosing the defaults"). The default model's AdamW weight decay is 0.1
  // (the optimizer's own default, which other models keep, is 0.01): it is
  // what generalises to the held-out text. The user's flags come after
  // these and override them; the same list goes to pipe-runner for an
  // artifact.
  // A --lr below the default --min-lr, given without --min-lr, takes a
  // third of itself as the final rate (the defaults' ratio) instead of
  // failing against the default 1e-3; larger ones keep 1e-3.
  std::string minLr = "1e-3";
  auto given = std::find(rest.rbegin(), rest.rend(), "--lr");
  if (given != rest.rbegin() &&
      std::find(rest.begin(), rest.end(), "--min-lr") == rest.end()) {
    char *end = nullptr;
    const std::string &text = *std::prev(given);
    double lr = std::strtod(text.c_str(), &end);
    if (end != text.c_str() && *end == '\0' && std::isfinite(lr) && lr >= 0 &&
        lr < 1e-3)
      minLr = llvm::formatv("{0:e6}", lr / 3).str();
  }
  std::vector<std::string> defaults = {
      "--steps",  "1000", "--lr",          "3e-3",   "--min-lr",     minLr,
      "--warmup", "20",   "--lr-schedule", "cosine", "--eval-every", "100"};
  if (flags.model.empty() && flags.preset.empty() && !choosesSgd(rest))
    defaults.insert(defaults.end(), {"--weight-decay", "0.1"});
  rest.insert(rest.begin(), defaults.begin(), defaults.end());
  pipe_rt::TrainerFlags trainer;
  if (!pipe_rt::parseTrainerFlags(rest, trainer, error))
    return fail(error, pipe_rt::ExitUsage);
  if (!trainer.positional.empty())
    return fail("unexpected argument '" + trainer.positional.front() +
                    "' (a MODEL.mlir comes first, before any option; one "
                    "at most; see --help)",
                pipe_rt::ExitUsage);
  if (!flags.init.empty() && flags.model.empty())
    return fail("--init applies to a MODEL.mlir; the generated models "
                "come with their weights",
                pipe_rt::ExitUsage);
  if (!flags.pooling.empty() && flags.classes == 0)
    return fail("--pooling applies to a classifier (--classes)",
                pipe_rt::ExitUsage);
  if (flags.classes > 0 && !flags.model.empty())
    return fail("--classes applies to the generated GPT models; a "
                "MODEL.mlir returning class scores takes --loss "
                "cross-entropy --metric accuracy",
                pipe_rt::ExitUsage);
  if (!flags.loss.empty() && flags.model.empty() && flags.classes == 0)
    return fail("--loss applies to a MODEL.mlir; the generated models "
                "already return their loss",
                pipe_rt::ExitUsage);
  if (!flags.metrics.empty() && flags.loss.empty() && flags.classes == 0)
    return fail("--metric needs an attached loss of class scores (--loss "
                "cross-entropy or nll, or --classes)",
                pipe_rt::ExitUsage);
  // A classifier returns logits: it trains on their cross-entropy against
  // the labels (the last input) and reports its accuracy.
  if (flags.classes > 0) {
    if (flags.loss.empty())
      flags.loss = "cross-entropy";
    if (flags.metrics.empty())
      flags.metrics.push_back("accuracy");
  }
  const CompileFlags unset;
  if (flags.target != "cuda")
    for (auto [flag, given] :
         {std::pair<const char *, bool>{"--chip", flags.chip != unset.chip},
          {"--gemm-precision", flags.gemmPrecision != unset.gemmPrecision}})
      if (given)
        return fail(std::string(flag) +
                        " is for --target cuda; the CPU target ignores it",
                    pipe_rt::ExitUsage);
  if (flags.target == "cuda" && flags.artifact.empty())
    return fail("--target cuda needs --artifact DIR (the GPU program is run "
                "by pipe-runner-cuda, not in-process)",
                pipe_rt::ExitUsage);
  bool parameterServer = pipe::getScheduleTraits(flags.schedule)
                             .value_or(pipe::ScheduleTraits())
                             .parameterServer;
  if (flags.ranks > 0 && parameterServer &&
      flags.dataParallel % flags.ranks != 0)
    return fail("--ranks " + std::to_string(flags.ranks) +
                    ": under --schedule " + flags.schedule +
                    " each rank runs whole data-parallel replicas on its own "
                    "parameter server; give --data-parallel a multiple of " +
                    std::to_string(flags.ranks),
                pipe_rt::ExitUsage);
  if (!trainer.weights.empty())
    return fail("--weights is pipe-runner's; pipe-train starts from the "
                "model's values, use --init-weights for pretrained ones",
                pipe_rt::ExitUsage);
  if (!checkCompileFlags(flags, error))
    return fail(error, pipe_rt::ExitUsage);
  if (!checkFilePaths(flags, trainer.options, error))
    return fail(error, pipe_rt::ExitUsage);
  // Outputs are checked before minutes of compiling and hours of training.
  if (!flags.emitScheduled.empty())
    if (llvm::Error err = pipe::checkOutputPath(flags.emitScheduled))
      return fail("--emit-scheduled: " + llvm::toString(std::move(err)),
                  pipe_rt::ExitUsage);
  if (!flags.saveInitWeights.empty())
    if (llvm::Error err = pipe::checkOutputPath(flags.saveInitWeights))
      return fail("--save-init-weights: " + llvm::toString(std::move(err)),
                  pipe_rt::ExitUsage);
  // The artifact directory is made after compiling: a path that exists and
  // is no directory would fail only then.
  if (!flags.artifact.empty() && llvm::sys::fs::exists(flags.artifact) &&
      !llvm::sys::fs::is_directory(flags.artifact))
    return fail("--artifact '" + flags.artifact +
                    "': exists and is not a directory",
                pipe_rt::ExitUsage);

  // The parser, passes and printer recurse per level of nesting.
  int rc = pipe_rt::ExitError;
  pipe::runWithLargeStack(
      [&] { rc = compileAndTrain(argv, flags, trainer, rest, start); });
  return rc;
}
