//===- TrainerTest.cpp - Tests of the training loop without the compiler --===//
//
// A hand-written byte-level "language model" (as in TinyProgram.h: the
// manifest, packed block functions and device programs in C++): one param
// `emb` [256], inputs tokens/targets i64 [2, 3], and
// loss = mean_i (emb[tok_i] - tgt_i / 256)^2. Schedule 0 trains (gpipe, 2
// micro-batches, or pipedream-async with 2 steps per run), schedule 1 is the
// forward-only evaluation (3 micro-batches).
//
//===----------------------------------------------------------------------===//

#include "SafetensorsIO.h"
#include "TinyProgram.h"
#include "TrainingData.h"

#include "pipe/Runtime/ManifestSchema.h"
#include "pipe/Runtime/Trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kB = 2, kT = 3, kN = kB * kT, kTrainM = 2, kEvalM = 3;

//===--- Block functions --------------------------------------------------===//

template <typename T> const T *arg(void **args, int i) {
  auto *m = static_cast<pipe_rt_memref *>(args[i]);
  return static_cast<const T *>(m->aligned) + m->offset;
}

/// Writes one result descriptor of `rank` (0 or 1, size n) at args[0].
float *result(void **args, int rank, int64_t n) {
  auto *p = static_cast<int64_t *>(args[0]);
  auto *mem = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(size_t(rank ? n : 1) * sizeof(float)));
  p[0] = p[1] = reinterpret_cast<int64_t>(mem);
  p[2] = 0;
  if (rank) {
    p[3] = n;
    p[4] = 1;
  }
  return mem;
}

// lm_fwd(emb, tok, tgt) -> loss.
void lmForward(void **a) {
  float *loss = result(a, 0, 0);
  const float *emb = arg<float>(a, 1);
  const int64_t *tok = arg<int64_t>(a, 2), *tgt = arg<int64_t>(a, 3);
  float sum = 0;
  for (int i = 0; i < kN; ++i) {
    float d = emb[tok[i]] - float(tgt[i]) / 256;
    sum += d * d;
  }
  *loss = sum / kN;
}

// lm_bwdw(emb, tok, tgt, dloss) -> demb.
void lmBackward(void **a) {
  float *g = result(a, 1, 256);
  std::memset(g, 0, 256 * sizeof(float));
  const float *emb = arg<float>(a, 1);
  const int64_t *tok = arg<int64_t>(a, 2), *tgt = arg<int64_t>(a, 3);
  float dl = *arg<float>(a, 4);
  for (int i = 0; i < kN; ++i)
    g[tok[i]] += dl * 2 * (emb[tok[i]] - float(tgt[i]) / 256) / kN;
}

//===--- Device programs --------------------------------------------------===//

int32_t trainDevice(pipe_rt_device_ctx *c) {
  for (int mb = 0; mb < kTrainM; ++mb) {
    TINY_CHECK(pipe_rt_act_forward(c, 0, mb, 0, -1, 1, 0));
    TINY_CHECK(pipe_rt_act_backward(c, 0, mb, 0, -1, 0));
  }
  TINY_CHECK(pipe_rt_act_update(c, 0, 0));
  return 0;
}

/// Two optimizer steps per run, each with the current weights (version s).
int32_t asyncDevice(pipe_rt_device_ctx *c) {
  for (int s = 0; s < 2; ++s) {
    for (int mb = 0; mb < kTrainM; ++mb) {
      TINY_CHECK(pipe_rt_act_forward(c, 0, mb, s, s, 1, 0));
      TINY_CHECK(pipe_rt_act_backward(c, 0, mb, s, s, 0));
    }
    TINY_CHECK(pipe_rt_act_update(c, 0, s));
  }
  return 0;
}

int32_t evalDevice(pipe_rt_device_ctx *c) {
  for (int mb = 0; mb < kEvalM; ++mb)
    TINY_CHECK(pipe_rt_act_forward(c, 0, mb, 0, -1, 0, 0));
  return 0;
}

//===--- The program ------------------------------------------------------===//

using tiny::Program;

/// `async`: the training schedule is pipedream-async with 2 steps per run.
Program makeProgram(bool async = false) {
  Program p;
  pipe_rt::ManifestWriter m;
  m.type(0, "i64", {2, 3});
  m.type(1, "f32", {256});
  m.type(2, "f32", {});
  m.param(0, "emb", 1, true);
  m.value(0, 0);
  m.value(1, 0);
  m.value(2, 2);
  m.input(0, 0);
  m.input(1, 1);
  m.loss(2, 1);
  m.function(0, "lm_fwd", {1, 0, 0}, {2});
  m.function(1, "lm_bwdw", {1, 0, 0, 2}, {1});
  pipe_rt::ManifestRun run;
  run.name = "r0";
  run.bwdWeight = 1;
  run.params = {0};
  run.inputs = {0, 1};
  run.outputs = {2};
  run.diffResults = {0};
  run.diffParams = {0};
  m.run(run);
  m.stage(0, "s0", 0, {0});
  if (async) {
    m.schedule(0, "train", "pipedream-async", 1, 2, 2, false);
    m.versions(0);
    m.device(0, 0, 0, "async_dev");
  } else {
    m.schedule(0, "train", "gpipe", 1, 2, 1, false);
    m.device(0, 0, 0, "train_dev");
  }
  m.owns(0, 0, {0});
  m.schedule(1, "eval", "gpipe", 1, 3, 1, true);
  m.device(1, 0, 0, "eval_dev");
  p.manifest = m.str();
  p.symbols = {{"lm_fwd", (void *)lmForward},
               {"lm_bwdw", (void *)lmBackward},
               {"train_dev", (void *)trainDevice},
               {"async_dev", (void *)asyncDevice},
               {"eval_dev", (void *)evalDevice}};
  return p;
}

