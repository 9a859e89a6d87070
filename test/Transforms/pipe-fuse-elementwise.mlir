// RUN: pipe-opt %s -split-input-file --pipe-fuse-elementwise | FileCheck %s
// RUN: pipe-opt %s -split-input-file "--pipe-fuse-elementwise=recompute-limit=0" | FileCheck %s --check-prefix=NORECOMPUTE
// The GEMM still becomes a runtime call, the fused statistics still a block
// reduction:
// RUN: pipe-opt %s -split-input-file --pipe-fuse-elementwise "--one-shot-bufferize=bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-deallocation-pipeline --convert-bufferization-to-memref --pipe-linalg-to-gemm | FileCheck %s --check-prefix=GEMM
// RUN: pipe-opt %s -split-input-file --pipe-fuse-elementwise "--one-shot-bufferize=bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-deallocation-pipeline --convert-bufferization-to-memref --pipe-linalg-to-gemm --pipe-linalg-to-gpu | FileCheck %s --check-prefix=GPU

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Bias add then ReLU: one generic, reading x and the bias.
// CHECK-LABEL: func.func @bias_relu(
// CHECK-SAME:      %[[X:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[B]] : tensor<8x16xf32>, tensor<16xf32>)
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
// GPU-LABEL: func.func @bias_relu(
// GPU-COUNT-1:   gpu.launch
// GPU-NOT:       gpu.launch
// GPU:           return
func.func @bias_relu(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32>
    attributes {pipe.packed_entry = "pipe_fn_bias_relu"} {
  %e = tensor.empty() : tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %add = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%add : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  return %relu : tensor<8x16xf32>
}

// -----

// Only block functions (pipe.packed_entry) are touched.
// CHECK-LABEL: func.func @not_a_block(
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @not_a_block(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// A matmul between elementwise ops: the scaling of its input does not fuse
// into it, the matmul does not fuse into the bias add; it stays a
// contraction, which pipe-linalg-to-gemm turns into a BLAS call. The bias
// add and the ReLU after it fuse.
// CHECK-LABEL: func.func @linear(
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           arith.mulf
// CHECK-NEXT:      linalg.yield
// CHECK:         %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[S]], %{{.*}} :
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[W:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[A]], %[[W]]
// CHECK-NEXT:      %[[ACC:.*]] = arith.addf %[[O]], %[[P]]
// CHECK-NEXT:      linalg.yield %[[ACC]]
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[M]], %{{.*}} :
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:         return %[[R]]
// GEMM-LABEL: func.func @linear(
// GEMM:         call @pipe_rt_gemm_f32(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @linear(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %bias: tensor<16xf32>) -> tensor<8x16xf32>
    attributes {pipe.packed_entry = "pipe_fn_linear"} {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ex = tensor.empty() : tensor<8x4xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%ex : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %half : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%scaled, %w : tensor<8x4xf32>, tensor<4x16xf32>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %p = arith.mulf %in, %in_w : f32
    %acc = arith.addf %out, %p : f32
    linalg.yield %acc : f32
  } -> tensor<8x16xf32>
  %add = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%add : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  return %relu : tensor<8x16xf32>
}

// -----

// Multi-use producers. A cheap one (one add) read by two elementwise ops is
// computed in both and disappears; with recompute-limit=0 it stays.
// CHECK-LABEL: func.func @cheap_two_readers(
// CHECK-COUNT-2: linalg.generic {{.*}} ins(%arg0, %arg1 :
// CHECK-NOT:     linalg.generic
// NORECOMPUTE-LABEL: func.func @cheap_two_readers(
// NORECOMPUTE-COUNT-3: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @cheap_two_readers(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {pipe.packed_entry = "pipe_fn_cheap"} {
  %e = tensor.empty() : tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%sum : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%sum : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %sq, %neg : tensor<8xf32>, tensor<8xf32>
}

// -----

// An expensive producer (a long chain) read by two elementwise ops is not
// computed twice: the first reader takes it with its value as a second
// result, the second reader then takes that op the same way: one op computes
// the chain once and yields both readers' values.
// CHECK-LABEL: func.func @expensive_two_readers(
// CHECK:         %[[F:.*]]:2 = linalg.generic {{.*}} ins(%arg0 :
// CHECK-COUNT-2:   math.exp
// CHECK-NOT:       math.exp
// CHECK:           linalg.yield
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[F]]#0, %[[F]]#1
#id = affine_map<(d0) -> (d0)>
func.func @expensive_two_readers(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {pipe.packed_entry = "pipe_fn_expensive"} {
  %e = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    %1 = arith.mulf %0, %in : f32
    %2 = arith.addf %1, %0 : f32
    %3 = math.exp %2 : f32
    %4 = arith.mulf %3, %3 : f32
    %5 = arith.subf %4, %1 : f32
    %6 = arith.mulf %5, %5 : f32
    %7 = arith.addf %6, %4 : f32
    %8 = arith.divf %7, %6 : f32
    linalg.yield %8 : f32
  } -> tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// An expensive producer read by a reduction first, then by an elementwise
// op: neither can take it without computing it twice (the reduction reads
// it before the elementwise op could write it), so it stays its own op.
// CHECK-LABEL: func.func @expensive_reduction_reader(
// CHECK:         %[[E:.*]] = linalg.generic {{.*}} ins(%arg0 :
// CHECK:           math.exp
// CHECK:         linalg.generic {{.*}} ins(%[[E]] :
// CHECK:         linalg.generic {{.*}} ins(%[[E]], %{{.*}} :
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @expensive_reduction_reader(%x: tensor<4x64xf32>) -> tensor<4x64xf32>
    attributes {pipe.packed_entry = "pipe_fn_softmax"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %er = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    %1 = math.exp %0 : f32
    %2 = math.exp %1 : f32
    %3 = math.exp %2 : f32
    %4 = math.exp %3 : f32
    %5 = math.exp %4 : f32
    %6 = math.exp %5 : f32
    %7 = math.exp %6 : f32
    %8 = math.exp %7 : f32
    linalg.yield %8 : f32
  } -> tensor<4x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %norm = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %sum : tensor<4x64xf32>, tensor<4xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<4x64xf32>
  return %norm : tensor<4x64xf32>
}

