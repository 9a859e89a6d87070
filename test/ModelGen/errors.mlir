// Bad options give a clear message and a non-zero exit.
// RUN: not pipe-gen 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not pipe-gen --model=nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not pipe-gen --model=tiny-gpt --heads=3 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not pipe-gen --model=tiny-gpt --seq=65 2>&1 | FileCheck %s --check-prefix=SEQ
// RUN: not pipe-gen --model=tiny-bert --layers=0 2>&1 | FileCheck %s --check-prefix=LAYERS
// RUN: not pipe-gen --model=tiny-gpt --weights=ones 2>&1 | FileCheck %s --check-prefix=WEIGHTS
// RUN: not pipe-gen --model=tiny-gpt --dtype=f16 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not pipe-gen --model=tiny-gpt --decoder-layers=2 2>&1 | FileCheck %s --check-prefix=DECODER
// RUN: not pipe-gen --model=gpt2-xl --weights=random 2>&1 | FileCheck %s --check-prefix=LARGE
// RUN: not pipe-gen --model=tiny-gpt --layers=abc 2>&1 | FileCheck %s --check-prefix=PARSE

// MISSING: error: missing --model=<preset>; presets: tiny-bert, tiny-gpt, tiny-t5
// UNKNOWN: error: unknown model 'nope'; presets:
// HEADS: error: invalid configuration for 'tiny-gpt': d-model = 32 is not divisible by heads = 3
// SEQ: error: invalid configuration for 'tiny-gpt': seq = 65 exceeds max-positions = 64
// LAYERS: error: invalid configuration for 'tiny-bert': layers = 0 is out of range
// WEIGHTS: error: --weights must be 'random', 'zero' or 'none', got 'ones'
// DTYPE: error: --dtype must be 'f32' or 'bf16', got 'f16'
// DECODER: error: --decoder-layers applies to T5 models only
// LARGE: error: 'gpt2-xl' has 1557611200 parameters: {{.*}} use --weights=none
// PARSE: pipe-gen: for the --layers option: 'abc' value invalid
