//===- Session.h - Internal state of program sessions -----------*- C++ -*-===//
//
// Private to the runtime. A session holds the manifest, the resolved
// symbols and the persistent training state (one fp32 value, optimizer state
// and step counter per param). Each pipe_rt_session_run builds a RunState
// (Executor.h); only a successful run writes its params and optimizer state
// back, so a failed run leaves the session as it was.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_SESSION_H
#define PIPE_RUNTIME_SESSION_H

#include "Backend.h"
#include "Manifest.h"

#include "pipe/Runtime/Devices.h"
#include "pipe/Runtime/Program.h"
#include "pipe/Runtime/Transport.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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
struct Buffer;

/// Where a trace event goes; mapped to the simulator's track numbers when
/// the trace is written (they depend on the number of devices).
enum class TrackKind { Compute, H2D, D2H, Host, Link };

struct TraceEvent {
  std::string name, category;
  TrackKind kind;
  int index;         // device, or link index for TrackKind::Link
  double start, end; // seconds since the trace epoch
  /// Compute actions: the most device bytes in use while the action ran,
  /// above those in use when it began (-1: not measured).
  int64_t workingBytes = -1;
};

/// The ranks of a session: `replicas` data-parallel copies of the placed
/// pipeline (or groups of `replicasPerRank` copies of a parameter-server
/// one), each on `ranksPerReplica` consecutive ranks; within a replica,
/// rank r executes devices [r * devicesPerRank, (r + 1) * devicesPerRank).
/// Device indices are those of the program (one replica's). No transport:
/// every device, in one process.
struct RankMap {
  std::shared_ptr<Transport> transport;
  int devicesPerRank = 1;
  int replicas = 1;
  int ranksPerReplica = 1;
  /// Parameter-server programs: the replicas each rank runs on its own
  /// server (ranksPerReplica is then 1); `replicas` counts the ranks.
  int replicasPerRank = 1;

  int replica() const {
    return transport ? transport->rank() / ranksPerReplica : 0;
  }
  int rankOf(int device, int replica) const {
    return replica * ranksPerReplica + device / devicesPerRank;
  }
  int rankOf(int device) const { return rankOf(device, replica()); }
  bool isLocal(int device) const {
    return !transport || rankOf(device) == transport->rank();
  }
};

struct SessionParam {
  std::vector<unsigned char> value;  // manifest dtype, dense
  std::vector<float> state0, state1; // optimizer state (f32 params)
  int64_t step = 0;                  // optimizer updates so far
};

} // namespace pipe_rt

/// The communicator of a device (pipe/Runtime/Comm.h): its transfers go
/// through the run's transfers room.
struct pipe_rt_comm {
  pipe_rt_device_ctx *ctx;
  int groupDepth = 0; // open pipe_rt_comm_group_start brackets
  /// The gradient pipe_rt_comm_grad_buffer handed out for the all-reduce
  /// that follows it (param -1: none).
  struct {
    int param = -1, step = 0;
    const void *buffer = nullptr;
  } reduce;
  /// The bucket pipe_rt_comm_bucket_buffer packed for the all-reduce that
  /// starts it (no params: none).
  struct {
    std::vector<int> params;
    int step = 0;
    std::shared_ptr<std::vector<unsigned char>> packed;
    /// Packed in the device's memory instead, where the transport sums it
    /// (transportReducesBuckets).
    std::shared_ptr<pipe_rt::Buffer> onDevice;
  } bucket;
};

/// The device context handed to device programs.
struct pipe_rt_device_ctx {
  pipe_rt::RunState *run;
  int device;
  std::string error; // first error of this device
  int status = PIPE_RT_OK;
  pipe_rt_comm comm{this};
};

