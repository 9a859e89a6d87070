// The toy LM in Inputs/tiny-lm.mlir (embedding, 2 layers, head + loss) at
// each granularity; then small cases below, split.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks | FileCheck %s --check-prefix=OP
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer | FileCheck %s --check-prefix=LAYER
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks="granularity=coarse num-blocks=3" | FileCheck %s --check-prefix=COARSE
// Printed IR parses back to the same thing.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer | pipe-opt | FileCheck %s --check-prefix=LAYER
// RUN: pipe-opt %s -split-input-file --pipe-form-blocks=granularity=layer | FileCheck %s
// RUN: pipe-opt %s -split-input-file --pipe-form-blocks | FileCheck %s --check-prefix=SPLIT-OP

// Op granularity: one block per compute op. The weight transpose (glue that
// reads only a parameter) and the constants are cloned into the matmul's
// block; the expand_shape after the sum of squares joins its producer.
// OP-LABEL: pipe.block @gather params(%{{.*}}: tensor<16x8xf32>) (%{{.*}}: tensor<4xi64>) -> tensor<4x8xf32>
// OP:         tensor.extract
// OP-LABEL: pipe.block @addf params(%{{.*}}: tensor<4x8xf32>) (%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32>
// OP-LABEL: pipe.block @mulf_reduce
// OP-SAME:  (%[[X:.*]]: tensor<4x8xf32>) -> tensor<4x1xf32>
// OP:         %[[ZERO:.*]] = arith.constant 0.0
// OP:         %[[E:.*]] = tensor.empty() : tensor<4xf32>
// OP:         %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4xf32>)
// OP:         %[[SS:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>) outs(%[[FILL]] : tensor<4xf32>)
// OP:         %[[SSX:.*]] = tensor.expand_shape %[[SS]]
// OP:         pipe.return %[[SSX]] : tensor<4x1xf32>
// OP-LABEL: pipe.block @rsqrt params(%{{.*}}: tensor<8xf32>) (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x1xf32>) -> tensor<4x8xf32>
// OP-LABEL: pipe.block @matmul
// OP-SAME:  params(%[[W:.*]]: tensor<8x8xf32>) (%[[N:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// OP:         %[[WT:.*]] = linalg.transpose ins(%[[W]] : tensor<8x8xf32>)
// OP:         %[[ACC:.*]] = linalg.fill
// OP:         %[[MM:.*]] = linalg.matmul ins(%[[N]], %[[WT]] : tensor<4x8xf32>, tensor<8x8xf32>) outs(%[[ACC]] : tensor<4x8xf32>)
// OP:         pipe.return %[[MM]]
// OP-LABEL: pipe.block @tanh params
// OP-LABEL: pipe.block @addf_1 (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32>
// OP-LABEL: pipe.block @contract params(%{{.*}}: tensor<16x8xf32>) (%{{.*}}: tensor<4x8xf32>) -> tensor<4x16xf32>
// OP-LABEL: pipe.block @mulf_reduce_1 (%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<4x16xf32>) -> tensor<f32>
// The two layers' ops share block functions; only the parameters differ.
// OP-NOT:   pipe.block
// OP-LABEL: pipe.graph @forward
// OP-SAME:  (%[[IDS:.*]]: tensor<4xi64>, %[[LABELS:.*]]: tensor<4x16xf32>) -> tensor<f32>
// OP-NEXT:    %[[E0:.*]] = pipe.run "op0.gather" @gather(%[[IDS]]) params [@wte]
// OP-NEXT:    %[[X0:.*]] = pipe.run "op1.addf" @addf(%[[E0]]) params [@wpe]
// OP-NEXT:    %[[S0:.*]] = pipe.run "op2.mulf_reduce" @mulf_reduce(%[[X0]])
// OP-NEXT:    %[[N0:.*]] = pipe.run "op3.rsqrt" @rsqrt(%[[X0]], %[[S0]]) params [@h.0.g]
// OP-NEXT:    %[[M0:.*]] = pipe.run "op4.matmul" @matmul(%[[N0]]) params [@h.0.w]
// OP-NEXT:    %[[A0:.*]] = pipe.run "op5.tanh" @tanh(%[[M0]]) params [@h.0.b]
// OP-NEXT:    %[[X1:.*]] = pipe.run "op6.addf" @addf_1(%[[X0]], %[[A0]])
// OP-NEXT:    %[[S1:.*]] = pipe.run "op7.mulf_reduce" @mulf_reduce(%[[X1]])
// OP-NEXT:    %[[N1:.*]] = pipe.run "op8.rsqrt" @rsqrt(%[[X1]], %[[S1]]) params [@h.1.g]
// OP-NEXT:    %[[M1:.*]] = pipe.run "op9.matmul" @matmul(%[[N1]]) params [@h.1.w]
// OP-NEXT:    %[[A1:.*]] = pipe.run "op10.tanh" @tanh(%[[M1]]) params [@h.1.b]
// OP-NEXT:    %[[X2:.*]] = pipe.run "op11.addf" @addf_1(%[[X1]], %[[A1]])
// OP-NEXT:    %[[L:.*]] = pipe.run "op12.contract" @contract(%[[X2]]) params [@head]
// OP-NEXT:    %[[LOSS:.*]] = pipe.run "op13.mulf_reduce" @mulf_reduce_1(%[[L]], %[[LABELS]])
// OP-NEXT:    pipe.return %[[LOSS]] : tensor<f32>
// OP-NOT:   func.func

