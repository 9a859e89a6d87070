//===- ScheduleGenerator.h - Schedule generators and their registry -*- C++
//-*-===//
//
// A schedule generator turns a Pipeline into per-device action lists. Each
// kind lives in one file of lib/Scheduling (or anywhere linked into the
// library) and is made known by one line in Generators.def; see
// docs/tutorial-new-schedule.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SCHEDULING_SCHEDULEGENERATOR_H
#define PIPE_SCHEDULING_SCHEDULEGENERATOR_H

#include "pipe/Scheduling/Schedule.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>

namespace mlir::pipe {

/// When an L2L step's host optimizer work may overlap the next step.
enum class HostUpdateMode {
  /// The next step starts once every host update of this one is done.
  Plain,
  /// The next step's forward on a stage starts once that stage's update is
  /// done (the loads wait for it); the results equal Plain's bit for bit.
  Overlap,
  /// Delayed parameter update: step k > 0 of a schedule computes on the
  /// weights before step k-1's update (its loads name that version), so the
  /// host applies step k-1's update while the device runs step k. Each
  /// schedule run starts from the committed weights.
  Delayed,
};

struct ScheduleOptions {
  unsigned microbatches = 8;
  /// Optimizer steps covered; asynchronous kinds overlap them.
  unsigned steps = 1;
  bool forwardOnly = false;
  /// Asynchronous schedules: keep the weight version each micro-batch's
  /// forward used for its backward (stash) or use the latest (stale).
  bool stashWeights = true;
  /// Asynchronous schedules with stale weights: each forward predicts the
  /// weights its backward will see (pipe.forward `predict`).
  bool predictWeights = false;
  /// L2L: keep boundary activations on the host between forward and
  /// backward.
  bool constantMemory = false;
  /// Recompute each stage's forward before its backward (not on sinks).
  bool recompute = false;
  /// L2L: how host updates overlap the next step (with `steps` > 1).
  HostUpdateMode hostUpdate = HostUpdateMode::Plain;
  /// Data parallelism: the replicas' gradients of parameters read on one
  /// device are summed in asynchronous buckets of at most this many bytes,
  /// started as soon as they are final (bucketGradientReductions); 0 keeps
  /// one blocking reduction per parameter at the end of the step.
  uint64_t reduceBucketBytes = uint64_t(25) << 20;
  /// Post each device's recvs from a peer in the peer's send order
  /// (orderRecvsBySender), as a transport without message tags needs.
  bool peerOrder = false;
};

/// What a schedule kind means beyond its action lists, declared by its
/// generator so that passes, tools and the runtime never decide by the
/// kind's name. The pipe-schedule pass writes these onto the pipe.schedule
/// op (`weight_versions`, `ps_stages`), where the runtime reads them.
struct ScheduleTraits {
  /// Steps overlap without a flush between them, so one schedule covers
  /// several optimizer steps (tools pick their step count for it).
  bool asynchronous = false;
  /// Each stage keeps the weight version every in-flight micro-batch's
  /// forward used, and compute actions name it (`version`).
  bool keepsWeightVersions = false;
  /// Stages' parameters live on the host parameter server and are loaded
  /// before use; the model runs layer by layer, one stage per block
  /// instance, on one device per replica.
  bool parameterServer = false;
};

class ScheduleGenerator {
public:
  virtual ~ScheduleGenerator();
  virtual llvm::StringRef getName() const = 0;
  /// Synchronous, one weight version, parameters on the devices unless a
  /// kind says otherwise.
  virtual ScheduleTraits getTraits() const { return {}; }
  /// Builds the schedule or reports why the pipeline does not suit this
  /// kind through `diag` and fails.
  virtual FailureOr<Schedule> generate(const Pipeline &pipeline,
                                       const ScheduleOptions &options,
                                       ScheduleDiagFn diag) const = 0;
};

using ScheduleGeneratorFactory =
    std::function<std::unique_ptr<ScheduleGenerator>()>;

/// Adds a kind at run time (the built-in kinds of Generators.def are always
/// there). Returns false when the name is taken.
bool registerScheduleGenerator(llvm::StringRef name,
                               ScheduleGeneratorFactory factory);
/// The generator for `name`, or null.
std::unique_ptr<ScheduleGenerator>
createScheduleGenerator(llvm::StringRef name);
/// Registered names, sorted.
SmallVector<std::string> getScheduleGeneratorNames();
/// The traits of kind `name`, or nullopt when no such kind is registered.
std::optional<ScheduleTraits> getScheduleTraits(llvm::StringRef name);

/// Looks `kind` up, checks the pipeline and options common to every kind
/// and generates.
FailureOr<Schedule> generateSchedule(llvm::StringRef kind,
                                     const Pipeline &pipeline,
                                     const ScheduleOptions &options,
                                     ScheduleDiagFn diag);

// Declarations of the built-in factories.
#define PIPE_SCHEDULE_GENERATOR(NAME, FACTORY)                                 \
  std::unique_ptr<ScheduleGenerator> FACTORY();
#include "pipe/Scheduling/Generators.def"

//===----------------------------------------------------------------------===//
// List scheduling: the engine behind most pipelined kinds
//===----------------------------------------------------------------------===//

/// How a greedy list scheduler orders the compute tasks of every device.
/// It plays the pipeline with its stage times and free communication; when
/// a device is idle it starts, among the tasks whose inputs are ready, the
/// one `priority` ranks lowest, never letting more than `maxInFlight(stage)`
/// micro-batches be between their forward and their (weight-)backward.
struct ListSchedulingPolicy {
  /// Backward split into input and weight parts.
  bool splitBackward = false;
  bool forwardOnly = false;
  /// Per stage; 0 means unlimited.
  std::function<unsigned(unsigned stage)> maxInFlight;
  /// Smaller is preferred; compared lexicographically.
  std::function<std::array<int64_t, 4>(const ComputeItem &)> priority;
};

/// When the list scheduler played each task, parallel to its per-device
/// orders: `pick` numbers the tasks in the order the scheduler chose them
/// (a topological order of the data dependencies, by non-decreasing start
/// time), `start` and `finish` are the simulated times.
struct ListScheduleTrace {
  SmallVector<SmallVector<unsigned>> pick;
  SmallVector<SmallVector<double>> start, finish;
};

/// Per-device compute orders for one step; fills `trace` when given.
SmallVector<SmallVector<ComputeItem>>
listSchedule(const Pipeline &pipeline, unsigned microbatches,
             const ListSchedulingPolicy &policy, unsigned step = 0,
             ListScheduleTrace *trace = nullptr);

/// The 1F1B policy: each stage keeps at most its height (stages from it to
/// the end of the pipeline) of micro-batches in flight, and a device prefers
/// a ready backward, then the earliest micro-batch, then the lowest stage.
ListSchedulingPolicy makeOneFOneBPolicy(const Pipeline &pipeline,
                                        const ScheduleOptions &options);

/// The schedule of a synchronous kind given by its policy: list-schedules
/// each of `options.steps` flushed steps of `options.microbatches`, then
/// adds transfers, waits, shared-gradient reductions and updates
/// (lowerComputeOrders) under the name `kind`.
Schedule scheduleStepsWithPolicy(const Pipeline &pipeline, llvm::StringRef kind,
                                 const ScheduleOptions &options,
                                 const ListSchedulingPolicy &policy);

} // namespace mlir::pipe

#endif // PIPE_SCHEDULING_SCHEDULEGENERATOR_H
