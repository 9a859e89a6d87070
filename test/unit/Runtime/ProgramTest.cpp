//===- ProgramTest.cpp - Tests of program sessions without the compiler ---===//
//
// Sessions, actions and their errors on the hand-written program of
// TinyProgram.h (y = x * w1 on stage s0; z = y * w2 and loss = sum(z^2) on
// stage s1), with its device programs or the ones below.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsIO.h"
#include "TinyProgram.h"

#include "pipe/Runtime/Program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using tiny::gM;
using tiny::l2l;
using tiny::oneDevice;
using tiny::pipedream;
using tiny::Program;
using tiny::twoDev0;
using tiny::twoDev1;

//===--- Device programs (the others are TinyProgram.h's) ----------------===//

int32_t deadlock0(pipe_rt_device_ctx *) { return 0; }
int32_t deadlock1(pipe_rt_device_ctx *c) {
  TINY_TOKEN(t, tiny::transfer(c, false, 0, 0, 1, 0, 0));
  TINY_CHECK(pipe_rt_act_wait(c, t));
  return 0;
}

/// Device 1 receives s0's activation but names 3 elements where the buffer
/// holds 2.
int32_t wrongCount1(pipe_rt_device_ctx *c) {
  void *buffer = nullptr;
  TINY_CHECK(pipe_rt_comm_recv_buffer(c, 0, 0, 1, 0, 0, &buffer));
  TINY_TOKEN(t, pipe_rt_comm_recv(pipe_rt_comm_of(c), buffer, 3,
                                  PIPE_RT_DTYPE_F32, 0));
  TINY_CHECK(pipe_rt_act_wait(c, t));
  return 0;
}

/// Device 1 sends a buffer it never obtained.
int32_t unknownBuffer1(pipe_rt_device_ctx *c) {
  float data[2] = {0, 0};
  TINY_TOKEN(
      t, pipe_rt_comm_send(pipe_rt_comm_of(c), data, 2, PIPE_RT_DTYPE_F32, 0));
  TINY_CHECK(pipe_rt_act_wait(c, t));
  return 0;
}

/// Device 1 all-reduces w2's gradient (f32[2]) naming 3 elements.
int32_t wrongAllreduceCount1(pipe_rt_device_ctx *c) {
  void *buffer = nullptr;
  TINY_CHECK(pipe_rt_comm_grad_buffer(c, 1, 0, &buffer));
  TINY_CHECK(
      pipe_rt_comm_allreduce(pipe_rt_comm_of(c), buffer, 3, PIPE_RT_DTYPE_F32));
  return 0;
}

/// Device 1 starts the all-reduce of a bucket of w2's gradient (f32[2])
/// naming 3 elements.
int32_t wrongBucketCount1(pipe_rt_device_ctx *c) {
  void *buffer = nullptr;
  int32_t params[] = {1};
  TINY_CHECK(pipe_rt_comm_bucket_buffer(c, params, 1, 0, &buffer));
  TINY_TOKEN(t, pipe_rt_comm_allreduce_start(pipe_rt_comm_of(c), buffer, 3,
                                             PIPE_RT_DTYPE_F32));
  TINY_CHECK(pipe_rt_act_wait(c, t));
  return 0;
}

/// Device 1 starts an all-reduce of a buffer it never obtained.
int32_t unknownBucket1(pipe_rt_device_ctx *c) {
  float data[2] = {0, 0};
  TINY_TOKEN(t, pipe_rt_comm_allreduce_start(pipe_rt_comm_of(c), data, 2,
                                             PIPE_RT_DTYPE_F32));
  TINY_CHECK(pipe_rt_act_wait(c, t));
  return 0;
}

/// Device 1 asks for a bucket of w1, which only device 0 reads.
int32_t foreignBucket1(pipe_rt_device_ctx *c) {
  void *buffer = nullptr;
  int32_t params[] = {1, 0};
  TINY_CHECK(pipe_rt_comm_bucket_buffer(c, params, 2, 0, &buffer));
  return 0;
}