// Layer granularity: the repeated structure gives two layers sharing one
// block; the embedding and the head + loss are the prologue and epilogue.
// The alignment puts the position-embedding add in the prologue (cutting
// only the residual stream) rather than in the layers.
// LAYER-LABEL: pipe.block @prologue params(%{{.*}}: tensor<16x8xf32>, %{{.*}}: tensor<4x8xf32>) (%{{.*}}: tensor<4xi64>) -> tensor<4x8xf32>
// LAYER:         tensor.extract
// LAYER:         arith.addf
// LAYER:         pipe.return
// LAYER-LABEL: pipe.block @layer
// LAYER-SAME:  params(%[[G:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[B:.*]]: tensor<8xf32>) (%[[X:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// LAYER:         %[[SS:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>)
// LAYER:           arith.mulf
// LAYER:           arith.addf
// LAYER:         %[[SSX:.*]] = tensor.expand_shape %[[SS]]
// LAYER:         %[[N:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[SSX]], %[[G]] : tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>)
// LAYER:           math.rsqrt
// LAYER:         %[[WT:.*]] = linalg.transpose ins(%[[W]]
// LAYER:         %[[MM:.*]] = linalg.matmul ins(%[[N]], %[[WT]] :
// LAYER:         %[[ACT:.*]] = linalg.generic {{.*}} ins(%[[MM]], %[[B]] :
// LAYER:           math.tanh
// LAYER:         %[[RES:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[ACT]] :
// LAYER:         pipe.return %[[RES]] : tensor<4x8xf32>
// LAYER-LABEL: pipe.block @epilogue params(%{{.*}}: tensor<16x8xf32>) (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x16xf32>) -> tensor<f32>
// LAYER-NOT:   pipe.block
// LAYER-LABEL: pipe.graph @forward
// LAYER-SAME:  (%[[IDS:.*]]: tensor<4xi64>, %[[LABELS:.*]]: tensor<4x16xf32>) -> tensor<f32>
// LAYER-NEXT:    %[[H0:.*]] = pipe.run "prologue" @prologue(%[[IDS]]) params [@wte, @wpe] : (tensor<4xi64>) -> tensor<4x8xf32>
// LAYER-NEXT:    %[[H1:.*]] = pipe.run "layer0" @layer(%[[H0]]) params [@h.0.g, @h.0.w, @h.0.b] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// LAYER-NEXT:    %[[H2:.*]] = pipe.run "layer1" @layer(%[[H1]]) params [@h.1.g, @h.1.w, @h.1.b] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// LAYER-NEXT:    %[[LOSS:.*]] = pipe.run "epilogue" @epilogue(%[[H2]], %[[LABELS]]) params [@head] : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<f32>
// LAYER-NEXT:    pipe.return %[[LOSS]] : tensor<f32>

