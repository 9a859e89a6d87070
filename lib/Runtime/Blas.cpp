//===- Blas.cpp - Configuring OpenBLAS for the runtime --------------------===//

#include "pipe/Runtime/Blas.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#ifdef PIPE_RT_NO_CBLAS
// Built without OpenBLAS (PIPE_RUNTIME_ALLOW_NO_BLAS, the standalone
// GPU-machine build): nothing to configure.
const char *pipe_rt_blas_kernels(void) { return "none (no OpenBLAS)"; }
void pipe_rt_blas_configure(char **) {}
#else

extern "C" {
// OpenBLAS's extensions (declared in its cblas.h, restated so this file does
// not depend on which cblas.h is found first).
char *openblas_get_corename(void);
void openblas_set_num_threads(int);
}

const char *pipe_rt_blas_kernels(void) { return openblas_get_corename(); }

void pipe_rt_blas_configure(char **argv) {
  const char *tuning = std::getenv("PIPE_BLAS_TUNING");
  if (tuning && std::strcmp(tuning, "0") == 0)
    return;
  if (!std::getenv("OPENBLAS_NUM_THREADS"))
    openblas_set_num_threads(1);
  if (std::getenv("OPENBLAS_CORETYPE") ||
      std::strcmp(openblas_get_corename(), "Prescott") != 0 || !argv)
    return;
  const char *family = nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    family = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    family = "Haswell";
  if (!family)
    return;
  // Set for the new image only; if exec fails, run on as we are.
  setenv("OPENBLAS_CORETYPE", family, 1);
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");
}

#endif // PIPE_RT_NO_CBLAS
