//===- PlanLimits.h - Bounds on the counts a plan may ask for ---*- C++ -*-===//
//
// Devices, replicas, micro-batches and asynchronous steps are counts a user
// types (pass options, hand-edited IR); the planners' work and memory grow
// with them (pairs of devices, micro-batches times stages). The IR verifiers
// and the passes check these bounds, so that a typo is an error naming the
// count, never an abort for memory or an hour of work.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_IR_PLANLIMITS_H
#define PIPE_DIALECT_PIPE_IR_PLANLIMITS_H

#include <cstdint>

namespace mlir::pipe {

/// Machine devices of a placement: its devices times its replicas.
constexpr uint64_t kMaxPlanDevices = 4096;
/// Micro-batches of one step.
constexpr uint64_t kMaxMicrobatches = 1 << 16;
/// Overlapping steps an asynchronous schedule lists.
constexpr uint64_t kMaxScheduleSteps = 1 << 10;

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_IR_PLANLIMITS_H
