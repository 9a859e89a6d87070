//===- DevicesTest.cpp - Tests of the simulated devices and channels ------===//
//
// Arenas, matched send/recv channels, the watchdog and per-device worker
// threads of pipe/Runtime/Devices.h.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Devices.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Devs {
  Devs(std::vector<uint64_t> caps, double watchdog)
      : devs(pipe_rt_devices_create(int(caps.size()), caps.data(), watchdog)) {}
  ~Devs() { pipe_rt_devices_destroy(devs); }
  pipe_rt_devices *devs;
};

pipe_rt_channel_key key(pipe_rt_channel_kind kind, int src, int dst, int mb) {
  pipe_rt_channel_key k;
  k.kind = kind;
  k.src_stage = src;
  k.dst_stage = dst;
  k.micro_batch = mb;
  k.step = 0;
  return k;
}

constexpr int kMicroBatches = 4;
constexpr int kElems = 1000;

float activationValue(int mb, int i) { return float(mb * 10000 + i) * 0.5f; }
float gradientOf(float act) { return act * 2.0f + 1.0f; }

/// GPipe on two devices, stage s on device s: device 0 runs the forward of
/// every micro-batch (sending activations), then receives the gradients in
/// reverse order; device 1 receives each activation and sends back its
/// gradient in reverse micro-batch order.
struct GPipeRun {
  pipe_rt_devices *devs;
  int errors[2] = {0, 0};
};

#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    int s_ = (expr);                                                           \
    if (s_ != PIPE_RT_OK)                                                      \
      return s_;                                                               \
  } while (0)

int gpipeDevice(int device, void *userData) {
  auto *run = static_cast<GPipeRun *>(userData);
  pipe_rt_devices *devs = run->devs;
  const uint64_t bytes = kElems * sizeof(float);
  void *buf[kMicroBatches];
  for (int mb = 0; mb < kMicroBatches; ++mb)
    CHECK_OK(pipe_rt_alloc(devs, device, bytes, "activation", &buf[mb]));
  if (device == 0) {
    pipe_rt_token sends[kMicroBatches];
    for (int mb = 0; mb < kMicroBatches; ++mb) {
      float *act = static_cast<float *>(buf[mb]);
      for (int i = 0; i < kElems; ++i)
        act[i] = activationValue(mb, i);
      pipe_rt_channel_key k = key(PIPE_RT_CHANNEL_ACTIVATION, 0, 1, mb);
      CHECK_OK(pipe_rt_send(devs, 0, &k, act, bytes, &sends[mb]));
    }
    for (int mb = kMicroBatches - 1; mb >= 0; --mb) {
      pipe_rt_channel_key k = key(PIPE_RT_CHANNEL_GRADIENT, 1, 0, mb);
      pipe_rt_token t;
      std::vector<float> grad(kElems, -1.0f);
      CHECK_OK(pipe_rt_recv(devs, 0, &k, grad.data(), bytes, &t));
      CHECK_OK(pipe_rt_wait(devs, 0, t));
      for (int i = 0; i < kElems; ++i)
        if (grad[i] != gradientOf(activationValue(mb, i)))
          ++run->errors[0];
    }
    for (int mb = 0; mb < kMicroBatches; ++mb)
      CHECK_OK(pipe_rt_wait(devs, 0, sends[mb]));
  } else {
    for (int mb = 0; mb < kMicroBatches; ++mb) {
      pipe_rt_channel_key k = key(PIPE_RT_CHANNEL_ACTIVATION, 0, 1, mb);
      pipe_rt_token t;
      CHECK_OK(pipe_rt_recv(devs, 1, &k, buf[mb], bytes, &t));
      CHECK_OK(pipe_rt_wait(devs, 1, t));
      const float *act = static_cast<const float *>(buf[mb]);
      for (int i = 0; i < kElems; ++i)
        if (act[i] != activationValue(mb, i))
          ++run->errors[1];
    }
    for (int mb = kMicroBatches - 1; mb >= 0; --mb) {
      std::vector<float> grad(kElems);
      const float *act = static_cast<const float *>(buf[mb]);
      for (int i = 0; i < kElems; ++i)
        grad[i] = gradientOf(act[i]);
      pipe_rt_channel_key k = key(PIPE_RT_CHANNEL_GRADIENT, 1, 0, mb);
      pipe_rt_token t;
      CHECK_OK(pipe_rt_send(devs, 1, &k, grad.data(), bytes, &t));
      grad.assign(kElems, 0.0f); // the send copied: reuse is safe
      CHECK_OK(pipe_rt_wait(devs, 1, t));
    }
  }
  for (int mb = 0; mb < kMicroBatches; ++mb)
    CHECK_OK(pipe_rt_free(devs, device, buf[mb]));
  return PIPE_RT_OK;
}