// Coarse: 14 op-level blocks merged into 3 contiguous parts of about equal
// FLOPs; a part may return several values.
// COARSE-LABEL: pipe.block @part0 params({{.*}}) (%{{.*}}: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x1xf32>)
// COARSE-LABEL: pipe.block @part1 params({{.*}}) (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x1xf32>) -> tensor<4x8xf32>
// COARSE-LABEL: pipe.block @part2 params(%{{.*}}: tensor<16x8xf32>) (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x16xf32>) -> tensor<f32>
// COARSE-LABEL: pipe.graph @forward
// COARSE-NEXT:    %[[P0:.*]]:2 = pipe.run "part0" @part0(%{{.*}}) params [@wte, @wpe, @h.0.g, @h.0.w, @h.0.b]
// COARSE-NEXT:    %[[P1:.*]] = pipe.run "part1" @part1(%[[P0]]#0, %[[P0]]#1) params [@h.1.g, @h.1.w, @h.1.b]
// COARSE-NEXT:    %[[P2:.*]] = pipe.run "part2" @part2(%[[P1]], %{{.*}}) params [@head]
// COARSE-NEXT:    pipe.return %[[P2]]

// Layers named by location scopes (as importers that keep module paths
// write them) win over structure: here the two layers differ in structure
// (the second has no bias), so they get two block functions, and the
// unscoped ops before and after are the prologue and epilogue.
// CHECK-LABEL: pipe.block @prologue (%{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-LABEL: pipe.block @layer params(%{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4xf32>) (%{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-LABEL: pipe.block @layer_1 params(%{{.*}}: tensor<4x4xf32>) (%{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-LABEL: pipe.block @epilogue (%{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-LABEL: pipe.graph @model(
// CHECK-NEXT:    pipe.run "prologue" @prologue
// CHECK-NEXT:    pipe.run "blocks.0" @layer({{.*}}) params [@w0, @b0]
// CHECK-NEXT:    pipe.run "blocks.1" @layer_1({{.*}}) params [@w1]
// CHECK-NEXT:    pipe.run "epilogue" @epilogue
// SPLIT-OP-LABEL: pipe.graph @model(
// SPLIT-OP-COUNT-5: pipe.run
// SPLIT-OP-NEXT:    pipe.return
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
pipe.param @w0 : tensor<4x4xf32>
pipe.param @b0 : tensor<4xf32>
pipe.param @w1 : tensor<4x4xf32>
func.func @model(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32> loc("embed")
  %w0 = pipe.get_param @w0 : tensor<4x4xf32>
  %h0 = linalg.matmul ins(%x2, %w0 : tensor<2x4xf32>, tensor<4x4xf32>)
      outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32> loc("blocks.0.fc")
  %b0 = pipe.get_param @b0 : tensor<4xf32>
  %y0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h0, %b0 : tensor<2x4xf32>, tensor<4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32> loc(callsite("blocks.0.bias" at "model.py":3:0))
  %w1 = pipe.get_param @w1 : tensor<4x4xf32>
  %h1 = linalg.matmul ins(%y0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>)
      outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32> loc(fused["blocks.1.fc", "model.py":4:0])
  %out = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h1 : tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32> loc("head")
  return %out : tensor<2x4xf32>
}

// -----

