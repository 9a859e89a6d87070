//===- HostOptimizerBaseline.cpp - Host optimizer loops, baseline ISA -----===//
//
// Built with the library's flags only (SSE2 on x86-64, whatever the target
// guarantees elsewhere): the variant every machine can run.
//
//===----------------------------------------------------------------------===//

#include "HostOptimizerKernels.h"

#include "HostOptimizerKernels.inc"

void pipe_rt::optim::runChunkBaseline(const KernelArgs &args, size_t begin,
                                      size_t end) {
  runChunkImpl(args, begin, end);
}
