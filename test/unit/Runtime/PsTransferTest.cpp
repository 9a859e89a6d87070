//===- PsTransferTest.cpp - bf16 transfers of the parameter server --------===//
//
// `ps_transfer = PIPE_RT_PS_TRANSFER_BF16` (Program.h) on the L2L schedule
// of TinyProgram.h: the rounding rules (Bf16.h) and the backends'
// conversions; the simulated and the staged backend train bit-identically;
// a loaded param is exactly the bf16 rounding of the fp32 master; training
// stays close to fp32 transfers; the parameter server's copies move half
// the bytes (pipe_rt_session_copy_bytes); the staging buffers are charged;
// bad values are rejected (session option and the trainers' --ps-transfer).
//
//===----------------------------------------------------------------------===//

#include "TinyProgram.h"

#include "Bf16.h"
#include "Session.h"

#include "pipe/Runtime/TrainerFlags.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

using pipe_rt::bf16ToF32;
using pipe_rt::f32ToBf16;

namespace {

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

//===--- Rounding ---------------------------------------------------------===//

TEST(PsTransfer, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(f32ToBf16(-2.0f), 0xc000);
  // Exactly halfway: to the even neighbour, either way.
  EXPECT_EQ(f32ToBf16(fromBits(0x3f808000)), 0x3f80);
  EXPECT_EQ(f32ToBf16(fromBits(0x3f818000)), 0x3f82);
  // Just above / below halfway.
  EXPECT_EQ(f32ToBf16(fromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32ToBf16(fromBits(0x3f817fff)), 0x3f81);
  // Signed zero, infinities, overflow of the largest finite floats.
  EXPECT_EQ(f32ToBf16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32ToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(f32ToBf16(fromBits(0x7f7fffff)), 0x7f80);
  EXPECT_EQ(f32ToBf16(fromBits(0x7f7f7fff)), 0x7f7f);
  // Subnormals are kept (and round like the rest).
  EXPECT_EQ(f32ToBf16(fromBits(0x00012345)), 0x0001);
  EXPECT_EQ(f32ToBf16(fromBits(0x80018000)), 0x8002);
  // Every NaN stays NaN (the quiet 0x7fff), also those whose payload sits
  // in the low half only.
  EXPECT_EQ(f32ToBf16(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  EXPECT_EQ(f32ToBf16(fromBits(0x7f800001)), 0x7fff);
  EXPECT_EQ(f32ToBf16(fromBits(0xff800001)), 0x7fff);
  EXPECT_TRUE(std::isnan(bf16ToF32(0x7fff)));
  // Widening is exact; narrowing a widened value gives it back.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16ToF32(uint16_t(h));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    ASSERT_EQ(bits, h << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(f32ToBf16(f), h);
    }
  }
}

/// Values that exercise every rounding rule.
std::vector<float> specialValues(size_t n) {
  std::vector<float> v(n);
  const uint32_t special[] = {0x3f808000, 0x3f818000, 0x3f808001, 0x7f7fffff,
                              0x00012345, 0x80000000, 0x7f800000, 0xff800000,
                              0x7fc00000, 0x7f800001};
  for (size_t i = 0; i < n; ++i)
    v[i] = i < std::size(special) ? fromBits(special[i])
                                  : std::sin(float(i)) * 1e3f / float(i + 1);
  return v;
}

/// narrowBf16 / widenBf16 of a DeviceMemory against Bf16.h, through
/// device buffers (odd n).
void checkConversions(pipe_rt::Backend &backend) {
  pipe_rt_devices *devs = nullptr;
  uint64_t cap = UINT64_MAX;
  devs = pipe_rt_devices_create(1, &cap, 10);
  ASSERT_NE(devs, nullptr);
  std::unique_ptr<pipe_rt::DeviceMemory> mem;
  std::string error;
  ASSERT_EQ(backend.createMemory(devs, 1, &cap, {}, 10, mem, error), PIPE_RT_OK)
      << error;
  const int64_t n = 1001;
  std::vector<float> in = specialValues(n), back(n);
  std::vector<uint16_t> narrow(n);
  void *f = nullptr, *h = nullptr, *g = nullptr;
  ASSERT_EQ(mem->alloc(0, n * 4, "f32", &f, error), PIPE_RT_OK);
  ASSERT_EQ(mem->alloc(0, n * 2, "bf16", &h, error), PIPE_RT_OK);
  ASSERT_EQ(mem->alloc(0, n * 4, "widened", &g, error), PIPE_RT_OK);
  using pipe_rt::Lane;
  ASSERT_EQ(mem->copy(0, Lane::H2D, f, in.data(), n * 4, error), PIPE_RT_OK);
  ASSERT_EQ(mem->narrowBf16(0, Lane::D2H, h, f, n, error), PIPE_RT_OK);
  ASSERT_EQ(mem->widenBf16(0, Lane::H2D, g, h, n, error), PIPE_RT_OK);
  ASSERT_EQ(mem->copy(0, Lane::D2H, narrow.data(), h, n * 2, error),
            PIPE_RT_OK);
  ASSERT_EQ(mem->copy(0, Lane::D2H, back.data(), g, n * 4, error), PIPE_RT_OK);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(narrow[i], f32ToBf16(in[i])) << "element " << i;
    float expect = bf16ToF32(f32ToBf16(in[i]));
    ASSERT_TRUE(std::memcmp(&back[i], &expect, 4) == 0) << "element " << i;
  }
  mem->free(0, f);
  mem->free(0, h);
  mem->free(0, g);
  mem.reset();
  pipe_rt_devices_destroy(devs);
}

TEST(PsTransfer, HostMemoryConvertsLikeBf16H) {
  checkConversions(*pipe_rt::hostBackend());
  checkConversions(*pipe_rt::stagedBackend());
}

//===--- Training ---------------------------------------------------------===//

int enableStaged(pipe_rt_session *s, std::string &) {
  s->backend = pipe_rt::stagedBackend();
  return 0;
}

/// Param values a block function saw, in call order (w1 from f0, w2 from
/// f1); block calls of the L2L program all run on its one device thread.
std::vector<std::vector<float>> seenW1, seenW2;
void recordF0(void **a) {
  seenW1.push_back(tiny::read<false>(a, 1, 2));
  tiny::f0<false>(a);
}
void recordF1(void **a) {
  seenW2.push_back(tiny::read<false>(a, 1, 2));
  tiny::f1<false>(a);
}

/// Weights none of whose values is a bf16 number.
std::string writeOddWeights() {
  static const float w1[2] = {0.1f, -1.3f}, w2[2] = {2.7182817f, 0.33333334f};
  std::string path = testing::TempDir() + "ps-transfer-" +
                     std::to_string(::getpid()) + ".safetensors";
  std::vector<pipe_rt::StWriteTensor> ts = {{"w1", "F32", {2}, w1},
                                            {"w2", "F32", {2}, w2}};
  std::string error;
  EXPECT_TRUE(pipe_rt::writeSafetensors(path, ts, error)) << error;
  return path;
}

using tiny::Options;
using tiny::Session;

/// Trains `rounds` runs; fills the losses and final params.
void train(const Options &o, int rounds, std::vector<float> &losses,
           std::vector<float> &params) {
  tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
  Session s(p, writeOddWeights(), o);
  ASSERT_EQ(s.error, "");
  losses.clear();
  for (int r = 0; r < rounds; ++r)
    ASSERT_TRUE(s.run(losses)) << s.error;
  params = s.params();
}

TEST(PsTransfer, StagedEqualsHostInBf16) {
  for (bool sgd : {false, true}) {
    Options host, staged;
    host.transfer = staged.transfer = PIPE_RT_PS_TRANSFER_BF16;
    host.sgd = staged.sgd = sgd;
    staged.enable = enableStaged;
    std::vector<float> lh, ph, ls, ps;
    train(host, 4, lh, ph);
    train(staged, 4, ls, ps);
    ASSERT_FALSE(lh.empty());
    EXPECT_EQ(lh, ls) << (sgd ? "sgd" : "adamw");
    EXPECT_EQ(ph, ps) << (sgd ? "sgd" : "adamw");
  }
}

class PsTransferBackend : public testing::TestWithParam<bool> {};

TEST_P(PsTransferBackend, LoadedParamIsBf16OfMaster) {
  tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
  p.symbols["f0"] = (void *)recordF0;
  p.symbols["f1"] = (void *)recordF1;
  Options o;
  o.transfer = PIPE_RT_PS_TRANSFER_BF16;
  o.enable = GetParam() ? enableStaged : nullptr;
  Session s(p, writeOddWeights(), o);
  ASSERT_EQ(s.error, "");
  std::vector<float> losses;
  bool masterOffGrid = false;
  for (int round = 0; round < 3; ++round) {
    std::vector<float> master = s.params(); // the master the run starts from
    seenW1.clear();
    seenW2.clear();
    ASSERT_TRUE(s.run(losses)) << s.error;
    // Forward and recompute of stage 0, forward of stage 1, every one with
    // the bf16 rounding of the master (loaded twice, widened exactly).
    ASSERT_EQ(seenW1.size(), size_t(2 * tiny::gM));
    ASSERT_EQ(seenW2.size(), size_t(tiny::gM));
    for (int i = 0; i < 2; ++i) {
      float w1 = bf16ToF32(f32ToBf16(master[i]));
      float w2 = bf16ToF32(f32ToBf16(master[2 + i]));
      for (auto &seen : seenW1)
        EXPECT_EQ(seen[i], w1) << "round " << round;
      for (auto &seen : seenW2)
        EXPECT_EQ(seen[i], w2) << "round " << round;
      masterOffGrid |= w1 != master[i] || w2 != master[2 + i];
    }
  }
  // The master itself stays fp32: the loads rounded something.
  EXPECT_TRUE(masterOffGrid);
}

/// The L2L body of TinyProgram.h for one step.
int32_t l2lStep(pipe_rt_device_ctx *c, int step) {
  for (int s = 0; s < 2; ++s) {
    TINY_TOKEN(t, pipe_rt_act_ps_load(c, s, step, -1));
    TINY_CHECK(pipe_rt_act_wait(c, t));
    for (int mb = 0; mb < tiny::gM; ++mb) {
      TINY_CHECK(pipe_rt_act_forward(c, s, mb, step, -1, s == 1, 0));
      TINY_TOKEN(o, pipe_rt_act_offload(c, s, mb, step));
      TINY_CHECK(pipe_rt_act_wait(c, o));
    }
    TINY_CHECK(pipe_rt_act_ps_release(c, s, step));
  }
  int64_t updates[2];
  for (int s = 1; s >= 0; --s) {
    TINY_TOKEN(t, pipe_rt_act_ps_load(c, s, step, -1));
    TINY_CHECK(pipe_rt_act_wait(c, t));
    for (int mb = 0; mb < tiny::gM; ++mb) {
      TINY_TOKEN(p, pipe_rt_act_prefetch(c, s, mb, step));
      TINY_CHECK(pipe_rt_act_wait(c, p));
      if (s == 0)
        TINY_CHECK(pipe_rt_act_recompute(c, s, mb, step, -1));
      TINY_CHECK(pipe_rt_act_backward(c, s, mb, step, -1, 0));
    }
    TINY_TOKEN(push, pipe_rt_act_ps_push(c, s, step));
    TINY_CHECK(pipe_rt_act_wait(c, push));
    TINY_TOKEN(u, pipe_rt_act_ps_update(c, s, step));
    updates[s] = u;
    TINY_CHECK(pipe_rt_act_ps_release(c, s, step));
  }
  TINY_CHECK(pipe_rt_act_wait(c, updates[1]));
  TINY_CHECK(pipe_rt_act_wait(c, updates[0]));
  return 0;
}
int32_t l2lTwoSteps(pipe_rt_device_ctx *c) {
  TINY_CHECK(l2lStep(c, 0));
  return l2lStep(c, 1);
}

TEST_P(PsTransferBackend, ShadowFollowsUpdatesWithinARun) {
  // Two steps in one run load step 1's weights from shadows that ps.update
  // refreshed; two one-step runs from shadows made when each run starts.
  // Both must see the same bf16 weights.
  Options o;
  o.transfer = PIPE_RT_PS_TRANSFER_BF16;
  o.enable = GetParam() ? enableStaged : nullptr;
  tiny::Program one = tiny::makeProgram<false>(tiny::Sched::L2L);
  tiny::Program two = tiny::makeProgram<false>(tiny::Sched::L2L);
  std::string line = "schedule 0 main gpipe 1 2 1 0\n";
  size_t at = two.manifest.find(line);
  ASSERT_NE(at, std::string::npos) << two.manifest;
  two.manifest.replace(at, line.size(), "schedule 0 main gpipe 1 2 2 0\n");
  two.symbols["dev0"] = (void *)l2lTwoSteps;
  std::string w = writeOddWeights();
  Session a(one, w, o), b(two, w, o);
  ASSERT_EQ(a.error, "");
  ASSERT_EQ(b.error, "");
  std::vector<float> la, lb;
  ASSERT_TRUE(a.run(la, 0)) << a.error;
  ASSERT_TRUE(a.run(la, tiny::gM)) << a.error;
  ASSERT_TRUE(b.run(lb, 0)) << b.error; // both steps in one run
  EXPECT_EQ(la, lb);
  EXPECT_EQ(a.params(), b.params());
}

/// One L2L step, then (when gFailAtEnd) an invalid action: the run fails
/// after the host optimizer has updated every param.
bool gFailAtEnd = false;
int32_t l2lThenMaybeFail(pipe_rt_device_ctx *c) {
  TINY_CHECK(l2lStep(c, 0));
  return gFailAtEnd ? pipe_rt_act_ps_release(c, 7, 0) : 0;
}

TEST_P(PsTransferBackend, FailedRunAfterUpdatesChangesNothing) {
  // The updates of a failed run went to the session's spare copy: its
  // weights, optimizer state and step count stay those of the last good run,
  // so the runs after it train exactly as if it had not happened.
  for (pipe_rt_ps_transfer transfer :
       {PIPE_RT_PS_TRANSFER_F32, PIPE_RT_PS_TRANSFER_BF16}) {
    Options o;
    o.transfer = transfer;
    o.enable = GetParam() ? enableStaged : nullptr;
    tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
    p.symbols["dev0"] = (void *)l2lThenMaybeFail;
    std::string w = writeOddWeights();
    Session clean(p, w, o), failed(p, w, o);
    ASSERT_EQ(clean.error + failed.error, "");
    std::vector<float> lc, lf;
    gFailAtEnd = false;
    ASSERT_TRUE(clean.run(lc)) << clean.error;
    ASSERT_TRUE(failed.run(lf)) << failed.error;
    std::vector<float> afterOne = failed.params();
    gFailAtEnd = true;
    std::vector<float> ignored;
    EXPECT_FALSE(failed.run(ignored));
    EXPECT_NE(failed.error.find("ps.release"), std::string::npos)
        << failed.error;
    gFailAtEnd = false;
    EXPECT_EQ(failed.params(), afterOne) << "transfer " << transfer;
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(clean.run(lc)) << clean.error;
      ASSERT_TRUE(failed.run(lf)) << failed.error;
    }
    EXPECT_EQ(lc, lf) << "transfer " << transfer;
    EXPECT_EQ(clean.params(), failed.params()) << "transfer " << transfer;
  }
}

TEST_P(PsTransferBackend, WeightsWrittenBetweenRunsReachTheShadows) {
  // The session keeps its bf16 shadows across runs; weights written between
  // runs must not be loaded from a stale one. The forward loss of a run
  // depends only on the loaded weights and the data, so after writing the
  // same weights it must equal a fresh session's.
  Options o;
  o.transfer = PIPE_RT_PS_TRANSFER_BF16;
  o.enable = GetParam() ? enableStaged : nullptr;
  tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
  std::string w = writeOddWeights();
  const float w1[2] = {0.25f, -1.5f}, w2[2] = {2.0f, 0.75f};
  Session used(p, w, o), fresh(p, w, o);
  ASSERT_EQ(used.error + fresh.error, "");
  std::vector<float> lu, lf;
  ASSERT_TRUE(used.run(lu)) << used.error;
  ASSERT_EQ(pipe_rt_session_write_param(used.s, 0, w1), PIPE_RT_OK);
  ASSERT_EQ(pipe_rt_session_write_param(used.s, 1, w2), PIPE_RT_OK);
  ASSERT_EQ(pipe_rt_session_write_param(fresh.s, 0, w1), PIPE_RT_OK);
  ASSERT_EQ(pipe_rt_session_write_param(fresh.s, 1, w2), PIPE_RT_OK);
  lu.clear();
  ASSERT_TRUE(used.run(lu)) << used.error;
  ASSERT_TRUE(fresh.run(lf)) << fresh.error;
  EXPECT_EQ(lu, lf);
}

INSTANTIATE_TEST_SUITE_P(Backends, PsTransferBackend, testing::Bool(),
                         [](const testing::TestParamInfo<bool> &info) {
                           return info.param ? "staged" : "host";
                         });

TEST(PsTransfer, Bf16StaysCloseToF32) {
  // 10 optimizer steps with each optimizer; relative errors measured:
  // see docs/runtime.md ("bf16 transfers").
  for (bool sgd : {true, false}) {
    Options f32, bf16;
    f32.sgd = bf16.sgd = sgd;
    bf16.transfer = PIPE_RT_PS_TRANSFER_BF16;
    std::vector<float> lf, pf, lb, pb;
    train(f32, 10, lf, pf);
    train(bf16, 10, lb, pb);
    ASSERT_EQ(lf.size(), lb.size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < pf.size(); ++i) {
      diff += double(pb[i] - pf[i]) * (pb[i] - pf[i]);
      norm += double(pf[i]) * pf[i];
    }
    double rel = std::sqrt(diff / norm);
    double worstLoss = 0;
    for (size_t i = 0; i < lf.size(); ++i)
      worstLoss = std::max(worstLoss, double(std::fabs(lb[i] - lf[i])) /
                                          std::max(1e-6f, std::fabs(lf[i])));
    char text[64];
    std::snprintf(text, sizeof(text), "%.3g", rel);
    RecordProperty(sgd ? "sgd_param_rel" : "adamw_param_rel", text);
    std::snprintf(text, sizeof(text), "%.3g", worstLoss);
    RecordProperty(sgd ? "sgd_loss_rel" : "adamw_loss_rel", text);
    // bf16 keeps 8 significant bits (relative rounding <= 2^-9 = 2e-3); the
    // loss, a product of four weights squared, sees several roundings.
    EXPECT_GT(rel, 0) << "bf16 transfers changed nothing";
    EXPECT_LT(rel, 4e-3) << (sgd ? "sgd" : "adamw");
    EXPECT_LT(worstLoss, 5e-2) << (sgd ? "sgd" : "adamw");
    // Training still went somewhere: the loss moved.
    EXPECT_NE(lb.front(), lb.back());
  }
}

TEST(PsTransfer, ExplicitF32IsTheDefault) {
  Options o;
  std::vector<float> l1, p1, l2, p2;
  train(o, 3, l1, p1);
  o.transfer = PIPE_RT_PS_TRANSFER_F32;
  train(o, 3, l2, p2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(p1, p2);
}

TEST(PsTransfer, CopiesMoveHalfTheBytes) {
  // Staged backend (every host access is a copy, as on a GPU): one run each.
  uint64_t h2d[2], d2h[2], compute[2];
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
    Options o;
    o.enable = enableStaged;
    o.transfer = bf16 ? PIPE_RT_PS_TRANSFER_BF16 : PIPE_RT_PS_TRANSFER_F32;
    Session s(p, writeOddWeights(), o);
    ASSERT_EQ(s.error, "");
    uint64_t a, b, c;
    ASSERT_EQ(pipe_rt_session_copy_bytes(s.s, 0, &a, &b, &c), PIPE_RT_OK);
    EXPECT_EQ(a + b + c, 0u); // no run yet
    std::vector<float> losses;
    ASSERT_TRUE(s.run(losses)) << s.error;
    ASSERT_EQ(pipe_rt_session_copy_bytes(s.s, 0, &h2d[bf16], &d2h[bf16],
                                         &compute[bf16]),
              PIPE_RT_OK);
    EXPECT_EQ(pipe_rt_session_copy_bytes(s.s, 1, &a, nullptr, nullptr),
              PIPE_RT_INVALID_ARGUMENT);
  }
  // Four ps.loads of a 2-element f32 param (each stage loaded for the
  // forward and the backward) and two ps.push: 32 and 16 bytes in f32,
  // half in bf16; the offloaded and prefetched stashes (f32 activations)
  // and the compute thread's copies are the same in both.
  EXPECT_EQ(h2d[0] - 32, h2d[1] - 16);
  EXPECT_EQ(d2h[0] - 16, d2h[1] - 8);
  EXPECT_EQ(h2d[0] - 32, d2h[0] - 16); // what is offloaded comes back
  EXPECT_GT(h2d[0] - 32, 0u);
  EXPECT_EQ(compute[0], compute[1]);
}

TEST(PsTransfer, StagingIsCharged) {
  // The first ps.load holds its param (8 bytes) and the bf16 staging
  // (4 bytes) on an empty device: 11 bytes are too few for bf16 only.
  for (bool staged : {false, true}) {
    tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
    Options o;
    o.enable = staged ? enableStaged : nullptr;
    o.capacity = 11;
    o.transfer = PIPE_RT_PS_TRANSFER_BF16;
    Session s(p, writeOddWeights(), o);
    ASSERT_EQ(s.error, "");
    std::vector<float> losses;
    EXPECT_FALSE(s.run(losses));
    EXPECT_NE(s.error.find("ps.load bf16 staging"), std::string::npos)
        << s.error;
    EXPECT_NE(s.error.find("ps.load stage 's0'"), std::string::npos) << s.error;
  }
  // In f32 the loads fit; something later does not.
  tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
  Options o;
  o.capacity = 11;
  Session s(p, writeOddWeights(), o);
  std::vector<float> losses;
  EXPECT_FALSE(s.run(losses));
  EXPECT_EQ(s.error.find("ps.load"), std::string::npos) << s.error;
}

TEST(PsTransfer, BadValueIsRejected) {
  tiny::Program p = tiny::makeProgram<false>(tiny::Sched::L2L);
  std::string w = writeOddWeights();
  pipe_rt_session_options o;
  pipe_rt_session_options_init(&o);
  EXPECT_EQ(o.ps_transfer, PIPE_RT_PS_TRANSFER_F32);
  o.weights_path = w.c_str();
  o.ps_transfer = static_cast<pipe_rt_ps_transfer>(7);
  pipe_rt_session *s = nullptr;
  char buf[512] = "";
  EXPECT_EQ(pipe_rt_session_create(tiny::Program::lookup, &p, &o, &s, buf,
                                   sizeof(buf)),
            PIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(buf).find("ps_transfer"), std::string::npos) << buf;
}

TEST(PsTransfer, TrainerFlag) {
  pipe_rt::TrainerFlags flags;
  std::string error;
  ASSERT_TRUE(pipe_rt::parseTrainerFlags({"a.so"}, flags, error)) << error;
  EXPECT_EQ(flags.psTransfer, PIPE_RT_PS_TRANSFER_F32);
  ASSERT_TRUE(
      pipe_rt::parseTrainerFlags({"--ps-transfer", "bf16"}, flags, error))
      << error;
  EXPECT_EQ(flags.psTransfer, PIPE_RT_PS_TRANSFER_BF16);
  pipe_rt_session_options o;
  pipe_rt_session_options_init(&o);
  flags.applyTo(o);
  EXPECT_EQ(o.ps_transfer, PIPE_RT_PS_TRANSFER_BF16);
  ASSERT_TRUE(
      pipe_rt::parseTrainerFlags({"--ps-transfer", "f32"}, flags, error))
      << error;
  EXPECT_EQ(flags.psTransfer, PIPE_RT_PS_TRANSFER_F32);

  pipe_rt::TrainerFlags bad;
  EXPECT_FALSE(
      pipe_rt::parseTrainerFlags({"--ps-transfer", "fp8"}, bad, error));
  EXPECT_EQ(error, "--ps-transfer: 'fp8' is not a transfer type (f32 or bf16)");
  EXPECT_FALSE(pipe_rt::parseTrainerFlags({"--ps-transfer"}, bad, error));
  EXPECT_EQ(error, "--ps-transfer needs a value: f32 or bf16");
  EXPECT_NE(std::string(pipe_rt::trainerFlagsUsage()).find("--ps-transfer"),
            std::string::npos);
}

} // namespace
