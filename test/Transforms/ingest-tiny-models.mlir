// End to end on the generator's tiny presets (torch-mlir-style IR with
// inline random weights): input check, parameter lifting, layer blocks and
// costs. Each model gets one block function per distinct layer kind, the
// tied embedding is one parameter bound by every block that reads it, and
// T5's decoder layers attend to the encoder output.
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs | FileCheck %s --check-prefix=GPT
// RUN: pipe-gen --model=tiny-bert | pipe-opt --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs | FileCheck %s --check-prefix=BERT
// RUN: pipe-gen --model=tiny-t5 | pipe-opt --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs | FileCheck %s --check-prefix=T5

// In GPT-2 wte (64x32) is read by the embedding gather and by the LM head.
// GPT-COUNT-28: pipe.param @
// GPT-NOT:      pipe.param
// GPT:          pipe.block @prologue params({{.*}}cost = #pipe.cost<
// GPT-NOT:      pipe.block
// GPT:          pipe.block @layer params({{.*}}cost = #pipe.cost<
// GPT-NOT:      pipe.block
// GPT:          pipe.block @epilogue params({{.*}}cost = #pipe.cost<
// GPT-NOT:      pipe.block
// GPT-LABEL:    pipe.graph @forward
// GPT-NEXT:     %[[E:.*]] = pipe.run "prologue" @prologue(%arg0) params [@[[WTE:torch_tensor_64_32_torch.float32]], @torch_tensor_64_32_torch.float32_1]
// GPT-NEXT:     %[[L0:.*]] = pipe.run "layer0" @layer(%[[E]]) params [@torch_tensor_32_torch.float32,
// GPT-NEXT:     %[[L1:.*]] = pipe.run "layer1" @layer(%[[L0]]) params [@torch_tensor_32_torch.float32_6,
// GPT-NEXT:     %[[LOSS:.*]] = pipe.run "epilogue" @epilogue(%[[L1]], %arg1) params [{{.*}}, @[[WTE]]] :
// GPT-NEXT:     pipe.return %[[LOSS]] : tensor<f32>

// In BERT the word embedding is also the MLM decoder matrix.
// BERT:         pipe.block @prologue params(
// BERT-NOT:     pipe.block
// BERT:         pipe.block @layer params(
// BERT-NOT:     pipe.block
// BERT:         pipe.block @epilogue params(
// BERT-NOT:     pipe.block
// BERT-LABEL:   pipe.graph @forward
// BERT-NEXT:    %[[E:.*]] = pipe.run "prologue" @prologue(%arg0) params [@[[WORD:torch_tensor_64_32_torch.float32]],
// BERT-NEXT:    %[[L0:.*]] = pipe.run "layer0" @layer(%[[E]])
// BERT-NEXT:    %[[L1:.*]] = pipe.run "layer1" @layer(%[[L0]])
// BERT-NEXT:    pipe.run "epilogue" @epilogue(%[[L1]], %arg1, %arg2) params [{{.*}}, @[[WORD]]{{[],]}}
// BERT-NEXT:    pipe.return

// In T5 an encoder layer has self-attention only (2 batch matmuls); a decoder
// layer adds cross-attention, whose scores are decoder x encoder positions
// (8 x 16) and whose K/V come from the encoder output (argument 2x16x32).
// T5-LABEL:     pipe.block @prologue
// T5-LABEL:     pipe.block @layer params(
// T5-COUNT-2:   linalg.batch_matmul
// T5-NOT:       linalg.batch_matmul
// T5-LABEL:     pipe.block @middle0
// T5-LABEL:     pipe.block @layer_1 params({{.*}}) (%{{.*}}: tensor<2x8x32xf32>, %{{.*}}: tensor<1x4x8x8xf32>, %{{.*}}: tensor<2x16x32xf32>)
// T5:           linalg.batch_matmul {{.*}} tensor<8x8x8xf32>
// T5:           linalg.batch_matmul {{.*}} tensor<8x8x8xf32>
// T5:           linalg.batch_matmul {{.*}} -> tensor<8x8x16xf32>
// T5:           linalg.batch_matmul ins({{.*}} : tensor<8x8x16xf32>, tensor<8x16x8xf32>)
// T5-NOT:       linalg.batch_matmul
// T5-LABEL:     pipe.block @epilogue
// The shared embedding: encoder gather, decoder gather and LM head.
// T5-LABEL:     pipe.graph @forward
// T5-NEXT:      %[[P:.*]]:2 = pipe.run "prologue" @prologue(%arg0) params [@[[SHARED:torch_tensor_64_32_torch.float32]],
// T5-NEXT:      %[[E0:.*]] = pipe.run "stack0.layer0" @layer(%[[P]]#0, %[[P]]#1)
// T5-NEXT:      %[[E1:.*]] = pipe.run "stack0.layer1" @layer(%[[E0]], %[[P]]#1)
// T5-NEXT:      %[[M:.*]]:3 = pipe.run "middle0" @middle0(%[[E1]], %arg2) params [{{.*}}@[[SHARED]],
// T5-NEXT:      %[[D0:.*]] = pipe.run "stack1.layer0" @layer_1(%[[M]]#1, %[[M]]#2, %[[M]]#0)
// T5-NEXT:      %[[D1:.*]] = pipe.run "stack1.layer1" @layer_1(%[[D0]], %[[M]]#2, %[[M]]#0)
// T5-NEXT:      pipe.run "epilogue" @epilogue(%[[D1]], %arg1) params [{{.*}}@[[SHARED]]]
