//===- pipe-profile.cpp - Measure the parts of a model's blocks -----------===//
//
//   pipe-profile [MODEL.mlir | --preset NAME] [-o TABLE.json]
//                [--repeats N] [--warmup N] [--fit-device-model OUT.json]
//
// Compiles the model as pipe-train does, with every block instance as its
// own stage on one simulated host device, and runs it through the runtime
// (lib/Runtime): once with a zero-bubble schedule (forward, input-gradient,
// weight-gradient, update) and once with gpipe under recompute (forward,
// recompute, fused backward, update). Each part's time is the median over
// --repeats runs after --warmup; a block's time is the mean over its
// instances. It then times device-to-device sends and host-to-device copies
// of the runtime's devices. The output is the cost table of
// docs/profiler.md, which --pipe-annotate-costs=profile= reads.
//
//===----------------------------------------------------------------------===//

#include "pipe/Analysis/CostModel.h"
#include "pipe/Analysis/DeviceModelFit.h"
#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/ModelGen/TransformerGen.h"
#include "pipe/Pipelines/Pipelines.h"
#include "pipe/Runtime/Blas.h"
#include "pipe/Runtime/Devices.h"
#include "pipe/Runtime/Program.h"
#include "pipe/Support/InputGuard.h"
#include "pipe/Support/OutputFile.h"
#include "pipe/Target/Host/HostPipeline.h"
#include "pipe/Target/Host/HostTarget.h"
#include "pipe/Tools/FrontEnd.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <unistd.h>

using namespace mlir;
namespace modelgen = mlir::pipe::modelgen;

namespace {

const char *kUsage =
    R"(usage: pipe-profile [MODEL.mlir | --preset NAME] [options]

Measures every part of every block of the model on the host back end and
writes a cost table (docs/profiler.md) for --pipe-annotate-costs=profile=.

  --preset NAME            a pipe-gen preset (default tiny-gpt)
  --batch N                micro-batch size of a preset (default: its own)
  --loss KIND              as pipe-train: the loss of MODEL.mlir's result
  --loss-reduction R, --loss-result N, --init KIND, --init-seed N,
  --lift-splats, --freeze PATTERN
                           as pipe-train (a TOSA model is lowered to linalg
                           first, as pipe-train does)
  --granularity G          op, layer (default) or coarse
  --repeats N              measured runs per part (default 5; the median)
  --warmup N               runs left out first (default 2)
  --co-runners N           measure while N-1 copies of the same runs keep
                           the other cores busy, as the other devices of an
                           N-device pipeline do (default 1: alone)
  --microbatches M         run M micro-batches through the blocks per run
                           (default 1), so that each part finds as many
                           micro-batches' activations live as a pipeline
                           stage with M in flight does (colder caches)
  -o FILE                  the table (default: standard output)
  --fit-device-model FILE  also fit a --device-model JSON to the table
  --fit-reference G        scale the fitted rates, per phase, so that the
                           blocks at granularity G (default layer; profiled
                           too when --granularity differs) take their
                           measured time in sum
)";

/// Of the ingest flags only --loss is pipe-profile's.
struct Flags : pipe::ModelIngestFlags {
  std::string model, preset = "tiny-gpt", granularity = "layer";
  std::string output = "-", fitDeviceModel, fitReference = "layer";
  int64_t batch = 0, repeats = 5, warmup = 2, coRunners = 1, microbatches = 1;
};

int fail(const llvm::Twine &message, int code = 1) {
  llvm::errs() << "pipe-profile: " << message << "\n";
  return code;
}

bool parseFlags(int argc, char **argv, Flags &flags, std::string &error) {
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
    auto count = [&](int64_t &out, int64_t min, int64_t max) {
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
    bool ok = true;
    if (a == "--preset")
      ok = value(flags.preset);
    else if (a == "--batch")
      ok = count(flags.batch, 1, 1 << 16);
    else if (a == "--loss")
      ok = value(flags.loss);
    else if (a == "--loss-reduction")
      ok = value(flags.lossReduction);
    else if (a == "--loss-result")
      ok = count(flags.lossResult, 0, 4096);
    else if (a == "--init")
      ok = value(flags.init);
    else if (a == "--init-seed")
      ok = count(flags.initSeed, 0, std::numeric_limits<int64_t>::max());
    else if (a == "--lift-splats")
      flags.liftSplats = true;
    else if (a == "--freeze")
      ok = value(flags.freeze.emplace_back());
    else if (a == "--granularity")
      ok = value(flags.granularity);
    else if (a == "--repeats")
      ok = count(flags.repeats, 1, 10000);
    else if (a == "--warmup")
      ok = count(flags.warmup, 0, 10000);
    else if (a == "--co-runners")
      ok = count(flags.coRunners, 1, 1024);
    else if (a == "--microbatches")
      ok = count(flags.microbatches, 1, 1024);
    else if (a == "-o")
      ok = value(flags.output);
    else if (a == "--fit-device-model")
      ok = value(flags.fitDeviceModel);
    else if (a == "--fit-reference") {
      ok = value(flags.fitReference);
      if (ok &&
          !llvm::is_contained({"op", "layer", "coarse"}, flags.fitReference)) {
        error = "--fit-reference wants op, layer or coarse, got '" +
                flags.fitReference + "'";
        return false;
      }
    } else if (!a.empty() && a[0] != '-' && flags.model.empty())
      flags.model = a;
    else {
      error = "unknown argument '" + a + "' (see --help)";
      return false;
    }
    if (!ok)
      return false;
  }
  return true;
}

