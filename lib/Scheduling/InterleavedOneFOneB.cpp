//===- InterleavedOneFOneB.cpp - Megatron-style interleaved 1F1B ----------===//
//
// With v = stages / p stages ("chunks") per device placed round-robin (stage
// k on device k mod p), a device cycles through its chunks in groups of p
// micro-batches. Device r runs (p - r - 1) * 2 + (v - 1) * p warm-up
// forwards, then alternates one forward and one backward, then drains. The
// k-th forward of a device is micro-batch (k / (p v)) p + k mod p of chunk
// (k mod p v) / p; backwards walk the chunks in reverse. The pipeline fills
// and drains in chunk-sized steps, so the bubble is (p - 1) / (v m + p - 1),
// at the price of more micro-batches in flight on the first devices: device
// 0 keeps up to v p + p - 1 chunk-micro-batches (about p + (p - 1) / v
// micro-batches' worth of its stages' activations), capped by v m.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

namespace {
class InterleavedOneFOneBGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "interleaved-1f1b"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    unsigned p = pipeline.numDevices;
    unsigned numStages = pipeline.getNumStages();
    unsigned m = options.microbatches;
    if (numStages % p != 0) {
      diag("interleaved-1f1b needs the same number of stages on every device, "
           "but " +
           llvm::Twine(numStages) + " stages do not divide over " +
           llvm::Twine(p) + " devices");
      return failure();
    }
    for (unsigned s = 0; s < numStages; ++s)
      if (pipeline.stages[s].device != s % p) {
        diag("interleaved-1f1b needs a round-robin placement (stage k on "
             "device k mod " +
             llvm::Twine(p) + "), but stage '" + pipeline.stages[s].name +
             "' (stage " + llvm::Twine(s) + ") is on device " +
             llvm::Twine(pipeline.stages[s].device) + ", expected " +
             llvm::Twine(s % p));
        return failure();
      }
    for (const PipelineEdge &edge : pipeline.edges)
      if (edge.producer >= edge.consumer) {
        diag("interleaved-1f1b needs stages numbered in pipeline order, but "
             "stage '" +
             pipeline.stages[edge.producer].name + "' feeds earlier stage '" +
             pipeline.stages[edge.consumer].name + "'");
        return failure();
      }
    if (m % p != 0) {
      diag("interleaved-1f1b needs the micro-batch count (" + llvm::Twine(m) +
           ") to be divisible by the number of devices (" + llvm::Twine(p) +
           ")");
      return failure();
    }
    unsigned v = numStages / p;
    unsigned total = m * v;
    SmallVector<SmallVector<ComputeItem>> orders(p);
    for (unsigned step = 0; step < options.steps; ++step) {
      for (unsigned r = 0; r < p; ++r) {
        auto stageOf = [&](unsigned k, bool forward) {
          unsigned chunk = (k % (p * v)) / p;
          if (!forward)
            chunk = v - 1 - chunk;
          return chunk * p + r;
        };
        auto mbOf = [&](unsigned k) { return (k / (p * v)) * p + k % p; };
        auto forward = [&](unsigned k) {
          orders[r].push_back(
              {ActionKind::Forward, stageOf(k, true), mbOf(k), step, -1});
        };
        auto backward = [&](unsigned k) {
          orders[r].push_back(
              {ActionKind::Backward, stageOf(k, false), mbOf(k), step, -1});
        };
        if (options.forwardOnly) {
          for (unsigned k = 0; k < total; ++k)
            forward(k);
          continue;
        }
        unsigned warmup = std::min(total, (p - r - 1) * 2 + (v - 1) * p);
        for (unsigned k = 0; k < warmup; ++k)
          forward(k);
        unsigned steady = total - warmup;
        for (unsigned i = 0; i < steady; ++i) {
          forward(warmup + i);
          backward(i);
        }
        for (unsigned k = steady; k < total; ++k)
          backward(k);
      }
    }
    return lowerComputeOrders(pipeline, getName(), m, options.steps,
                              options.forwardOnly, options.recompute, orders);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator>
mlir::pipe::createInterleavedOneFOneBGenerator() {
  return std::make_unique<InterleavedOneFOneBGenerator>();
}
