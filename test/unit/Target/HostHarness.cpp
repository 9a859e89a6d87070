//===- HostHarness.cpp - Compile and train generated models on the host --===//

#include "HostHarness.h"

#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Target/Host/HostPipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <dlfcn.h>
#include <random>

using namespace mlir;
using namespace pipetest;

namespace {

void registerOnce() {
  static bool done = [] {
    registerAllPasses();
    pipe::registerPipePasses();
    pipe::registerPipeConversionPasses();
    return true;
  }();
  (void)done;
}

void *dlsymLookup(void *handle, const char *name) {
  return dlsym(handle, name);
}

/// One graph input: its element count and whether it holds token ids.
struct InputShape {
  int64_t elements = 1;
  bool isInt = false;
};

} // namespace

std::string ScheduleConfig::describe() const {
  std::string text = kind + " devices=" + std::to_string(devices) +
                     " stages/device=" + std::to_string(stagesPerDevice) +
                     " mb=" + std::to_string(microbatches);
  if (steps > 1)
    text += " steps=" + std::to_string(steps);
  if (constantMemory)
    text += " constant-memory";
  if (kind == "pipedream-async")
    text += " weights=" + weights;
  if (fuseElementwise)
    text += " fused";
  if (!vectorize)
    text += " scalar";
  return text;
}

HostProgram::HostProgram(const pipe::modelgen::TransformerConfig &model,
                         const ScheduleConfig &schedule,
                         const std::string &libraryPath,
                         const std::string &scratchDir)
    : model(model), schedule(schedule) {
  registerOnce();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  pipe::modelgen::registerModelGenDialects(registry);
  registry.insert<pipe::PipeDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    os << diag.getLocation() << ": " << diag.str() << "\n";
    return success();
  });

  pipe::modelgen::GenerateOptions options;
  options.randomizeAll = true;
  options.seed = 7;
  auto generated = pipe::modelgen::generateTransformer(context, model, options);
  if (!generated) {
    errorText = llvm::toString(generated.takeError());
    return;
  }
  ModuleOp module = *generated->module;

  // Instances: prologue + layers + epilogue (+ T5's decoder layers).
  unsigned instances = model.layers + model.decoderLayers + 2;
  unsigned stagesPerDevice =
      schedule.stagesPerDevice ? schedule.stagesPerDevice : instances;
  std::string scheduleOptions =
      "kind=" + schedule.kind +
      " microbatches=" + std::to_string(schedule.microbatches) +
      " steps=" + std::to_string(schedule.steps) +
      " weights=" + schedule.weights +
      " constant-memory=" + (schedule.constantMemory ? "true" : "false") +
      " recompute=" + (schedule.recompute ? "true" : "false");
  std::string weightsPath = scratchDir + "/weights.safetensors";
  std::string pipeline =
      "pipe-lift-params,pipe-form-blocks{granularity=layer},"
      "pipe-differentiate,pipe-place{devices=" +
      std::to_string(schedule.devices) +
      " stages-per-device=" + std::to_string(stagesPerDevice) +
      "},pipe-schedule{" + scheduleOptions +
      "},pipe-verify-schedule,pipe-lower-to-host{weights=" + weightsPath + "}";
  PassManager pm(&context);
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(module))) {
    errorText = "compiling (" + pipeline + ") failed:\n" + diagnostics;
    return;
  }
  PassManager lower(&context);
  pipe::buildHostToLLVMPipeline(lower,
                                {schedule.fuseElementwise, schedule.vectorize});
  if (failed(lower.run(module))) {
    errorText = "lowering to LLVM failed:\n" + diagnostics;
    return;
  }

  pipe_rt_symbol_lookup lookup;
  void *userData;
  if (libraryPath.empty()) {
    auto created = pipe::HostJIT::create(module, /*optLevel=*/2);
    if (!created) {
      errorText = "JIT failed: " + llvm::toString(created.takeError());
      return;
    }
    jit = std::move(*created);
    lookup = &pipe::HostJIT::lookupCallback;
    userData = jit.get();
  } else {
    if (llvm::Error err =
            pipe::writeSharedLibrary(module, libraryPath, /*optLevel=*/2)) {
      errorText = llvm::toString(std::move(err));
      return;
    }
    library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      errorText = std::string("dlopen: ") + dlerror();
      return;
    }
    lookup = &dlsymLookup;
    userData = library;
  }

  pipe_rt_session_options sessionOptions;
  pipe_rt_session_options_init(&sessionOptions);
  sessionOptions.weights_path = weightsPath.c_str();
  sessionOptions.watchdog_seconds = 20;
  sessionOptions.optimizer_threads = 1;
  // SGD with momentum: its update is linear in the gradient, so the
  // rounding differences of a different summation order stay at their own
  // size; AdamW divides by sqrt(v) and magnifies them for gradients near 0.
  sessionOptions.optimizer = PIPE_RT_OPTIM_SGD;
  sessionOptions.sgd.lr = 0.05f;
  sessionOptions.sgd.momentum = 0.9f;
  char message[2048] = {0};
  if (pipe_rt_session_create(lookup, userData, &sessionOptions, &session,
                             message, sizeof(message)) != PIPE_RT_OK) {
    errorText = std::string("session: ") + message;
    session = nullptr;
  }
}

