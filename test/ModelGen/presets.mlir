// Parameter counts of the presets (closed form; the unit tests check the IR
// agrees) and fast shape-only generation of the large models.
// RUN: pipe-gen --model=bert-large --print-param-count | FileCheck %s --check-prefix=BERT
// RUN: pipe-gen --model=gpt2-xl --print-param-count | FileCheck %s --check-prefix=GPT
// RUN: pipe-gen --model=t5-3b --print-param-count | FileCheck %s --check-prefix=T5
// RUN: pipe-gen --model=gpt2-xl --weights=none | FileCheck %s --check-prefix=GPTIR
// RUN: pipe-gen --model=t5-3b --weights=none --layers=2 --decoder-layers=3 --seq=32 | mlir-opt > /dev/null
// RUN: pipe-gen --list-presets | FileCheck %s --check-prefix=LIST
// RUN: pipe-gen --model=tiny-gpt --list-params | FileCheck %s --check-prefix=PARAMS

// BERT: parameters: 335141888
// BERT: task-head parameters: 1084220
// GPT: parameters: 1557611200
// GPT: task-head parameters: 0
// T5: parameters: 2851598336
// T5: relative-bias parameters (included above): 2048

// GPTIR: func.func @forward(%arg0: tensor<1x1024xi64>, %arg1: tensor<1x1024xi64>) -> tensor<f32>
// GPTIR: arith.constant dense_resource<torch_tensor_50257_1600_torch.float32> : tensor<50257x1600xf32>
// GPTIR-NOT: dialect_resources

// LIST: tiny-bert
// LIST: bert-large
// LIST: gpt2-xl
// LIST: t5-3b

// PARAMS: transformer.wte.weight [64x32] torch_tensor_64_32_torch.float32
// PARAMS: transformer.h.1.mlp.c_proj.bias [32]
// PARAMS: transformer.ln_f.weight [32]