/// Device 1 asks for an empty bucket.
int32_t emptyBucket1(pipe_rt_device_ctx *c) {
  void *buffer = nullptr;
  TINY_CHECK(pipe_rt_comm_bucket_buffer(c, nullptr, 0, 0, &buffer));
  return 0;
}

/// Device 1 closes a group it never opened.
int32_t unopenedGroup1(pipe_rt_device_ctx *c) {
  TINY_CHECK(pipe_rt_comm_group_start(pipe_rt_comm_of(c)));
  TINY_CHECK(pipe_rt_comm_group_end(pipe_rt_comm_of(c)));
  TINY_CHECK(pipe_rt_comm_group_end(pipe_rt_comm_of(c)));
  return 0;
}

//===--- The program ------------------------------------------------------===//

/// `devices`: device of stage s1 (s0 is on device 0). `tied`: r1 reads w1
/// instead of w2.
Program makeProgram(int devices, bool tied, const std::string &kind, int steps,
                    tiny::DeviceProgram dev0, tiny::DeviceProgram dev1,
                    bool ps = false) {
  tiny::Spec spec;
  spec.devices = devices;
  spec.tied = tied;
  spec.kind = kind;
  spec.steps = steps;
  spec.ps = ps;
  // What an asynchronous kind's schedule op states and LowerToHost writes.
  spec.versions = kind == "pipedream-async";
  spec.dev0 = dev0;
  spec.dev1 = dev1;
  return tiny::makeProgram<false>(spec);
}

std::string tempPath(const std::string &name) {
  return testing::TempDir() + "pipe-rt-" + std::to_string(::getpid()) + "-" +
         name;
}

const float kW1[2] = {0.5f, -1.0f}, kW2[2] = {2.0f, 0.25f};

std::string writeWeights(bool withW2 = true) {
  std::string path = tempPath(withW2 ? "w.safetensors" : "w1.safetensors");
  std::vector<pipe_rt::StWriteTensor> ts = {{"w1", "F32", {2}, kW1}};
  if (withW2)
    ts.push_back({"w2", "F32", {2}, kW2});
  std::string error;
  EXPECT_TRUE(pipe_rt::writeSafetensors(path, ts, error)) << error;
  return path;
}

struct Session {
  pipe_rt_session *s = nullptr;
  std::string error;
  int status;
  Session(Program &p, const std::string &weights,
          void (*tweak)(pipe_rt_session_options &) = nullptr) {
    pipe_rt_session_options o;
    pipe_rt_session_options_init(&o);
    o.weights_path = weights.c_str();
    o.optimizer = PIPE_RT_OPTIM_SGD;
    o.sgd.lr = 0.1f;
    o.optimizer_threads = 1;
    o.watchdog_seconds = 5;
    if (tweak)
      tweak(o);
    char buf[512] = "";
    status =
        pipe_rt_session_create(Program::lookup, &p, &o, &s, buf, sizeof(buf));
    error = buf;
  }
  ~Session() { pipe_rt_session_destroy(s); }
  std::vector<float> param(int i) {
    std::vector<float> v(2);
    EXPECT_EQ(pipe_rt_session_read_param(s, i, v.data()), PIPE_RT_OK);
    return v;
  }
};

std::vector<const void *> inputsFor(int steps) {
  std::vector<const void *> in;
  for (int i = 0; i < steps * gM; ++i)
    in.push_back(tiny::data()[i % tiny::data().size()].data());
  return in;
}

