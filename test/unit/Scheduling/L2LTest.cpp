//===- L2LTest.cpp - L2L schedules on a BERT-Large-shaped model -----------===//
//
// The constant-memory variant keeps device memory independent of depth;
// the plain variant keeps every layer's boundary activations on the device;
// the forward-only one (evaluation) streams the weights like training.
// The figures printed here are the ones docs/benchmarks.md ("Schedules")
// explains; the test checks their shape, not the machine.
//
//===----------------------------------------------------------------------===//

#include "BertLarge.h"

#include "pipe/Analysis/DeviceModel.h"
#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

MachineModel getH200() {
  FailureOr<MachineModel> machine = MachineModel::lookup(
      "h200", 1, [](const Twine &m) { ADD_FAILURE() << m.str(); });
  EXPECT_TRUE(succeeded(machine));
  return succeeded(machine) ? *machine : MachineModel::makeIdeal(1);
}

/// Generates, checks and simulates a `kind` schedule of the model (l2l
/// unless told), also returning the schedule when `out` is given.
SimulationReport runL2L(unsigned layers, unsigned batch, bool constantMemory,
                        const MachineModel &machine, bool forwardOnly = false,
                        StringRef kind = "l2l", Schedule *out = nullptr,
                        unsigned steps = 1,
                        HostUpdateMode hostUpdate = HostUpdateMode::Plain,
                        unsigned replicas = 1) {
  const unsigned microbatchSize = 16;
  Pipeline pipeline = test::makeBertLarge(layers, microbatchSize, machine);
  pipeline.replicas = replicas;
  ScheduleOptions options;
  options.microbatches = batch / microbatchSize;
  options.constantMemory = constantMemory;
  options.forwardOnly = forwardOnly;
  options.steps = steps;
  options.hostUpdate = hostUpdate;
  std::string error;
  auto diag = [&](const Twine &m) { error = m.str(); };
  FailureOr<Schedule> schedule = generateSchedule(kind, pipeline, options, diag);
  EXPECT_TRUE(succeeded(schedule)) << error;
  if (failed(schedule))
    return {};
  if (out)
    *out = *schedule;
  for (const ScheduleViolation &v :
       checkSchedule(pipeline, *schedule, &machine))
    ADD_FAILURE() << v.message;
  SimulationOptions simOptions;
  simOptions.microbatchSize = microbatchSize;
  simOptions.recordTrace = false;
  FailureOr<SimulationReport> report =
      simulate(pipeline, *schedule, machine, simOptions, diag);
  EXPECT_TRUE(succeeded(report)) << error;
  return succeeded(report) ? *report : SimulationReport();
}

TEST(L2L, ConstantMemoryIsFlatInDepth) {
  MachineModel machine = getH200();
  for (unsigned batch : {32u, 128u}) {
    SimulationReport r24 = runL2L(24, batch, true, machine);
    SimulationReport r48 = runL2L(48, batch, true, machine);
    SimulationReport r96 = runL2L(96, batch, true, machine);
    double m24 = r24.devices[0].peakMemory, m96 = r96.devices[0].peakMemory;
    EXPECT_LE(std::abs(m96 - m24), 0.05 * m24)
        << "batch " << batch << ": " << m24 << " -> " << m96;
    EXPECT_LE(std::abs(r48.devices[0].peakMemory - m24), 0.05 * m24);
    // Without offloading the boundary activations grow with depth.
    SimulationReport plain24 = runL2L(24, batch, false, machine);
    SimulationReport plain96 = runL2L(96, batch, false, machine);
    EXPECT_GT(plain96.devices[0].peakMemory,
              1.5 * plain24.devices[0].peakMemory);
  }
}

TEST(L2L, ForwardOnlyStreamsWeights) {
  // Evaluation under L2L (pipe-train's eval schedule with --schedule l2l):
  // per layer a load, its forwards and a release, nothing else; so, unlike
  // a forward-only GPipe order that keeps every layer resident, the peak
  // does not grow with depth and stays below training's.
  MachineModel machine = getH200();
  const unsigned batch = 32, microbatches = batch / 16;
  double peak24 = 0;
  for (unsigned layers : {24u, 48u, 96u}) {
    Schedule schedule;
    SimulationReport r =
        runL2L(layers, batch, false, machine, true, "l2l", &schedule);
    EXPECT_TRUE(schedule.forwardOnly);
    EXPECT_EQ(schedule.count(ActionKind::Load), layers);
    EXPECT_EQ(schedule.count(ActionKind::Release), layers);
    EXPECT_EQ(schedule.count(ActionKind::Forward), layers * microbatches);
    for (const ScheduleAction &a : schedule.devices[0])
      EXPECT_TRUE(a.kind == ActionKind::Load ||
                  a.kind == ActionKind::Forward ||
                  a.kind == ActionKind::Release || a.kind == ActionKind::Wait)
          << getActionName(a.kind).str();
    double peak = r.devices[0].peakMemory;
    if (layers == 24)
      peak24 = peak;
    EXPECT_LE(std::abs(peak - peak24), 0.05 * peak24)
        << layers << " layers: " << peak24 << " -> " << peak;
    EXPECT_LT(peak,
              runL2L(layers, batch, true, machine).devices[0].peakMemory);
  }
  SimulationReport gpipe24 = runL2L(24, batch, false, machine, true, "gpipe");
  SimulationReport gpipe96 = runL2L(96, batch, false, machine, true, "gpipe");
  EXPECT_GT(gpipe96.devices[0].peakMemory,
            1.5 * gpipe24.devices[0].peakMemory);
}