/// What the table says about one block (one pipe.block of the forward
/// graph, before differentiation).
struct BlockInfo {
  std::string name;
  pipe::BlockKey key;
  pipe::BlockCost cost;
  std::vector<std::string> instances;
  /// Part ("forward", "recompute", "backward.input", ...) -> the median of
  /// each instance, in milliseconds.
  std::map<std::string, std::vector<double>> parts;
  std::vector<double> update; // per instance (its stage's update), ms
  /// Part -> the most working memory any instance's part measured.
  std::map<std::string, int64_t> working;
  /// Part -> the FLOPs of its code as it ran (the differentiated parts'
  /// counts, which the fit uses: the weight-gradient part run apart
  /// propagates the gradient through the block again).
  std::map<std::string, uint64_t> runFlops;
  uint64_t paramCount = 0;
};

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double mean(const std::vector<double> &values) {
  double sum = 0;
  for (double v : values)
    sum += v;
  return values.empty() ? 0 : sum / double(values.size());
}

/// The blocks as --pipe-annotate-costs sees them: formed, not yet
/// differentiated (differentiation adds the saved results).
LogicalResult collectBlocks(ModuleOp lifted, const Flags &flags,
                            std::vector<BlockInfo> &blocks) {
  OwningOpRef<ModuleOp> formed = lifted.clone();
  PassManager pm(lifted.getContext());
  pipe::PipeFormBlocksOptions form;
  form.granularity = flags.granularity;
  form.numBlocks = 1;
  pm.addPass(pipe::createPipeFormBlocks(form));
  if (failed(pm.run(*formed)))
    return failure();
  for (auto block : formed->getOps<pipe::BlockOp>()) {
    FailureOr<pipe::BlockCost> cost =
        pipe::estimateBlockCost(block, pipe::CostOptions());
    if (failed(cost))
      return failure();
    BlockInfo info;
    info.name = block.getSymName().str();
    info.key = pipe::getBlockKey(block);
    info.cost = *cost;
    blocks.push_back(std::move(info));
  }
  return success();
}

/// One profiling run: compiles `lifted` with every block instance as its
/// own stage on one device under `schedule`, runs it `runs` times with
/// tracing and returns each compute action's durations (ms, in run order)
/// and most working memory by its name without the device prefix, and
/// stage -> instances.
struct Measured {
  std::map<std::string, std::vector<double>> durations;
  std::map<std::string, int64_t> working;
  /// Per measured run: its wall time less its actions' window (first
  /// start to last end), seconds.
  std::vector<double> runOverheads;
  std::map<std::string, std::vector<std::string>> stageInstances;
  std::map<std::string, std::string> instanceBlock;
  /// Block -> part -> FLOPs of the code that ran (BlockInfo::runFlops).
  std::map<std::string, std::map<std::string, uint64_t>> runFlops;
};

/// The FLOPs of each part of a differentiated block, from its #pipe.cost.
std::map<std::string, uint64_t> getRunFlops(pipe::CostAttr cost) {
  uint64_t input = cost.getBackwardInputFlops();
  uint64_t weight = cost.getBackwardWeightFlops();
  uint64_t fused = cost.getBackwardFlops();
  return {{"forward", cost.getForwardFlops()},
          {"recompute", cost.getForwardFlops()},
          {"backward.input", input},
          {"backward.weight", weight},
          {"backward", fused ? fused : input + weight}};
}

