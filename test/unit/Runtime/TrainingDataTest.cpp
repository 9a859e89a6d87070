//===- TrainingDataTest.cpp - Hostile data for the trainer's loader -------===//
//
// The loader checks integer inputs against the ranges of the manifest (text:
// every byte; safetensors: every row of both splits), refuses files it
// cannot or should not read whole, and keeps its row arithmetic in range
// for any micro-batch index. The manifest's `range` records are parsed here
// too.
//
//===----------------------------------------------------------------------===//

#include "TrainingData.h"
#include "Manifest.h"
#include "SafetensorsIO.h"

#include "pipe/Runtime/ManifestSchema.h"
#include "pipe/Runtime/Program.h"

#include <gtest/gtest.h>

#include <cstring>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::string tempPath(const std::string &name) {
  return testing::TempDir() + "pipe-data-" + std::to_string(::getpid()) + "-" +
         name;
}

/// Tokens and targets i64 [2, 3] accepting [0, 64) (targets also -100).
std::vector<pipe_rt::InputSpec> lmInputs() {
  std::vector<pipe_rt::InputSpec> inputs = {{"i64", {2, 3}}, {"i64", {2, 3}}};
  inputs[0].range.bound = 64;
  inputs[1].range.bound = 64;
  inputs[1].range.exempt = {-100};
  return inputs;
}

std::string writeRows(const std::string &name, std::vector<int64_t> tokens,
                      std::vector<int64_t> targets) {
  std::string path = tempPath(name), error;
  int64_t rows = int64_t(tokens.size()) / 6;
  EXPECT_TRUE(pipe_rt::writeSafetensors(
      path,
      {{"input0", "I64", {rows, 2, 3}, tokens.data()},
       {"input1", "I64", {rows, 2, 3}, targets.data()}},
      error))
      << error;
  return path;
}

TEST(TrainingData, SafetensorsIdsInRange) {
  std::vector<int64_t> ok(12, 63), bad(12, 1);
  ok[4] = -100; // ignored targets are fine
  pipe_rt::DataSpec spec;
  spec.path = writeRows("ok.safetensors", std::vector<int64_t>(12, 0), ok);
  std::string error;
  EXPECT_TRUE(pipe_rt::TrainingData::open(spec, lmInputs(), error)) << error;

  // Row 1, element 2 of the tokens: every boundary value is refused, with
  // the file, tensor, position, value and range in the message.
  for (int64_t v : {int64_t(64), int64_t(-1), int64_t(-100), INT64_MIN,
                    INT64_MAX, int64_t(1) << 32}) {
    bad[8] = v;
    spec.path = writeRows("bad.safetensors", bad, ok);
    EXPECT_FALSE(pipe_rt::TrainingData::open(spec, lmInputs(), error)) << v;
    EXPECT_EQ(error, spec.path + ": tensor 'input0' row 1 element 2: value " +
                         std::to_string(v) +
                         " is outside the range [0, 64) of the program's "
                         "input 0");
    std::remove(spec.path.c_str());
  }
  // Targets: the exempt value is named in the range.
  ok[11] = 64;
  spec.path =
      writeRows("bad-target.safetensors", std::vector<int64_t>(12, 1), ok);
  EXPECT_FALSE(pipe_rt::TrainingData::open(spec, lmInputs(), error));
  EXPECT_NE(error.find("tensor 'input1' row 1 element 5: value 64 is outside "
                       "the range [0, 64) or -100"),
            std::string::npos)
      << error;
  // Without a range (an old program) any value passes: the generated code
  // guards its gathers.
  EXPECT_TRUE(pipe_rt::TrainingData::open(
      spec, {{"i64", {2, 3}}, {"i64", {2, 3}}}, error))
      << error;
}

/// Tensors of samples [S, ...] (one dimension fewer than the micro-batch
/// layout [N, B, ...]) are read B samples at a time, the same bytes; a
/// remainder of fewer than B samples is not used, and fewer than B samples
/// in all, or another trailing shape, are refused naming both layouts.
TEST(TrainingData, SafetensorsSamplesTakenAMicroBatchAtATime) {
  std::vector<int64_t> ids(5 * 3), labels(5);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = int64_t(i % 64);
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = int64_t(i);
  std::vector<pipe_rt::InputSpec> inputs = {{"i64", {2, 3}}, {"i64", {2}}};
  auto write = [&](const std::string &name, int64_t samples, int64_t width) {
    std::string path = tempPath(name), error;
    EXPECT_TRUE(pipe_rt::writeSafetensors(
        path,
        {{"input0", "I64", {samples, width}, ids.data()},
         {"input1", "I64", {samples}, labels.data()}},
        error))
        << error;
    return path;
  };
  pipe_rt::DataSpec spec;
  spec.path = write("samples.safetensors", 5, 3);
  std::string error;
  auto data = pipe_rt::TrainingData::open(spec, inputs, error);
  ASSERT_TRUE(data) << error;
  EXPECT_EQ(data->trainSize(), 2);
  const void *const *mb = data->train(1, 1);
  EXPECT_EQ(static_cast<const int64_t *>(mb[0])[0], ids[6]);
  EXPECT_EQ(static_cast<const int64_t *>(mb[1])[1], labels[3]);
  std::remove(spec.path.c_str());

  spec.path = write("too-few.safetensors", 1, 3);
  EXPECT_FALSE(pipe_rt::TrainingData::open(spec, inputs, error));
  EXPECT_NE(error.find("tensor 'input0' is I64 [1, 3], input 0 of the "
                       "program needs I64 [N, 2, 3] (N >= 1 micro-batches) "
                       "or [S, 3] (S >= 2 samples)"),
            std::string::npos)
      << error;
  std::remove(spec.path.c_str());
  spec.path = write("wide.safetensors", 5, 2);
  EXPECT_FALSE(pipe_rt::TrainingData::open(spec, inputs, error));
  EXPECT_NE(error.find("is I64 [5, 2]"), std::string::npos) << error;
  std::remove(spec.path.c_str());
}