/// Reference: one SGD step (lr 0.1) from (w1, w2) on micro-batches
/// [first, first + gM), gradients averaged.
void referenceStep(const float *w1, const float *w2, int first, float *n1,
                   float *n2, float *losses, bool tied) {
  float g1[2] = {0, 0}, g2[2] = {0, 0};
  for (int mb = 0; mb < gM; ++mb) {
    const float *x = tiny::data()[(first + mb) % tiny::data().size()].data();
    float l = 0;
    for (int i = 0; i < 2; ++i) {
      float a = tied ? w1[i] : w2[i];
      float z = x[i] * w1[i] * a;
      l += z * z;
      float dz = 2 * z / gM;
      g1[i] += dz * x[i] * a;
      (tied ? g1 : g2)[i] += dz * x[i] * w1[i];
    }
    if (losses)
      losses[mb] = l;
  }
  for (int i = 0; i < 2; ++i) {
    n1[i] = w1[i] - 0.1f * g1[i];
    n2[i] = w2[i] - 0.1f * g2[i];
  }
}

//===--- Tests ------------------------------------------------------------===//

TEST(Program, OneDeviceTrains) {
  Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
  Session s(p, writeWeights());
  ASSERT_EQ(s.status, PIPE_RT_OK) << s.error;
  std::vector<const void *> in = inputsFor(1);
  float losses[2];
  ASSERT_EQ(pipe_rt_session_run(s.s, 0, in.data(), losses), PIPE_RT_OK)
      << pipe_rt_session_error(s.s);
  float n1[2], n2[2], ref[2];
  referenceStep(kW1, kW2, 0, n1, n2, ref, false);
  EXPECT_FLOAT_EQ(losses[0], ref[0]);
  EXPECT_FLOAT_EQ(losses[1], ref[1]);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(s.param(0)[i], n1[i], 1e-5);
    EXPECT_NEAR(s.param(1)[i], n2[i], 1e-5);
  }
  // Training lowers the loss.
  float again[2];
  ASSERT_EQ(pipe_rt_session_run(s.s, 0, in.data(), again), PIPE_RT_OK);
  EXPECT_LT(again[0] + again[1], losses[0] + losses[1]);
  EXPECT_GT(pipe_rt_session_peak_bytes(s.s, 0), 0u);
}

TEST(Program, TwoDevicesEqualOneDevice) {
  Program p1 = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
  Program p2 =
      makeProgram(2, false, "gpipe", 1, twoDev0<false>, twoDev1<false>);
  std::string w = writeWeights();
  Session a(p1, w), b(p2, w);
  ASSERT_EQ(b.status, PIPE_RT_OK) << b.error;
  std::vector<const void *> in = inputsFor(1);
  for (int round = 0; round < 3; ++round) {
    float la[2], lb[2];
    ASSERT_EQ(pipe_rt_session_run(a.s, 0, in.data(), la), PIPE_RT_OK);
    ASSERT_EQ(pipe_rt_session_run(b.s, 0, in.data(), lb), PIPE_RT_OK)
        << pipe_rt_session_error(b.s);
    EXPECT_EQ(0, std::memcmp(la, lb, sizeof(la)));
    EXPECT_EQ(a.param(0), b.param(0));
    EXPECT_EQ(a.param(1), b.param(1));
  }
}

TEST(Program, TiedParamReduceGrad) {
  Program p1 = makeProgram(1, true, "gpipe", 1, oneDevice, oneDevice);
  Program p2 = makeProgram(2, true, "gpipe", 1, twoDev0<true>, twoDev1<true>);
  std::string w = writeWeights();
  Session a(p1, w), b(p2, w);
  ASSERT_EQ(b.status, PIPE_RT_OK) << b.error;
  std::vector<const void *> in = inputsFor(1);
  ASSERT_EQ(pipe_rt_session_run(a.s, 0, in.data(), nullptr), PIPE_RT_OK)
      << pipe_rt_session_error(a.s);
  ASSERT_EQ(pipe_rt_session_run(b.s, 0, in.data(), nullptr), PIPE_RT_OK)
      << pipe_rt_session_error(b.s);
  float n1[2], n2[2];
  referenceStep(kW1, kW2, 0, n1, n2, nullptr, true);
  EXPECT_EQ(a.param(0), b.param(0));
  EXPECT_NEAR(a.param(0)[0], n1[0], 1e-5);
  EXPECT_NEAR(a.param(0)[1], n1[1], 1e-5);
  // w2 is read by nobody: unchanged.
  EXPECT_EQ(b.param(1), std::vector<float>(kW2, kW2 + 2));

  // Without device 1's update the replicas diverge: the run must say so.
  Program p3 =
      makeProgram(2, true, "gpipe", 1, twoDev0<true>, twoDev1<true, false>);
  Session c(p3, w);
  EXPECT_NE(pipe_rt_session_run(c.s, 0, in.data(), nullptr), PIPE_RT_OK);
  EXPECT_NE(std::string(pipe_rt_session_error(c.s)).find("w1"),
            std::string::npos);
}