LogicalResult measureSchedule(ModuleOp lifted, const Flags &flags,
                              StringRef schedule, bool recompute, StringRef dir,
                              Measured &measured, std::string &error) {
  MLIRContext *context = lifted.getContext();
  OwningOpRef<ModuleOp> module = lifted.clone();
  PassManager pm(context);
  pipe::IngestPipelineOptions ingest;
  // As pipe-train ingests, with one block per unit at granularity coarse.
  pipe::setIngestOptions(flags, flags.granularity, /*numBlocks=*/1, ingest);
  if (llvm::Error err = pipe::buildBlocksPipeline(pm, ingest)) {
    error = llvm::toString(std::move(err));
    return failure();
  }
  pipe::PipePlaceOptions place;
  place.devices = 1;
  place.stagesPerDevice = 0; // one stage per block instance
  pm.addPass(pipe::createPipePlace(place));
  pipe::PipeScheduleOptions train;
  train.kind = schedule.str();
  train.microbatches = unsigned(flags.microbatches);
  train.recompute = recompute;
  pm.addPass(pipe::createPipeSchedule(train));
  pm.addPass(pipe::createPipeVerifySchedule());
  if (failed(pm.run(*module))) {
    error = "compiling for schedule " + schedule.str() + " failed (see above)";
    return failure();
  }
  for (auto graph : module->getOps<pipe::GraphOp>())
    for (auto run : graph.getBody().getOps<pipe::RunOp>())
      measured.instanceBlock[run.getInstance().str()] = run.getCallee().str();
  for (auto block : module->getOps<pipe::BlockOp>())
    if (pipe::CostAttr cost = block.getCostAttr())
      measured.runFlops[block.getSymName().str()] = getRunFlops(cost);
  module->walk([&](pipe::StageOp stage) {
    for (Attribute name : stage.getBlocks())
      measured.stageInstances[stage.getSymName().str()].push_back(
          cast<StringAttr>(name).getValue().str());
  });
  std::string weights = (dir + "/weights-" + schedule + ".safetensors").str();
  PassManager lower(context);
  pipe::PipeLowerToHostOptions lowerOptions;
  lowerOptions.weights = weights;
  lower.addPass(pipe::createPipeLowerToHost(lowerOptions));
  pipe::buildHostToLLVMPipeline(lower);
  if (failed(lower.run(*module))) {
    error = "lowering for the host failed (see above)";
    return failure();
  }
  auto jit = pipe::HostJIT::create(*module);
  if (!jit) {
    error = "JIT compilation failed: " + llvm::toString(jit.takeError());
    return failure();
  }
  pipe_rt_session_options options;
  pipe_rt_session_options_init(&options);
  options.weights_path = weights.c_str();
  // Session 0 is measured; the others are its co-runners.
  std::vector<pipe_rt_session *> sessions(size_t(flags.coRunners), nullptr);
  llvm::scope_exit destroy([&] {
    for (pipe_rt_session *s : sessions)
      pipe_rt_session_destroy(s);
  });
  for (pipe_rt_session *&s : sessions) {
    char message[4096] = {0};
    if (pipe_rt_session_create(&pipe::HostJIT::lookupCallback, jit->get(),
                               &options, &s, message,
                               sizeof(message)) != PIPE_RT_OK) {
      error = message;
      return failure();
    }
  }
  pipe_rt_session *session = sessions.front();

  // Inputs of the real shapes: floats random, integers zero (a valid token
  // id and class index of any model).
  int numInputs = pipe_rt_session_num_inputs(session);
  std::vector<std::vector<char>> storage(size_t(std::max(numInputs, 0)));
  std::vector<const void *> inputs;
  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int k = 0; k < numInputs; ++k) {
    const char *dtype = nullptr;
    int rank = 0;
    const int64_t *shape = nullptr;
    pipe_rt_session_input_type(session, k, &dtype, &rank, &shape);
    int64_t elements = 1;
    for (int d = 0; d < rank; ++d)
      elements *= shape[d];
    std::string type = dtype;
    size_t width = type == "f64" || type == "i64" ? 8 : type == "i1" ? 1 : 4;
    storage[size_t(k)].assign(size_t(elements) * width, 0);
    if (type == "f32") {
      auto *data = reinterpret_cast<float *>(storage[size_t(k)].data());
      for (int64_t i = 0; i < elements; ++i)
        data[i] = normal(rng);
    }
  }
  // Every micro-batch of the run reads the same values, from copies of its
  // own (as distinct micro-batches are distinct memory).
  std::vector<std::vector<char>> copies;
  copies.reserve(size_t(flags.microbatches) * storage.size());
  for (int64_t m = 0; m < flags.microbatches; ++m)
    for (const std::vector<char> &input : storage)
      inputs.push_back(copies.emplace_back(input).data());
  for (pipe_rt_session *s : sessions)
    pipe_rt_session_set_lr(s, 0.0f); // the weights stay as they are
  int scheduleIndex = pipe_rt_session_find_schedule(session, nullptr);

  // Co-runners repeat the same runs until session 0 is measured; each has
  // run once before the measurement starts.
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> coRunners;
  llvm::scope_exit join([&] {
    stop = true;
    for (std::thread &t : coRunners)
      t.join();
  });
  for (size_t c = 1; c < sessions.size(); ++c)
    coRunners.emplace_back([&, s = sessions[c]] {
      bool first = true;
      while (!stop) {
        if (pipe_rt_session_run(s, scheduleIndex, inputs.data(), nullptr) !=
            PIPE_RT_OK)
          stop = true;
        if (first)
          ++started, first = false;
      }
    });
  while (started < int(coRunners.size()) && !stop)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int64_t r = 0; r < flags.warmup; ++r)
    if (pipe_rt_session_run(session, scheduleIndex, inputs.data(), nullptr) !=
        PIPE_RT_OK) {
      error = pipe_rt_session_error(session);
      return failure();
    }
  pipe_rt_session_enable_trace(session, 1);
  std::vector<double> runWalls;
  for (int64_t r = 0; r < flags.repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (pipe_rt_session_run(session, scheduleIndex, inputs.data(), nullptr) !=
        PIPE_RT_OK) {
      error = pipe_rt_session_error(session);
      return failure();
    }
    runWalls.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  if (stop) {
    for (size_t c = 1; c < sessions.size(); ++c)
      if (*pipe_rt_session_error(sessions[c]))
        error = std::string("a co-runner failed: ") +
                pipe_rt_session_error(sessions[c]);
    return failure();
  }
  std::string trace = (dir + "/trace-" + schedule + ".json").str();
  if (pipe_rt_session_write_trace(session, trace.c_str()) != PIPE_RT_OK) {
    error = pipe_rt_session_error(session);
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFile(trace);
  if (!buffer) {
    error = "cannot read the trace " + trace;
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    error = "the runtime's trace is not JSON: " +
            llvm::toString(parsed.takeError());
    return failure();
  }
  const llvm::json::Array *events =
      parsed->getAsObject() ? parsed->getAsObject()->getArray("traceEvents")
                            : nullptr;
  // Every compute action's time and working memory; and the span of every
  // action, for the runs' overhead.
  std::vector<std::pair<double, double>> spans; // (start, end), microseconds
  for (const llvm::json::Value &event : events ? *events : llvm::json::Array()) {
    const llvm::json::Object *e = event.getAsObject();
    if (!e || e->getString("ph") != StringRef("X"))
      continue;
    double ts = e->getNumber("ts").value_or(0);
    double dur = e->getNumber("dur").value_or(0);
    spans.push_back({ts, ts + dur});
    std::optional<StringRef> name = e->getString("name");
    if (e->getString("cat") != StringRef("compute") || !name)
      continue;
    measured.durations[name->str()].push_back(dur / 1000.0);
    const llvm::json::Object *args = e->getObject("args");
    if (std::optional<int64_t> bytes =
            args ? args->getInteger("working_bytes") : std::nullopt) {
      int64_t &most = measured.working[name->str()];
      most = std::max(most, *bytes);
    }
  }
  // Every run records the same actions, one run after the other: the k-th
  // share of the spans in time order is run k's.
  std::sort(spans.begin(), spans.end());
  size_t perRun = spans.size() / runWalls.size();
  for (size_t r = 0; perRun && r < runWalls.size(); ++r) {
    double first = spans[r * perRun].first, last = first;
    for (size_t i = r * perRun; i < (r + 1) * perRun; ++i)
      last = std::max(last, spans[i].second);
    measured.runOverheads.push_back(
        std::max(runWalls[r] - (last - first) * 1e-6, 0.0));
  }
  return success();
}

/// "forward stage 's3' mb 0 step 0" -> ("forward", "s3").
bool splitAction(StringRef name, std::string &part, std::string &stage) {
  size_t colon = name.find(": ");
  if (colon != StringRef::npos)
    name = name.drop_front(colon + 2);
  size_t open = name.find(" stage '");
  if (open == StringRef::npos)
    return false;
  part = name.take_front(open).str();
  StringRef rest = name.drop_front(open + 8);
  stage = rest.take_until([](char c) { return c == '\''; }).str();
  return true;
}

void collectParts(const Measured &measured, std::vector<BlockInfo> &blocks) {
  std::map<std::string, BlockInfo *> byName;
  for (BlockInfo &b : blocks)
    byName[b.name] = &b;
  for (auto &[name, times] : measured.durations) {
    std::string part, stage;
    if (!splitAction(name, part, stage))
      continue;
    auto instances = measured.stageInstances.find(stage);
    // One instance per stage: the stage's time is its block's.
    if (instances == measured.stageInstances.end() ||
        instances->second.size() != 1)
      continue;
    const std::string &instance = instances->second.front();
    auto callee = measured.instanceBlock.find(instance);
    if (callee == measured.instanceBlock.end() || !byName.count(callee->second))
      continue;
    BlockInfo &block = *byName[callee->second];
    auto flops = measured.runFlops.find(callee->second);
    if (flops != measured.runFlops.end())
      block.runFlops = flops->second;
    if (part == "update") {
      block.update.push_back(median(times));
    } else {
      block.parts[part].push_back(median(times));
      // Parts that ran in both schedules (the forward) keep the larger.
      auto working = measured.working.find(name);
      if (working != measured.working.end())
        block.working[part] = std::max(block.working[part], working->second);
    }
    if (std::find(block.instances.begin(), block.instances.end(), instance) ==
        block.instances.end())
      block.instances.push_back(instance);
  }
}

/// Seconds per transfer of `bytes` from device 0 to device 1 of the
/// runtime's devices (median of `repeats`).
double timeSend(uint64_t bytes, int64_t repeats) {
  uint64_t capacities[2] = {4 * bytes + (1 << 20), 4 * bytes + (1 << 20)};
  pipe_rt_devices *devs = pipe_rt_devices_create(2, capacities, 60.0);
  std::vector<double> seconds;
  struct State {
    pipe_rt_devices *devs;
    uint64_t bytes;
    int64_t repeats;
    std::vector<double> *seconds;
  } state{devs, bytes, repeats, &seconds};
  pipe_rt_run_devices(
      devs,
      [](int device, void *user) {
        auto &s = *static_cast<State *>(user);
        void *buffer = nullptr;
        if (int st = pipe_rt_alloc(s.devs, device, s.bytes, "probe", &buffer))
          return st;
        std::memset(buffer, 1, s.bytes);
        for (int64_t r = 0; r < s.repeats; ++r) {
          pipe_rt_channel_key key{PIPE_RT_CHANNEL_OTHER, 0, 1, int32_t(r), 0};
          pipe_rt_token token = 0;
          auto t0 = std::chrono::steady_clock::now();
          int st = device == 0
                       ? pipe_rt_send(s.devs, 0, &key, buffer, s.bytes, &token)
                       : pipe_rt_recv(s.devs, 1, &key, buffer, s.bytes, &token);
          if (st || (st = pipe_rt_wait(s.devs, device, token)))
            return st;
          if (device == 1)
            s.seconds->push_back(std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - t0)
                                     .count());
        }
        return pipe_rt_free(s.devs, device, buffer);
      },
      &state);
  pipe_rt_devices_destroy(devs);
  return median(seconds);
}