/// Files the tests write, removed at exit.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string &p : paths)
      std::remove(p.c_str());
  }
} gTempFiles;

std::string tempPath(const std::string &name) {
  std::string path = testing::TempDir() + "pipe-trainer-" +
                     std::to_string(::getpid()) + "-" + name;
  gTempFiles.paths.push_back(path);
  return path;
}

std::vector<float> initialEmb() {
  std::vector<float> v(256);
  for (int i = 0; i < 256; ++i)
    v[i] = float(i % 7) * 0.05f;
  return v;
}

std::string writeWeights() {
  static std::vector<float> emb = initialEmb();
  std::string path = tempPath("w.safetensors");
  std::string error;
  EXPECT_TRUE(pipe_rt::writeSafetensors(
      path, {{"emb", "F32", {256}, emb.data()}}, error))
      << error;
  return path;
}

/// A text file of `size` bytes: English-ish, repetitive enough to learn.
std::string writeText(size_t size, const std::string &name = "text.txt") {
  std::string path = tempPath(name);
  const char *words[] = {"the ", "pipe ",    "runs ", "stages ",
                         "of ",  "layers, ", "then ", "updates.\n"};
  std::string text;
  std::mt19937_64 rng(1);
  while (text.size() < size)
    text += words[rng() % 8];
  text.resize(size);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

struct Session {
  pipe_rt_session *s = nullptr;
  std::string error;
  Session(Program &p, const pipe_rt::TrainerOptions &t,
          const std::string &weights = writeWeights()) {
    pipe_rt_session_options o;
    pipe_rt_session_options_init(&o);
    pipe_rt::initSessionOptions(t, o);
    o.weights_path = weights.c_str();
    o.optimizer_threads = 1;
    o.watchdog_seconds = 5;
    char buf[512] = "";
    if (pipe_rt_session_create(Program::lookup, &p, &o, &s, buf, sizeof(buf)) !=
        PIPE_RT_OK)
      error = buf;
  }
  ~Session() { pipe_rt_session_destroy(s); }
  std::vector<float> emb() {
    std::vector<float> v(256);
    EXPECT_EQ(pipe_rt_session_read_param(s, 0, v.data()), PIPE_RT_OK);
    return v;
  }
};

/// Options that print into `lines`.
pipe_rt::TrainerOptions baseOptions(std::vector<std::string> &lines) {
  pipe_rt::TrainerOptions t;
  t.data.path = writeText(2000);
  t.optimizer = PIPE_RT_OPTIM_ADAMW;
  t.lr = 0.01f;
  t.steps = 12;
  t.seed = 42;
  t.print = [&lines](const std::string &l) { lines.push_back(l); };
  return t;
}

bool contains(const std::vector<std::string> &lines, const std::string &s) {
  for (const std::string &l : lines)
    if (l.find(s) != std::string::npos)
      return true;
  return false;
}

std::vector<pipe_rt::InputSpec> lmInputs() {
  return {{"i64", {kB, kT}}, {"i64", {kB, kT}}};
}

int64_t at(const void *const *in, int mb, int k, int i) {
  return static_cast<const int64_t *>(in[mb * 2 + k])[i];
}

//===--- Learning rate ----------------------------------------------------===//

TEST(Trainer, LearningRateSchedule) {
  pipe_rt::TrainerOptions t;
  t.lr = 1.0f;
  t.minLr = 0.1f;
  t.warmupSteps = 4;
  t.steps = 14; // 10 steps after the warm-up
  t.lrSchedule = pipe_rt::LrSchedule::Cosine;
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 0), 0.25f);
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 2), 0.75f);
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 3), 1.0f);
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 4), 1.0f);  // p = 0
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 9), 0.55f); // p = 0.5
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 13),
                  float(0.1 + 0.9 * (1 + std::cos(M_PI * 0.9)) / 2));
  t.lrSchedule = pipe_rt::LrSchedule::Linear;
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 9), 0.55f);
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 13), float(1.0 - 0.9 * 0.9));
  t.lrSchedule = pipe_rt::LrSchedule::Constant;
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 0), 0.25f);
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 13), 1.0f);
  t.warmupSteps = 0;
  EXPECT_FLOAT_EQ(pipe_rt::learningRate(t, 0), 1.0f);
}

//===--- Data -------------------------------------------------------------===//