TEST(Program, PipeDreamWeightVersions) {
  tiny::Microbatches oneMicrobatch(1);
  Program p = makeProgram(1, false, "pipedream-async", 2, pipedream, pipedream);
  Session s(p, writeWeights());
  ASSERT_EQ(s.status, PIPE_RT_OK) << s.error;
  std::vector<const void *> in = inputsFor(2);
  float losses[2];
  ASSERT_EQ(pipe_rt_session_run(s.s, 0, in.data(), losses), PIPE_RT_OK)
      << pipe_rt_session_error(s.s);
  // Both steps' gradients are taken at the initial weights (version 0).
  float a1[2], a2[2], b1[2], b2[2], la[1], lb[1];
  referenceStep(kW1, kW2, 0, a1, a2, la, false);
  referenceStep(kW1, kW2, 1, b1, b2, lb, false);
  EXPECT_FLOAT_EQ(losses[0], la[0]);
  EXPECT_FLOAT_EQ(losses[1], lb[0]);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(s.param(0)[i], a1[i] + b1[i] - kW1[i], 1e-5);
    EXPECT_NEAR(s.param(1)[i], a2[i] + b2[i] - kW2[i], 1e-5);
  }
}

TEST(Program, EachStepOfARunTakesItsOwnLearningRate) {
  tiny::Microbatches oneMicrobatch(1);
  Program p = makeProgram(1, false, "pipedream-async", 2, pipedream, pipedream);
  Session s(p, writeWeights());
  ASSERT_EQ(s.status, PIPE_RT_OK) << s.error;
  float nan = std::nanf("");
  float bad[] = {0.1f, nan, -1.0f};
  EXPECT_EQ(pipe_rt_session_set_step_lrs(s.s, bad, 0),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(pipe_rt_session_set_step_lrs(s.s, bad, 2),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(pipe_rt_session_set_step_lrs(s.s, bad + 2, 1),
            PIPE_RT_INVALID_ARGUMENT);
  // Step 0 at the session's 0.1, step 1 at 0: only step 0's update lands.
  float lrs[] = {0.1f, 0.0f};
  ASSERT_EQ(pipe_rt_session_set_step_lrs(s.s, lrs, 2), PIPE_RT_OK);
  std::vector<const void *> in = inputsFor(2);
  float losses[2];
  ASSERT_EQ(pipe_rt_session_run(s.s, 0, in.data(), losses), PIPE_RT_OK)
      << pipe_rt_session_error(s.s);
  float a1[2], a2[2], la[1];
  referenceStep(kW1, kW2, 0, a1, a2, la, false);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(s.param(0)[i], a1[i], 1e-6);
    EXPECT_NEAR(s.param(1)[i], a2[i], 1e-6);
  }
}

TEST(Program, DefaultOptimizerThreadsShareTheCores) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const char *saved = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  std::string savedValue = saved ? saved : "";
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  auto threads = [](Program &p, const std::string &w) {
    Session s(p, w,
              [](pipe_rt_session_options &o) { o.optimizer_threads = 0; });
    EXPECT_EQ(s.status, PIPE_RT_OK) << s.error;
    return pipe_rt_session_optimizer_threads(s.s);
  };
  std::string w = writeWeights();
  Program plain = makeProgram(1, false, "l2l", 1, l2l, l2l, /*ps=*/true);
  Program overlapped = makeProgram(1, false, "l2l", 2, l2l, l2l, /*ps=*/true);
  Program async =
      makeProgram(1, false, "pipedream-async", 2, pipedream, pipedream);
  EXPECT_EQ(threads(plain, w), cores);
  EXPECT_EQ(threads(async, w), cores);
  // Host updates beside the device by design: its thread keeps a core.
  EXPECT_EQ(threads(overlapped, w), std::max(1u, cores - 1));
  // Ranks on one host split its cores.
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  EXPECT_EQ(threads(plain, w), std::max(1u, cores / 2));
  if (saved)
    ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", savedValue.c_str(), 1);
  else
    ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  // An explicit count is kept.
  Session one(plain, w);
  EXPECT_EQ(pipe_rt_session_optimizer_threads(one.s), 1u);
}