struct pipe_rt_session {
  pipe_rt::Manifest manifest;
  pipe_rt_session_options options;
  std::string weightsPath;
  std::vector<void *> functions;             // by function id
  std::vector<std::vector<void *>> programs; // [schedule][device]
  std::vector<pipe_rt::SessionParam> params;
  /// Parameter groups, by param id (pipe_rt_session_set_param_lr_scale and
  /// _weight_decay): configuration, not state, so kept apart from `params`,
  /// which a checkpoint restores and ps runs swap with `psSpare`.
  std::vector<float> paramLrScales;
  std::vector<bool> paramWeightDecay;
  /// The learning rate of a run's optimizer step k (its last for later
  /// steps; pipe_rt_session_set_step_lrs); empty: the options' rate.
  std::vector<float> stepLrs;
  /// Parameter-server params: where a run's ps.update writes (out of place
  /// from `params`, see ParameterServer.h); swapped with `params` when the run
  /// succeeds. Kept across runs so that nothing is allocated per step.
  std::vector<pipe_rt::SessionParam> psSpare;
  /// Versioned ps.loads (delayed updates): the weights alternate between
  /// `psSpare` and this, so that the version before the latest stays
  /// readable while an update writes the next.
  std::vector<std::vector<unsigned char>> psSecondSpare;
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
  /// The last successful run's task metric counts (pipe_rt_session_metric).
  std::vector<int64_t> metricTotals;
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
  /// FNV-1a of the manifest text: the ranks of a run compare it.
  uint64_t manifestHash = 0;
  pipe_rt::RankMap ranks;
};

namespace pipe_rt {

/// The data-parallel replicas of `sched` that run in this process: all of
/// them without a transport, else the rank's share (a parameter-server
/// program's; 1 otherwise).
inline int inProcessReplicas(const pipe_rt_session &session,
                             const ScheduleInfo &sched) {
  return session.ranks.transport ? session.ranks.replicasPerRank
                                 : sched.replicas;
}

/// The backend of `session`'s runs: its own, else the simulated devices'.
inline std::shared_ptr<Backend> backendOf(const pipe_rt_session &session) {
  return session.backend ? session.backend : hostBackend();
}

/// The host optimizer's threads by default (optimizer_threads 0): the cores
/// of this process left over by the device threads of the schedules that
/// overlap host updates with compute (at least 1); see Session.cpp.
unsigned defaultOptimizerThreads(const pipe_rt_session &session);

/// (Re)creates the session's host optimizer with its option's threads, or
/// the default for the session's ranks; a no-op when it has that many.
int resizeHostOptimizer(pipe_rt_session &session, std::string &error);

/// The weights changed outside a run: no bf16 shadow matches them now.
inline void invalidatePsShadows(pipe_rt_session &session) {
  for (pipe_rt_session::PsShadow &shadow : session.psShadows)
    shadow.valid = false;
}

/// The optimizer and hyper-parameters of the update of param `param` in
/// optimizer step `step` of a run: the session's, with the step's learning
/// rate and the param's learning-rate scale and weight decay.
inline void setParamOptimizer(const pipe_rt_session &session, int param,
                              int step, pipe_rt_optim_update &u) {
  u.kind = session.options.optimizer;
  u.sgd = session.options.sgd;
  u.adamw = session.options.adamw;
  if (!session.stepLrs.empty()) {
    float lr = session.stepLrs[std::min(size_t(std::max(step, 0)),
                                        session.stepLrs.size() - 1)];
    u.sgd.lr = lr;
    u.adamw.lr = lr;
  }
  if (size_t(param) < session.paramLrScales.size()) {
    u.sgd.lr *= session.paramLrScales[param];
    u.adamw.lr *= session.paramLrScales[param];
  }
  if (size_t(param) < session.paramWeightDecay.size() &&
      !session.paramWeightDecay[param]) {
    u.sgd.weight_decay = 0.0f;
    u.adamw.weight_decay = 0.0f;
  }
}

/// Runs schedule `x` of the session; fills `losses`.
int executeRun(pipe_rt_session *session, int x, const void *const *inputs,
               float *losses);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_SESSION_H