TEST(Trainer, TextWindowsAndHeldOutSplit) {
  // Bytes 0..99: the first 90 train, the last 10 are held out.
  std::string path = tempPath("bytes.bin");
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 100; ++i)
      f.put(char(i));
  }
  pipe_rt::DataSpec spec;
  spec.path = path;
  std::string error;
  auto data = pipe_rt::TrainingData::open(spec, lmInputs(), error);
  ASSERT_TRUE(data) << error;
  EXPECT_TRUE(data->isText());
  EXPECT_EQ(data->trainSize(), 90);
  EXPECT_EQ(data->evalSize(), 10);
  // Held-out windows start at 90, 93, 96 (T + 1 = 4 bytes each): one
  // micro-batch of 2 windows.
  EXPECT_EQ(data->evalMicrobatches(), 1);

  data->seedRng(7, 0);
  const void *const *in = data->train(0, 2);
  // Reference: offsets drawn uniformly from [0, 87) by rejection.
  std::mt19937_64 rng(7);
  uint64_t limit = 87 * (UINT64_MAX / 87);
  for (int mb = 0; mb < 2; ++mb)
    for (int r = 0; r < kB; ++r) {
      uint64_t x;
      do
        x = rng();
      while (x >= limit);
      int64_t o = int64_t(x % 87);
      for (int t = 0; t < kT; ++t) {
        EXPECT_EQ(at(in, mb, 0, r * kT + t), o + t);
        EXPECT_EQ(at(in, mb, 1, r * kT + t), o + t + 1);
        EXPECT_LT(o + t + 1, 90); // never reads the held-out part
      }
    }
  // Restoring seed + draws continues the same stream.
  uint64_t draws = data->rngDraws();
  EXPECT_GE(draws, 4u);
  std::vector<int64_t> next;
  in = data->train(2, 1);
  for (int i = 0; i < kN; ++i)
    next.push_back(at(in, 0, 0, i));
  data->seedRng(7, draws);
  in = data->train(2, 1);
  for (int i = 0; i < kN; ++i)
    EXPECT_EQ(at(in, 0, 0, i), next[i]);

  // Evaluation: deterministic, stride T, wrapping around.
  in = data->eval(0, 2);
  const int64_t tok[] = {90, 91, 92, 93, 94, 95};
  for (int mb = 0; mb < 2; ++mb)
    for (int i = 0; i < kN; ++i) {
      EXPECT_EQ(at(in, mb, 0, i), tok[i]);
      EXPECT_EQ(at(in, mb, 1, i), tok[i] + 1);
    }
}

TEST(Trainer, TextDataErrors) {
  std::string error;
  pipe_rt::DataSpec spec;
  spec.path = tempPath("does-not-exist.txt");
  EXPECT_FALSE(pipe_rt::TrainingData::open(spec, lmInputs(), error));
  EXPECT_NE(error.find(spec.path), std::string::npos) << error;

  spec.path = writeText(4, "short.txt"); // 3 train bytes < T + 1
  EXPECT_FALSE(pipe_rt::TrainingData::open(spec, lmInputs(), error));
  EXPECT_NE(error.find("too short"), std::string::npos) << error;

  spec.path = writeText(100);
  EXPECT_FALSE(pipe_rt::TrainingData::open(
      spec, {{"f32", {2, 3}}, {"i64", {2, 3}}}, error));
  EXPECT_NE(error.find("two integer inputs"), std::string::npos) << error;
  EXPECT_NE(error.find("f32 [2, 3]"), std::string::npos) << error;
}

TEST(Trainer, SafetensorsDataOrder) {
  // input0 f32 [2] and input1 i32 [] with 5 rows; eval rows: 2.
  std::vector<float> x(10), ex(4);
  std::vector<int32_t> y(5), ey(2);
  for (int i = 0; i < 10; ++i)
    x[i] = float(i);
  for (int i = 0; i < 5; ++i)
    y[i] = 100 + i;
  for (int i = 0; i < 4; ++i)
    ex[i] = float(-i);
  ey = {-100, -101};
  std::string path = tempPath("rows.safetensors"), error;
  ASSERT_TRUE(
      pipe_rt::writeSafetensors(path,
                                {{"input0", "F32", {5, 2}, x.data()},
                                 {"input1", "I32", {5}, y.data()},
                                 {"eval_input0", "F32", {2, 2}, ex.data()},
                                 {"eval_input1", "I32", {2}, ey.data()}},
                                error))
      << error;
  pipe_rt::DataSpec spec;
  spec.path = path;
  std::vector<pipe_rt::InputSpec> inputs = {{"f32", {2}}, {"i32", {}}};
  auto data = pipe_rt::TrainingData::open(spec, inputs, error);
  ASSERT_TRUE(data) << error;
  EXPECT_FALSE(data->isText());
  EXPECT_EQ(data->evalMicrobatches(), 2);
  // Micro-batches 7, 8, 9 take rows 2, 3, 4.
  const void *const *in = data->train(7, 3);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(static_cast<const float *>(in[m * 2])[1], float(2 * (m + 2) + 1));
    EXPECT_EQ(*static_cast<const int32_t *>(in[m * 2 + 1]), 102 + m);
  }
  // Evaluation rows 0, 1, 0.
  in = data->eval(0, 3);
  EXPECT_EQ(*static_cast<const int32_t *>(in[1]), -100);
  EXPECT_EQ(*static_cast<const int32_t *>(in[3]), -101);
  EXPECT_EQ(*static_cast<const int32_t *>(in[5]), -100);

  // Mismatches name the tensor.
  EXPECT_FALSE(
      pipe_rt::TrainingData::open(spec, {{"f32", {3}}, {"i32", {}}}, error));
  EXPECT_NE(error.find("'input0'"), std::string::npos) << error;
  EXPECT_FALSE(
      pipe_rt::TrainingData::open(spec, {{"f32", {2}}, {"i64", {}}}, error));
  EXPECT_NE(error.find("'input1'"), std::string::npos) << error;
  EXPECT_NE(error.find("I64"), std::string::npos) << error;
  EXPECT_FALSE(pipe_rt::TrainingData::open(
      spec, {{"f32", {2}}, {"i32", {}}, {"i32", {}}}, error));
  EXPECT_NE(error.find("'input2'"), std::string::npos) << error;
}

