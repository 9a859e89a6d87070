// Block functions (marked pipe.packed_entry) on buffers become device work on
// one stream: linalg ops become gpu.launch (elementwise: one thread per
// point; large single-output reductions: one block per output element and a
// block-wide all-reduce), allocation is gpu.alloc/dealloc, copies are device
// copies, constants get device copies, host loops over memory run in a
// one-thread kernel, and the host GEMM entry becomes the CUDA one.
// No GPU and no CUDA toolkit needed.
//
// RUN: pipe-opt %s -split-input-file --pipe-linalg-to-gpu | FileCheck %s
// RUN: pipe-opt %s -split-input-file "--pipe-linalg-to-gpu=gemm-precision=bf16 block-size=128" | FileCheck %s --check-prefix=OPT

#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// Elementwise over 4x100 = 400 points: 2 blocks of 256 threads, guarded,
// the linear id split row-major; the result is a device allocation.
// CHECK-LABEL: func.func @elementwise(
// CHECK:         %[[S:.*]] = gpu.wait async
// CHECK:         %[[OUT:.*]], %[[T0:.*]] = gpu.alloc async [%[[S]]] () : memref<4x100xf32>
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK:         %[[T1:.*]] = gpu.launch async [%[[T0]]] blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C2]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK:           %[[MUL:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK:           %[[ID:.*]] = arith.addi %[[MUL]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[J:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK:             %[[I:.*]] = arith.divui %[[ID]], %{{.*}} : index
// CHECK:             %[[X:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<4x100xf32>
// CHECK:             %[[E:.*]] = math.exp %[[X]] : f32
// CHECK:             memref.store %[[E]], %[[OUT]][%[[I]], %[[J]]] : memref<4x100xf32>
// CHECK:           gpu.terminator
// CHECK:         gpu.wait [%[[T1]]]
// CHECK-NEXT:    return %[[OUT]]
// OPT-LABEL: func.func @elementwise(
// OPT:         %[[C4:.*]] = arith.constant 4 : index
// OPT:         gpu.launch async {{.*}} in (%{{.*}} = %[[C4]], {{.*}} threads({{.*}}) in (%{{.*}} = %{{.*}}128
func.func @elementwise(%x: memref<4x100xf32>) -> memref<4x100xf32>
    attributes {pipe.packed_entry = "pipe_fn_elementwise"} {
  %out = memref.alloc() : memref<4x100xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x100xf32>) outs(%out : memref<4x100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return %out : memref<4x100xf32>
}

// A row maximum over 64 columns: one block per row (16 blocks) of 64
// threads, each thread strides over the row from its thread id, then a
// block-wide all-reduce; thread 0 combines with the old value. The copy of
// the initial values is a device-to-device memcpy on the same stream.
// CHECK-LABEL: func.func @row_max(
// CHECK:         %[[OUT:.*]], %[[T0:.*]] = gpu.alloc async
// CHECK:         %[[T1:.*]] = gpu.memcpy async [%[[T0]]] %[[OUT]], %{{.*}} : memref<16xf32>, memref<16xf32>
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK:         %[[T2:.*]] = gpu.launch async [%[[T1]]] blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C16]], {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C64]],
// CHECK:           %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:           %[[ACC:.*]] = scf.for %[[K:.*]] = %[[TX]] to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[NEGINF]]) -> (f32) {
// CHECK:             %[[V:.*]] = memref.load %{{.*}}[%[[BX]], %[[K]]] : memref<16x64xf32>
// CHECK:             %[[M:.*]] = arith.maximumf %[[A]], %[[V]] : f32
// CHECK:             scf.yield %[[M]] : f32
// CHECK:           %[[R:.*]] = gpu.all_reduce maximumf %[[ACC]] uniform
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[TX]], %{{.*}} : index
// CHECK:           scf.if %[[FIRST]] {
// CHECK:             %[[OLD:.*]] = memref.load %[[OUT]][%[[BX]]] : memref<16xf32>
// CHECK:             %[[NEW:.*]] = arith.maximumf %[[OLD]], %[[R]] : f32
// CHECK:             memref.store %[[NEW]], %[[OUT]][%[[BX]]] : memref<16xf32>
// CHECK:         gpu.wait [%[[T2]]]
func.func @row_max(%x: memref<16x64xf32>, %m: memref<16xf32>) -> memref<16xf32>
    attributes {pipe.packed_entry = "pipe_fn_row_max"} {
  %out = memref.alloc() : memref<16xf32>
  memref.copy %m, %out : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32>) outs(%out : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  return %out : memref<16xf32>
}

// A sum over 8 columns is too short for a block: one thread per row with a
// sequential loop. A named op (fill) is generalized first. The temporary is
// freed on the stream.
// CHECK-LABEL: func.func @short_sum(
// CHECK:         %[[TMP:.*]], %{{.*}} = gpu.alloc async
// CHECK:         gpu.launch async
// CHECK:           memref.store %{{.*}}, %[[TMP]][%{{.*}}] : memref<16xf32>
// CHECK:         gpu.launch async
// CHECK-NOT:       gpu.all_reduce
// CHECK:           scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             memref.load %{{.*}}[%{{.*}}, %[[K]]] : memref<16x8xf32>
// CHECK:             arith.addf
// CHECK:             memref.store
// CHECK:         gpu.launch async
// CHECK:         %[[T:.*]] = gpu.dealloc async [%{{.*}}] %[[TMP]] : memref<16xf32>
// CHECK:         gpu.wait [%[[T]]]
func.func @short_sum(%x: memref<16x8xf32>, %y: memref<16xf32>)
    attributes {pipe.packed_entry = "pipe_fn_short_sum"} {
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%tmp : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x8xf32>) outs(%tmp : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.copy ins(%tmp : memref<16xf32>) outs(%y : memref<16xf32>)
  memref.dealloc %tmp : memref<16xf32>
  return
}

