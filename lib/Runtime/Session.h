//===- Session.h - Internal state of program sessions -----------*- C++ -*-===//
//
// Private to the runtime. A session holds the manifest, the resolved
// symbols and the persistent training state (one fp32 value, optimizer state
// and step counter per param). Each pipe_rt_session_run builds a RunState:
// fresh simulated devices, per-device copies of the params, value stores,
// stashes and gradients. Only a successful run writes its params and
// optimizer state back, so a failed run leaves the session as it was.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_SESSION_H
#define PIPE_RUNTIME_SESSION_H

#include "Backend.h"
#include "Manifest.h"

#include "pipe/Runtime/Devices.h"
#include "pipe/Runtime/Program.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace pipe_rt {

/// Limits of the session options (docs/trainer.md, "Limits"). The watchdog's
/// deadlines are now + watchdog_seconds on a steady clock: far beyond a
/// week that sum overflows the clock's nanoseconds (inf does at once), and
/// a wait on an overflowed deadline spins instead of sleeping.
constexpr double kMaxWatchdogSeconds = 1e6;
/// More host optimizer threads than any machine has cores only cost memory
/// (a stack each), and thread creation fails long before 2^32.
constexpr unsigned kMaxOptimizerThreads = 1024;

struct RunState;

/// Storage of one tensor: in a device's memory (device >= 0) or in host
/// memory from the run's DeviceMemory::allocHost (device == -1, e.g.
/// offloaded activations).
struct Buffer {
  RunState *run = nullptr;
  int device = -1;
  void *data = nullptr; // what is freed; 64-byte aligned
  uint64_t bytes = 0;
  bool owned = true; // false: memory kept elsewhere (the session's shadows)
  ~Buffer();
};
using BufferPtr = std::shared_ptr<Buffer>;

/// A one-thread FIFO of asynchronous jobs (a device's copy engine, the host
/// optimizer). A job returns a status and may set an error message.
class JobQueue {
public:
  struct Job {
    std::function<int(std::string &)> work;
    bool done = false;
    int status = PIPE_RT_OK;
    std::string error;
  };
  using JobPtr = std::shared_ptr<Job>;

  JobQueue();
  ~JobQueue(); // runs the remaining jobs, then joins
  JobPtr submit(std::function<int(std::string &)> work);
  /// Blocks until `job` ran; returns its status.
  int wait(const JobPtr &job);

private:
  std::mutex mu;
  std::condition_variable cv;
  std::deque<JobPtr> queue;
  bool stopping = false;
  std::thread worker;
};

/// A param as one device holds it.
struct DeviceParam {
  BufferPtr value;
  int updates = 0;                   // updates in this run
  std::map<int, BufferPtr> versions; // weight stash: version -> value
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
  std::map<int, BufferPtr> external; // stage inputs from outside the stage
  std::vector<Run> runs;             // by position in the stage
};

/// Where a trace event goes; mapped to the simulator's track numbers when
/// the trace is written (they depend on the number of devices).
enum class TrackKind { Compute, H2D, D2H, Host, Link };

struct TraceEvent {
  std::string name, category;
  TrackKind kind;
  int index;         // device, or link index for TrackKind::Link
  double start, end; // seconds since the trace epoch
};

struct PendingToken; // Executor.cpp

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
  std::unique_ptr<JobQueue> h2d, d2h;
  std::map<int64_t, std::shared_ptr<PendingToken>> tokens;
  int64_t nextToken = 1;
  std::set<int> clippedSteps;
  float clipScale = 1;
};

struct SessionParam {
  std::vector<unsigned char> value;  // manifest dtype, dense
  std::vector<float> state0, state1; // optimizer state (f32 params)
  int64_t step = 0;                  // optimizer updates so far
};

} // namespace pipe_rt

/// The device context handed to device programs.
struct pipe_rt_device_ctx {
  pipe_rt::RunState *run;
  int device;
  std::string error; // first error of this device
  int status = PIPE_RT_OK;
};

struct pipe_rt_session {
  pipe_rt::Manifest manifest;
  pipe_rt_session_options options;
  std::string weightsPath;
  std::vector<void *> functions;             // by function id
  std::vector<std::vector<void *>> programs; // [schedule][device]
  std::vector<pipe_rt::SessionParam> params;
  /// Parameter-server params: where a run's ps.update writes (out of place
  /// from `params`, see RunState::ps); swapped with `params` when the run
  /// succeeds. Kept across runs so that nothing is allocated per step.
  std::vector<pipe_rt::SessionParam> psSpare;
  /// ps_transfer = bf16: the bf16 shadow of each parameter-server master,
  /// kept across runs (memory from a run's allocHost, page-locked on a GPU,
  /// freed with `free`) so that a run does not narrow every master again.
  /// `valid`: it is the rounding of the committed weights; cleared while a
  /// run may overwrite it, after a failed run, when a device-held copy of
  /// the param is committed and when the weights change outside a run.
  struct PsShadow {
    void *data = nullptr;
    uint64_t bytes = 0;
    void (*free)(void *) = nullptr;
    bool valid = false;
  };
  std::vector<PsShadow> psShadows;
  ~pipe_rt_session();
  pipe_rt_host_optimizer *optimizer = nullptr;
  std::vector<uint64_t> peak; // per device, over every run
  /// Bytes copied per device and Lane over every run
  /// (pipe_rt_session_copy_bytes; sized by the first run).
  std::vector<std::array<uint64_t, 3>> copyBytes;
  std::string error;
  /// Where runs keep their buffers; null: the simulated devices (see
  /// Backend.h; PipeRuntimeCUDA sets a GPU one).
  std::shared_ptr<pipe_rt::Backend> backend;
  bool tracing = false;
  std::vector<pipe_rt::TraceEvent> trace;
  std::vector<std::pair<int, int>> traceLinks; // link index -> (from, to)
  int traceDevices = 0;
  std::chrono::steady_clock::time_point traceEpoch;
  std::mutex traceMu;
  double profileFrom = 0; // seconds since traceEpoch
  std::string profileText;
};

