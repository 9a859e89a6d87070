//===- DeviceModelFitTest.cpp - Unit tests for fitting a device's rates ---===//

#include "pipe/Analysis/DeviceModelFit.h"

#include <gtest/gtest.h>

#include <vector>

using namespace mlir;
using namespace mlir::pipe;

namespace {

std::string errorOf(llvm::Expected<FittedRates> rates) {
  if (rates)
    return "";
  return llvm::toString(rates.takeError());
}

/// Parts timed exactly as a device of `flopsPerSecond` and `bytesPerSecond`
/// would run them, plus `flopSeconds` per FLOP and `byteSeconds` per byte.
std::vector<MeasuredPart> timedParts(double flopsPerSecond,
                                     double bytesPerSecond,
                                     double flopSeconds = 0,
                                     double byteSeconds = 0) {
  std::vector<MeasuredPart> parts;
  for (auto [flops, bytes] : {std::pair<double, double>{4e9, 1e6},
                              {1e6, 3e8},
                              {2e9, 5e7},
                              {8e8, 8e8}})
    parts.push_back({flops, bytes,
                     flops / flopsPerSecond + bytes / bytesPerSecond +
                         flops * flopSeconds + bytes * byteSeconds});
  return parts;
}

TEST(DeviceModelFit, RecoversTheRatesOfExactTimes) {
  llvm::Expected<FittedRates> rates = fitDeviceRates(timedParts(5e10, 2e10));
  ASSERT_TRUE(bool(rates)) << llvm::toString(rates.takeError());
  EXPECT_NEAR(rates->peakFlops / 5e10, 1.0, 1e-9);
  EXPECT_NEAR(rates->memoryBandwidth / 2e10, 1.0, 1e-9);
}

TEST(DeviceModelFit, PartsThatDidNotRunAreLeftOut) {
  // A part with work but no time (it did not run) would pull both rates up.
  std::vector<MeasuredPart> parts = timedParts(5e10, 2e10);
  parts.push_back({1e9, 1e9, 0});
  llvm::Expected<FittedRates> rates = fitDeviceRates(parts);
  ASSERT_TRUE(bool(rates)) << llvm::toString(rates.takeError());
  EXPECT_NEAR(rates->peakFlops / 5e10, 1.0, 1e-9);
  EXPECT_NEAR(rates->memoryBandwidth / 2e10, 1.0, 1e-9);
}

TEST(DeviceModelFit, ProportionalFlopsAndBytesResolveNeither) {
  // Blocks of one shape: every part has four bytes per FLOP.
  std::vector<MeasuredPart> parts{
      {1e6, 4e6, 1e-3}, {2e6, 8e6, 2.1e-3}, {3e6, 12e6, 2.9e-3}};
  std::string error = errorOf(fitDeviceRates(parts));
  EXPECT_NE(error.find("cannot fit the peak FLOP rate or the memory "
                       "bandwidth: the measured blocks' FLOPs and bytes are "
                       "in one proportion"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("profile a larger model or more blocks"),
            std::string::npos)
      << error;
}

TEST(DeviceModelFit, NoFlopsOrNoPartsResolveNeither) {
  std::vector<MeasuredPart> noFlops{{0, 4e6, 1e-3}, {0, 8e6, 2e-3}};
  EXPECT_NE(errorOf(fitDeviceRates(noFlops)).find("in one proportion"),
            std::string::npos);
  EXPECT_NE(errorOf(fitDeviceRates({})).find("in one proportion"),
            std::string::npos);
}

TEST(DeviceModelFit, TimesFallingWithFlopsLeaveThePeakRateUnresolved) {
  // The bytes explain the times; the FLOPs' least-squares coefficient is
  // negative.
  std::string error =
      errorOf(fitDeviceRates(timedParts(1e30, 2e10, /*flopSeconds=*/-1e-14)));
  EXPECT_EQ(error.rfind("cannot fit the peak FLOP rate: the measured blocks "
                        "do not separate FLOP cost from byte cost",
                        0),
            0u)
      << error;
}

TEST(DeviceModelFit, TimesFallingWithBytesLeaveTheBandwidthUnresolved) {
  std::string error = errorOf(
      fitDeviceRates(timedParts(5e10, 1e30, 0, /*byteSeconds=*/-1e-14)));
  EXPECT_EQ(error.rfind("cannot fit the memory bandwidth: the measured blocks "
                        "do not separate byte cost from FLOP cost",
                        0),
            0u)
      << error;
}

TEST(DeviceModelFit, ZeroTimesResolveNeither) {
  std::vector<MeasuredPart> parts = timedParts(5e10, 2e10);
  for (MeasuredPart &part : parts)
    part.seconds = 0;
  EXPECT_NE(
      errorOf(fitDeviceRates(parts)).find("no measured part took any time"),
      std::string::npos);
}

TEST(DeviceModelFit, FitsTheBackwardsRatesApartWhereThePartsResolveThem) {
  // Backward code at half the forward's FLOP rate and a third of its
  // bandwidth: one joint fit would miss both phases.
  std::vector<MeasuredPart> parts = timedParts(5e10, 2e10);
  for (MeasuredPart part : timedParts(2.5e10, 2e10 / 3)) {
    part.backward = true;
    parts.push_back(part);
  }
  llvm::Expected<FittedPhaseRates> rates = fitPhaseRates(parts);
  ASSERT_TRUE(bool(rates)) << llvm::toString(rates.takeError());
  EXPECT_TRUE(rates->apart);
  EXPECT_NEAR(rates->forward.peakFlops / 5e10, 1.0, 1e-9);
  EXPECT_NEAR(rates->forward.memoryBandwidth / 2e10, 1.0, 1e-9);
  EXPECT_NEAR(rates->backward.peakFlops / 2.5e10, 1.0, 1e-9);
  EXPECT_NEAR(rates->backward.memoryBandwidth / (2e10 / 3), 1.0, 1e-9);
}

TEST(DeviceModelFit, TooFewBackwardPartsFitBothPhasesTogether) {
  // Two backward parts in one proportion of FLOPs to bytes resolve
  // neither backward rate: one fit of every part serves both phases.
  std::vector<MeasuredPart> parts = timedParts(5e10, 2e10);
  for (double scale : {1.0, 2.0})
    parts.push_back({scale * 1e9, scale * 1e8,
                     scale * (1e9 / 5e10 + 1e8 / 2e10), /*backward=*/true});
  llvm::Expected<FittedPhaseRates> rates = fitPhaseRates(parts);
  ASSERT_TRUE(bool(rates)) << llvm::toString(rates.takeError());
  EXPECT_FALSE(rates->apart);
  EXPECT_NEAR(rates->backward.peakFlops / 5e10, 1.0, 1e-9);
  EXPECT_EQ(rates->forward.peakFlops, rates->backward.peakFlops);
  EXPECT_EQ(rates->forward.memoryBandwidth, rates->backward.memoryBandwidth);
}

TEST(DeviceModelFit, ScalingMeetsTheReferencePartsSummedTimePerPhase) {
  // Rates of fine parts; the coarse parts run 20% faster forward and 10%
  // slower backward than those rates predict.
  FittedPhaseRates rates{{5e10, 2e10}, {2.5e10, 1e10}, /*apart=*/true};
  std::vector<MeasuredPart> reference;
  for (bool backward : {false, true})
    for (MeasuredPart part :
         timedParts(backward ? 2.5e10 : 5e10, backward ? 1e10 : 2e10)) {
      part.seconds *= backward ? 1.1 : 0.8;
      part.backward = backward;
      reference.push_back(part);
    }
  reference.push_back({1e9, 1e9, 0, /*backward=*/false}); // did not run
  PhaseScales scales = getReferenceScales(rates, reference);
  EXPECT_NEAR(scales.forward, 0.8, 1e-12);
  EXPECT_NEAR(scales.backward, 1.1, 1e-12);
  FittedPhaseRates scaled = scaleToReference(rates, scales);
  EXPECT_TRUE(scaled.apart);
  EXPECT_NEAR(scaled.forward.peakFlops, 5e10 / 0.8, 1e-2);
  EXPECT_NEAR(scaled.forward.memoryBandwidth, 2e10 / 0.8, 1e-2);
  EXPECT_NEAR(scaled.backward.peakFlops, 2.5e10 / 1.1, 1e-2);
  EXPECT_NEAR(scaled.backward.memoryBandwidth, 1e10 / 1.1, 1e-2);
}

TEST(DeviceModelFit, PhasesWithoutReferenceTimesKeepTheirRates) {
  FittedPhaseRates rates{{5e10, 2e10}, {5e10, 2e10}, /*apart=*/false};
  std::vector<MeasuredPart> reference = timedParts(2.5e10, 1e10);
  PhaseScales scales = getReferenceScales(rates, reference);
  EXPECT_NEAR(scales.forward, 2.0, 1e-12);
  EXPECT_EQ(scales.backward, 1.0);
  FittedPhaseRates scaled = scaleToReference(rates, scales);
  // A joint fit scaled apart: the phases now have rates of their own.
  EXPECT_TRUE(scaled.apart);
  EXPECT_EQ(scaled.backward.peakFlops, 5e10);
  EXPECT_NEAR(scaled.forward.peakFlops, 2.5e10, 1e-2);
}

} // namespace