/// Seconds to copy `bytes` of host memory into a buffer of a runtime
/// device (the host back end's host-to-device copy).
double timeHostToDevice(uint64_t bytes, int64_t repeats) {
  uint64_t capacity = bytes + (1 << 20);
  pipe_rt_devices *devs = pipe_rt_devices_create(1, &capacity, 60.0);
  void *device = nullptr;
  pipe_rt_alloc(devs, 0, bytes, "probe", &device);
  std::vector<char> host(bytes, 1);
  std::vector<double> seconds;
  for (int64_t r = 0; r < repeats + 1; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(device, host.data(), bytes);
    if (r) // the first touches the pages
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count());
  }
  pipe_rt_devices_destroy(devs);
  return median(seconds);
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0)
      return llvm::StringRef(line).split(':').second.trim().str();
  return "unknown";
}

/// What the machine costs besides the blocks.
struct MachineTerms {
  double linkBandwidth = 0, linkLatency = 0, h2dBandwidth = 0;
  /// Seconds per schedule run outside its actions.
  double runOverhead = 0;
};

/// Two sizes fix the latency and the per-byte cost of a line.
MachineTerms measureTransfers(int64_t repeats) {
  constexpr uint64_t small = 64 << 10, large = 8 << 20;
  MachineTerms t;
  double tSmall = timeSend(small, repeats), tLarge = timeSend(large, repeats);
  double perByte = std::max((tLarge - tSmall) / double(large - small), 1e-15);
  t.linkBandwidth = 1.0 / perByte;
  t.linkLatency = std::max(tSmall - double(small) * perByte, 0.0);
  t.h2dBandwidth = double(large) / timeHostToDevice(large, repeats);
  return t;
}