//===--- Training ---------------------------------------------------------===//

/// The eval loss by hand: emb over the held-out windows of `text`.
double manualEvalLoss(const std::vector<float> &emb, const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  int64_t train = int64_t(double(bytes.size()) * 0.9);
  int64_t windows = (int64_t(bytes.size()) - train - 1) / kT;
  int64_t mbs = windows / kB;
  int64_t total = (mbs + kEvalM - 1) / kEvalM * kEvalM; // whole runs
  double sum = 0;
  for (int64_t j = 0; j < total; ++j) {
    float l = 0;
    int64_t mb = j % mbs;
    for (int r = 0; r < kB; ++r)
      for (int t = 0; t < kT; ++t) {
        int64_t o = train + (mb * kB + r) * kT + t;
        float d = emb[(unsigned char)bytes[o]] -
                  float((unsigned char)bytes[o + 1]) / 256;
        l += d * d;
      }
    sum += l / kN;
  }
  return sum / double(total);
}

TEST(Trainer, TrainsLogsAndEvaluates) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 20;
  t.evalEvery = 10;
  t.logEvery = 5;
  t.logJson = tempPath("log.jsonl");
  t.saveWeights = tempPath("final.safetensors");
  Session s(p, t);
  ASSERT_TRUE(s.s) << s.error;
  pipe_rt::TrainerSummary sum;
  std::string error;
  ASSERT_TRUE(pipe_rt::runTraining(s.s, t, sum, error)) << error;
  EXPECT_EQ(sum.steps, 20);
  EXPECT_FALSE(sum.interrupted);
  EXPECT_EQ(sum.unit, "tok");
  EXPECT_GT(sum.itemsPerSecond, 0);
  ASSERT_EQ(sum.peakBytes.size(), 1u);
  EXPECT_GT(sum.peakBytes[0], 0u);
  EXPECT_TRUE(contains(lines, "step 5/20  loss ")) << lines.size();
  EXPECT_TRUE(contains(lines, "eval step 10: loss"));
  EXPECT_TRUE(contains(lines, "eval step 20: loss"));
  EXPECT_TRUE(contains(lines, "summary: 20 steps"));
  // The eval loss is the forward-only schedule's mean over the held-out
  // windows at the final weights.
  EXPECT_NEAR(sum.evalLoss, manualEvalLoss(s.emb(), t.data.path), 1e-6);

  // One JSON object per step; the losses show learning.
  std::ifstream log(t.logJson);
  std::vector<std::string> recs;
  for (std::string l; std::getline(log, l);)
    recs.push_back(l);
  ASSERT_EQ(recs.size(), 20u);
  EXPECT_EQ(recs[0].rfind("{\"step\":1,\"loss\":", 0), 0u) << recs[0];
  EXPECT_NE(recs[9].find("\"eval_loss\":"), std::string::npos) << recs[9];
  EXPECT_EQ(recs[8].find("\"eval_loss\":"), std::string::npos);
  EXPECT_NE(recs[0].find("\"tokens_per_s\":"), std::string::npos);
  auto lossOf = [](const std::string &r) {
    return std::strtod(r.c_str() + r.find("\"loss\":") + 7, nullptr);
  };
  double early = 0, late = 0;
  for (int i = 0; i < 5; ++i) {
    early += lossOf(recs[i]);
    late += lossOf(recs[15 + i]);
  }
  EXPECT_LT(late, early);
  EXPECT_LT(sum.evalLoss, manualEvalLoss(initialEmb(), t.data.path));

  // The saved weights are a valid weights file with the final params.
  Session again(p, t, t.saveWeights);
  ASSERT_TRUE(again.s) << again.error;
  EXPECT_EQ(again.emb(), s.emb());
}

/// Trains `t` in a fresh session, returns the final emb.
std::vector<float> trainOnce(Program &p, const pipe_rt::TrainerOptions &t,
                             pipe_rt::TrainerSummary &sum) {
  Session s(p, t);
  EXPECT_TRUE(s.s) << s.error;
  std::string error;
  EXPECT_TRUE(pipe_rt::runTraining(s.s, t, sum, error)) << error;
  return s.emb();
}

void expectResumeBitIdentical(Program &p, pipe_rt::TrainerOptions t) {
  pipe_rt::TrainerSummary sum;
  std::vector<float> whole = trainOnce(p, t, sum);
  EXPECT_FALSE(sum.interrupted);

  t.checkpointPath = tempPath("resume.ckpt");
  std::remove(t.checkpointPath.c_str());
  t.checkpointEvery = 2;
  t.resume = true;
  // Three slices: 4 + 4 + the rest, each resuming the previous checkpoint.
  t.stopAfter = 4;
  std::vector<float> part = trainOnce(p, t, sum);
  EXPECT_TRUE(sum.interrupted);
  EXPECT_EQ(sum.steps, 4);
  EXPECT_NE(part, whole);
  part = trainOnce(p, t, sum);
  EXPECT_EQ(sum.startStep, 4);
  EXPECT_EQ(sum.steps, 8);
  t.stopAfter = 0;
  part = trainOnce(p, t, sum);
  EXPECT_FALSE(sum.interrupted);
  EXPECT_EQ(sum.steps, t.steps);
  ASSERT_EQ(part.size(), whole.size());
  EXPECT_EQ(0, std::memcmp(part.data(), whole.data(), 256 * sizeof(float)));
}

