//===- TrainerFlagsTest.cpp - Ranges of the training flags ----------------===//
//
// parseTrainerFlags (pipe-runner and pipe-train): every integer flag takes
// decimal digits only, up to its documented maximum; every real is finite
// and in PyTorch's range; every output path is checked before any work.
// Each boundary is tested on both sides, and each error must name the flag
// and the value.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "pipe/Runtime/TrainerFlags.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

/// Parses `args`; returns "" when accepted, else the error.
std::string parse(const std::vector<std::string> &args,
                  pipe_rt::TrainerFlags *out = nullptr) {
  pipe_rt::TrainerFlags flags;
  std::string error;
  bool ok = pipe_rt::parseTrainerFlags(args, flags, error);
  if (out)
    *out = flags;
  if (ok)
    return "";
  EXPECT_FALSE(error.empty());
  return error;
}

/// `flag value` is refused with an error naming both (and `why`).
void expectRefused(const std::string &flag, const std::string &value,
                   const std::string &why = "") {
  std::string error = parse({flag, value});
  EXPECT_NE(error, "") << flag << " " << value << " was accepted";
  EXPECT_NE(error.find(flag), std::string::npos) << error;
  EXPECT_NE(error.find(value), std::string::npos) << error;
  EXPECT_NE(error.find(why), std::string::npos) << error;
}

void expectAccepted(const std::vector<std::string> &args) {
  EXPECT_EQ(parse(args), "") << args[0] << " " << args[1];
}

TEST(TrainerFlags, CountsTakeDigitsUpToTheMaximum) {
  std::string max = std::to_string(pipe_rt::kMaxSteps);
  std::string over = std::to_string(pipe_rt::kMaxSteps + 1);
  for (const char *flag :
       {"--steps", "--stop-after", "--warmup", "--eval-every", "--eval-batches",
        "--checkpoint-every", "--log-every", "--profile-skip"}) {
    expectAccepted({flag, "0"});
    expectAccepted({flag, max});
    expectRefused(flag, over, "must be in [0, " + max + "]");
    expectRefused(flag, "9223372036854775808");  // 2^63
    expectRefused(flag, "18446744073709551617"); // 2^64 + 1
    for (const char *junk : {"-1", "1x", " 1", "+1", "1.5", "0x10", ""})
      expectRefused(flag, junk, "is not a non-negative integer");
  }
  pipe_rt::TrainerFlags flags;
  EXPECT_EQ(parse({"--steps", max}, &flags), "");
  EXPECT_EQ(flags.options.steps, pipe_rt::kMaxSteps);
  EXPECT_NE(parse({"--steps"}).find("--steps needs a value"),
            std::string::npos);
}

TEST(TrainerFlags, SeedIsAnyUint64) {
  pipe_rt::TrainerFlags flags;
  EXPECT_EQ(parse({"--seed", "18446744073709551615"}, &flags), "");
  EXPECT_EQ(flags.options.seed, UINT64_MAX);
  expectRefused("--seed", "18446744073709551616", "out of range");
  // strtoull would take "-1" as 2^64 - 1.
  expectRefused("--seed", "-1", "is not a non-negative integer");
}

TEST(TrainerFlags, ThreadsUpToTheMaximum) {
  std::string max = std::to_string(pipe_rt::kMaxOptimizerThreads);
  pipe_rt::TrainerFlags flags;
  EXPECT_EQ(parse({"--threads", max}, &flags), "");
  EXPECT_EQ(flags.optimizerThreads, pipe_rt::kMaxOptimizerThreads);
  expectAccepted({"--threads", "0"});
  expectRefused("--threads", std::to_string(pipe_rt::kMaxOptimizerThreads + 1),
                "must be in [0, " + max + "]");
  expectRefused("--threads", "100000");
  // Used to wrap to 1 through unsigned.
  expectRefused("--threads", "4294967297");
}

TEST(TrainerFlags, DeviceMemoryBecomesTheSessionCapacity) {
  pipe_rt::TrainerFlags flags;
  EXPECT_EQ(parse({"--device-memory", "18446744073709551615"}, &flags), "");
  EXPECT_EQ(flags.deviceMemory, UINT64_MAX);
  EXPECT_EQ(parse({"--device-memory", "481280"}, &flags), "");
  pipe_rt_session_options session;
  pipe_rt_session_options_init(&session);
  flags.applyTo(session);
  EXPECT_EQ(session.capacity_bytes, 481280u);
  // Not given: the program's capacities stay.
  EXPECT_EQ(parse({}, &flags), "");
  flags.applyTo(session);
  EXPECT_EQ(session.capacity_bytes, 0u);
  expectRefused("--device-memory", "18446744073709551616", "out of range");
  for (const char *junk : {"-1", "1M", "1e6", ""})
    expectRefused("--device-memory", junk, "is not a non-negative integer");
}

TEST(TrainerFlags, WatchdogIsFiniteAndBounded) {
  expectAccepted({"--watchdog", "1e6"});
  expectAccepted({"--watchdog", "0.001"});
  for (const char *v : {"1000001", "1e20", "inf", "nan", "-1", "0", "-0"})
    expectRefused("--watchdog", v, "must be in (0, 1e+06] seconds");
  expectRefused("--watchdog", "1s", "is not a number");
}

