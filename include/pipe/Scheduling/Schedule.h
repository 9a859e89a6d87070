//===- Schedule.h - Per-device action lists, independent of IR --*- C++ -*-===//
//
// The abstract form of a `pipe.schedule`: for every device an ordered list of
// actions mirroring the schedule ops one to one. Generators produce it, the
// checker and the simulator play it, and ScheduleIR.h (pass side) turns it into IR and
// back.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SCHEDULING_SCHEDULE_H
#define PIPE_SCHEDULING_SCHEDULE_H

#include "pipe/Scheduling/Pipeline.h"

#include "llvm/ADT/DenseMap.h"

#include <tuple>

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::pipe {

/// One enumerator per line of pipe/Support/Actions.def.
enum class ActionKind {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN) KIND,
#include "pipe/Support/Actions.def"
};

/// The op mnemonic of an action kind ("forward", "ps.load", ...).
llvm::StringRef getActionName(ActionKind kind);
/// The runtime entry point an action lowers to ("pipe_rt_act_forward", ...).
llvm::StringRef getActionEntry(ActionKind kind);
/// Forward, Backward, BackwardInput, BackwardWeight, Recompute.
bool isComputeAction(ActionKind kind);
/// Actions that produce a completion token.
bool producesToken(ActionKind kind);

struct ScheduleAction {
  ActionKind kind = ActionKind::Forward;
  /// The stage the action works on, on this device (the sender of a send,
  /// the receiver of a recv); -1 when none.
  int stage = -1;
  /// Transfers: the two stages and what is carried. Activations go from
  /// producer to consumer, gradients back from consumer to producer.
  int src = -1, dst = -1;
  bool gradient = false;
  int microbatch = -1;
  unsigned step = 0;
  /// Weight version used by asynchronous schedules; -1 when not recorded.
  int version = -1;
  /// Forward: weight prediction this many optimizer updates ahead (0: none).
  int predict = 0;
  /// ReduceGrad: index into Pipeline::sharedParams.
  int param = -1;
  /// ReduceBucket: indices into Pipeline::sharedParams, in message order.
  SmallVector<int, 4> params;
  /// The token this action produces (unique per device), or -1.
  int token = -1;
  /// Wait: the tokens it waits on.
  SmallVector<int, 4> waits;
  /// Where the action came from when read from IR (for diagnostics).
  Operation *op = nullptr;

  /// "forward @s1 mb 3" style description, for diagnostics.
  std::string describe(const Pipeline &pipeline) const;

  /// A transfer's message: (gradient, src, dst, micro-batch, step), what
  /// matches a send to its recv.
  using TransferKey = std::tuple<bool, int, int, int, unsigned>;
  TransferKey getTransferKey() const {
    return {gradient, src, dst, microbatch, step};
  }
};

struct Schedule {
  std::string kind;
  unsigned microbatches = 1;
  unsigned steps = 1;
  bool forwardOnly = false;
  /// Each stage keeps the weight version a micro-batch's forward used until
  /// its backward (pipe.schedule weight_versions; the generator's traits).
  bool keepsWeightVersions = false;
  SmallVector<SmallVector<ScheduleAction>> devices;

  unsigned getNumDevices() const { return devices.size(); }
  /// Counts actions of `kind` on `device` (all devices when -1).
  unsigned count(ActionKind kind, int device = -1) const;
};

/// One entry of a device's compute order, before communication is added.
struct ComputeItem {
  ActionKind kind = ActionKind::Forward;
  unsigned stage = 0;
  unsigned microbatch = 0;
  unsigned step = 0;
  int version = -1;
  /// ReduceGrad items (asynchronous orders): index into
  /// Pipeline::sharedParams; `stage` is then unused.
  int param = -1;
  /// Forward items: weight prediction ahead (ScheduleAction::predict).
  int predict = 0;
};

/// Helps generators write well-formed action lists: token numbering, waits
/// that consume every token exactly once, and the sends and receives that a
/// compute order implies.
class ScheduleBuilder {
public:
  ScheduleBuilder(const Pipeline &pipeline, llvm::StringRef kind,
                  unsigned microbatches, unsigned steps, bool forwardOnly);