TEST(Trainer, ResumeIsBitIdenticalText) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.warmupSteps = 3;
  t.lrSchedule = pipe_rt::LrSchedule::Cosine;
  t.minLr = 0.001f;
  t.evalEvery = 3; // evaluations in between change nothing
  expectResumeBitIdentical(p, t);
}

TEST(Trainer, ResumeIsBitIdenticalSafetensorsSgd) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  // 7 rows of tokens/targets.
  std::vector<int64_t> tok(7 * kN), tgt(7 * kN);
  for (size_t i = 0; i < tok.size(); ++i) {
    tok[i] = int64_t((i * 37) % 256);
    tgt[i] = int64_t((i * 11) % 256);
  }
  t.data.path = tempPath("lm.safetensors");
  std::string error;
  ASSERT_TRUE(
      pipe_rt::writeSafetensors(t.data.path,
                                {{"input0", "I64", {7, kB, kT}, tok.data()},
                                 {"input1", "I64", {7, kB, kT}, tgt.data()}},
                                error));
  t.optimizer = PIPE_RT_OPTIM_SGD;
  t.momentum = 0.9f;
  t.nesterov = true;
  t.lr = 0.5f;
  t.lrSchedule = pipe_rt::LrSchedule::Linear;
  expectResumeBitIdentical(p, t);
}

TEST(Trainer, AsyncScheduleCountsStepsPerRun) {
  // Two steps per run with current weights equal two synchronous steps.
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 8;
  Program sync = makeProgram(false), async = makeProgram(true);
  pipe_rt::TrainerSummary a, b;
  std::vector<float> x = trainOnce(sync, t, a);
  std::vector<float> y = trainOnce(async, t, b);
  EXPECT_EQ(b.steps, 8);
  EXPECT_EQ(x, y);
  EXPECT_TRUE(contains(lines, "2 steps per run"));

  // The step count must be a multiple of the steps per run, and global
  // clipping is refused.
  std::string error;
  t.steps = 7;
  {
    Session s(async, t);
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, b, error));
    EXPECT_NE(error.find("multiple"), std::string::npos) << error;
  }
  t.steps = 8;
  t.clipNorm = 1;
  {
    Session s(async, t);
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, b, error));
    EXPECT_NE(error.find("--clip is not supported with schedule "
                         "pipedream-async"),
              std::string::npos)
        << error;
  }
  // The synchronous schedule clips.
  Session s(sync, t);
  EXPECT_TRUE(pipe_rt::runTraining(s.s, t, b, error)) << error;
}

TEST(Trainer, SignalStopsAfterTheStepAndCheckpoints) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.logEvery = 1;
  t.checkpointPath = tempPath("sig.ckpt");
  std::remove(t.checkpointPath.c_str());
  t.print = [&](const std::string &l) {
    lines.push_back(l);
    if (l.rfind("step 3/", 0) == 0)
      std::raise(SIGINT); // handled: sets the stop flag
  };
  Session s(p, t);
  pipe_rt::TrainerSummary sum;
  std::string error;
  ASSERT_TRUE(pipe_rt::runTraining(s.s, t, sum, error)) << error;
  EXPECT_TRUE(sum.interrupted);
  EXPECT_EQ(sum.signal, SIGINT);
  EXPECT_EQ(sum.steps, 3);
  EXPECT_EQ(sum.checkpointWritten, t.checkpointPath);
  EXPECT_TRUE(contains(lines, "received SIGINT"));
  // The previous disposition is back.
  struct sigaction now;
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  // The checkpoint holds step 3.
  pipe_rt::StFile f;
  ASSERT_TRUE(pipe_rt::readSafetensors(t.checkpointPath, f, error)) << error;
  const pipe_rt::StTensor *st = f.find("trainer.step");
  ASSERT_TRUE(st);
  int64_t step;
  std::memcpy(&step, f.data.data() + st->begin, 8);
  EXPECT_EQ(step, 3);
  EXPECT_TRUE(f.find("emb.exp_avg"));
}

TEST(Trainer, BadCheckpointIsAnErrorAndChangesNothing) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 2;
  t.checkpointPath = tempPath("good.ckpt");
  pipe_rt::TrainerSummary sum;
  trainOnce(p, t, sum);
  // Truncate a copy.
  std::ifstream in(t.checkpointPath, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  t.checkpointPath = tempPath("truncated.ckpt");
  std::ofstream(t.checkpointPath, std::ios::binary)
      << bytes.substr(0, bytes.size() - 100);
  t.resume = true;
  t.steps = 4;
  Session s(p, t);
  std::vector<float> before = s.emb();
  std::string error;
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find(t.checkpointPath), std::string::npos) << error;
  EXPECT_EQ(s.emb(), before);

  // Not a trainer checkpoint (a plain weights file).
  t.checkpointPath = writeWeights();
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("not a trainer checkpoint"), std::string::npos) << error;
  EXPECT_EQ(s.emb(), before);

  // Missing checkpoint with --resume: a fresh start.
  t.checkpointPath = tempPath("absent.ckpt");
  std::remove(t.checkpointPath.c_str());
  EXPECT_TRUE(pipe_rt::runTraining(s.s, t, sum, error)) << error;
  EXPECT_TRUE(contains(lines, "no checkpoint at"));
  EXPECT_EQ(sum.startStep, 0);
}

