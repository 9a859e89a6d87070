//===- HostOptimizerKernels.h - Per-ISA host optimizer kernels --*- C++ -*-===//
//
// Private to lib/Runtime. The element-wise SGD and AdamW loops of the host
// optimizer are compiled once per instruction set (HostOptimizerBaseline.cpp,
// HostOptimizerAVX2.cpp, HostOptimizerAVX512.cpp, all from the one source
// HostOptimizerKernels.inc) and HostOptimizer.cpp picks one at run time.
//
// This header is included by the AVX translation units, so it must declare
// only: no inline functions, no templates, nothing the linker could merge
// between units compiled for different instruction sets (an AVX-512 copy of
// an inline function chosen for the baseline would crash an older CPU).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_HOSTOPTIMIZERKERNELS_H
#define PIPE_RUNTIME_HOSTOPTIMIZERKERNELS_H

#include "pipe/Runtime/HostOptimizer.h"

#include <cstddef>
#include <cstdint>

namespace pipe_rt {
namespace optim {

// Scalars of one AdamW step, computed once in double and rounded to float
// (as PyTorch does with its Python-float hyper-parameters).
struct AdamWScalars {
  float decay; // 1 - lr * weight_decay
  float beta1, oneMinusBeta1;
  float beta2, oneMinusBeta2;
  float eps;
  float negStepSize; // -lr / (1 - beta1^step)
  float bc2Sqrt;     // sqrt(1 - beta2^step)
  float gradScale;
};

struct SGDScalars {
  float negLr;
  float momentum;
  float oneMinusDampening;
  float weightDecay;
  float gradScale;
};

/// Which loop runs: resolved once per task so that a chunk only switches.
enum class KernelKind : uint8_t {
  AdamW,
  SGDPlain,         // momentum == 0
  SGDMomentumFirst, // step 1: the buffer is initialised with d
  SGDMomentum,
  SGDNesterovFirst,
  SGDNesterov,
};

/// Everything a chunk needs; read-only while the task runs.
struct KernelArgs {
  KernelKind kind;
  bool bf16; // grad is uint16_t bf16 bits, else float
  float *param;
  float *state0; // AdamW exp_avg / SGD momentum buffer
  float *state1; // AdamW exp_avg_sq
  // What the update reads: the arrays above (in place) or others.
  const float *paramIn, *state0In, *state1In;
  uint16_t *paramBf16; // also the new param in bf16; may be null
  const void *grad;
  size_t n; // length of the whole span (chunks never prefetch past it)
  AdamWScalars adamw;
  SGDScalars sgd;
};

/// Updates elements [begin, end). All variants evaluate the same float
/// operations in the same order, so they give identical bits.
using ChunkKernel = void (*)(const KernelArgs &args, size_t begin, size_t end);

/// The kernel of `isa` (the baseline for one not built in); no CPU check.
/// Defined in HostOptimizer.cpp; the benchmark times kernels through it.
ChunkKernel kernelFor(pipe_rt_optim_isa isa);

void runChunkBaseline(const KernelArgs &args, size_t begin, size_t end);
// Defined only in x86-64 builds with GCC or Clang (PIPE_RT_OPTIM_X86_VARIANTS).
void runChunkAVX2(const KernelArgs &args, size_t begin, size_t end);
void runChunkAVX512(const KernelArgs &args, size_t begin, size_t end);

} // namespace optim
} // namespace pipe_rt

#endif // PIPE_RUNTIME_HOSTOPTIMIZERKERNELS_H