TEST(L2L, Figures) {
  // With the preset's host optimizer (3.8 Gparam/s), then with a free one
  // to isolate the copies (the arithmetic of docs/background.md section 2).
  for (bool hostOptimizer : {true, false}) {
    MachineModel machine = getH200();
    if (!hostOptimizer)
      machine.optimizerParamsPerSecond = 0;
    llvm::errs() << (hostOptimizer ? "host optimizer 3.8 Gparam/s\n"
                                   : "host optimizer free\n");
    llvm::errs()
        << "layers batch variant      step_ms  samples/s  peak_MiB  "
           "exposed_copy_ms  exposed_frac  h2d_ms  d2h_ms  host_opt_ms\n";
    for (unsigned layers : {24u, 48u, 96u})
      for (unsigned batch : {32u, 128u})
        for (bool cm : {false, true}) {
          SimulationReport r = runL2L(layers, batch, cm, machine);
          const DeviceSimReport &dev = r.devices[0];
          llvm::errs() << llvm::format(
              "%6u %5u %-9s %9.2f %10.1f %9.1f %16.2f %13.3f %7.2f %7.2f "
              "%12.2f\n",
              layers, batch, cm ? "const-mem" : "plain", r.stepTime * 1e3,
              r.throughput, dev.peakMemory / 1048576.0,
              dev.exposedCopyTime * 1e3, dev.exposedCopyTime / r.stepTime,
              dev.h2dBusy * 1e3, dev.d2hBusy * 1e3, r.hostOptimizerBusy * 1e3);
          // Compute is busy most of the step at batch 128, where the forward
          // clears the transfer threshold of docs/background.md section 2.
          EXPECT_GT(dev.busyTime, 0);
        }
  }
}

TEST(L2L, OverlappedAndDelayedHostUpdates) {
  // Host-bound at this size (AdamW 79.6 ms against 42 ms of backward per
  // step): with `overlap` the next step's forward of layer l waits only
  // for layer l's update, and the host runs the lowest queued layer
  // first, so the forward follows the host up the model instead of
  // waiting for its last update. With `delayed` no load waits for the
  // previous step's update, so a step approaches max(device, host), except
  // the schedule's last one, which waits for its own updates.
  //
  // With D data-parallel devices on the one parameter server (each at the
  // batch given, on its own micro-batches), the devices' copies share the
  // host link and the host sums their gradients before each update, so
  // the host's work per step grows with D while the samples per step grow
  // D-fold. Printed figures: docs/benchmarks.md.
  MachineModel machine = getH200();
  const unsigned steps = 4;
  llvm::errs() << "devices layers batch update   step_ms  samples/s  "
                  "host_ms\n";
  for (unsigned replicas : {1u, 2u, 4u})
    for (unsigned batch : {32u, 128u}) {
      double plainStep = 0, overlapStep = 0;
      for (HostUpdateMode mode :
           {HostUpdateMode::Plain, HostUpdateMode::Overlap,
            HostUpdateMode::Delayed}) {
        Schedule schedule;
        SimulationReport r = runL2L(24, batch, true, machine, false, "l2l",
                                    &schedule, steps, mode, replicas);
        const char *name = mode == HostUpdateMode::Plain     ? "plain"
                           : mode == HostUpdateMode::Overlap ? "overlap"
                                                             : "delayed";
        double hostPerStep = r.hostOptimizerBusy / steps;
        llvm::errs() << llvm::format(
            "%7u %6u %5u %-7s %9.2f %10.1f %8.2f\n", replicas, 24, batch, name,
            r.stepTime * 1e3, r.throughput, hostPerStep * 1e3);
        // Never below the host's own time per step.
        EXPECT_GE(r.stepTime, 0.99 * hostPerStep);
        if (mode == HostUpdateMode::Plain) {
          plainStep = r.stepTime;
        } else if (mode == HostUpdateMode::Overlap) {
          EXPECT_LT(r.stepTime, 0.95 * plainStep);
          overlapStep = r.stepTime;
        } else {
          EXPECT_LT(r.stepTime, overlapStep);
        }
      }
    }
}

TEST(L2L, ReplicasShareTheHostLinkAndItsOptimizer) {
  // Two replicas copy twice the bytes over the one host link and the host
  // sums their gradients: each replica's copies take longer, and the host
  // works more per step than for one.
  MachineModel machine = getH200();
  SimulationReport one = runL2L(24, 32, true, machine, false, "l2l", nullptr, 1,
                                HostUpdateMode::Plain, 1);
  SimulationReport two = runL2L(24, 32, true, machine, false, "l2l", nullptr, 1,
                                HostUpdateMode::Plain, 2);
  EXPECT_GT(two.devices[0].h2dBusy, 1.9 * one.devices[0].h2dBusy);
  EXPECT_GT(two.hostOptimizerBusy, 1.5 * one.hostOptimizerBusy);
  EXPECT_GT(two.stepTime, one.stepTime);
  EXPECT_GT(two.throughput, one.throughput);
}

TEST(L2L, TransferBoundAtSmallBatch) {
  // docs/background.md section 2: a layer's forward is compute-bound only from
  // about 12.9k tokens; batch 32 (4.1k tokens) leaves copies exposed,
  // batch 128 (16.4k) hides its loads behind compute.
  MachineModel machine = getH200();
  machine.optimizerParamsPerSecond = 0; // isolate the copies
  SimulationReport small = runL2L(24, 32, false, machine);
  SimulationReport large = runL2L(24, 128, false, machine);
  double smallFraction = small.devices[0].exposedCopyTime / small.stepTime;
  double largeFraction = large.devices[0].exposedCopyTime / large.stepTime;
  EXPECT_GT(smallFraction, 0.2);
  EXPECT_LT(largeFraction, 0.1);
}

} // namespace