TEST(Trainer, InitWeightsAndScheduleErrors) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 0;
  std::vector<float> emb(256, 0.5f), other(3, 1.0f);
  t.initWeights = tempPath("init.safetensors");
  std::string error;
  ASSERT_TRUE(pipe_rt::writeSafetensors(
      t.initWeights,
      {{"emb", "F32", {256}, emb.data()}, {"head", "F32", {3}, other.data()}},
      error));
  {
    Session s(p, t);
    pipe_rt::TrainerSummary sum;
    ASSERT_TRUE(pipe_rt::runTraining(s.s, t, sum, error)) << error;
    EXPECT_EQ(s.emb(), emb);
    EXPECT_TRUE(contains(lines, "init weights: " + t.initWeights +
                                    ": 1 matched, 0 new, 1 ignored (of 1 "
                                    "params)"));
    EXPECT_TRUE(
        contains(lines, "  ignored (in the file, not in the model): head"));
  }
  // Strict: the ignored tensor is an error naming it, and nothing loads.
  t.initWeightsStrict = true;
  {
    Session s(p, t);
    pipe_rt::TrainerSummary sum;
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
    EXPECT_NE(error.find("--init-weights-strict: 1 tensors name no param "
                         "(head); nothing was loaded"),
              std::string::npos)
        << error;
    EXPECT_EQ(s.emb(), initialEmb());
  }
  // ... and so is a param the file lacks (new), which otherwise keeps its
  // initial value.
  ASSERT_TRUE(pipe_rt::writeSafetensors(
      t.initWeights, {{"head", "F32", {3}, other.data()}}, error));
  {
    Session s(p, t);
    pipe_rt::TrainerSummary sum;
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
    EXPECT_NE(error.find("1 params are not in the file (emb) and 1 tensors "
                         "name no param (head)"),
              std::string::npos)
        << error;
  }
  t.initWeightsStrict = false;
  {
    Session s(p, t);
    pipe_rt::TrainerSummary sum;
    ASSERT_TRUE(pipe_rt::runTraining(s.s, t, sum, error)) << error;
    EXPECT_TRUE(contains(lines, "  new (not in the file, keep their initial "
                                "value): emb"));
    EXPECT_EQ(s.emb(), initialEmb());
  }
  // A shape mismatch names the tensor and loads nothing.
  ASSERT_TRUE(pipe_rt::writeSafetensors(
      t.initWeights, {{"emb", "F32", {3}, other.data()}}, error));
  {
    Session s(p, t);
    pipe_rt::TrainerSummary sum;
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
    EXPECT_NE(error.find("'emb' is F32 [3]"), std::string::npos) << error;
    EXPECT_EQ(s.emb(), initialEmb());
  }
  t.initWeights.clear();
  Session s(p, t);
  pipe_rt::TrainerSummary sum;
  t.evalSchedule = "train";
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("not forward-only"), std::string::npos) << error;
  t.evalSchedule.clear();
  t.trainSchedule = "nope";
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("train (gpipe), eval (gpipe, forward-only)"),
            std::string::npos)
      << error;
  // The session must have been created with the trainer's optimizer.
  t.trainSchedule.clear();
  t.optimizer = PIPE_RT_OPTIM_SGD;
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("initSessionOptions"), std::string::npos) << error;
}

TEST(Trainer, SaveSurvivesKillDuringWrite) {
  // A child rewrites a 4 MiB file in a loop and is killed at some point of
  // a write: the file at the path is always a complete, valid earlier one.
  std::string path = tempPath("atomic.safetensors"), error;
  std::vector<float> big(1 << 20, 1.0f);
  ASSERT_TRUE(pipe_rt::writeSafetensors(
      path, {{"x", "F32", {int64_t(big.size())}, big.data()}}, error));
  for (int round = 0; round < 3; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string e;
      for (float v = 2;; ++v) {
        std::fill(big.begin(), big.end(), v);
        pipe_rt::writeSafetensors(
            path, {{"x", "F32", {int64_t(big.size())}, big.data()}}, e);
      }
    }
    ::usleep(useconds_t(20000 + 15000 * round));
    ::kill(pid, SIGKILL);
    int status;
    ::waitpid(pid, &status, 0);
    pipe_rt::StFile f;
    ASSERT_TRUE(pipe_rt::readSafetensors(path, f, error)) << error;
    const pipe_rt::StTensor *x = f.find("x");
    ASSERT_TRUE(x);
    ASSERT_EQ(x->end - x->begin, big.size() * 4);
    float first, last;
    std::memcpy(&first, f.data.data() + x->begin, 4);
    std::memcpy(&last, f.data.data() + x->end - 4, 4);
    EXPECT_EQ(first, last); // one write, not a mix
    // The killed child may leave its temporary file behind.
    std::remove((path + ".tmp." + std::to_string(pid)).c_str());
  }
}

//===--- Hostile and unlucky input ----------------------------------------===//

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// Rewrites safetensors `path` after `edit` changed tensor `name`'s bytes.
void patchTensor(const std::string &path, const std::string &name,
                 const std::function<void(unsigned char *)> &edit) {
  pipe_rt::StFile f;
  std::string error;
  ASSERT_TRUE(pipe_rt::readSafetensors(path, f, error)) << error;
  std::vector<pipe_rt::StWriteTensor> ts;
  for (const pipe_rt::StTensor &t : f.tensors) {
    if (t.name == name)
      edit(f.data.data() + t.begin);
    ts.push_back({t.name, t.dtype, t.shape, f.data.data() + t.begin});
  }
  ASSERT_TRUE(pipe_rt::writeSafetensors(path, ts, error)) << error;
}

