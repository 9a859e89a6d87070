//===- BertLarge.h - A BERT-Large-shaped abstract pipeline ------*- C++ -*-===//
//
// Encoder layers of d 1024, ff 4096, sequence 128 in bf16, one stage per
// layer, for L2L tests and the numbers in docs/benchmarks.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TEST_UNIT_SCHEDULING_BERTLARGE_H
#define PIPE_TEST_UNIT_SCHEDULING_BERTLARGE_H

#include "pipe/Scheduling/Pipeline.h"

namespace mlir::pipe::test {

/// `layers` encoder layers on device 0 of `machine`; `microbatchSize`
/// sequences per micro-batch.
inline Pipeline makeBertLarge(unsigned layers, unsigned microbatchSize,
                              const MachineModel &machine) {
  const uint64_t d = 1024, ff = 4096, seq = 128;
  // Attention (4 d^2 + 4 d), FFN (2 d ff + ff + d), two layer norms (4 d).
  const uint64_t params = 4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d;
  const uint64_t tokens = microbatchSize * seq;
  // 2 FLOPs per parameter and token, plus QK^T and AV (4 seq d per token).
  const double forwardFlops = double(tokens) * (2.0 * params + 4.0 * seq * d);
  const double flops = machine.getDevice(0).flops;
  Pipeline pipeline;
  pipeline.numDevices = 1;
  for (unsigned l = 0; l < layers; ++l) {
    PipelineStage stage;
    stage.name = "layer" + std::to_string(l);
    stage.device = 0;
    stage.forwardTime = forwardFlops / flops;
    stage.backwardInputTime = forwardFlops / flops;
    stage.backwardWeightTime = forwardFlops / flops;
    stage.paramCount = params;
    stage.paramBytes = 2 * params; // bf16 on the device
    stage.inputBytes = 2 * tokens * d;
    stage.outputBytes = 2 * tokens * d;
    // Without recomputation: inputs of the 4 projections, scores, softmax,
    // FFN hidden pre/post activation, norms; about 17 d + 2 heads*seq values
    // per token in bf16.
    stage.savedBytes = 2 * tokens * (17 * d + 2 * 16 * seq);
    pipeline.stages.push_back(stage);
    if (l > 0)
      pipeline.edges.push_back({l - 1, l, 2 * tokens * d});
  }
  return pipeline;
}

} // namespace mlir::pipe::test

#endif // PIPE_TEST_UNIT_SCHEDULING_BERTLARGE_H