// -----

// A constant read by device code is copied to device memory (and freed at
// the end, since it is not returned); a scatter-add loop nest (indices may
// repeat) runs one thread per iteration with atomic adds; a loop nest that
// also reads its accumulator runs unchanged in a one-thread kernel; a
// strided copy is a kernel. (A pass test: real blocks never write their
// arguments.)
// CHECK-LABEL: func.func @constants_and_loops(
// CHECK:         %[[S:.*]] = gpu.wait async
// CHECK:         %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK:         %[[D:.*]], %[[T0:.*]] = gpu.alloc async [%[[S]]] () : memref<4xf32>
// CHECK:         %[[T1:.*]] = gpu.memcpy async [%[[T0]]] %[[D]], %[[G]] : memref<4xf32>, memref<4xf32>
// CHECK:         %[[T2:.*]] = gpu.launch async [%[[T1]]] blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c32{{(_[0-9]+)?}},
// CHECK:           scf.if
// CHECK:             %[[J:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<4x3xindex>
// CHECK:             %[[V:.*]] = memref.load %[[D]][%{{.*}}] : memref<4xf32>
// CHECK:             memref.atomic_rmw addf %[[V]], %{{.*}}[%[[J]]] : (f32, memref<8xf32>) -> f32
// CHECK:           gpu.terminator
// CHECK:         %[[T3:.*]] = gpu.launch async [%[[T2]]] blocks({{.*}}) in (%{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}) threads({{.*}}) in (%{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}) {
// CHECK-NEXT:      scf.for
// CHECK:             memref.load
// CHECK:             memref.store
// CHECK:           gpu.terminator
// CHECK:         %[[T4:.*]] = gpu.launch async [%[[T3]]]
// CHECK:           %[[C:.*]] = memref.load %[[D]][%[[I:.*]]] : memref<4xf32>
// CHECK:           memref.store %[[C]], %{{.*}}[%[[I]]] : memref<4xf32, strided<[2]>>
// CHECK:         %[[T5:.*]] = gpu.dealloc async [%[[T4]]] %[[D]] : memref<4xf32>
// CHECK:         gpu.wait [%[[T5]]]
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

func.func @constants_and_loops(%acc: memref<8xf32>, %idx: memref<4x3xindex>,
                               %view: memref<4xf32, strided<[2]>>)
    attributes {pipe.packed_entry = "pipe_fn_constants_and_loops"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %g = memref.get_global @table : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %k = %c0 to %c3 step %c1 {
      %j = memref.load %idx[%i, %k] : memref<4x3xindex>
      %v = memref.load %g[%i] : memref<4xf32>
      %o = memref.load %acc[%j] : memref<8xf32>
      %s = arith.addf %o, %v : f32
      memref.store %s, %acc[%j] : memref<8xf32>
    }
  }
  // A prefix sum: iteration i reads what iteration i - 1 wrote.
  scf.for %i = %c1 to %c4 step %c1 {
    %p = arith.subi %i, %c1 : index
    %prev = memref.load %acc[%p] : memref<8xf32>
    %o = memref.load %acc[%i] : memref<8xf32>
    %s = arith.addf %o, %prev : f32
    memref.store %s, %acc[%i] : memref<8xf32>
  }
  memref.copy %g, %view : memref<4xf32> to memref<4xf32, strided<[2]>>
  return
}

// A function that is no block (no pipe.packed_entry) stays host code.
// CHECK-LABEL: func.func @host_only(
// CHECK-NOT:     gpu.
// CHECK:         memref.alloc
// CHECK:         return
func.func @host_only() -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  return %a : memref<4xf32>
}

// -----

// pipe-linalg-to-gemm's call: same operands plus the cuBLAS compute type
// (the runtime queues it on the block's stream, which is synchronized before
// the return). Its shape table stays in host memory (the runtime reads it).
// CHECK-LABEL: func.func private @pipe_rt_cuda_gemm(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32)
// CHECK-NOT:   func.func private @pipe_rt_gemm_f32
// CHECK-LABEL: func.func @gemm(
// CHECK:         %[[S:.*]] = gpu.wait async
// CHECK:         memref.get_global @__pipe_gemm_shape_0
// CHECK-NOT:     gpu.alloc
// CHECK:         %[[CODE:.*]] = arith.constant 0 : i32
// CHECK:         call @pipe_rt_cuda_gemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CODE]])
// CHECK:         gpu.wait [%[[S]]]
// OPT-LABEL: func.func @gemm(
// OPT:         %[[CODE:.*]] = arith.constant 2 : i32
// OPT:         call @pipe_rt_cuda_gemm({{.*}}, %[[CODE]])
memref.global "private" constant @__pipe_gemm_shape_0 : memref<13xi64> = dense<[1, 4, 8, 8, 0, 8, 1, 0, 8, 1, 0, 8, 1]>
func.func private @pipe_rt_gemm_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)

func.func @gemm(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr)
    attributes {pipe.packed_entry = "pipe_fn_gemm"} {
  %t = memref.get_global @__pipe_gemm_shape_0 : memref<13xi64>
  %p = memref.extract_aligned_pointer_as_index %t : memref<13xi64> -> index
  %i = arith.index_cast %p : index to i64
  %q = llvm.inttoptr %i : i64 to !llvm.ptr
  call @pipe_rt_gemm_f32(%a, %b, %c, %q, %q, %q, %q) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
  return
}