void patchScalar(const std::string &path, const std::string &name, int64_t v) {
  patchTensor(path, name,
              [&](unsigned char *p) { std::memcpy(p, &v, sizeof(v)); });
}

TEST(Trainer, CraftedCheckpointFieldsAreCheckedBeforeAnyChange) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 4;
  t.checkpointPath = tempPath("crafted.ckpt");
  pipe_rt::TrainerSummary sum;
  trainOnce(p, t, sum);
  const std::string good = readBytes(t.checkpointPath);
  t.resume = true;
  t.steps = 6;
  // 4 steps x 2 micro-batches x 2 windows drew 16 offsets: at most
  // 2 * 16 + 64 are believable.
  struct Case {
    const char *field;
    int64_t value;
    bool accepted;
  };
  const Case cases[] = {
      {"trainer.data_cursor", 8, true},
      {"trainer.data_cursor", 7, false},
      {"trainer.data_cursor", 9, false},
      {"trainer.data_cursor", INT64_MAX, false},
      {"trainer.data_cursor", -1, false},
      {"trainer.rng_draws", 96, true},
      {"trainer.rng_draws", 97, false},
      {"trainer.rng_draws", int64_t(1) << 62, false},
      {"trainer.rng_draws", -1, false},
      {"trainer.step", -1, false},
      {"trainer.step", pipe_rt::kMaxSteps + 2, false},
      {"trainer.step", INT64_MIN, false},
      {"trainer.format", 2, false},
  };
  for (const Case &c : cases) {
    writeBytes(t.checkpointPath, good);
    patchScalar(t.checkpointPath, c.field, c.value);
    Session s(p, t);
    std::vector<float> before = s.emb();
    std::string error;
    bool ok = pipe_rt::runTraining(s.s, t, sum, error);
    EXPECT_EQ(ok, c.accepted) << c.field << " " << c.value << ": " << error;
    if (ok)
      continue;
    EXPECT_NE(error.find(t.checkpointPath), std::string::npos) << error;
    EXPECT_NE(error.find(c.field), std::string::npos) << error;
    EXPECT_EQ(s.emb(), before) << error;
  }

  // A NaN in the optimizer state, and a checkpoint of another model.
  writeBytes(t.checkpointPath, good);
  patchTensor(t.checkpointPath, "emb.exp_avg", [](unsigned char *p) {
    float nan = std::nanf("");
    std::memcpy(p + 5 * sizeof(float), &nan, sizeof(nan));
  });
  {
    Session s(p, t);
    std::vector<float> before = s.emb();
    std::string error;
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
    EXPECT_NE(error.find("tensor 'emb.exp_avg' holds nan at element 5"),
              std::string::npos)
        << error;
    EXPECT_EQ(s.emb(), before);
  }
  std::vector<float> other(3, 0.5f);
  int64_t zero = 0, one = 1;
  std::string error;
  ASSERT_TRUE(
      pipe_rt::writeSafetensors(t.checkpointPath,
                                {{"w", "F32", {3}, other.data()},
                                 {"optimizer.step", "I64", {}, &zero},
                                 {"trainer.format", "I64", {}, &one},
                                 {"trainer.step", "I64", {}, &zero},
                                 {"trainer.seed", "I64", {}, &zero},
                                 {"trainer.rng_draws", "I64", {}, &zero},
                                 {"trainer.data_cursor", "I64", {}, &zero}},
                                error));
  Session s(p, t);
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("no tensor 'emb'"), std::string::npos) << error;
}

TEST(Trainer, DivergedTrainingKeepsTheLastGoodFiles) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 4;
  t.checkpointPath = tempPath("diverge.ckpt");
  t.saveWeights = tempPath("diverge.safetensors");
  pipe_rt::TrainerSummary sum;
  trainOnce(p, t, sum);
  std::string ckpt = readBytes(t.checkpointPath);
  std::string weights = readBytes(t.saveWeights);
  // A finite but absurd rate: step 5 moves emb to about 1e38, step 6's
  // squared error overflows.
  t.resume = true;
  t.steps = 8;
  t.checkpointEvery = 2;
  t.lr = 1e38f;
  Session s(p, t);
  std::string error;
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("step 6: the loss is inf"), std::string::npos) << error;
  EXPECT_NE(error.find("keeps step 4"), std::string::npos) << error;
  EXPECT_EQ(readBytes(t.checkpointPath), ckpt);
  EXPECT_EQ(readBytes(t.saveWeights), weights);
}

TEST(Trainer, NonFiniteWeightsAreRefusedWhenLoaded) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  std::vector<float> emb = initialEmb();
  emb[7] = INFINITY;
  t.initWeights = tempPath("nan-init.safetensors");
  std::string error;
  ASSERT_TRUE(pipe_rt::writeSafetensors(
      t.initWeights, {{"emb", "F32", {256}, emb.data()}}, error));
  pipe_rt::TrainerSummary sum;
  {
    Session s(p, t);
    std::vector<float> before = s.emb();
    EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
    EXPECT_NE(error.find(t.initWeights + ": tensor 'emb' holds inf at "
                                         "element 7"),
              std::string::npos)
        << error;
    EXPECT_EQ(s.emb(), before);
  }
  // The session's own weights (--weights) are checked before training.
  t.initWeights.clear();
  std::string weights = tempPath("nan-weights.safetensors");
  emb[7] = std::nanf("");
  ASSERT_TRUE(pipe_rt::writeSafetensors(
      weights, {{"emb", "F32", {256}, emb.data()}}, error));
  Session s(p, t, weights);
  ASSERT_TRUE(s.s) << s.error;
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find(weights + ": param 'emb' holds nan at element 7"),
            std::string::npos)
      << error;
}

