//===- Executor.h - The state of one run, composed of rooms -----*- C++ -*-===//
//
// Private to the runtime. Each pipe_rt_session_run builds a RunState: fresh
// simulated devices, per-device copies of the params, value stores, stashes
// and gradients (DeviceState, touched by the compute actions), and the rooms
// that own the rest with their locks: the memory (Memory.h), the transfers
// (Transfers.h), the parameter server (ParameterServer.h) and the
// rendezvous of the devices (Rendezvous.h). Only a successful run writes
// its params and optimizer state back, so a failed run leaves the session
// as it was. See docs/runtime.md, "Rooms of the executor".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_EXECUTOR_H
#define PIPE_RUNTIME_EXECUTOR_H

#include "Memory.h"
#include "ParameterServer.h"
#include "Rendezvous.h"
#include "Session.h"
#include "Transfers.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace pipe_rt {

/// A param as one device holds it.
struct DeviceParam {
  BufferPtr value;
  int updates = 0;                   // updates in this run
  std::map<int, BufferPtr> versions; // weight stash: version -> value
  /// Weight stash: per version, the forwards that read it and whose
  /// backward has not run; a version is kept only while it has some.
  std::map<int, int> versionUsers;
  std::set<int> updatedSteps;        // steps already applied on this device
  int loads = 0;                     // ps stages: outstanding ps.load
};

/// A run's stash of one stage for one (step, mb).
struct StageStash {
  struct Run {
    std::vector<BufferPtr> inputs, saved, cotangents;
    bool weightDone = false; // the fused backward produced its gradients
  };
  bool full = false;                 // every run's inputs and saved
  bool inputDone = false;            // backward part 1 ran
  int version = -1;                  // the weight version the forward read
  std::map<int, BufferPtr> external; // stage inputs from outside the stage
  std::vector<Run> runs;             // by position in the stage
};

/// Per-device state of a run; `mu` guards every map (the device thread and
/// its copy jobs both touch them), `computeMu` serialises block calls with
/// the copy jobs that move stashed buffers.
struct DeviceState {
  int index = 0;
  std::mutex mu, computeMu;
  std::map<int, DeviceParam> params;
  std::map<std::pair<int, int>, BufferPtr> grads; // (param, step)
  /// Forward values for other stages: (value, step, mb) -> (buffer, readers
  /// still to come).
  std::map<std::tuple<int, int, int>, std::pair<BufferPtr, int>> values;
  /// Cotangents: (value, step, mb, tag); tag -1 for values produced on this
  /// device, else the consumer stage that still has to send it.
  std::map<std::tuple<int, int, int, int>, BufferPtr> cotangents;
  std::map<std::tuple<int, int, int>, StageStash> stashes; // (stage, step, mb)
  std::set<int> clippedSteps;
  float clipScale = 1;
};

/// Everything one pipe_rt_session_run needs.
struct RunState {
  /// Declared first, so that it goes last: every buffer is freed into it.
  RunMemory memory;
  pipe_rt_session *session = nullptr;
  const Manifest *m = nullptr;
  const ScheduleInfo *schedule = nullptr;
  int scheduleIndex = 0;
  pipe_rt_devices *devs = nullptr;
  std::unique_ptr<Transfers> transfers;
  ParameterServer ps;
  Rendezvous rendezvous;
  std::vector<std::unique_ptr<DeviceState>> devices;
  std::vector<std::unique_ptr<pipe_rt_device_ctx>> ctxs;
  const void *const *inputs = nullptr;
  std::vector<float> losses;
  /// Per loss slot (bytes, not bits: devices of several replicas write
  /// their slots concurrently).
  std::vector<uint8_t> lossSeen;
  /// Per loss slot, the task metrics' counts (2 per metric,
  /// Manifest::metrics order); metricTotals sums them over the run (and
  /// across ranks).
  std::vector<int64_t> metricCounts, metricTotals;
  bool trackVersions = false;
  /// param id -> devices holding a copy (devices of non-ps stages reading
  /// it).
  std::vector<std::set<int>> holders;
  std::set<int> clipDevices;
  // Per-device optimizer state of params held on devices.
  std::vector<std::map<int, SessionParam>> deviceOptState;

  /// The session's ranks; devices of other ranks run nothing here.
  RankMap ranks;
  /// Data-parallel replicas run in this process (a schedule compiled for
  /// them, run without a transport): replica r runs the program's device d
  /// as device r * schedule->devices + d, on its own share of each step's
  /// micro-batches. `holders` and `clipDevices` name program devices.
  int localReplicas = 1;
  int replicaOf(int device) const { return device / schedule->devices; }
  int programDevice(int device) const { return device % schedule->devices; }
  /// The device that runs program device `d` in `device`'s replica.
  int sameReplica(int device, int d) const {
    return replicaOf(device) * schedule->devices + d;
  }
  /// The devices of this process holding a copy of param `p`, lowest
  /// first (every in-process replica's copies of its holders).
  std::vector<int> localHolders(int p) const {
    std::vector<int> out;
    for (int r = 0; r < localReplicas; ++r)
      for (int d : holders[size_t(p)])
        if (ranks.isLocal(d))
          out.push_back(r * schedule->devices + d);
    return out;
  }
  /// Replicas whose gradients every update sums (in-process or ranks).
  int totalReplicas() const { return localReplicas * ranks.replicas; }
  /// Set when a device of this rank failed: remote waits stop.
  std::atomic<bool> failed{false};
  /// Buffers of collectives that failed while the transport may still
  /// write them (a collective cannot be cancelled): they go with the run,
  /// which is kept when abortTransfers says something is still in flight.
  std::mutex abandonedMu;
  std::vector<BufferPtr> abandoned;

  std::mutex errorMu;
  std::string firstError;
  int firstStatus = PIPE_RT_OK;

  ~RunState();
  double now() const;
  bool tracing() const { return session->tracing; }
  void traceEvent(const std::string &name, const char *category, TrackKind kind,
                  int index, double start, double end,
                  int64_t workingBytes = -1);
  int linkIndex(int from, int to);
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_EXECUTOR_H
