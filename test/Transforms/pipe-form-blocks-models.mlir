// Block formation on the generator's torch-mlir-style models after
// parameter lifting: the layers are found from the repeated structure alone
// (their ops share file:line locations) and share one block function.
// RUN: pipe-gen --model=tiny-gpt --layers=5 | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs | FileCheck %s --check-prefix=GPT
// RUN: pipe-gen --model=tiny-bert --layers=3 | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer | FileCheck %s --check-prefix=BERT
// RUN: pipe-gen --model=tiny-t5 --layers=3 --decoder-layers=4 | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer | FileCheck %s --check-prefix=T5
// RUN: pipe-gen --model=tiny-gpt --layers=3 | pipe-opt --pipe-lift-params --pipe-form-blocks | FileCheck %s --check-prefix=GPT-OP

// GPT-LABEL: pipe.block @prologue
// GPT-SAME:    cost = #pipe.cost<
// GPT-LABEL: pipe.block @layer
// GPT-SAME:    cost = #pipe.cost<
// GPT-LABEL: pipe.block @epilogue
// GPT-SAME:    cost = #pipe.cost<
// GPT-NOT:   pipe.block
// GPT-LABEL: pipe.graph @forward
// GPT-NEXT:    %[[E:.*]] = pipe.run "prologue" @prologue(%arg0)
// GPT-NEXT:    %[[L0:.*]] = pipe.run "layer0" @layer(%[[E]])
// GPT-NEXT:    %[[L1:.*]] = pipe.run "layer1" @layer(%[[L0]])
// GPT-NEXT:    %[[L2:.*]] = pipe.run "layer2" @layer(%[[L1]])
// GPT-NEXT:    %[[L3:.*]] = pipe.run "layer3" @layer(%[[L2]])
// GPT-NEXT:    %[[L4:.*]] = pipe.run "layer4" @layer(%[[L3]])
// The LM head is tied to the token embedding: both ends bind @wte's symbol.
// GPT-NEXT:    %[[LOSS:.*]] = pipe.run "epilogue" @epilogue(%[[L4]], %arg1) params [{{.*}}@torch_tensor_64_32_torch.float32]
// GPT-NEXT:    pipe.return %[[LOSS]] : tensor<f32>

// The embedding's word, position and token-type gathers repeat too, but too
// briefly to be layers.
// BERT-LABEL: pipe.graph @forward
// BERT-NEXT:    pipe.run "prologue" @prologue
// BERT-NEXT:    pipe.run "layer0" @layer(
// BERT-NEXT:    pipe.run "layer1" @layer(
// BERT-NEXT:    pipe.run "layer2" @layer(
// BERT-NEXT:    pipe.run "epilogue" @epilogue(
// BERT-NEXT:    pipe.return

// Two stacks of different layers; every decoder layer reads the encoder
// output and the decoder's position bias from the block between the stacks.
// T5-LABEL: pipe.graph @forward
// T5-NEXT:    %[[P:.*]]:2 = pipe.run "prologue" @prologue(
// T5-NEXT:    %[[E0:.*]] = pipe.run "stack0.layer0" @layer(%[[P]]#0, %[[P]]#1)
// T5-NEXT:    %[[E1:.*]] = pipe.run "stack0.layer1" @layer(%[[E0]], %[[P]]#1)
// T5-NEXT:    %[[E2:.*]] = pipe.run "stack0.layer2" @layer(%[[E1]], %[[P]]#1)
// T5-NEXT:    %[[M:.*]]:3 = pipe.run "middle0" @middle0(%[[E2]], %arg2)
// T5-NEXT:    %[[D0:.*]] = pipe.run "stack1.layer0" @layer_1(%[[M]]#1, %[[M]]#2, %[[M]]#0)
// T5-NEXT:    %[[D1:.*]] = pipe.run "stack1.layer1" @layer_1(%[[D0]], %[[M]]#2, %[[M]]#0)
// T5-NEXT:    %[[D2:.*]] = pipe.run "stack1.layer2" @layer_1(%[[D1]], %[[M]]#2, %[[M]]#0)
// T5-NEXT:    %[[D3:.*]] = pipe.run "stack1.layer3" @layer_1(%[[D2]], %[[M]]#2, %[[M]]#0)
// T5-NEXT:    pipe.run "epilogue" @epilogue(%[[D3]], %arg1)

// Op granularity: the attention scores of every layer run the same block.
// GPT-OP-LABEL: pipe.graph @forward
// GPT-OP-COUNT-3: pipe.run "op{{[0-9]+}}.batch_matmul" @batch_matmul(