// An encoder output read by every decoder layer (the block graph is not a
// chain), a reshape of a graph argument cloned into each consumer, a weight
// transpose cloned into its consumer, and a parameter returned as is (it
// comes out of an extra "results" block).
// CHECK-LABEL: pipe.block @prologue
// CHECK-SAME:  (%[[IN:.*]]: tensor<8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK:         %[[X:.*]] = tensor.expand_shape %[[IN]]
// CHECK:         ins(%[[X]] :
// CHECK:         math.tanh
// CHECK:         ins(%[[X]] :
// CHECK:         math.exp
// CHECK-LABEL: pipe.block @layer params(%{{.*}}: tensor<4x4xf32>) (%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-LABEL: pipe.block @epilogue
// CHECK-SAME:  params(%[[WTE:.*]]: tensor<8x4xf32>) (%{{.*}}: tensor<2x4xf32>) -> tensor<2x8xf32>
// CHECK:         linalg.transpose ins(%[[WTE]]
// CHECK-LABEL: pipe.block @results
// CHECK-SAME:  params(%[[P:.*]]: tensor<4x4xf32>) () -> tensor<4x4xf32>
// CHECK-NEXT:    pipe.return %[[P]]
// CHECK-NOT:   pipe.block
// CHECK-LABEL: pipe.graph @forward
// CHECK-SAME:  (%[[ARG:.*]]: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<4x4xf32>)
// CHECK-NEXT:    %[[P:.*]]:2 = pipe.run "prologue" @prologue(%[[ARG]])
// CHECK-NEXT:    %[[D0:.*]] = pipe.run "layer0" @layer(%[[P]]#1, %[[P]]#0) params [@d0]
// CHECK-NEXT:    %[[D1:.*]] = pipe.run "layer1" @layer(%[[D0]], %[[P]]#0) params [@d1]
// CHECK-NEXT:    %[[D2:.*]] = pipe.run "layer2" @layer(%[[D1]], %[[P]]#0) params [@d2]
// CHECK-NEXT:    %[[OUT:.*]] = pipe.run "epilogue" @epilogue(%[[D2]]) params [@wte]
// CHECK-NEXT:    %[[R:.*]] = pipe.run "results" @results() params [@d0]
// CHECK-NEXT:    pipe.return %[[OUT]], %[[R]]
// At op granularity the three decoder matmuls share one block, and so do
// the three products with the encoder output.
// SPLIT-OP-LABEL: pipe.graph @forward(
// SPLIT-OP-NEXT:    %[[ENC:.*]] = pipe.run "op0.tanh" @tanh(
// SPLIT-OP-NEXT:    %[[DEC:.*]] = pipe.run "op1.exp" @exp(
// SPLIT-OP-NEXT:    %[[M0:.*]] = pipe.run "op2.matmul" @matmul(%[[DEC]]) params [@d0]
// SPLIT-OP-NEXT:    %[[H0:.*]] = pipe.run "op3.mulf" @mulf(%[[M0]], %[[ENC]])
// SPLIT-OP-NEXT:    %[[M1:.*]] = pipe.run "op4.matmul" @matmul(%[[H0]]) params [@d1]
// SPLIT-OP-NEXT:    %[[H1:.*]] = pipe.run "op5.mulf" @mulf(%[[M1]], %[[ENC]])
// SPLIT-OP-NEXT:    %[[M2:.*]] = pipe.run "op6.matmul" @matmul(%[[H1]]) params [@d2]
// SPLIT-OP-NEXT:    %[[H2:.*]] = pipe.run "op7.mulf" @mulf(%[[M2]], %[[ENC]])
// SPLIT-OP-NEXT:    pipe.run "op8.matmul" @matmul_1(%[[H2]]) params [@wte]
// SPLIT-OP-NEXT:    pipe.run "results" @results() params [@d0]
#id = affine_map<(i, j) -> (i, j)>
pipe.param @wte : tensor<8x4xf32>
pipe.param @d0 : tensor<4x4xf32>
pipe.param @d1 : tensor<4x4xf32>
pipe.param @d2 : tensor<4x4xf32>
func.func @forward(%in: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
  %x = tensor.expand_shape %in [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %wte = pipe.get_param @wte : tensor<8x4xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %wteT = linalg.transpose ins(%wte : tensor<8x4xf32>) outs(%e8 : tensor<4x8xf32>) permutation = [1, 0]
  %enc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  %dec = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  %d0 = pipe.get_param @d0 : tensor<4x4xf32>
  %m0 = linalg.matmul ins(%dec, %d0 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
  %h0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m0, %enc : tensor<2x4xf32>, tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %d1 = pipe.get_param @d1 : tensor<4x4xf32>
  %m1 = linalg.matmul ins(%h0, %d1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
  %h1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1, %enc : tensor<2x4xf32>, tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %d2 = pipe.get_param @d2 : tensor<4x4xf32>
  %m2 = linalg.matmul ins(%h1, %d2 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
  %h2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m2, %enc : tensor<2x4xf32>, tensor<2x4xf32>) outs(%empty : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %eo = tensor.empty() : tensor<2x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x8xf32>) -> tensor<2x8xf32>
  %logits = linalg.matmul ins(%h2, %wteT : tensor<2x4xf32>, tensor<4x8xf32>) outs(%zo : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %logits, %d0 : tensor<2x8xf32>, tensor<4x4xf32>
}

// -----

// A scope that comes back after another one is a separate instance with a
// unique name.
// CHECK-LABEL: pipe.graph @forward(
// CHECK-NEXT:    pipe.run "enc.0" @layer(
// CHECK-NEXT:    pipe.run "enc.1" @layer(
// CHECK-NEXT:    pipe.run "enc.0_1" @layer(
// CHECK-NEXT:    pipe.return
pipe.param @w : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
  %w = pipe.get_param @w : tensor<4x4xf32>
  %a = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32> loc("enc.0.fc")
  %b = linalg.matmul ins(%a, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32> loc("enc.1.fc")
  %c = linalg.matmul ins(%b, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32> loc("enc.0.fc")
  return %c : tensor<2x4xf32>
}
