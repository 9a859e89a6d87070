//===- DeviceModelFit.cpp - Device rates from measured parts --------------===//

#include "pipe/Analysis/DeviceModelFit.h"

using namespace mlir;
using namespace mlir::pipe;

/// Below this, det / (sff * sbb) (the squared sine of the angle between the
/// FLOP and byte columns) leaves the two coefficients to rounding and noise.
static constexpr double kMinSeparation = 1e-9;

static constexpr const char *kAdvice =
    "; profile a larger model or more blocks";

llvm::Expected<FittedRates>
mlir::pipe::fitDeviceRates(llvm::ArrayRef<MeasuredPart> parts) {
  // Relative errors (each row divided by its time): parts span orders of
  // magnitude, and an absolute fit would serve the largest one only. Parts
  // that did not run (no time) say nothing.
  double sff = 0, sfb = 0, sbb = 0, sft = 0, sbt = 0;
  unsigned timed = 0;
  for (const MeasuredPart &part : parts) {
    if (!(part.seconds > 0))
      continue;
    ++timed;
    double f = part.flops / part.seconds, b = part.bytes / part.seconds;
    sff += f * f, sfb += f * b, sbb += b * b;
    sft += f, sbt += b;
  }
  if (!parts.empty() && !timed)
    return llvm::createStringError(
        llvm::Twine("cannot fit the peak FLOP rate or the memory bandwidth: "
                    "no measured part took any time") +
        kAdvice);
  double det = sff * sbb - sfb * sfb;
  if (!(det > kMinSeparation * sff * sbb))
    return llvm::createStringError(
        llvm::Twine("cannot fit the peak FLOP rate or the memory bandwidth: "
                    "the measured blocks' FLOPs and bytes are in one "
                    "proportion, so their times do not separate FLOP cost "
                    "from byte cost") +
        kAdvice);
  double perFlop = (sft * sbb - sbt * sfb) / det;
  double perByte = (sff * sbt - sfb * sft) / det;
  if (perFlop <= 0 && perByte <= 0)
    return llvm::createStringError(
        llvm::Twine("cannot fit the peak FLOP rate or the memory bandwidth: "
                    "the measured times do not grow with the blocks' FLOPs "
                    "or bytes") +
        kAdvice);
  if (perFlop <= 0)
    return llvm::createStringError(
        llvm::Twine("cannot fit the peak FLOP rate: the measured blocks do "
                    "not separate FLOP cost from byte cost (their bytes "
                    "alone explain the times)") +
        kAdvice);
  if (perByte <= 0)
    return llvm::createStringError(
        llvm::Twine("cannot fit the memory bandwidth: the measured blocks do "
                    "not separate byte cost from FLOP cost (their FLOPs "
                    "alone explain the times)") +
        kAdvice);
  return FittedRates{1.0 / perFlop, 1.0 / perByte};
}

llvm::Expected<FittedPhaseRates>
mlir::pipe::fitPhaseRates(llvm::ArrayRef<MeasuredPart> parts) {
  llvm::SmallVector<MeasuredPart> forward, backward;
  for (const MeasuredPart &part : parts)
    (part.backward ? backward : forward).push_back(part);
  llvm::Expected<FittedRates> f = fitDeviceRates(forward);
  llvm::Expected<FittedRates> b = fitDeviceRates(backward);
  if (f && b && !forward.empty() && !backward.empty())
    return FittedPhaseRates{*f, *b, /*apart=*/true};
  if (!f)
    llvm::consumeError(f.takeError());
  if (!b)
    llvm::consumeError(b.takeError());
  llvm::Expected<FittedRates> both = fitDeviceRates(parts);
  if (!both)
    return both.takeError();
  return FittedPhaseRates{*both, *both, /*apart=*/false};
}

PhaseScales
mlir::pipe::getReferenceScales(const FittedPhaseRates &rates,
                               llvm::ArrayRef<MeasuredPart> reference) {
  double measured[2] = {0, 0}, predicted[2] = {0, 0};
  for (const MeasuredPart &part : reference) {
    if (!(part.seconds > 0))
      continue;
    const FittedRates &r = part.backward ? rates.backward : rates.forward;
    measured[part.backward] += part.seconds;
    predicted[part.backward] +=
        part.flops / r.peakFlops + part.bytes / r.memoryBandwidth;
  }
  auto scale = [&](int phase) {
    return measured[phase] > 0 && predicted[phase] > 0
               ? measured[phase] / predicted[phase]
               : 1.0;
  };
  return {scale(0), scale(1)};
}

FittedPhaseRates mlir::pipe::scaleToReference(const FittedPhaseRates &rates,
                                              const PhaseScales &scales) {
  auto scaled = [](FittedRates r, double scale) {
    return FittedRates{r.peakFlops / scale, r.memoryBandwidth / scale};
  };
  FittedPhaseRates out{scaled(rates.forward, scales.forward),
                       scaled(rates.backward, scales.backward), rates.apart};
  // One joint fit scaled by two factors gives each phase its own rates.
  out.apart |= scales.forward != scales.backward;
  return out;
}