TEST(Devices, GPipeTwoDevicesDataIntact) {
  Devs d({1u << 20, 1u << 20}, 10.0);
  ASSERT_NE(d.devs, nullptr);
  GPipeRun run{d.devs};
  ASSERT_EQ(pipe_rt_run_devices(d.devs, gpipeDevice, &run), PIPE_RT_OK)
      << pipe_rt_last_error(d.devs);
  EXPECT_EQ(run.errors[0], 0);
  EXPECT_EQ(run.errors[1], 0);
  for (int dev = 0; dev < 2; ++dev) {
    uint64_t inUse = 1, peak = 0;
    ASSERT_EQ(pipe_rt_device_memory(d.devs, dev, &inUse, &peak), PIPE_RT_OK);
    EXPECT_EQ(inUse, 0u);
    EXPECT_EQ(peak, uint64_t(kMicroBatches) * kElems * sizeof(float));
  }
}

TEST(Devices, ArenaOverCapacity) {
  Devs d({4096, 1000}, 1.0);
  void *w = nullptr, *a = nullptr;
  ASSERT_EQ(pipe_rt_alloc(d.devs, 1, 600, "weights s1", &w), PIPE_RT_OK);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u);
  EXPECT_EQ(pipe_rt_alloc(d.devs, 1, 500, "activation mb 1", &a),
            PIPE_RT_OUT_OF_MEMORY);
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(std::string(pipe_rt_last_error(d.devs)),
            "device 1: allocation 'activation mb 1' of 500 bytes exceeds the "
            "arena: 600 of 1000 bytes in use");
  // Device 0 has its own arena; after the free device 1 has room again.
  EXPECT_EQ(pipe_rt_alloc(d.devs, 0, 500, "x", &a), PIPE_RT_OK);
  EXPECT_EQ(pipe_rt_free(d.devs, 0, a), PIPE_RT_OK);
  EXPECT_EQ(pipe_rt_free(d.devs, 1, w), PIPE_RT_OK);
  EXPECT_EQ(pipe_rt_alloc(d.devs, 1, 1000, "all", &a), PIPE_RT_OK);
  uint64_t inUse = 0, peak = 0;
  EXPECT_EQ(pipe_rt_device_memory(d.devs, 1, &inUse, &peak), PIPE_RT_OK);
  EXPECT_EQ(inUse, 1000u);
  EXPECT_EQ(peak, 1000u);
  // Freeing on the wrong device is an error, not a corruption.
  EXPECT_EQ(pipe_rt_free(d.devs, 0, a), PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(pipe_rt_free(d.devs, 1, a), PIPE_RT_OK);
}