TEST(TrainerFlags, HyperParametersInTorchRanges) {
  expectAccepted({"--beta1", "0.999999"});
  expectAccepted({"--beta1", "0"});
  expectAccepted({"--beta2", "0.9999"});
  for (const char *flag : {"--beta1", "--beta2"}) {
    expectRefused(flag, "1", "must be in [0, 1)");
    expectRefused(flag, "2", "must be in [0, 1)");
    expectRefused(flag, "nan", "must be in [0, 1)");
    expectRefused(flag, "-0.1", "must be in [0, 1)");
  }
  for (const char *flag : {"--lr", "--momentum", "--dampening", "--eps"}) {
    expectAccepted({flag, "0"});
    expectRefused(flag, "inf", "a finite number >= 0");
    expectRefused(flag, "nan", "a finite number >= 0");
    expectRefused(flag, "-0.5", "a finite number >= 0");
    // Finite as a double, infinite as the float the optimizer uses.
    expectRefused(flag, "1e39", "too large for a float");
  }
  expectRefused("--weight-decay", "inf", "a finite number >= 0");
  expectRefused("--weight-decay", "-0.1", "a finite number >= 0");
  expectAccepted({"--weight-decay", "0"});
  expectRefused("--lr", "1e-3x", "is not a number");
  expectRefused("--clip", "0", "a finite number > 0");
  expectRefused("--clip", "inf");
  expectAccepted({"--clip", "1"});

  EXPECT_EQ(parse({"--lr", "0.1", "--min-lr", "0.1"}), "");
  std::string error = parse({"--lr", "0.1", "--min-lr", "0.2"});
  EXPECT_NE(error.find("--min-lr 0.2"), std::string::npos) << error;
  EXPECT_NE(error.find("must be at most --lr (0.1)"), std::string::npos)
      << error;

  error = parse({"--optimizer", "sgd", "--nesterov"});
  EXPECT_NE(error.find("--nesterov needs a --momentum > 0"), std::string::npos)
      << error;
  EXPECT_EQ(parse({"--optimizer", "sgd", "--nesterov", "--momentum", "0.9"}),
            "");
  error = parse({"--optimizer", "sgd", "--nesterov", "--momentum", "0.9",
                 "--dampening", "0.1"});
  EXPECT_NE(error.find("no --dampening"), std::string::npos) << error;
}

TEST(TrainerFlags, OptionsOfTheApiAreValidatedToo) {
  pipe_rt::TrainerOptions t;
  std::string error;
  EXPECT_TRUE(pipe_rt::validateTrainerOptions(t, error)) << error;
  t.weightDecay = -1; // the default
  EXPECT_TRUE(pipe_rt::validateTrainerOptions(t, error)) << error;
  t.beta2 = 1;
  EXPECT_FALSE(pipe_rt::validateTrainerOptions(t, error));
  EXPECT_NE(error.find("--beta2 1"), std::string::npos) << error;
  t.beta2 = 0.999f;
  t.steps = -1;
  EXPECT_FALSE(pipe_rt::validateTrainerOptions(t, error));
  EXPECT_NE(error.find("--steps -1"), std::string::npos) << error;
}

TEST(TrainerFlags, OutputPathsAreCheckedUpFront) {
  std::string dir =
      testing::TempDir() + "pipe-flags-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  for (const char *flag : {"--checkpoint", "--save-weights", "--log-json",
                           "--trace", "--profile"}) {
    expectAccepted({flag, dir + "/out"});
    expectRefused(flag, dir + "/missing/out",
                  "directory '" + dir + "/missing' does not exist");
    expectRefused(flag, dir, "is a directory");
    expectRefused(flag, dir + "/", "names a directory");
    expectRefused(flag, "", "empty path");
  }
  // Renaming a temporary over /dev/full would replace the device; the
  // streamed log may be a device (its writes are checked instead).
  expectRefused("--checkpoint", "/dev/full", "is not a regular file");
  expectAccepted({"--log-json", "/dev/full"});
  std::string error =
      parse({"--checkpoint", dir + "/c", "--save-weights", dir + "/c"});
  EXPECT_NE(error.find("also the --checkpoint file"), std::string::npos)
      << error;
  ::rmdir(dir.c_str());
}

} // namespace

namespace {

TEST(TrainerFlags, ParamLrIsNameEqualsAFiniteMultiplier) {
  pipe_rt::TrainerFlags flags;
  // Split at the last '=': a name may hold one.
  EXPECT_EQ(parse({"--param-lr", "a=b=2.5", "--param-lr", "c=0", "--decay-all"},
                  &flags),
            "");
  ASSERT_EQ(flags.options.paramLrScales.size(), 2u);
  EXPECT_EQ(flags.options.paramLrScales[0].first, "a=b");
  EXPECT_EQ(flags.options.paramLrScales[0].second, 2.5f);
  EXPECT_EQ(flags.options.paramLrScales[1].second, 0.0f);
  EXPECT_TRUE(flags.options.decayAll);
  EXPECT_FALSE(pipe_rt::TrainerOptions().decayAll);
  expectRefused("--param-lr", "w", "expected NAME=MULT");
  expectRefused("--param-lr", "=2", "expected NAME=MULT");
  expectRefused("--param-lr", "w=fast", "not a number");
  for (const char *bad : {"w=-1", "w=inf", "w=nan", "w=1e39"})
    expectRefused("--param-lr", bad, "finite float >= 0");
  // One name, two multipliers.
  std::string error = parse({"--param-lr", "w=2", "--param-lr", "w=3"});
  EXPECT_NE(error.find("--param-lr w=3"), std::string::npos) << error;
  EXPECT_NE(error.find("already has the multiplier 2"), std::string::npos)
      << error;
  EXPECT_EQ(parse({"--param-lr", "w=2", "--param-lr", "w=2"}), "");
  // lr * MULT must stay a float.
  error = parse({"--lr", "1e38", "--param-lr", "w=10"});
  EXPECT_NE(error.find("too large for a float"), std::string::npos) << error;
}

} // namespace