namespace pipe_rt {

/// The weights changed outside a run: no bf16 shadow matches them now.
inline void invalidatePsShadows(pipe_rt_session &session) {
  for (pipe_rt_session::PsShadow &shadow : session.psShadows)
    shadow.valid = false;
}

/// Everything one pipe_rt_session_run needs.
struct RunState {
  pipe_rt_session *session = nullptr;
  const Manifest *m = nullptr;
  const ScheduleInfo *schedule = nullptr;
  int scheduleIndex = 0;
  pipe_rt_devices *devs = nullptr;
  /// Every device buffer's bytes go through `memory` (Backend.h).
  std::unique_ptr<DeviceMemory> memory;
  /// !memory->hostAccessible(): sends carry buffers by reference (an id
  /// into `inFlight`), the receiver copies them device to device.
  bool byReference = false;
  std::mutex inFlightMu;
  std::map<uint64_t, std::pair<int, std::vector<BufferPtr>>> inFlight;
  uint64_t nextInFlight = 1;
  std::vector<std::unique_ptr<DeviceState>> devices;
  std::vector<std::unique_ptr<pipe_rt_device_ctx>> ctxs;
  const void *const *inputs = nullptr;
  std::vector<float> losses;
  std::vector<bool> lossSeen;
  bool trackVersions = false;

  // Parameter server (params of ps stages). A run reads the session's
  // committed weights and optimizer state in place; its first ps.update of a
  // param writes out of place into the session's spare copy (psSpare), later
  // ones update that copy in place, and a successful run swaps the two. So a
  // failed run leaves the session as it was, and no run copies the masters
  // in or out (302M params: 3.6 GB per step otherwise).
  struct PsParam {
    const unsigned char *value = nullptr; // latest weights, manifest dtype
    int64_t step = 0;                     // optimizer updates so far
    bool updated = false;                 // the latest state is the spare
    bool wroteState0 = false, wroteState1 = false;
  };
  std::mutex psMu;
  std::map<int, PsParam> ps;
  /// The gradient pushed for a param since its last update: the one pushed
  /// copy as it arrived in host memory (f32 or bf16; the host optimizer reads
  /// either, so the common case of one push per update costs no pass over
  /// it), or, once a second push arrives, the f32 sum of all of them.
  struct PsGrad {
    BufferPtr pushed; // host memory from allocHost; null once summed
    bool bf16 = false;
    std::vector<float> sum;
  };
  std::map<int, PsGrad> psGrads;
  /// ps_transfer = bf16: the bf16 shadow of each f32 master (host memory
  /// from allocHost, page-locked on a GPU) that ps.load copies; written when
  /// the run starts and by ps.update after each optimizer step.
  std::map<int, BufferPtr> psShadow;
  std::unique_ptr<JobQueue> hostQueue;
  std::vector<bool> psParam; // param id -> held by the parameter server
  // Copies and updates run on different queues, so the data dependences
  // between them are explicit: an update waits for the pushes of its params,
  // a load for the last update of its params.
  using PendingJob = std::pair<JobQueue *, JobQueue::JobPtr>;
  std::map<int, std::vector<PendingJob>> psPendingPushes;
  std::map<int, PendingJob> psLastUpdate;

  // Rendezvous of reduce_grad and clipping.
  std::mutex syncMu;
  std::condition_variable syncCv;
  bool failed = false;
  struct Reduce {
    std::map<int, BufferPtr> grads; // reduce_grad: per device
    std::map<int, double> sums;     // clipping: per device
    std::set<int> arrived;
    size_t collected = 0;
  };
  /// param id -> devices holding a copy (devices of non-ps stages reading
  /// it).
  std::vector<std::set<int>> holders;
  std::set<int> clipDevices;
  std::map<std::pair<int, int>, Reduce> reduces; // (param, step); -1: clip

  // Per-device optimizer state of params held on devices.
  std::vector<std::map<int, SessionParam>> deviceOptState;

  /// Bytes copied per device and Lane (index device * 3 + lane), added to
  /// the session's copyBytes when the run ends.
  std::unique_ptr<std::atomic<uint64_t>[]> laneBytes;
  void countCopy(int device, Lane lane, uint64_t bytes) {
    laneBytes[size_t(device) * 3 + size_t(lane)].fetch_add(
        bytes, std::memory_order_relaxed);
  }

  std::mutex errorMu;
  std::string firstError;
  int firstStatus = PIPE_RT_OK;

  ~RunState();
  double now() const;
  bool tracing() const { return session->tracing; }
  void traceEvent(const std::string &name, const char *category, TrackKind kind,
                  int index, double start, double end);
  int linkIndex(int from, int to);
};

/// Allocates `bytes` in device `d`'s memory (or host memory when d < 0).
int allocBuffer(RunState &run, int d, uint64_t bytes, const char *what,
                BufferPtr &out, std::string &error);

/// Runs schedule `x` of the session; fills `losses`.
int executeRun(pipe_rt_session *session, int x, const void *const *inputs,
               float *losses);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_SESSION_H