TEST(Devices, SizeMismatchNamesBothEnds) {
  Devs d({0, 0}, 1.0);
  pipe_rt_channel_key k = key(PIPE_RT_CHANNEL_ACTIVATION, 0, 1, 2);
  std::vector<char> src(16, 'x'), dst(8, 'y');
  pipe_rt_token ts = 0, tr = 0;
  ASSERT_EQ(pipe_rt_send(d.devs, 0, &k, src.data(), 16, &ts), PIPE_RT_OK);
  EXPECT_EQ(pipe_rt_recv(d.devs, 1, &k, dst.data(), 8, &tr),
            PIPE_RT_SIZE_MISMATCH);
  EXPECT_EQ(std::string(pipe_rt_last_error(d.devs)),
            "size mismatch on activation s0->s1 mb 2 step 0: device 0 sent 16 "
            "bytes, device 1 receives 8 bytes");
  EXPECT_EQ(dst, std::vector<char>(8, 'y'));
  EXPECT_EQ(pipe_rt_wait(d.devs, 0, ts), PIPE_RT_SIZE_MISMATCH);
  EXPECT_EQ(pipe_rt_wait(d.devs, 1, tr), PIPE_RT_SIZE_MISMATCH);
  // The run is aborted: later transfers fail at once.
  pipe_rt_token t = 0;
  EXPECT_EQ(pipe_rt_send(d.devs, 0, &k, src.data(), 16, &t), PIPE_RT_ABORTED);
}

int recvFirst(int device, void *userData) {
  auto *devs = static_cast<pipe_rt_devices *>(userData);
  int other = 1 - device;
  float in[4], out[4] = {1, 2, 3, 4};
  // Each device waits for the other's activation before sending its own.
  pipe_rt_channel_key rk = key(PIPE_RT_CHANNEL_ACTIVATION, other, device, 3);
  pipe_rt_token t;
  CHECK_OK(pipe_rt_recv(devs, device, &rk, in, sizeof(in), &t));
  CHECK_OK(pipe_rt_wait(devs, device, t));
  pipe_rt_channel_key sk = key(PIPE_RT_CHANNEL_ACTIVATION, device, other, 3);
  CHECK_OK(pipe_rt_send(devs, device, &sk, out, sizeof(out), &t));
  return pipe_rt_wait(devs, device, t);
}

TEST(Devices, WatchdogReportsDeadlock) {
  Devs d({0, 0}, 0.2);
  auto start = std::chrono::steady_clock::now();
  int status = pipe_rt_run_devices(d.devs, recvFirst, d.devs);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(status, PIPE_RT_TIMEOUT);
  EXPECT_LT(seconds, 5.0);
  std::string msg = pipe_rt_last_error(d.devs);
  bool dev0 = msg == "device 0: recv activation s1->s0 mb 3 step 0 did not "
                     "match a send within 0.2 s";
  bool dev1 = msg == "device 1: recv activation s0->s1 mb 3 step 0 did not "
                     "match a send within 0.2 s";
  EXPECT_TRUE(dev0 || dev1) << msg;
}

TEST(Devices, WatchdogReportsUnreceivedSend) {
  Devs d({0}, 0.05);
  pipe_rt_channel_key k = key(PIPE_RT_CHANNEL_GRADIENT, 1, 0, 0);
  float x = 1;
  pipe_rt_token t;
  ASSERT_EQ(pipe_rt_send(d.devs, 0, &k, &x, sizeof(x), &t), PIPE_RT_OK);
  EXPECT_EQ(pipe_rt_wait(d.devs, 0, t), PIPE_RT_TIMEOUT);
  EXPECT_EQ(std::string(pipe_rt_last_error(d.devs)),
            "device 0: send gradient s1->s0 mb 0 step 0 did not match a recv "
            "within 0.05 s");
}

TEST(Devices, InvalidArguments) {
  uint64_t cap = 10;
  EXPECT_EQ(pipe_rt_devices_create(0, &cap, 1.0), nullptr);
  EXPECT_EQ(pipe_rt_devices_create(1, nullptr, 1.0), nullptr);
  EXPECT_EQ(pipe_rt_devices_create(1, &cap, 0.0), nullptr);
  Devs d({10}, 1.0);
  void *p = nullptr;
  EXPECT_EQ(pipe_rt_alloc(d.devs, 1, 1, "x", &p), PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(pipe_rt_wait(d.devs, 0, 12345), PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(pipe_rt_run_devices(d.devs, nullptr, nullptr),
            PIPE_RT_INVALID_ARGUMENT);
}

} // namespace