HostProgram::~HostProgram() {
  if (session)
    pipe_rt_session_destroy(session);
  if (library)
    dlclose(library);
}

std::vector<float> HostProgram::train(unsigned runs) {
  // Graph inputs as the program declares them: token ids for every
  // integer input, in [0, vocab).
  std::vector<InputShape> shapes;
  for (int k = 0, e = pipe_rt_session_num_inputs(session); k < e; ++k) {
    const char *dtype = nullptr;
    int rank = 0;
    const int64_t *dims = nullptr;
    if (pipe_rt_session_input_type(session, k, &dtype, &rank, &dims) !=
        PIPE_RT_OK) {
      errorText = pipe_rt_session_error(session);
      return {};
    }
    InputShape shape;
    for (int d = 0; d < rank; ++d)
      shape.elements *= dims[d];
    shape.isInt = std::string(dtype) == "i64";
    shapes.push_back(shape);
  }
  unsigned perRun = schedule.steps * schedule.microbatches;
  std::vector<float> losses;
  for (unsigned r = 0; r < runs; ++r) {
    std::vector<std::vector<int64_t>> ints;
    std::vector<std::vector<float>> floats;
    std::vector<const void *> pointers;
    ints.reserve(perRun * shapes.size());
    floats.reserve(perRun * shapes.size());
    for (unsigned mb = 0; mb < perRun; ++mb) {
      std::mt19937_64 rng(r * perRun + mb + 1);
      for (const InputShape &shape : shapes) {
        if (shape.isInt) {
          std::uniform_int_distribution<int64_t> token(0, model.vocab - 1);
          ints.emplace_back(shape.elements);
          for (int64_t &t : ints.back())
            t = token(rng);
          pointers.push_back(ints.back().data());
        } else {
          std::normal_distribution<float> normal;
          floats.emplace_back(shape.elements);
          for (float &f : floats.back())
            f = normal(rng);
          pointers.push_back(floats.back().data());
        }
      }
    }
    std::vector<float> runLosses(perRun);
    if (pipe_rt_session_run(session, 0, pointers.data(), runLosses.data()) !=
        PIPE_RT_OK) {
      errorText = pipe_rt_session_error(session);
      return {};
    }
    losses.insert(losses.end(), runLosses.begin(), runLosses.end());
  }
  return losses;
}

std::vector<std::vector<float>> HostProgram::params() {
  std::vector<std::vector<float>> values;
  int count = pipe_rt_session_num_params(session);
  for (int i = 0; i < count; ++i) {
    values.emplace_back(pipe_rt_session_param_numel(session, i));
    pipe_rt_session_read_param(session, i, values.back().data());
  }
  return values;
}

mlir::pipe::modelgen::TransformerConfig
pipetest::tinyGptConfig(unsigned layers) {
  mlir::pipe::modelgen::TransformerConfig config;
  config.name = "tiny-gpt";
  config.family = mlir::pipe::modelgen::ModelFamily::Gpt2;
  config.layers = layers;
  config.dModel = 16;
  config.heads = 2;
  config.ff = 32;
  config.vocab = 32;
  config.maxPositions = 8;
  config.seq = 8;
  config.batch = 2;
  return config;
}

mlir::pipe::modelgen::TransformerConfig
pipetest::tinyT5Config(unsigned layers) {
  mlir::pipe::modelgen::TransformerConfig config;
  config.name = "tiny-t5";
  config.family = mlir::pipe::modelgen::ModelFamily::T5;
  config.layers = layers;
  config.decoderLayers = layers;
  config.dModel = 16;
  config.heads = 2;
  config.headDim = 8;
  config.ff = 32;
  config.vocab = 32;
  config.relBuckets = 8;
  config.relMaxDistance = 16;
  config.seq = 8;
  config.decoderSeq = 4;
  config.batch = 2;
  return config;
}

double pipetest::maxRelativeError(const std::vector<std::vector<float>> &a,
                                  const std::vector<std::vector<float>> &b,
                                  unsigned *worst) {
  double result = a.size() == b.size() ? 0.0 : INFINITY;
  for (unsigned t = 0; t < std::min(a.size(), b.size()); ++t) {
    if (a[t].size() != b[t].size())
      return INFINITY;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a[t].size(); ++i) {
      diff += double(a[t][i] - b[t][i]) * (a[t][i] - b[t][i]);
      norm += double(b[t][i]) * b[t][i];
    }
    double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
    if (rel > result || std::isnan(rel)) {
      result = std::isnan(rel) ? INFINITY : rel;
      if (worst)
        *worst = t;
    }
  }
  return result;
}
