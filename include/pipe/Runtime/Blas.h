//===- Blas.h - Configuring the BLAS behind the host GEMMs -------*- C -*-===//
//
// Tools that run programs call this first thing in main().
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_BLAS_H
#define PIPE_RUNTIME_BLAS_H

#ifdef __cplusplus
extern "C" {
#endif

/// Makes OpenBLAS fit how the runtime uses it:
/// - Debian 12's OpenBLAS 0.3.21 does not recognise recent Xeons and falls
///   back to its slowest (Prescott, SSE3) kernels. When it did, and the user
///   did not set OPENBLAS_CORETYPE, the process re-executes itself (`argv`)
///   with OPENBLAS_CORETYPE naming the best kernel family the CPU supports
///   (SkylakeX with AVX-512, Haswell with AVX2); the kernel family is chosen
///   when the library loads, before main, so it cannot be switched in place.
/// - Every simulated device is a thread calling BLAS on small matrices; a
///   multi-threaded BLAS then only adds spinning threads (measured slower
///   here), so unless OPENBLAS_NUM_THREADS is set it uses one thread.
/// PIPE_BLAS_TUNING=0 leaves OpenBLAS as it is. Returns normally unless it
/// re-executes.
void pipe_rt_blas_configure(char **argv);

/// OpenBLAS's kernel family ("SkylakeX", "Haswell", "Prescott", ...).
const char *pipe_rt_blas_kernels(void);

#ifdef __cplusplus
}
#endif

#endif // PIPE_RUNTIME_BLAS_H