double partMs(const BlockInfo &b, const std::string &part) {
  auto it = b.parts.find(part);
  return it == b.parts.end() ? 0 : mean(it->second);
}

/// The FLOPs of `part` as it ran. Every block that ran has them: the
/// measured programs annotate costs before they differentiate.
int64_t partFlops(const BlockInfo &b, const std::string &part) {
  auto it = b.runFlops.find(part);
  return it == b.runFlops.end() ? 0 : int64_t(it->second);
}

int64_t partWorkingBytes(const BlockInfo &b, const std::string &part) {
  auto it = b.working.find(part);
  return it == b.working.end() ? 0 : it->second;
}

llvm::json::Value tableJson(const std::vector<BlockInfo> &blocks,
                            const MachineTerms &machine, const Flags &flags,
                            double optimizerParamsPerSecond) {
  llvm::json::Array entries;
  for (const BlockInfo &b : blocks) {
    if (b.instances.empty())
      continue;
    double fused = partMs(b, "backward");
    entries.push_back(llvm::json::Object{
        {"name", b.name},
        {"hash", b.key.hash},
        {"shapes", b.key.shapes},
        {"instances", int64_t(b.instances.size())},
        {"forward_flops", int64_t(b.cost.forwardFlops)},
        {"backward_input_flops", int64_t(b.cost.backwardInputFlops)},
        {"backward_weight_flops", int64_t(b.cost.backwardWeightFlops)},
        {"bytes_accessed", int64_t(b.cost.bytesRead + b.cost.bytesWritten)},
        {"param_bytes", int64_t(b.cost.paramBytes)},
        {"backward_input_run_flops", partFlops(b, "backward.input")},
        {"backward_weight_run_flops", partFlops(b, "backward.weight")},
        {"backward_fused_run_flops", partFlops(b, "backward")},
        {"forward_ms", partMs(b, "forward")},
        {"recompute_ms", partMs(b, "recompute")},
        {"backward_input_ms", partMs(b, "backward.input")},
        {"backward_weight_ms", partMs(b, "backward.weight")},
        {"backward_fused_ms", fused},
        // What the partitioners read: the fused backward where it ran.
        {"backward_ms", fused > 0 ? fused
                                  : partMs(b, "backward.input") +
                                        partMs(b, "backward.weight")},
        {"update_ms", mean(b.update)},
        {"forward_working_bytes", partWorkingBytes(b, "forward")},
        {"recompute_working_bytes", partWorkingBytes(b, "recompute")},
        {"backward_input_working_bytes", partWorkingBytes(b, "backward.input")},
        {"backward_weight_working_bytes",
         partWorkingBytes(b, "backward.weight")},
        {"backward_fused_working_bytes", partWorkingBytes(b, "backward")},
    });
  }
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return llvm::json::Object{
      {"format", "pipe-profile-1"},
      {"machine",
       llvm::json::Object{
           {"cpu", cpuModel()},
           {"cores", int64_t(std::thread::hardware_concurrency())}}},
      {"date", std::string(date)},
      {"target", "host"},
      {"model", flags.model.empty() ? "preset:" + flags.preset : flags.model},
      {"repeats", flags.repeats},
      {"warmup", flags.warmup},
      {"co_runners", flags.coRunners},
      {"microbatches", flags.microbatches},
      {"blocks", std::move(entries)},
      {"transfers",
       llvm::json::Object{{"link_bandwidth", machine.linkBandwidth},
                          {"link_latency", machine.linkLatency},
                          {"h2d_bandwidth", machine.h2dBandwidth},
                          {"d2h_bandwidth", machine.h2dBandwidth}}},
      {"optimizer_params_per_second", optimizerParamsPerSecond},
      {"run_overhead_ms", machine.runOverhead * 1e3},
  };
}

