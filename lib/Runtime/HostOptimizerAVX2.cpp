//===- HostOptimizerAVX2.cpp - Host optimizer loops for AVX2 --------------===//
//
// Built with -mavx2 (lib/Runtime/CMakeLists.txt; 32-byte vectors, no FMA) and
// called only when the CPU reports AVX2 (HostOptimizer.cpp).
//
//===----------------------------------------------------------------------===//

#include "HostOptimizerKernels.h"

#include "HostOptimizerKernels.inc"

void pipe_rt::optim::runChunkAVX2(const KernelArgs &args, size_t begin,
                                  size_t end) {
  runChunkImpl(args, begin, end);
}
