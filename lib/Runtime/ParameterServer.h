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
// Data parallelism in one process: R replicas' devices run the same
// program against this one server. Each replica's pushes land in its own
// slot; the host job of a (stage, step) that every replica's ps.reduce and
// ps.update join (a joint job, JobQueue.h) sums the slots in replica order
// and then updates once, so the result does not depend on which replica
// pushes first. Loads and pushes are tracked per replica, so that a
// replica's update waits only for its own earlier loads.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_PARAMETERSERVER_H
#define PIPE_RUNTIME_PARAMETERSERVER_H

#include "JobQueue.h"
#include "Manifest.h"
#include "Memory.h"

#include "pipe/Runtime/HostOptimizer.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

struct pipe_rt_session;

namespace pipe_rt {

struct RunState;

class ParameterServer {
public:
  /// Which params (by id) the server holds in this run, for how many
  /// replicas in this process.
  void assign(std::vector<bool> heldParams, int replicaCount) {
    held = std::move(heldParams);
    replicas = replicaCount;
  }
  int replicaCount() const { return replicas; }
  bool holds(int pid) const { return held[size_t(pid)]; }

  /// Sets up the run's masters from the session's committed weights, the
  /// bf16 shadows of f32 masters when the session transfers bf16 (narrowed
  /// again only when they do not match the weights) and the host queue;
  /// page-locks the other masters for the run.
  int start(RunState &run, std::string &error);
  /// Runs the queued updates, then stops the host queue.
  void drain() {
    rankQueue.reset();
    queue.reset();
  }
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
  int updatesFor(const std::vector<int> &pids, int replica, int version,
                 std::vector<JobQueue::Pending> &updates, std::string &error);
  /// `job` loads `pids`: their next update waits for it (it may overwrite
  /// what the load reads).
  void loading(const std::vector<int> &pids, int replica, JobQueue *queue,
               const JobQueue::JobPtr &job);
  /// The weights of `pid` in `version` (-1: the latest), manifest dtype;
  /// null when a later update overwrote them.
  const unsigned char *master(int pid, int version);
  /// The bf16 shadow of `pid`, or null.
  BufferPtr shadow(int pid);

  // ps.push
  /// Adds a pushed gradient of `n` elements (a host copy, f32 or bf16; null
  /// when n == 0) to what `replica` pushed for `pid`.
  void addPush(int pid, int replica, BufferPtr host, bool bf16, int64_t n);
  /// `job` pushes gradients of `pids`: their next update waits for it.
  void pushing(const std::vector<int> &pids, int replica, JobQueue *queue,
               const JobQueue::JobPtr &job);

  // ps.reduce
  /// Every replica's pushed gradient of `pid` summed in replica order into
  /// replica 0's slot, for the update.
  void reduce(int pid);
  /// What a replica's ps.reduce or ps.update joins (JobQueue.h, joint
  /// jobs): in one process, `ReduceAndUpdate`, the host job that sums the
  /// replicas' pushes and then updates (each replica's reduce and update
  /// join it); across ranks, `RankReduce`, on the rank queue, which sums
  /// every rank's replicas' pushes (each replica's reduce joins), then
  /// `Update`, on the host queue (each replica's update joins).
  enum class JointKind { ReduceAndUpdate, RankReduce, Update };
  using Deps = std::shared_ptr<std::vector<JobQueue::Pending>>;
  /// Joins `replica`'s action to the joint job of (`kind`, `stage`,
  /// `step`) for `pids`: created by the first to join with `create` (given
  /// the list of dependences every join adds to; it must not call back into
  /// the server). `deps`: what this join adds (its replica's pushes or
  /// loads). A replica's update before its reduce, or a second join of the
  /// same action, is an error.
  int join(JointKind kind, bool isUpdate, int stage, int step, int replica,
           const std::vector<int> &pids,
           const std::function<JobQueue::JobPtr(Deps)> &create,
           const std::vector<JobQueue::Pending> &deps, JobQueue::JobPtr &job,
           std::string &error);
  /// The joint job of (`kind`, `stage`, `step`), or null.
  JobQueue::JobPtr jointJob(JointKind kind, int stage, int step);
  /// Data parallelism across ranks (each rank runs whole replicas with its
  /// own server): the queue of the rank reduces, which exchange the ranks'
  /// gradients. FIFO (no dependence is registered with it; each job waits
  /// for its own), so every rank exchanges in program order: a blocking
  /// exchange out of order would deadlock two ranks.
  JobQueue &rankReduceQueue() { return *rankQueue; }
  /// Every replica's pushed gradient of `pid`, on every rank, summed in
  /// the order of the replicas' global index into replica 0's slot (each
  /// rank sends its replicas' gradients, so the sum is the one process's).
  int reduceAcrossRanks(RunState &run, int pid, int step, std::string &error);