TEST(Program, L2LEqualsOneDevice) {
  Program p1 = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
  Program p2 = makeProgram(1, false, "l2l", 1, l2l, l2l, /*ps=*/true);
  std::string w = writeWeights();
  Session a(p1, w), b(p2, w);
  ASSERT_EQ(b.status, PIPE_RT_OK) << b.error;
  pipe_rt_session_enable_trace(b.s, 1);
  std::vector<const void *> in = inputsFor(1);
  float la[2], lb[2];
  ASSERT_EQ(pipe_rt_session_run(a.s, 0, in.data(), la), PIPE_RT_OK);
  ASSERT_EQ(pipe_rt_session_run(b.s, 0, in.data(), lb), PIPE_RT_OK)
      << pipe_rt_session_error(b.s);
  EXPECT_EQ(0, std::memcmp(la, lb, sizeof(la)));
  EXPECT_EQ(a.param(0), b.param(0));
  EXPECT_EQ(a.param(1), b.param(1));
  std::string trace = tempPath("trace.json");
  ASSERT_EQ(pipe_rt_session_write_trace(b.s, trace.c_str()), PIPE_RT_OK);
  std::FILE *f = std::fopen(trace.c_str(), "r");
  ASSERT_TRUE(f);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(&text[0], 1, text.size(), f));
  std::fclose(f);
  EXPECT_NE(text.find("\"host optimizer\""), std::string::npos);
  EXPECT_NE(text.find("\"cat\":\"h2d\""), std::string::npos);
  EXPECT_NE(text.find("ps.update stage 's1'"), std::string::npos);
}

TEST(Program, DeadlockReportedByWatchdog) {
  tiny::Microbatches oneMicrobatch(1);
  Program p = makeProgram(2, false, "gpipe", 1, deadlock0, deadlock1);
  Session s(p, writeWeights(),
            [](pipe_rt_session_options &o) { o.watchdog_seconds = 0.2; });
  ASSERT_EQ(s.status, PIPE_RT_OK) << s.error;
  std::vector<const void *> in = inputsFor(1);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pipe_rt_session_run(s.s, 0, in.data(), nullptr), PIPE_RT_TIMEOUT);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(secs, 2.0);
  std::string e = pipe_rt_session_error(s.s);
  EXPECT_NE(e.find("device 1"), std::string::npos) << e;
  EXPECT_NE(e.find("recv activation"), std::string::npos) << e;
  // The failed run changed nothing.
  EXPECT_EQ(s.param(0), std::vector<float>(kW1, kW1 + 2));
}

