//===- ParameterServer.h - The parameter server of a run --------*- C++ -*-===//
//
// Private to the runtime. The room that holds the params of ps stages for a
// run: their master weights and optimizer steps, the bf16 shadows that
// ps.load copies (ps_transfer = bf16), the gradients pushed since each
// param's last update, the jobs that order loads, pushes and updates across
// queues, and the host optimizer's queue. `mu` guards the maps; a param's
// master and gradient are only written by the jobs that own them in turn
// (push, then update, then load), which those dependences order.
//
// A run reads the session's committed weights and optimizer state in place;
// its first update of a param writes out of place into the session's spare
// copy (psSpare), later ones update that copy in place, and commit() swaps
// the two. So a failed run leaves the session as it was, and no run copies
// the masters in or out (302M params: 3.6 GB per step otherwise).
//
// Once a ps.load names a weight version (delayed updates), every update of
// the param writes out of place, alternating between psSpare and
// psSecondSpare, so that the version before the latest stays readable; a
// load of version v waits for the v-th update, not the last one.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_PARAMETERSERVER_H
#define PIPE_RUNTIME_PARAMETERSERVER_H

#include "JobQueue.h"
#include "Memory.h"

#include "pipe/Runtime/HostOptimizer.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct pipe_rt_session;

namespace pipe_rt {

struct RunState;

class ParameterServer {
public:
  /// Which params (by id) the server holds in this run.
  void assign(std::vector<bool> heldParams) { held = std::move(heldParams); }
  bool holds(int pid) const { return held[size_t(pid)]; }

  /// Sets up the run's masters from the session's committed weights, the
  /// bf16 shadows of f32 masters when the session transfers bf16 (narrowed
  /// again only when they do not match the weights) and the host queue;
  /// page-locks the other masters for the run.
  int start(RunState &run, std::string &error);
  /// Runs the queued updates, then stops the host queue.
  void drain() { queue.reset(); }
  /// Unlocks the pages start() locked.
  void finish(RunState &run);
  /// After a successful run: param `pid`'s latest weights and state become
  /// the session's committed ones.
  void commit(pipe_rt_session &session, int pid) const;
  /// Drops the shadows and the gradients never consumed (a failed run).
  void clear();

  JobQueue &hostQueue() { return *queue; }
  /// Whether param `pid` crosses the link as bf16 (it has a shadow; fixed
  /// once the run started).
  bool bf16(int pid) const { return shadows.count(pid) != 0; }

  // ps.load
  /// The updates a load of `pids` waits for: the last queued one of each
  /// (`version` -1), or the one that writes weight version `version`. Fails
  /// when no update that writes it is issued yet; a version names the
  /// weights after that many updates of the trainable params.
  int updatesFor(const std::vector<int> &pids, int version,
                 std::vector<JobQueue::Pending> &updates, std::string &error);
  /// `job` loads `pids`: their next update waits for it (it may overwrite
  /// what the load reads).
  void loading(const std::vector<int> &pids, JobQueue *queue,
               const JobQueue::JobPtr &job);
  /// The weights of `pid` in `version` (-1: the latest), manifest dtype;
  /// null when a later update overwrote them.
  const unsigned char *master(int pid, int version);
  /// The bf16 shadow of `pid`, or null.
  BufferPtr shadow(int pid);

  // ps.push
  /// Adds a pushed gradient of `n` elements (a host copy, f32 or bf16; null
  /// when n == 0) to `pid`'s.
  void addPush(int pid, BufferPtr host, bool bf16, int64_t n);
  /// `job` pushes gradients of `pids`: their next update waits for it.
  void pushing(const std::vector<int> &pids, JobQueue *queue,
               const JobQueue::JobPtr &job);

  // ps.update
  /// The pushes and loads `pids`' update waits for, forgotten here.
  std::vector<JobQueue::Pending> takePushes(const std::vector<int> &pids);
  std::vector<JobQueue::Pending> takeLoads(const std::vector<int> &pids);
  /// The host optimizer's update of `pid` with the gradients pushed since
  /// its last one (none: skipped, as torch skips None), as optimizer step
  /// `step` of the run.
  /// `outOfPlace` (a load of the param named a version before the update
  /// was issued): writes the spare that does not hold the latest weights.
  int update(pipe_rt_session &session, int pid, int step, bool outOfPlace,
             std::string &error);
  /// Whether a load of `pid` named a weight version in this run.
  bool versionedLoads(int pid);
  /// `job` updates `pids`: their next loads wait for it.
  void updating(const std::vector<int> &pids, const JobQueue::JobPtr &job);

private:
  struct Master {
    const unsigned char *value = nullptr; // latest weights, manifest dtype
    int64_t step = 0;                     // optimizer updates so far
    bool updated = false;                 // the latest state is the spare
    bool wroteState0 = false, wroteState1 = false;
    /// A load named a weight version: updates write out of place.
    bool versioned = false;
    /// The weights after each update run of this run (index: version; 0:
    /// the committed ones); null where a later update overwrote them.
    std::vector<const unsigned char *> versions;
  };
  /// The gradient pushed for a param since its last update: the one pushed
  /// copy as it arrived in host memory (f32 or bf16; the host optimizer
  /// reads either, so the common case of one push per update costs no pass
  /// over it), or, once a second push arrives, the f32 sum of all of them.
  struct Gradient {
    BufferPtr pushed; // host memory from allocHost; null once summed
    bool bf16 = false;
    std::vector<float> sum;
  };
  static pipe_rt_optim_update prepare(pipe_rt_session &session, int pid,
                                      int step, Master &master,
                                      const Gradient &grad, bool outOfPlace);
  /// Records `master`'s latest weights as its next version; `wrote`: an
  /// update wrote them, so older versions in the same buffer are gone.
  static void recordVersion(Master &master, bool wrote);

  std::vector<bool> held;
  std::mutex mu;
  std::map<int, Master> masters;
  std::map<int, Gradient> grads;
  /// ps_transfer = bf16: the bf16 shadow of each f32 master (the session's
  /// PsShadow memory, page-locked on a GPU) that ps.load copies; written
  /// when the run starts and by update() after each optimizer step.
  std::map<int, BufferPtr> shadows;
  // Copies and updates run on different queues, so the data dependences
  // between them are explicit: an update waits for the pushes of its
  // params, a load for the last update of its params.
  std::map<int, std::vector<JobQueue::Pending>> pendingPushes, pendingLoads;
  /// Every update of each param queued in this run, in order: the v-th
  /// writes version v.
  std::map<int, std::vector<JobQueue::Pending>> queuedUpdates;
  std::unique_ptr<JobQueue> queue;
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_PARAMETERSERVER_H