TEST(TrainingData, TextBytesInRange) {
  std::string path = tempPath("text.txt"), error;
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 100; ++i)
      f.put(char('0' + i % 10)); // bytes 48..57 < 64
  }
  pipe_rt::DataSpec spec;
  spec.path = path;
  EXPECT_TRUE(pipe_rt::TrainingData::open(spec, lmInputs(), error)) << error;
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f.put('a'); // 97 at offset 100
  }
  EXPECT_FALSE(pipe_rt::TrainingData::open(spec, lmInputs(), error));
  EXPECT_NE(error.find(path + ": byte 97 at offset 100 is outside the range "
                              "[0, 64) of the program's input 0 (tokens)"),
            std::string::npos)
      << error;
  std::remove(path.c_str());
}

TEST(TrainingData, RefusesFilesItCannotReadWhole) {
  pipe_rt::DataSpec spec;
  std::string error;
  for (const char *path : {"/dev/zero", "/dev/null", "/"}) {
    for (auto format : {pipe_rt::DataSpec::Format::Text,
                        pipe_rt::DataSpec::Format::Safetensors}) {
      spec.path = path;
      spec.format = format;
      EXPECT_FALSE(pipe_rt::TrainingData::open(spec, lmInputs(), error));
      EXPECT_EQ(error,
                std::string(path) + ": the data file is not a regular file");
    }
  }
}

TEST(TrainingData, RowIndexNeverOverflows) {
  EXPECT_EQ(pipe_rt::wrapRow(7, 2, 5), 4);
  EXPECT_EQ(pipe_rt::wrapRow(INT64_MAX, 1, 5),
            int64_t((uint64_t(INT64_MAX) + 1) % 5));
  EXPECT_EQ(pipe_rt::wrapRow(INT64_MAX, 1 << 20, 3),
            int64_t((uint64_t(INT64_MAX) + (1 << 20)) % 3));
  EXPECT_EQ(pipe_rt::wrapRow(INT64_MIN, 0, 7), 6); // -2^63 = 7k + 6
  EXPECT_EQ(pipe_rt::wrapRow(-1, 0, 4), 3);
  for (int64_t count : {int64_t(1), int64_t(2), INT64_MAX})
    for (int64_t first : {int64_t(0), INT64_MAX, INT64_MIN, int64_t(-5)}) {
      int64_t r = pipe_rt::wrapRow(first, 1000, count);
      EXPECT_GE(r, 0);
      EXPECT_LT(r, count);
    }
}

TEST(TrainingData, ManifestRanges) {
  pipe_rt::ManifestWriter writer;
  writer.type(0, "i64", {4});
  writer.type(1, "f32", {4});
  writer.value(0, 0);
  writer.value(1, 1);
  writer.input(0, 0);
  writer.input(1, 1);
  // The bad records below follow the writer's records, without its "end".
  std::string head = writer.str();
  head.resize(head.size() - std::strlen("end\n"));
  writer.range(0, 64, {-100});
  pipe_rt::Manifest m;
  std::string error;
  ASSERT_TRUE(pipe_rt::parseManifest(writer.str().c_str(), m, error)) << error;
  ASSERT_EQ(m.inputRanges.size(), 2u);
  EXPECT_EQ(m.inputRanges[0].bound, 64);
  EXPECT_EQ(m.inputRanges[0].describe(), "[0, 64) or -100");
  EXPECT_TRUE(m.inputRanges[0].allows(-100));
  EXPECT_FALSE(m.inputRanges[0].allows(64));
  EXPECT_EQ(m.inputRanges[1].bound, 0); // none: anything
  EXPECT_TRUE(m.inputRanges[1].allows(INT64_MIN));

  struct Case {
    const char *record, *message;
  } cases[] = {
      {"range 1 64 0", "range of input 1, which is not an integer tensor"},
      {"range 2 64 0", "input index 2 out of range"},
      {"range 0 0 0", "bound 0 out of range"},
      {"range 0 64 2 -100", "missing exempt value"},
      {"range 0 64 0\nrange 0 32 0", "line 9: second range of input 0"},
      {"range 0 64 0 5", "unexpected field '5'"},
  };
  for (const Case &c : cases) {
    EXPECT_FALSE(
        pipe_rt::parseManifest((head + c.record + "\nend\n").c_str(), m, error))
        << c.record;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

} // namespace