/// A transport ABI call that does not match its buffer fails the run with
/// a message naming it, before anything moves.
TEST(Program, TransportCallsAreCheckedAgainstTheirBuffers) {
  struct Case {
    tiny::DeviceProgram dev1;
    const char *message;
  } cases[] = {
      {wrongCount1, "device 1: recv activation stage 's1' mb 0 step 0 from "
                    "stage 's0': pipe_rt_comm_recv of 3 elements of dtype 1 "
                    "with device 0, but the buffer holds 2 of dtype 1 for "
                    "device 0"},
      {unknownBuffer1, "device 1: pipe_rt_comm_send of a buffer that no "
                       "pipe_rt_comm_send_buffer of the device returned"},
      {wrongAllreduceCount1,
       "device 1: reduce_grad 'w2' step 0: pipe_rt_comm_allreduce of 3 "
       "elements of dtype 1, but the param has 2 of dtype 1"},
      {unopenedGroup1, "device 1: pipe_rt_comm_group_end without a "
                       "pipe_rt_comm_group_start"},
      {wrongBucketCount1,
       "device 1: reduce_bucket ['w2'] step 0: pipe_rt_comm_allreduce_start "
       "of 3 elements of dtype 1, but the bucket has 2 of dtype 1"},
      {unknownBucket1, "device 1: pipe_rt_comm_allreduce_start of a buffer "
                       "that the device's last pipe_rt_comm_bucket_buffer "
                       "did not return"},
      {foreignBucket1,
       "device 1: reduce_bucket: the device does not hold 'w1'"},
      {emptyBucket1, "device 1: reduce_bucket: an empty bucket"},
  };
  for (const Case &c : cases) {
    tiny::Microbatches oneMicrobatch(1);
    Program p = makeProgram(2, false, "gpipe", 1, deadlock0, c.dev1);
    Session s(p, writeWeights());
    ASSERT_EQ(s.status, PIPE_RT_OK) << s.error;
    std::vector<const void *> in = inputsFor(1);
    EXPECT_EQ(pipe_rt_session_run(s.s, 0, in.data(), nullptr),
              PIPE_RT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(pipe_rt_session_error(s.s)).find(c.message),
              std::string::npos)
        << pipe_rt_session_error(s.s);
  }
}

TEST(Program, OutOfMemoryNamesDevice) {
  Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
  Session s(p, writeWeights(),
            [](pipe_rt_session_options &o) { o.capacity_bytes = 40; });
  std::vector<const void *> in = inputsFor(1);
  EXPECT_EQ(pipe_rt_session_run(s.s, 0, in.data(), nullptr),
            PIPE_RT_OUT_OF_MEMORY);
  EXPECT_NE(std::string(pipe_rt_session_error(s.s)).find("device 0"),
            std::string::npos)
      << pipe_rt_session_error(s.s);
}

TEST(Program, CreateErrors) {
  std::string w = writeWeights();
  {
    Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
    p.abi = PIPE_RT_ABI_VERSION + 1;
    Session s(p, w);
    EXPECT_EQ(s.status, PIPE_RT_INVALID_ARGUMENT);
    EXPECT_NE(s.error.find("ABI " + std::to_string(PIPE_RT_ABI_VERSION + 1)),
              std::string::npos)
        << s.error;
  }
  {
    Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
    std::string w1 = writeWeights(false);
    Session s(p, w1);
    EXPECT_EQ(s.status, PIPE_RT_INVALID_ARGUMENT);
    EXPECT_NE(s.error.find("'w2'"), std::string::npos) << s.error;
    EXPECT_NE(s.error.find(w1), std::string::npos) << s.error;
  }
  {
    Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
    p.symbols.erase("g1w");
    Session s(p, w);
    EXPECT_NE(s.error.find("'g1w'"), std::string::npos) << s.error;
  }
  {
    Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
    p.manifest.replace(p.manifest.find("value 2 0"), 9, "value 2 9");
    Session s(p, w);
    EXPECT_NE(s.error.find("manifest line 8"), std::string::npos) << s.error;
  }
  {
    Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
    p.manifest.resize(p.manifest.size() - 4); // drop "end"
    Session s(p, w);
    EXPECT_NE(s.error.find("missing 'end'"), std::string::npos) << s.error;
  }
}

