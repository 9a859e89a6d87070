//===- HostOptimizerAVX512.cpp - Host optimizer loops for AVX-512F --------===//
//
// Built with -mavx512f -mprefer-vector-width=512 (lib/Runtime/CMakeLists.txt;
// 64-byte vectors; -ffp-contract=off keeps AVX-512F's FMA out) and called
// only when the CPU reports AVX-512F (HostOptimizer.cpp).
//
//===----------------------------------------------------------------------===//

#include "HostOptimizerKernels.h"

#include "HostOptimizerKernels.inc"

void pipe_rt::optim::runChunkAVX512(const KernelArgs &args, size_t begin,
                                    size_t end) {
  runChunkImpl(args, begin, end);
}