  /// The run failed: joint jobs not every replica joined fail at once,
  /// releasing the devices that wait for them.
  void abandonJoints();
  /// A (stage, step) whose joint job some replica's ps.reduce or ps.update
  /// never joined, as "stage S step K"; empty when none.
  std::string unjoined(const Manifest &m);

  // ps.update
  /// The pushes and loads of `replica` that `pids`' update waits for,
  /// forgotten here.
  std::vector<JobQueue::Pending> takePushes(const std::vector<int> &pids,
                                            int replica);
  std::vector<JobQueue::Pending> takeLoads(const std::vector<int> &pids,
                                           int replica);
  /// The host optimizer's update of `pid` with the gradients pushed since
  /// its last one (none: skipped, as torch skips None), as optimizer step
  /// `step` of the run.
  /// `outOfPlace` (a load of the param named a version before the update
  /// was issued): writes the spare that does not hold the latest weights.
  int update(pipe_rt_session &session, int pid, int step, bool outOfPlace,
             std::string &error);
  /// Whether a load of `pid` named a weight version in this run.
  bool versionedLoads(int pid);
  /// `job` updates `pids`: the loads that follow wait for it.
  void updating(const std::vector<int> &pids, const JobQueue::JobPtr &job);
  /// `replica` issued an update of `pids` (the job updating() recorded).
  void issuedUpdate(const std::vector<int> &pids, int replica);

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
    size_t elements() const {
      return pushed ? pushed->bytes / (bf16 ? 2 : 4) : sum.size();
    }
  };
  /// Under `mu`: every local replica's gradient of `pid` in f32, one after
  /// the other, `n` elements each (zeros for a replica that pushed none);
  /// false when no replica pushed one.
  bool replicaGradients(int pid, std::vector<float> &all, size_t &n) const;
  /// Under `mu`: `total` becomes the gradient of `pid` the update applies,
  /// in replica 0's slot; the other replicas' are dropped.
  void setReduced(int pid, std::vector<float> total);
  static pipe_rt_optim_update prepare(pipe_rt_session &session, int pid,
                                      int step, Master &master,
                                      const Gradient &grad, bool outOfPlace);
  /// Records `master`'s latest weights as its next version; `wrote`: an
  /// update wrote them, so older versions in the same buffer are gone.
  static void recordVersion(Master &master, bool wrote);

  std::vector<bool> held;
  int replicas = 1;
  std::mutex mu;
  std::map<int, Master> masters;
  /// (param, replica) -> what the replica pushed since the last update.
  std::map<std::pair<int, int>, Gradient> grads;
  struct Joint {
    JobQueue *queue = nullptr;
    JobQueue::JobPtr job;
    Deps deps;
    std::vector<bool> reduced, updated; // which replicas joined
  };
  std::map<std::tuple<JointKind, int, int>, Joint> joints; // (kind, stage, step)
  std::unique_ptr<JobQueue> rankQueue;
  /// (param, replica) -> the ps.updates of the param that replica issued:
  /// its next latest-version load waits for the last of them.
  std::map<std::pair<int, int>, size_t> issuedUpdates;
  /// ps_transfer = bf16: the bf16 shadow of each f32 master (the session's
  /// PsShadow memory, page-locked on a GPU) that ps.load copies; written
  /// when the run starts and by update() after each optimizer step.
  std::map<int, BufferPtr> shadows;
  // Copies and updates run on different queues, so the data dependences
  // between them are explicit: an update waits for the pushes of its
  // params, a load for the last update of its params.
  std::map<std::pair<int, int>, std::vector<JobQueue::Pending>> pendingPushes,
      pendingLoads; // (param, replica)
  /// Every update of each param queued in this run, in order: the v-th
  /// writes version v.
  std::map<int, std::vector<JobQueue::Pending>> queuedUpdates;
  std::unique_ptr<JobQueue> queue;
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_PARAMETERSERVER_H