TEST(Program, SaveLoadRoundTrip) {
  Program p = makeProgram(1, false, "gpipe", 1, oneDevice, oneDevice);
  std::string w = writeWeights();
  auto adam = [](pipe_rt_session_options &o) {
    o.optimizer = PIPE_RT_OPTIM_ADAMW;
    o.adamw.lr = 0.01f;
  };
  Session a(p, w, adam), b(p, w, adam);
  std::vector<const void *> in = inputsFor(1);
  ASSERT_EQ(pipe_rt_session_run(a.s, 0, in.data(), nullptr), PIPE_RT_OK);
  std::string ckpt = tempPath("ckpt.safetensors");
  const char *names[] = {"trainer.step"};
  int64_t extra[] = {7};
  ASSERT_EQ(pipe_rt_session_save(a.s, ckpt.c_str(), names, extra, 1),
            PIPE_RT_OK)
      << pipe_rt_session_error(a.s);
  int64_t got[] = {0};
  ASSERT_EQ(pipe_rt_session_load(b.s, ckpt.c_str(), names, got, 1), PIPE_RT_OK)
      << pipe_rt_session_error(b.s);
  EXPECT_EQ(got[0], 7);
  EXPECT_EQ(a.param(0), b.param(0));
  // Same optimizer state and counter: the next step agrees bitwise.
  ASSERT_EQ(pipe_rt_session_run(a.s, 0, in.data(), nullptr), PIPE_RT_OK);
  ASSERT_EQ(pipe_rt_session_run(b.s, 0, in.data(), nullptr), PIPE_RT_OK);
  EXPECT_EQ(a.param(0), b.param(0));
  EXPECT_EQ(a.param(1), b.param(1));

  // A truncated file is an error naming it and changes nothing.
  std::string bad = tempPath("bad.safetensors");
  {
    std::FILE *in = std::fopen(ckpt.c_str(), "rb");
    std::FILE *out = std::fopen(bad.c_str(), "wb");
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof(buf), in);
    std::fwrite(buf, 1, n - 10, out);
    std::fclose(in);
    std::fclose(out);
  }
  std::vector<float> before = b.param(0);
  EXPECT_NE(pipe_rt_session_load(b.s, bad.c_str(), nullptr, nullptr, 0),
            PIPE_RT_OK);
  EXPECT_NE(std::string(pipe_rt_session_error(b.s)).find(bad),
            std::string::npos);
  EXPECT_EQ(b.param(0), before);
  // A missing extra is an error too.
  const char *missing[] = {"nope"};
  EXPECT_NE(pipe_rt_session_load(b.s, ckpt.c_str(), missing, got, 1),
            PIPE_RT_OK);
}

TEST(Program, GemmMatchesNaive) {
  // 2 batches of (3x4) * (4x5), A transposed in memory, B row-major, and a
  // strided C that forces the loop fallback.
  const int64_t M = 3, N = 5, K = 4;
  std::vector<float> a(2 * M * K), b(2 * K * N);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i % 5) * 0.5f;
  for (int64_t cStride : {int64_t(1), int64_t(2)}) {
    std::vector<float> c(2 * M * N * cStride, 1.0f);
    int64_t dims[] = {2, M, N, K};
    int64_t as[] = {M * K, 1, M}; // A[b][m][k] at k*M + m
    int64_t bs[] = {K * N, N, 1};
    int64_t cs[] = {M * N * cStride, N * cStride, cStride};
    pipe_rt_gemm_f32(a.data(), b.data(), c.data(), dims, as, bs, cs);
    for (int64_t bt = 0; bt < 2; ++bt)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float ref = 1.0f;
          for (int64_t k = 0; k < K; ++k)
            ref += a[bt * M * K + k * M + i] * b[bt * K * N + k * N + j];
          EXPECT_FLOAT_EQ(c[bt * cs[0] + i * cs[1] + j * cs[2]], ref);
        }
  }
}

} // namespace
