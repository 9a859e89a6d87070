//===- DeviceModelFit.h - Device rates from measured parts ------*- C++ -*-===//
//
// pipe-profile --fit-device-model (docs/profiler.md) fits the two rates of a
// device model, peak FLOP/s and memory bandwidth, to the measured times of
// the blocks' parts against their analytic FLOPs and bytes, and scales them
// to the measured times of other (coarser) blocks. A rate the measurements
// cannot resolve is an error, never a made-up number.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_ANALYSIS_DEVICEMODELFIT_H
#define PIPE_ANALYSIS_DEVICEMODELFIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace mlir::pipe {

/// One measured part of a block (forward, input gradient, weight gradient):
/// its analytic work and its time.
struct MeasuredPart {
  double flops = 0, bytes = 0, seconds = 0;
  /// A backward part (input or weight gradient, or both fused).
  bool backward = false;
};

/// The rates of t = flops / peakFlops + bytes / memoryBandwidth.
struct FittedRates {
  double peakFlops = 0;       // FLOP/s
  double memoryBandwidth = 0; // bytes/s
};

/// The least-squares fit of t = flops / F + bytes / B over `parts` with a
/// timed run, in relative error (each part's residual over its time). Fails
/// with a message naming the rate that `parts` cannot resolve: both where
/// the parts' FLOPs and bytes are (nearly) in one proportion, so that no
/// part separates one cost from the other; one where its coefficient comes
/// out non-positive, that is where the other term alone explains the times
/// (the rate would be infinite or negative).
llvm::Expected<FittedRates> fitDeviceRates(llvm::ArrayRef<MeasuredPart> parts);

/// The forward's and the backward's rates: each fitted on its own parts
/// where both fits succeed (backward code often runs at other rates than
/// the forward's for the same FLOPs and bytes), else one fit of all parts
/// for both (`apart` false), as when a model's few layer-level blocks
/// cannot resolve four rates. Fails as fitDeviceRates when even the joint
/// fit does.
struct FittedPhaseRates {
  FittedRates forward, backward;
  bool apart = false;
};
llvm::Expected<FittedPhaseRates>
fitPhaseRates(llvm::ArrayRef<MeasuredPart> parts);

/// How much slower (> 1) or faster (< 1) the `reference` parts ran, summed
/// per phase, than `rates` predict: the factor each phase's rates are
/// divided by in scaleToReference. 1 for a phase without timed parts.
struct PhaseScales {
  double forward = 1, backward = 1;
};
PhaseScales getReferenceScales(const FittedPhaseRates &rates,
                               llvm::ArrayRef<MeasuredPart> reference);

/// `rates` with each phase's two rates divided by its scale, so that the
/// reference parts' summed analytic time is their summed measured time.
/// Rates fitted on fine blocks (one op each, enough parts to resolve the
/// rates) and scaled to coarse ones (a layer each, as the plans run them)
/// keep the fine blocks' ratio of FLOP to byte cost and take the coarse
/// blocks' level: ops inside one block run faster than as blocks of their
/// own, which pay a runtime action each and find colder caches.
FittedPhaseRates scaleToReference(const FittedPhaseRates &rates,
                                  const PhaseScales &scales);

} // namespace mlir::pipe

#endif // PIPE_ANALYSIS_DEVICEMODELFIT_H