// -----

// A producer that is also returned (a saved activation) and read once by an
// elementwise op: the fused op writes both results (bias + GELU-like in one
// kernel), nothing is computed twice, the separate producer is gone.
// CHECK-LABEL: func.func @saved_activation(
// CHECK:         %[[F:.*]]:2 = linalg.generic {{.*}} ins(%arg0, %arg1 :
// CHECK:           %[[H:.*]] = arith.addf
// CHECK:           %[[T:.*]] = math.tanh %[[H]]
// CHECK:           linalg.yield %[[H]], %[[T]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[F]]#0, %[[F]]#1
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @saved_activation(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
    attributes {pipe.packed_entry = "pipe_fn_saved"} {
  %e = tensor.empty() : tensor<8x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %h, %t : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// An expensive producer read through a broadcast (each element once per
// column) is not recomputed per read.
// CHECK-LABEL: func.func @broadcast_expensive(
// CHECK:         %[[E:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%arg1, %[[E]] :
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
func.func @broadcast_expensive(%v: tensor<8xf32>, %x: tensor<8x64xf32>) -> tensor<8x64xf32>
    attributes {pipe.packed_entry = "pipe_fn_broadcast"} {
  %ev = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%v : tensor<8xf32>) outs(%ev : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    %1 = math.log %0 : f32
    %2 = math.tanh %1 : f32
    %3 = math.exp %2 : f32
    %4 = math.log %3 : f32
    %5 = math.tanh %4 : f32
    %6 = math.exp %5 : f32
    %7 = math.log %6 : f32
    %8 = math.tanh %7 : f32
    linalg.yield %8 : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %p : tensor<8x64xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

// Layer-norm statistics: the residual add and the centring fuse into the
// variance reduction, whose body keeps `yield addf(out, x)`; on the GPU it
// is still one thread block per row with an all-reduce.
// CHECK-LABEL: func.func @layernorm_stats(
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:         %[[VAR:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %arg1, %[[MEAN]] :
// CHECK:           arith.addf
// CHECK:           arith.subf
// CHECK:           arith.mulf
// CHECK:           %[[ACC:.*]] = arith.addf %{{.*}}, %{{.*}}
// CHECK-NEXT:      linalg.yield %[[ACC]]
// CHECK:         return %[[VAR]]
// GPU-LABEL: func.func @layernorm_stats(
// GPU:           gpu.all_reduce add
// GPU:           gpu.all_reduce add
// GPU:           return
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @layernorm_stats(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> tensor<4xf32>
    attributes {pipe.packed_entry = "pipe_fn_ln"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %er = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %res = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x64xf32>, tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  %mean = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%res : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %c = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%res, %mean : tensor<4x64xf32>, tensor<4xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %s = arith.subf %in, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  %var = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %out, %sq : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %var : tensor<4xf32>
}

// -----

// A reshape between a bias add and its activation (the GEMM's [b*s, n]
// result viewed as [b, s, n]) moves above the bias add, which then fuses
// with the activation; the GEMM keeps its shape.
// CHECK-LABEL: func.func @reshape_between(
// CHECK:         %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         %[[V:.*]] = tensor.expand_shape %[[M]] {{\[\[}}0, 1], [2]]
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[V]], %{{.*}} : tensor<2x4x16xf32>, tensor<16xf32>)
// CHECK:           arith.addf
// CHECK:           math.tanh
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @reshape_between(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %bias: tensor<16xf32>) -> tensor<2x4x16xf32>
    attributes {pipe.packed_entry = "pipe_fn_reshape"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x4xf32>, tensor<4x16xf32>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %p = arith.mulf %in, %in_w : f32
    %acc = arith.addf %out, %p : f32
    linalg.yield %acc : f32
  } -> tensor<8x16xf32>
  %add = linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %v = tensor.expand_shape %add [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e3 = tensor.empty() : tensor<2x4x16xf32>
  %act = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x4x16xf32>) outs(%e3 : tensor<2x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<2x4x16xf32>
  return %act : tensor<2x4x16xf32>
}
