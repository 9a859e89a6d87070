//===- Simulator.h - Discrete-event simulation of a schedule ----*- C++ -*-===//
//
// Plays a schedule against a machine: one in-order compute stream per
// device, one link per ordered device pair (transfers occupy it one after
// another, latency + bytes / bandwidth), a host-to-device and a
// device-to-host copy engine per device (parameter loads, prefetches,
// gradient pushes, offloads) and one host optimizer (parameters /
// optimizerParamsPerSecond). Sends are eager: a transfer starts when its
// data is computed and its link is free; receives and waits only block the
// device's later work. The host issues actions ahead of the compute stream
// until it reaches a wait; sends, pushes and offloads wait for the compute
// issued before them (they move its results), and a load or prefetch issued
// after a release waits for the compute before that release (it reuses the
// released memory), which is what bounds double buffering.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SCHEDULING_SIMULATOR_H
#define PIPE_SCHEDULING_SIMULATOR_H

#include "pipe/Scheduling/Schedule.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::pipe {

struct TraceEvent {
  std::string name;
  std::string category;
  unsigned track = 0;
  double start = 0, duration = 0; // seconds
};

struct DeviceSimReport {
  /// Compute-stream busy time and the idle fraction of the step.
  double busyTime = 0;
  double bubbleFraction = 0;
  int64_t peakMemory = 0;
  int64_t peakActivations = 0;
  uint64_t capacity = 0;
  /// Time the compute stream sat idle while a host<->device copy of this
  /// device was running: copies the schedule failed to hide.
  double exposedCopyTime = 0;
  double h2dBusy = 0, d2hBusy = 0;
};

struct LinkSimReport {
  unsigned from = 0, to = 0;
  /// Its track in SimulationReport::trackNames.
  unsigned track = 0;
  double busyTime = 0;
  double utilisation = 0;
  uint64_t bytes = 0;
};

struct SimulationReport {
  std::string kind;
  unsigned steps = 1;
  unsigned microbatches = 1;
  /// Makespan of the whole schedule, and per step.
  double totalTime = 0;
  double stepTime = 0;
  /// Samples per second given `microbatchSize` samples per micro-batch.
  double throughput = 0;
  double hostOptimizerBusy = 0;
  SmallVector<DeviceSimReport> devices;
  SmallVector<LinkSimReport> links;
  std::vector<TraceEvent> trace;
  SmallVector<std::string> trackNames;

  /// Largest bubble fraction over devices.
  double getMaxBubbleFraction() const;
  void writeJSON(llvm::raw_ostream &os) const;
  /// The report as one JSON object value.
  void writeJSON(llvm::json::OStream &json) const;
  /// Chrome trace format: traceEvents of `ph: "X"` in microseconds, one tid
  /// per compute stream, link and copy engine.
  void writeChromeTrace(llvm::raw_ostream &os) const;
  /// This report's events (and track names) as elements of an open
  /// traceEvents array, in process `pid` named `processName`.
  void writeTraceEvents(llvm::json::OStream &json, unsigned pid,
                        llvm::StringRef processName) const;
  void print(llvm::raw_ostream &os) const;
};

struct SimulationOptions {
  uint64_t microbatchSize = 1;
  bool recordTrace = true;
};

/// Simulates `schedule`; fails (through `diag`) when the action lists
/// deadlock or are malformed.
FailureOr<SimulationReport> simulate(const Pipeline &pipeline,
                                     const Schedule &schedule,
                                     const MachineModel &machine,
                                     const SimulationOptions &options,
                                     ScheduleDiagFn diag);

} // namespace mlir::pipe

#endif // PIPE_SCHEDULING_SIMULATOR_H