TEST(Trainer, FailedPeriodicCheckpointIsAWarning) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 2;
  t.checkpointPath = tempPath("blocked.ckpt");
  pipe_rt::TrainerSummary sum;
  trainOnce(p, t, sum);
  std::string good = readBytes(t.checkpointPath);
  // A directory where the writer's temporary file goes: every write fails.
  std::string blocker = t.checkpointPath + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(blocker.c_str(), 0755), 0);
  t.resume = true;
  t.steps = 6;
  t.checkpointEvery = 2;
  Session s(p, t);
  std::string error;
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  ::rmdir(blocker.c_str());
  EXPECT_EQ(sum.steps, 6); // the warnings did not stop training
  EXPECT_TRUE(contains(lines, "warning: step 4: cannot write the checkpoint"));
  EXPECT_TRUE(contains(lines, "keeps step 2"));
  EXPECT_NE(error.find(t.checkpointPath), std::string::npos) << error;
  EXPECT_EQ(readBytes(t.checkpointPath), good);
}

TEST(Trainer, ResumedLogHoldsEveryStepOnce) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 8;
  t.checkpointPath = tempPath("log.ckpt");
  std::remove(t.checkpointPath.c_str());
  t.logJson = tempPath("resumed.jsonl");
  t.resume = true;
  t.stopAfter = 4;
  pipe_rt::TrainerSummary sum;
  trainOnce(p, t, sum);
  std::string first = readBytes(t.logJson);
  // As if killed after logging steps 5 and 6 (and half of 7) but before
  // their checkpoint.
  writeBytes(t.logJson, first + "{\"step\":5,\"loss\":1}\n"
                                "{\"step\":6,\"loss\":1}\n{\"step\":7,\"lo");
  t.stopAfter = 0;
  trainOnce(p, t, sum);
  std::ifstream log(t.logJson);
  std::vector<std::string> recs;
  for (std::string l; std::getline(log, l);)
    recs.push_back(l);
  ASSERT_EQ(recs.size(), 8u) << readBytes(t.logJson);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(recs[i].rfind("{\"step\":" + std::to_string(i + 1) + ",", 0), 0u)
        << recs[i];
  EXPECT_EQ(readBytes(t.logJson).substr(0, first.size()), first);
}

TEST(Trainer, StaleTemporariesAreRemoved) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.steps = 2;
  t.checkpointPath = tempPath("stale.ckpt");
  pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0)
    ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  std::string stale = t.checkpointPath + ".tmp." + std::to_string(dead);
  std::string live = t.checkpointPath + ".tmp.1"; // init never dies
  writeBytes(stale, "half a checkpoint");
  writeBytes(live, "someone else's");
  pipe_rt::TrainerSummary sum;
  trainOnce(p, t, sum);
  EXPECT_NE(::access(stale.c_str(), F_OK), 0);
  EXPECT_EQ(::access(live.c_str(), F_OK), 0);
  std::remove(live.c_str());
}

TEST(Trainer, FullDiskFailsTheLog) {
  Program p = makeProgram();
  std::vector<std::string> lines;
  pipe_rt::TrainerOptions t = baseOptions(lines);
  t.logJson = "/dev/full";
  Session s(p, t);
  pipe_rt::TrainerSummary sum;
  std::string error;
  EXPECT_FALSE(pipe_rt::runTraining(s.s, t, sum, error));
  EXPECT_NE(error.find("/dev/full: cannot write the log: No space left"),
            std::string::npos)
      << error;
}

TEST(Trainer, SessionRefusesWatchdogAndThreadsOutOfRange) {
  Program p = makeProgram();
  std::string weights = writeWeights();
  auto create = [&](double watchdog, unsigned threads) {
    pipe_rt_session_options o;
    pipe_rt_session_options_init(&o);
    o.weights_path = weights.c_str();
    o.watchdog_seconds = watchdog;
    o.optimizer_threads = threads;
    pipe_rt_session *s = nullptr;
    char buf[512] = "";
    int st =
        pipe_rt_session_create(Program::lookup, &p, &o, &s, buf, sizeof(buf));
    pipe_rt_session_destroy(s);
    return st == PIPE_RT_OK ? std::string() : std::string(buf);
  };
  EXPECT_EQ(create(1e6, 1), "");
  for (double w : {1e6 * 1.000001, 1e20, double(INFINITY), double(NAN), 0.0})
    EXPECT_NE(create(w, 1).find("the watchdog must be in (0, 1e+06] s"),
              std::string::npos)
        << w;
  EXPECT_NE(create(60, 1025).find("at most 1024 host optimizer threads"),
            std::string::npos);
}

} // namespace

TEST(TrainerSummary, SlowThroughputKeepsTwoDigits) {
  pipe_rt::TrainerSummary summary;
  summary.unit = "samples";
  summary.itemsPerSecond = 0.42;
  EXPECT_NE(pipe_rt::formatSummary(summary).find("throughput: 0.42 samples/s"),
            std::string::npos);
  summary.itemsPerSecond = 12345.6;
  EXPECT_NE(pipe_rt::formatSummary(summary).find("throughput: 12346 samples/s"),
            std::string::npos);
}
