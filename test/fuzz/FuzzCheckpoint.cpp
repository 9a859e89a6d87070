//===- FuzzCheckpoint.cpp - libFuzzer: checkpoints as the trainer reads ---===//
//
// A checkpoint is a safetensors file with the params, their optimizer state,
// `optimizer.step` and the trainer's `trainer.*` scalars. The trainer's
// loadCheckpoint (Trainer.cpp, internal) reads it through
// pipe_rt_session_load with those names, so this target runs
// pipe_rt_session_load on the fuzzed file for a session of a small program
// made of a manifest only (no code is ever run): params `w` (f32 [4],
// trainable) and `b` (i64 [], frozen), with AdamW or SGD with momentum (the
// first input byte picks). A load that succeeds must have set what it read;
// one that fails must say why, naming the file, and change nothing.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/SafetensorsIO.h"
#include "pipe/Runtime/ManifestSchema.h"
#include "pipe/Runtime/Program.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace pipe_rt;

namespace {

const int32_t abiVersion = PIPE_RT_ABI_VERSION;
std::string makeManifest() {
  pipe_rt::ManifestWriter m;
  m.type(0, "f32", {4});
  m.type(1, "i64", {});
  m.param(0, "w", 0, true);
  m.param(1, "b", 1, false);
  return m.str();
}
const std::string manifest = makeManifest();

void *lookup(void *, const char *name) {
  if (!std::strcmp(name, "pipe_program_abi_version"))
    return const_cast<int32_t *>(&abiVersion);
  if (!std::strcmp(name, "pipe_program_manifest"))
    return const_cast<char *>(manifest.c_str());
  return nullptr;
}

std::string tempPath(const char *what) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/pipe-fuzz-" + what + "-" +
         std::to_string(::getpid()) + ".safetensors";
}

const char *const kStateNames[] = {"trainer.format", "trainer.step",
                                   "trainer.seed", "trainer.rng_draws",
                                   "trainer.data_cursor"};

pipe_rt_session *sessions[2]; // AdamW, SGD with momentum
std::string checkpointPath;

void removeFiles() { ::unlink(checkpointPath.c_str()); }

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::string weights = tempPath("weights");
  float w[4] = {1, 2, 3, 4};
  int64_t b = 5;
  std::string error;
  if (!writeSafetensors(weights, {{"w", "F32", {4}, w}, {"b", "I64", {}, &b}},
                        error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::abort();
  }
  for (int i = 0; i < 2; ++i) {
    pipe_rt_session_options options;
    pipe_rt_session_options_init(&options);
    options.weights_path = weights.c_str();
    options.optimizer_threads = 1;
    if (i == 1) {
      options.optimizer = PIPE_RT_OPTIM_SGD;
      options.sgd.momentum = 0.9f;
    }
    char message[512];
    if (pipe_rt_session_create(lookup, nullptr, &options, &sessions[i], message,
                               sizeof(message)) != PIPE_RT_OK) {
      std::fprintf(stderr, "session: %s\n", message);
      std::abort();
    }
  }
  ::unlink(weights.c_str());
  checkpointPath = tempPath("checkpoint");
  std::atexit(removeFiles);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  pipe_rt_session *session = sessions[data[0] & 1];
  std::FILE *f = std::fopen(checkpointPath.c_str(), "wb");
  if (!f)
    std::abort();
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);

  float before[4], after[4];
  pipe_rt_session_read_param(session, 0, before);
  int64_t values[5] = {-7, -7, -7, -7, -7};
  int status = pipe_rt_session_load(session, checkpointPath.c_str(),
                                    kStateNames, values, 5);
  pipe_rt_session_read_param(session, 0, after);
  if (status != PIPE_RT_OK) {
    const char *error = pipe_rt_session_error(session);
    if (!error || std::string(error).find(checkpointPath) == std::string::npos)
      std::abort(); // the error names the file
    for (int64_t v : values)
      if (v != -7)
        std::abort(); // nothing changed
    if (std::memcmp(before, after, sizeof(before)))
      std::abort();
  }
  return 0;
}