/// The forward and backward parts that ran, as --fit-device-model fits
/// them, each with the FLOPs of its code (a backward's bytes taken as the
/// forward's): the fused backward, which every schedule but the zero-bubble
/// ones runs, where it ran, else the split parts (run apart they cost more:
/// each pays the bytes and its own overhead).
std::vector<pipe::MeasuredPart>
getMeasuredParts(const std::vector<BlockInfo> &blocks) {
  std::vector<pipe::MeasuredPart> parts;
  for (const BlockInfo &b : blocks) {
    if (b.instances.empty())
      continue;
    double bytes = double(b.cost.bytesRead + b.cost.bytesWritten);
    std::vector<const char *> ran = {"forward"};
    if (partMs(b, "backward") > 0)
      ran.push_back("backward");
    else
      ran.insert(ran.end(), {"backward.input", "backward.weight"});
    for (const char *part : ran)
      if (int64_t flops = partFlops(b, part))
        parts.push_back({double(flops), bytes, partMs(b, part) * 1e-3,
                         llvm::StringRef(part).starts_with("backward")});
  }
  return parts;
}

llvm::json::Value deviceModelJson(const pipe::FittedPhaseRates &rates,
                                  const pipe::PhaseScales &scales,
                                  const Flags &flags,
                                  const MachineTerms &machine,
                                  double optimizerParamsPerSecond) {
  uint64_t memory =
      uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  llvm::json::Object device{
      {"name", cpuModel()},
      {"count", 1},
      {"memory_bytes", int64_t(memory)},
      {"memory_bandwidth", rates.forward.memoryBandwidth},
      {"peak_flops", llvm::json::Object{{"f32", rates.forward.peakFlops}}}};
  if (rates.apart) {
    device["backward_flops"] = rates.backward.peakFlops;
    device["backward_memory_bandwidth"] = rates.backward.memoryBandwidth;
  }
  llvm::json::Array devices;
  devices.push_back(std::move(device));
  return llvm::json::Object{
      {"name", "fitted-host"},
      {"notes",
       std::string("Fitted by pipe-profile: peak_flops and memory_bandwidth "
                   "are the least-squares rates of t = flops/F + bytes/B "
                   "over the measured ") +
           (rates.apart ? "forward parts, backward_flops and "
                          "backward_memory_bandwidth over the backward parts"
                        : "block parts (too few to fit the backward's "
                          "apart)") +
           llvm::formatv(" of the {0}-level blocks, divided by {1:f2} "
                         "(forward) and {2:f2} (backward) so that the "
                         "{3}-level blocks' summed times are met",
                         flags.granularity, scales.forward, scales.backward,
                         flags.fitReference)
               .str() +
           "; links and host copies are timed sends and copies of the "
           "runtime's devices (docs/profiler.md)."},
      {"devices", std::move(devices)},
      {"host", llvm::json::Object{{"h2d_pinned", machine.h2dBandwidth},
                                  {"d2h_pinned", machine.h2dBandwidth},
                                  {"optimizer_params_per_second",
                                   optimizerParamsPerSecond},
                                  {"run_overhead", machine.runOverhead}}},
      {"default_link", llvm::json::Object{{"kind", "host-memory"},
                                          {"bandwidth", machine.linkBandwidth},
                                          {"latency", machine.linkLatency}}},
  };
}

