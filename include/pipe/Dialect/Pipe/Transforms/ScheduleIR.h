//===- ScheduleIR.h - Pipelines and schedules from and to IR ----*- C++ -*-===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_SCHEDULEIR_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_SCHEDULEIR_H

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/IR/StageGraph.h"
#include "pipe/Scheduling/Schedule.h"
#include "pipe/Scheduling/ScheduleGenerator.h"

#include "mlir/IR/Builders.h"

namespace mlir::pipe {

/// Seconds a block without a `#pipe.cost` takes per phase, so that small
/// hand-written tests schedule and simulate.
constexpr double kDefaultBlockTime = 1e-3;

/// The abstract pipeline of `placement`: stage costs are the sums of their
/// instances' `#pipe.cost` (times from `forward_time_ns`/`backward_time_ns`
/// when measured, else FLOPs at the stage device's rate in `machine`; one
/// kDefaultBlockTime per phase and zero bytes without a cost), edges carry
/// the bytes of the values crossing them, and parameters read by several
/// stages become shared. Emits diagnostics on the placement and fails when
/// the stage graph is inconsistent or cyclic.
FailureOr<Pipeline> buildPipeline(PlacementOp placement,
                                  const StageGraph &stages,
                                  const MachineModel &machine);

/// What the passes derive from a placement to schedule or simulate it.
struct PlacedPipeline {
  StageGraph stages;
  MachineModel machine;
  Pipeline pipeline;
};

/// Builds the stage graph of `placement` over `graph`, looks up the machine
/// model `deviceModel` (a preset name or a JSON file) for the placement's
/// devices, and builds the pipeline with it. Emits a diagnostic and fails
/// when any of them fails; machine-model errors go on `diagOp`.
FailureOr<PlacedPipeline> buildPlacedPipeline(PlacementOp placement,
                                              GraphOp graph,
                                              StringRef deviceModel,
                                              Operation *diagOp);

/// The action kind of a schedule action op (pipe/Support/Actions.def), or
/// none for any other op.
std::optional<ActionKind> getActionKind(Operation *op);
/// The op name ("pipe.forward", ...) of an action kind.
StringRef getActionOpName(ActionKind kind);

/// Reads a schedule's actions through ActionOpInterface. Each action keeps
/// its op for diagnostics.
FailureOr<Schedule> readSchedule(ScheduleOp schedule, const Pipeline &pipeline,
                                 const StageGraph &stages);

/// Writes `schedule` as a `pipe.schedule` op named `name` at the builder's
/// insertion point; transfers carry the crossing types of `stages`.
ScheduleOp writeSchedule(OpBuilder &builder, Location loc, StringRef name,
                         PlacementOp placement, const StageGraph &stages,
                         const Pipeline &pipeline, const Schedule &schedule);

/// States `traits` on `schedule`: `weight_versions` when the kind keeps
/// weight versions (and trains), `ps_stages` (the stages it loads from the
/// parameter server, in stage order) when it serves parameters from the
/// host.
void setScheduleTraits(ScheduleOp schedule, const ScheduleTraits &traits);

/// Bytes of a ranked tensor with static shape (0 otherwise).
uint64_t getTypeBytes(Type type);

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_SCHEDULEIR_H
