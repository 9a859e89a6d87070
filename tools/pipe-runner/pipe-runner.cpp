//===- pipe-runner.cpp - Train a compiled pipe program artifact -----------===//
//
// pipe-runner ARTIFACT.so --weights W.safetensors [training options]
//
// dlopens a compiled program (its imports resolve against this executable,
// which exports the whole runtime), checks its ABI, creates a session and
// runs the trainer of pipe/Runtime/Trainer.h: the same loop pipe-train runs
// in-process. Options and exit codes: --help and docs/trainer.md.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Blas.h"
#include "pipe/Runtime/Program.h"
#include "pipe/Runtime/Trainer.h"
#include "pipe/Runtime/TrainerFlags.h"
#ifdef PIPE_RUNNER_CUDA
#include "pipe/Runtime/CUDA.h"
#endif

#include <cstdio>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

int die(const std::string &msg, int code = pipe_rt::ExitError) {
  std::fprintf(stderr, "pipe-runner: %s\n", msg.c_str());
  return code;
}

void *lookup(void *handle, const char *name) { return dlsym(handle, name); }

} // namespace

int main(int argc, char **argv) {
  pipe_rt_blas_configure(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
#ifdef PIPE_RUNNER_CUDA
  // pipe-runner-cuda: the session's devices are GPUs (docs/cuda-runtime.md)
  // unless --cpu; --gpu-map=0,0,1 maps logical devices to GPU ordinals.
  bool useGpu = true;
  std::string deviceMap;
  for (auto it = args.begin(); it != args.end();) {
    if (*it == "--cpu") {
      useGpu = false;
      it = args.erase(it);
    } else if (it->rfind("--gpu-map=", 0) == 0) {
      deviceMap = it->substr(10);
      it = args.erase(it);
    } else {
      ++it;
    }
  }
#endif
  for (const std::string &a : args)
    if (a == "-h" || a == "--help") {
      std::printf("usage: pipe-runner ARTIFACT.so --weights W.safetensors "
                  "[options]\n\n%s\n",
                  pipe_rt::trainerFlagsUsage());
#ifdef PIPE_RUNNER_CUDA
      std::printf("GPUs (pipe-runner-cuda):\n"
                  "  --gpu-map=M            GPU ordinal of each logical "
                  "device, e.g. 0,0,1\n"
                  "                         (default: device d on GPU d mod "
                  "count)\n"
                  "  --cpu                  run on the simulated devices "
                  "instead\n");
#endif
      return pipe_rt::ExitOk;
    }
  pipe_rt::TrainerFlags flags;
  std::string message;
  if (!pipe_rt::parseTrainerFlags(args, flags, message))
    return die(message, pipe_rt::ExitUsage);
  if (flags.positional.size() > 1)
    return die("more than one artifact given (see --help)", pipe_rt::ExitUsage);
  if (flags.positional.empty() || flags.weights.empty())
    return die("an artifact and --weights are required (see --help)",
               pipe_rt::ExitUsage);
  const std::string &artifact = flags.positional.front();

  // A name without a slash would be searched on the library path, not here.
  std::string file =
      artifact.find('/') == std::string::npos ? "./" + artifact : artifact;
  // RTLD_NOW: an artifact with an unresolved import fails here, by name.
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return die(dlerror());
  auto *abi =
      static_cast<const int32_t *>(dlsym(handle, "pipe_program_abi_version"));
  if (!abi)
    return die(artifact + ": missing symbol pipe_program_abi_version (not a "
                          "compiled pipe program?)");
  if (*abi != PIPE_RT_ABI_VERSION)
    return die(artifact + ": compiled for runtime ABI " + std::to_string(*abi) +
               ", this runner is " + std::to_string(PIPE_RT_ABI_VERSION));

  pipe_rt_session_options options;
  pipe_rt_session_options_init(&options);
  flags.applyTo(options);
  options.weights_path = flags.weights.c_str();
  pipe_rt_session *session = nullptr;
  char error[1024];
  if (pipe_rt_session_create(lookup, handle, &options, &session, error,
                             sizeof(error)) != PIPE_RT_OK)
    return die(artifact + ": " + error);
#ifdef PIPE_RUNNER_CUDA
  if (useGpu && pipe_rt_cuda_session_enable(session, deviceMap.c_str(), error,
                                            sizeof(error)) != PIPE_RT_OK) {
    pipe_rt_session_destroy(session);
    return die(artifact + ": " + error);
  }
#endif

  pipe_rt::TrainerOptions training = flags.options;
#ifdef PIPE_RUNNER_CUDA
  // The profile's memory figures of the GPUs: the runtime's pool (every
  // allocation the runtime makes, cuBLAS workspaces included) and the
  // driver's view of the whole device.
  if (useGpu)
    training.profileExtra = [] {
      std::string pools, driver;
      for (int g = 0; g < pipe_rt_cuda_device_count(nullptr, 0); ++g) {
        uint64_t inUse = 0, peak = 0, reserved = 0, used = 0, total = 0;
        pipe_rt_cuda_pool_stats(g, &inUse, &peak, &reserved);
        pipe_rt_cuda_device_memory(g, &used, &total);
        std::string sep = g ? "," : "";
        pools += sep + "{\"peak\":" + std::to_string(peak) +
                 ",\"reserved\":" + std::to_string(reserved) + "}";
        driver += sep + "{\"used\":" + std::to_string(used) +
                  ",\"total\":" + std::to_string(total) + "}";
      }
      return "\"gpu_pool_bytes\":[" + pools + "],\"gpu_driver_bytes\":[" +
             driver + "]";
    };
#endif

  pipe_rt::TrainerSummary summary;
  bool ok = pipe_rt::runTraining(session, training, summary, message);
  pipe_rt_session_destroy(session);
  if (!ok)
    return die(message);
  if (summary.interrupted) {
    std::printf("stopped at step %lld%s\n", (long long)summary.steps,
                summary.checkpointWritten.empty()
                    ? " (no --checkpoint: progress is lost)"
                    : "; continue with --resume");
    return pipe_rt::ExitInterrupted;
  }
  return pipe_rt::ExitOk;
}
