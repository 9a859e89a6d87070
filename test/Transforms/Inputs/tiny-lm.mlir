// A 2-layer toy language model after --pipe-lift-params, written the way
// torch-mlir lowers it to linalg on tensors: a gather for the token
// embedding, position embedding add, per layer RMS norm (sum of squares,
// rsqrt scale), x @ W^T + b with tanh, residual add; then logits against a
// head (generic contraction with a permuted map) and a squared-error loss.
// Layers built in a loop share their file:line locations.
#loc_emb = loc("model.py":10:0)
#loc_norm = loc("model.py":20:0)
#loc_fc = loc("model.py":21:0)
#loc_act = loc("model.py":22:0)
#loc_res = loc("model.py":23:0)
#loc_head = loc("model.py":30:0)
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#row1 = affine_map<(i, j) -> (i, 0)>
#col = affine_map<(i, j) -> (j)>
pipe.param @wte : tensor<16x8xf32>
pipe.param @wpe : tensor<4x8xf32>
pipe.param @h.0.g : tensor<8xf32>
pipe.param @h.0.w : tensor<8x8xf32>
pipe.param @h.0.b : tensor<8xf32>
pipe.param @h.1.g : tensor<8xf32>
pipe.param @h.1.w : tensor<8x8xf32>
pipe.param @h.1.b : tensor<8xf32>
pipe.param @head : tensor<16x8xf32>

func.func @forward(%ids: tensor<4xi64>, %labels: tensor<4x16xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %dim = arith.constant 8.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %empty = tensor.empty() : tensor<4x8xf32>
  %wte = pipe.get_param @wte : tensor<16x8xf32>
  %e = linalg.generic {indexing_maps = [#row, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 1 : index
    %v = tensor.extract %wte[%r, %c] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32> loc(#loc_emb)
  %wpe = pipe.get_param @wpe : tensor<4x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%e, %wpe : tensor<4x8xf32>, tensor<4x8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32> loc(#loc_emb)

  // Layer 0.
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %ss_0 = linalg.generic {indexing_maps = [#id, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%x0 : tensor<4x8xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32> loc(#loc_norm)
  %ssx_0 = tensor.expand_shape %ss_0 [[0, 1]] output_shape [4, 1]
      : tensor<4xf32> into tensor<4x1xf32> loc(#loc_norm)
  %g_0 = pipe.get_param @h.0.g : tensor<8xf32>
  %n_0 = linalg.generic {indexing_maps = [#id, #row1, #col, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%x0, %ssx_0, %g_0 : tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %g: f32, %o: f32):
    %mean = arith.divf %s, %dim : f32
    %v = arith.addf %mean, %eps : f32
    %r = math.rsqrt %v : f32
    %y = arith.mulf %a, %r : f32
    %z = arith.mulf %y, %g : f32
    linalg.yield %z : f32
  } -> tensor<4x8xf32> loc(#loc_norm)
  %w_0 = pipe.get_param @h.0.w : tensor<8x8xf32>
  %e88 = tensor.empty() : tensor<8x8xf32>
  %wt_0 = linalg.transpose ins(%w_0 : tensor<8x8xf32>)
      outs(%e88 : tensor<8x8xf32>) permutation = [1, 0] loc(#loc_fc)
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm_0 = linalg.matmul ins(%n_0, %wt_0 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc_fc)
  %b_0 = pipe.get_param @h.0.b : tensor<8xf32>
  %act_0 = linalg.generic {indexing_maps = [#id, #col, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm_0, %b_0 : tensor<4x8xf32>, tensor<8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32> loc(#loc_act)
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%x0, %act_0 : tensor<4x8xf32>, tensor<4x8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32> loc(#loc_res)

  // Layer 1: the same ops on the next parameters.
  %ss_1 = linalg.generic {indexing_maps = [#id, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%x1 : tensor<4x8xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32> loc(#loc_norm)
  %ssx_1 = tensor.expand_shape %ss_1 [[0, 1]] output_shape [4, 1]
      : tensor<4xf32> into tensor<4x1xf32> loc(#loc_norm)
  %g_1 = pipe.get_param @h.1.g : tensor<8xf32>
  %n_1 = linalg.generic {indexing_maps = [#id, #row1, #col, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%x1, %ssx_1, %g_1 : tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %g: f32, %o: f32):
    %mean = arith.divf %s, %dim : f32
    %v = arith.addf %mean, %eps : f32
    %r = math.rsqrt %v : f32
    %y = arith.mulf %a, %r : f32
    %z = arith.mulf %y, %g : f32
    linalg.yield %z : f32
  } -> tensor<4x8xf32> loc(#loc_norm)
  %w_1 = pipe.get_param @h.1.w : tensor<8x8xf32>
  %wt_1 = linalg.transpose ins(%w_1 : tensor<8x8xf32>)
      outs(%e88 : tensor<8x8xf32>) permutation = [1, 0] loc(#loc_fc)
  %mm_1 = linalg.matmul ins(%n_1, %wt_1 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc_fc)
  %b_1 = pipe.get_param @h.1.b : tensor<8xf32>
  %act_1 = linalg.generic {indexing_maps = [#id, #col, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm_1, %b_1 : tensor<4x8xf32>, tensor<8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32> loc(#loc_act)
  %x2 = linalg.generic {indexing_maps = [#id, #id, #id],
      iterator_types = ["parallel", "parallel"]}
      ins(%x1, %act_1 : tensor<4x8xf32>, tensor<4x8xf32>)
      outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32> loc(#loc_res)

  // Head and loss: sum((x2 @ head^T - labels)^2).
  %head = pipe.get_param @head : tensor<16x8xf32>
  %e416 = tensor.empty() : tensor<4x16xf32>
  %lacc = linalg.fill ins(%zero : f32) outs(%e416 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %logits = linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x2, %head : tensor<4x8xf32>, tensor<16x8xf32>)
      outs(%lacc : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32> loc(#loc_head)
  %e0 = tensor.empty() : tensor<f32>
  %l0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#id, #id, affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%logits, %labels : tensor<4x16xf32>, tensor<4x16xf32>)
      outs(%l0 : tensor<f32>) {
  ^bb0(%p: f32, %t: f32, %s: f32):
    %d = arith.subf %p, %t : f32
    %sq = arith.mulf %d, %d : f32
    %acc2 = arith.addf %s, %sq : f32
    linalg.yield %acc2 : f32
  } -> tensor<f32> loc(#loc_head)
  return %loss : tensor<f32>
}