int profile(const Flags &flags) {
  pipe::registerCompilerPasses();
  std::unique_ptr<MLIRContext> context = pipe::createCompilerContext();
  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler handler(sources, context.get());
  std::string error;
  OwningOpRef<ModuleOp> module = pipe::loadModel(
      *context, sources, flags.model, StringRef(flags.preset),
      [&](modelgen::TransformerConfig &config, std::string &) {
        if (flags.batch)
          config.batch = flags.batch;
        return true;
      },
      error);
  if (!module)
    return fail(error);

  // As pipe-train ingests: TOSA lowered to linalg first.
  if (pipe::hasTosaOps(*module) && failed(pipe::importTosa(*module)))
    return fail("the TOSA model could not be lowered (see above)");
  PassManager lift(context.get());
  pipe::IngestPipelineOptions ingest;
  pipe::setIngestOptions(flags, flags.granularity, /*numBlocks=*/1, ingest);
  if (llvm::Error err = pipe::buildLiftPipeline(lift, ingest))
    return fail(llvm::toString(std::move(err)), 2);
  if (failed(lift.run(*module)))
    return fail("the model could not be prepared (see above)");
  std::vector<BlockInfo> blocks;
  if (failed(collectBlocks(*module, flags, blocks)))
    return fail("forming the blocks failed (see above)");

  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("pipe-profile", dir))
    return fail("cannot create a scratch directory: " + ec.message());
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(dir); });

  // zb-h1 splits the backward into its input and weight parts; gpipe with
  // recompute runs the recompute and the fused backward.
  uint64_t params = 0;
  for (auto param : module->getOps<pipe::ParamOp>())
    params += uint64_t(param.getTensorType().getNumElements());
  double updateMs = 0;
  std::vector<double> runOverheads;
  for (auto [schedule, recompute] :
       {std::pair<StringRef, bool>{"zb-h1", false}, {"gpipe", true}}) {
    Measured measured;
    if (failed(measureSchedule(*module, flags, schedule, recompute, dir,
                               measured, error)))
      return fail(error);
    collectParts(measured, blocks);
    llvm::append_range(runOverheads, measured.runOverheads);
  }
  for (BlockInfo &b : blocks) {
    // Both runs update every stage: the update is the mean of both.
    updateMs += mean(b.update) * double(b.instances.size());
  }
  double optimizerParamsPerSecond =
      updateMs > 0 ? double(params) / (updateMs * 1e-3) : 0;
  MachineTerms machine = measureTransfers(flags.repeats);
  machine.runOverhead = median(runOverheads);
  // Fitted before anything is written: a rate the blocks cannot resolve
  // fails the run and leaves every output as it was.
  pipe::FittedPhaseRates rates;
  pipe::PhaseScales scales;
  if (!flags.fitDeviceModel.empty()) {
    llvm::Expected<pipe::FittedPhaseRates> fitted =
        pipe::fitPhaseRates(getMeasuredParts(blocks));
    if (!fitted)
      return fail(llvm::toString(fitted.takeError()));
    // The reference blocks' forward and fused backward: gpipe with
    // recompute runs both.
    std::vector<BlockInfo> referenceBlocks;
    const std::vector<BlockInfo> *reference = &blocks;
    if (flags.fitReference != flags.granularity) {
      Flags coarse = flags;
      coarse.granularity = flags.fitReference;
      Measured measured;
      if (failed(collectBlocks(*module, coarse, referenceBlocks)))
        return fail("forming the " + flags.fitReference +
                    "-level blocks failed (see above)");
      if (failed(measureSchedule(*module, coarse, "gpipe", /*recompute=*/true,
                                 dir, measured, error)))
        return fail(error);
      collectParts(measured, referenceBlocks);
      reference = &referenceBlocks;
    }
    scales = pipe::getReferenceScales(*fitted, getMeasuredParts(*reference));
    rates = pipe::scaleToReference(*fitted, scales);
  }

  llvm::json::Value table =
      tableJson(blocks, machine, flags, optimizerParamsPerSecond);
  if (llvm::Error err =
          pipe::writeOutputFile(flags.output, [&](llvm::raw_ostream &os) {
            os << llvm::formatv("{0:2}", table) << "\n";
          }))
    return fail(llvm::toString(std::move(err)));
  if (!flags.fitDeviceModel.empty())
    if (llvm::Error err = pipe::writeOutputFile(
            flags.fitDeviceModel, [&](llvm::raw_ostream &os) {
              os << llvm::formatv("{0:2}",
                                  deviceModelJson(rates, scales, flags, machine,
                                                  optimizerParamsPerSecond))
                 << "\n";
            }))
      return fail(llvm::toString(std::move(err)));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  pipe_rt_blas_configure(argv);
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::printf("%s", kUsage);
      return 0;
    }
  Flags flags;
  std::string error;
  if (!parseFlags(argc, argv, flags, error))
    return fail(error, 2);
  for (const std::string *path : {&flags.output, &flags.fitDeviceModel})
    if (!path->empty() && *path != "-")
      if (llvm::Error err = pipe::checkOutputPath(*path))
        return fail(llvm::toString(std::move(err)), 2);
  if (!flags.fitDeviceModel.empty() &&
      pipe::isSameFile(flags.output, flags.fitDeviceModel))
    return fail("-o and --fit-device-model name one file '" + flags.output +
                    "': each output needs its own path",
                2);
  for (auto [flag, path] :
       {std::pair<const char *, const std::string *>{"-o", &flags.output},
        {"--fit-device-model", &flags.fitDeviceModel}})
    if (!flags.model.empty() && !path->empty() &&
        pipe::isSameFile(flags.model, *path))
      return fail(std::string(flag) + " '" + *path +
                      "': also the model, which the run reads (an output "
                      "must not replace an input)",
                  2);
  if (!flags.loss.empty() && flags.model.empty())
    return fail("--loss is for a MODEL.mlir that returns activations; a "
                "preset returns its loss",
                2);
  if (flags.model.empty() && (!flags.init.empty() || flags.liftSplats))
    return fail("--init and --lift-splats apply to a MODEL.mlir; a preset "
                "comes with its weights",
                2);
  int rc = 1;
  pipe::runWithLargeStack([&] { rc = profile(flags); });
  return rc;
}
