// pipe-train --lr-group and the default weight decay, on a small byte-level
// GPT (the generated model names its params by blob key:
// torch_tensor_256_16_* is the token embedding, torch_tensor_16_torch.* the
// d-16 vectors: layer-norm scales and offsets, attention output biases).
// RUN: rm -rf %t && mkdir -p %t
// The model and the flags every run shares: one step at a constant rate.
// DEFINE: %{train} = pipe-train --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 --eval-every 0 --eval-batches 1 -O 0 --warmup 0 --lr-schedule constant --steps 1
//
// (a) MULT 0 leaves its params bit-identical, the others train; on the
// device-side update (1f1b) and on the parameter server's (l2l).
// RUN: %{train} --lr-group 'torch_tensor_256_16_*=0' --save-init-weights %t/init.safetensors --save-weights %t/zero.safetensors | FileCheck %s --check-prefix=ZERO
// RUN: %python %S/Inputs/check-lr-groups.py same %t/init.safetensors %t/zero.safetensors 'glob:torch_tensor_256_16_*' | FileCheck %s --check-prefix=ZERO-KEPT
// RUN: %python %S/Inputs/check-lr-groups.py differ %t/init.safetensors %t/zero.safetensors 'not:torch_tensor_256_16_*' | FileCheck %s --check-prefix=ZERO-MOVED
// RUN: %{train} --schedule l2l --lr-group 'torch_tensor_256_16_*=0' --save-weights %t/zero-l2l.safetensors > /dev/null
// RUN: %python %S/Inputs/check-lr-groups.py same %t/init.safetensors %t/zero-l2l.safetensors 'glob:torch_tensor_256_16_*' | FileCheck %s --check-prefix=ZERO-KEPT
// RUN: %python %S/Inputs/check-lr-groups.py differ %t/init.safetensors %t/zero-l2l.safetensors 'not:torch_tensor_256_16_*' | FileCheck %s --check-prefix=ZERO-MOVED
// ZERO: == --lr-group 'torch_tensor_256_16_*=0': 1 params, 4096 elements at lr x0
// ZERO: param groups: lr x1: 27 params, 5504 elements; lr x0: 1 params, 4096 elements
// ZERO-KEPT: glob:torch_tensor_256_16_*: 1 params bit-identical
// ZERO-MOVED: not:torch_tensor_256_16_*: 27 params differ
//
// (b) Plain SGD, step 1: the x2 group moves exactly as a run at twice the
// rate moves it, the rest exactly as a run at the rate. Through an artifact
// and pipe-runner (the group reaches it as --param-lr flags) and in-process.
// RUN: %{train} --optimizer sgd --lr 0.01 --lr-group 'torch_tensor_16_torch*=2' --artifact %t/art --save-weights %t/x2.safetensors | FileCheck %s --check-prefix=X2
// RUN: %{train} --optimizer sgd --lr 0.01 --lr-group 'torch_tensor_16_torch*=2' --save-weights %t/x2-jit.safetensors > /dev/null
// RUN: %{train} --optimizer sgd --lr 0.02 --save-weights %t/lr2.safetensors > /dev/null
// RUN: %{train} --optimizer sgd --lr 0.01 --save-weights %t/lr1.safetensors > /dev/null
// RUN: %python %S/Inputs/check-lr-groups.py same %t/x2.safetensors %t/lr2.safetensors 'glob:torch_tensor_16_torch*' | FileCheck %s --check-prefix=X2-GROUP
// RUN: %python %S/Inputs/check-lr-groups.py same %t/x2.safetensors %t/lr1.safetensors 'not:torch_tensor_16_torch*' | FileCheck %s --check-prefix=X2-REST
// RUN: %python %S/Inputs/check-lr-groups.py differ %t/x2.safetensors %t/lr1.safetensors 'glob:torch_tensor_16_torch*' | FileCheck %s --check-prefix=X2-MOVED
// RUN: cmp %t/x2.safetensors %t/x2-jit.safetensors
// X2: == --lr-group 'torch_tensor_16_torch*=2': 14 params, 224 elements at lr x2
// X2: pipe-runner {{.*}} --param-lr torch_tensor_16_torch.float32=2 --param-lr torch_tensor_16_torch.float32_1=2
// X2: param groups: lr x2: 14 params, 224 elements; lr x1: 14 params, 9376 elements
// X2-GROUP: glob:torch_tensor_16_torch*: 14 params bit-identical
// X2-REST: not:torch_tensor_16_torch*: 14 params bit-identical
// X2-MOVED: glob:torch_tensor_16_torch*: 14 params differ
//
// (c) AdamW with weight decay 0.5: by default the params of rank 0 or 1
// train exactly as without weight decay and the matrices are decayed;
// --decay-all decays them too, by exactly the term torch.optim.AdamW adds.
// RUN: %{train} --lr 0.01 --weight-decay 0.5 --save-weights %t/default.safetensors | FileCheck %s --check-prefix=DEFAULT
// RUN: %{train} --lr 0.01 --weight-decay 0.5 --decay-all --save-weights %t/all.safetensors | FileCheck %s --check-prefix=ALL
// RUN: %{train} --lr 0.01 --weight-decay 0 --save-weights %t/none.safetensors > /dev/null
// RUN: %python %S/Inputs/check-lr-groups.py same %t/default.safetensors %t/none.safetensors 'rank<2' | FileCheck %s --check-prefix=VEC-PLAIN
// RUN: %python %S/Inputs/check-lr-groups.py differ %t/default.safetensors %t/none.safetensors 'rank>=2' | FileCheck %s --check-prefix=MAT-DIFFER
// RUN: %python %S/Inputs/check-lr-groups.py same %t/default.safetensors %t/all.safetensors 'rank>=2' | FileCheck %s --check-prefix=MAT-ALL
// RUN: %python %S/Inputs/check-lr-groups.py decay %t/init.safetensors %t/default.safetensors %t/all.safetensors 0.01 0.5 | FileCheck %s --check-prefix=REPLAY
// DEFAULT: weight decay 0.5: 10 params, 9216 elements; none on 18 of rank 0 or 1 (biases, norm scales), 384 elements; --decay-all decays them
// ALL: weight decay 0.5: 28 params, 9600 elements; every param (--decay-all)
// VEC-PLAIN: rank<2: 18 params bit-identical
// MAT-DIFFER: rank>=2: 10 params differ
// MAT-ALL: rank>=2: 10 params bit-identical
// REPLAY: rank<2: decay term -lr*wd*p0 on {{[0-9]+}} params
//
// Groups are configuration, not state: stopped after 2 of 4 steps (warm-up
// and cosine decay scale every group) and resumed with the same flags, the
// weights are bit-identical to the uninterrupted run's.
// DEFINE: %{resume} = pipe-train --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 --eval-every 0 --eval-batches 1 -O 0 --steps 4 --warmup 2 --lr-schedule cosine --lr 0.01 --min-lr 0.001 --weight-decay 0.1 --lr-group 'torch_tensor_256_16_*=0.5' --lr-group 're:^torch_tensor_16_torch=3'
// RUN: %{resume} --save-weights %t/full.safetensors > /dev/null
// RUN: %expect_error --exit 3 -- %{resume} --checkpoint %t/c.ckpt --resume --stop-after 2 > /dev/null
// RUN: %{resume} --checkpoint %t/c.ckpt --resume --save-weights %t/resumed.safetensors | FileCheck %s --check-prefix=RESUMED
// RUN: cmp %t/full.safetensors %t/resumed.safetensors
// RESUMED: param groups: lr x3: 14 params, 224 elements; lr x1: 13 params, 5280 elements; lr x0.5: 1 params, 4096 elements
// RESUMED: resumed from {{.*}}c.ckpt at step 2
//
// Errors name the option and the value.
// RUN: %expect_error --exit 2 -- %{train} --lr-group 'torch_tensor_256_16_*' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: pipe-train: --lr-group 'torch_tensor_256_16_*': expected PATTERN=MULT
// RUN: %expect_error --exit 2 -- %{train} --lr-group 'x=fast' 2>&1 | FileCheck %s --check-prefix=NAN
// NAN: pipe-train: --lr-group 'x=fast': 'fast' is not a number
// RUN: %expect_error --exit 2 -- %{train} --lr-group 'x=-1' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: pipe-train: --lr-group 'x=-1': out of range, MULT must be a finite float >= 0
// RUN: %expect_error --exit 2 -- %{train} --lr-group 'x=1e39' 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: pipe-train: --lr-group 'x=1e39': out of range, MULT must be a finite float >= 0
// RUN: %expect_error --exit 2 -- %{train} --lr-group 're:(=2' 2>&1 | FileCheck %s --check-prefix=REGEX
// REGEX: pipe-train: --lr-group 're:(=2': invalid regular expression '(':
// RUN: %expect_error --exit 1 -- %{train} --lr-group 'h.0.*=2' 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: pipe-train: --lr-group 'h.0.*=2': 'h.0.*' matches no parameter; the parameters are torch_tensor_
// RUN: %expect_error --exit 1 -- %{train} --lr-group 'torch_tensor_16_*=2' --lr-group 're:_16_torch=3' 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: pipe-train: --lr-group 're:_16_torch=3': parameter 'torch_tensor_16_torch.float32' is also in --lr-group 'torch_tensor_16_*=2', with another multiplier
// Overlapping groups with one multiplier are one group.
// RUN: %{train} --lr-group 'torch_tensor_16_*=2' --lr-group 're:_16_torch=2' | FileCheck %s --check-prefix=OVERLAP
// OVERLAP: param groups: lr x2: 24 params, 9440 elements; lr x1: 4 params, 160 elements
// RUN: %expect_error --exit 1 -- pipe-runner %t/art/program.so --weights %t/art/weights.safetensors --param-lr nope=1 2>&1 | FileCheck %s --check-prefix=RUNNER-NAME
// RUNNER-NAME: --param-lr nope=1: the program has no param 'nope'
// RUN: %expect_error --exit 2 -- pipe-runner %t/art/program.so --weights %t/art/weights.safetensors --param-lr torch_tensor_16_torch.float32=-2 2>&1 | FileCheck %s --check-prefix=RUNNER-RANGE
// RUNNER-RANGE: pipe-runner: --param-lr 'torch_tensor_16_torch.float32=-2': out of range, the multiplier must be a finite float >= 0
