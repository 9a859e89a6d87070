//===- FuzzTrainingData.cpp - libFuzzer: the trainer's data files ---------===//
//
// pipe_rt::TrainingData::open on a fuzzed data file, as text or safetensors,
// for one of a few fixed sets of graph inputs, then a few training and
// evaluation micro-batches whose every byte is read (so that a pointer
// outside the file is caught by AddressSanitizer). The first input byte
// picks the format, the input set, the train fraction and the RNG seed; the
// rest is the file.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/TrainingData.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace pipe_rt;

namespace {

const std::vector<std::vector<InputSpec>> &inputSets() {
  static const std::vector<std::vector<InputSpec>> sets = {
      {{"i64", {2, 4}}, {"i64", {2, 4}}}, // tokens, targets
      {{"i32", {1, 1}}, {"i32", {1, 1}}},
      {{"f32", {3}}, {"i32", {2, 2}}, {"i1", {}}},
      {{"f64", {1}}, {"i64", {0}}},
      {},
  };
  return sets;
}

/// Reads every byte of `count` micro-batches, as a program would.
void touch(const void *const *pointers, int count,
           const std::vector<InputSpec> &inputs) {
  if (!pointers)
    return;
  unsigned sum = 0;
  for (int m = 0; m < count; ++m)
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto *p = static_cast<const unsigned char *>(
          pointers[size_t(m) * inputs.size() + k]);
      for (size_t i = 0; i < inputs[k].bytes(); ++i)
        sum += p[i];
    }
  // Keep the loads.
  volatile unsigned sink = sum;
  (void)sink;
}

std::string path; // the data file, rewritten for every input

void removeFile() { ::unlink(path.c_str()); }

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *dir = std::getenv("TMPDIR");
  path = std::string(dir && *dir ? dir : "/tmp") + "/pipe-fuzz-data-" +
         std::to_string(::getpid());
  std::atexit(removeFile);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t control = data[0];
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);

  DataSpec spec;
  spec.path = path;
  spec.format =
      control & 1 ? DataSpec::Format::Safetensors : DataSpec::Format::Text;
  static const double fractions[] = {0.9, 1.0, 0.5, 0.01};
  spec.trainFraction = fractions[(control >> 1) & 3];
  const std::vector<InputSpec> &inputs =
      inputSets()[((control >> 3) & 7) % inputSets().size()];
  std::string error;
  std::unique_ptr<TrainingData> d = TrainingData::open(spec, inputs, error);
  if (!d) {
    if (error.empty())
      std::abort();
    return 0;
  }
  d->seedRng(control >> 6, control & 7);
  int64_t firsts[] = {0, 1, 7, d->trainSize() * 3 + 1};
  for (int64_t first : firsts) {
    touch(d->train(first, 2), 2, inputs);
    touch(d->eval(first, 2), 2, inputs);
  }
  return 0;
}