  /// Appends an action to `device`; gives it a token when its kind produces
  /// one and returns that token (-1 otherwise).
  int append(unsigned device, ScheduleAction action);
  int append(unsigned device, ActionKind kind, int stage, int microbatch = -1,
             unsigned step = 0);
  void wait(unsigned device, ArrayRef<int> tokens);
  /// Remembers a token to wait on at the next flush of `device`.
  void defer(unsigned device, int token);
  void flush(unsigned device);

  /// Appends a compute item with the transfers it needs: a receive and wait
  /// for each input from a stage on another device before it, a send of its
  /// outputs (deferred wait) after it. Stages on the same device exchange
  /// nothing.
  void compute(const ComputeItem &item);
  /// The end of a synchronous step on `device`: waits for outstanding
  /// transfers, reduces shared gradients, updates each local stage.
  void finishStep(unsigned device, unsigned step);
  /// Reduces the shared parameters `stage` reads that are not yet reduced in
  /// `step` on its device.
  void reduceSharedFor(unsigned stage, unsigned step);
  /// Reduces shared parameter `param` of `step` on `device` unless that is
  /// already done.
  void reduce(unsigned device, unsigned param, unsigned step);

  /// Flushes every device and returns the schedule.
  Schedule take();

  const Pipeline &getPipeline() const { return pipeline; }

private:
  const Pipeline &pipeline;
  Schedule schedule;
  SmallVector<int> nextToken;
  SmallVector<SmallVector<int>> pending;
  std::map<std::pair<unsigned, unsigned>, llvm::SmallVector<bool>> reduced;
};

/// Turns per-device compute orders into a schedule with
/// ScheduleBuilder::compute, inserting recomputes before backwards when
/// `recompute` is set (never on sink stages, whose forward just ran), and
/// the end of each step after the device's last item of that step.
/// `asynchronous` orders interleave steps and carry their own Update and
/// ReduceGrad items: no step ends are added (their waits on outstanding
/// sends could block a receive of a later step another device needs
/// first); outstanding sends are waited on at the end of the list.
Schedule lowerComputeOrders(const Pipeline &pipeline, llvm::StringRef kind,
                            unsigned microbatches, unsigned steps,
                            bool forwardOnly, bool recompute,
                            ArrayRef<SmallVector<ComputeItem>> orders,
                            bool asynchronous = false);

/// Data parallelism: replaces the blocking `ReduceGrad` of every parameter
/// that only one device of the pipeline reads (so only the replicas' copies
/// of that device take part) by asynchronous all-reduces of buckets of at
/// most `bucketBytes` (a parameter larger than that is a bucket of its
/// own). A bucket starts right after the device's last action that writes
/// its gradients in the step (and the sends that follow it), so it overlaps
/// the device's remaining backward work, and is waited on where the first
/// of its reductions was, before the update that reads it. Parameters whose
/// gradients are written by the same action share buckets, in the order of
/// their reductions. Each replica runs the same list, so buckets line up
/// across replicas. Schedules of one replica are returned unchanged.
Schedule bucketGradientReductions(const Pipeline &pipeline, Schedule schedule,
                                  uint64_t bucketBytes);

/// For transports that match a device pair's messages only by their order
/// (NCCL): moves recvs earlier so that every device posts its recvs from a
/// peer in the order the peer sends them. A recv moves only to the place of
/// an earlier-posted recv from the same peer, never later, so every wait
/// still follows its recv and nothing waits for more than before; its target
/// is then allocated sooner (the memory checks see it). Sends stay. Then
/// `checkSchedule` with `checkPeerOrder` holds for every generated kind.
Schedule orderRecvsBySender(const Pipeline &pipeline, Schedule schedule);

/// A device pair whose sides issue its transfers in different orders: the
/// `place`-th (from 0) send of `sender` to `receiver` is its action `send`,
/// and the receiver's recv at that place, its action `recv`, is another
/// message; -1 for the side that has no message at that place (one side
/// issues more than the other).
struct PeerOrderMismatch {
  unsigned sender = 0, receiver = 0;
  int send = -1, recv = -1;
  unsigned place = 0;
};
/// The first mismatch of every device pair; empty when each pair's recvs
/// come in the order of its sends.
SmallVector<PeerOrderMismatch>
findPeerOrderMismatches(const Pipeline &pipeline, const Schedule &schedule);

} // namespace mlir::pipe

#endif // PIPE_SCHEDULING_SCHEDULE_H
