// Block functions the CUDA lowering cannot run are rejected with a located
// error, and so are bad options.
//
// RUN: pipe-opt %s -split-input-file --pipe-linalg-to-gpu -verify-diagnostics
// RUN: not pipe-opt %s -split-input-file "--pipe-linalg-to-gpu=gemm-precision=fp8" 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: not pipe-opt %s -split-input-file "--pipe-linalg-to-gpu=block-size=100" 2>&1 | FileCheck %s --check-prefix=BLOCK

// PRECISION: gemm-precision must be f32, tf32, bf16 or f16, not 'fp8'
// BLOCK: block-size must be a multiple of 32 between 32 and 1024, not 100

#id = affine_map<(i) -> (i)>

func.func @dynamic(%x: memref<?xf32>, %y: memref<?xf32>)
    attributes {pipe.packed_entry = "pipe_fn_dynamic"} {
  // expected-error @below {{has dynamic loop sizes; the CUDA lowering needs static shapes}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

func.func @host_read(%x: memref<4xf32>) -> f32
    attributes {pipe.packed_entry = "pipe_fn_host_read"} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{reads device memory on the host}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

#id = affine_map<(i) -> (i)>

func.func @linalg_in_loop(%x: memref<4xf32>, %y: memref<4xf32>)
    attributes {pipe.packed_entry = "pipe_fn_linalg_in_loop"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // expected-error @below {{contains linalg ops under host control flow}}
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    }
  }
  return
}

// -----

func.func @stack(%x: memref<4xf32>)
    attributes {pipe.packed_entry = "pipe_fn_stack"} {
  // expected-error @below {{is host stack memory}}
  %a = memref.alloca() : memref<4xf32>
  return
}
