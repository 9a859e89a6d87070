// pipe-train --freeze: the frozen params of a small byte-level GPT (both
// embeddings: the token one, tied to the LM head, and the position one;
// the generated model names its params by their blob keys) are
// bit-identical after training and have no optimizer state in the
// checkpoint, while the others train. The embedding block loses its
// weight gradient.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-train --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 --steps 3 --eval-every 0 --freeze 'torch_tensor_256_16_*' --freeze 're:^torch_tensor_64_16_' --save-init-weights %t/init.safetensors --save-weights %t/final.safetensors --checkpoint %t/c.ckpt --emit-scheduled %t/s.mlir | FileCheck %s
// RUN: %python %S/Inputs/check-frozen.py %t/init.safetensors %t/final.safetensors %t/c.ckpt 'torch_tensor_256_16_*' 'torch_tensor_64_16_*' | FileCheck %s --check-prefix=FROZEN
// RUN: FileCheck %s --check-prefix=IR < %t/s.mlir
// A pattern that matches nothing names itself.
// RUN: %expect_error --exit 1 -- pipe-train --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 --freeze 'h.0.*' 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK: step 3/3  loss
// FROZEN: frozen params bit-identical without optimizer state
// IR: pipe.param @torch_tensor_256_16_torch.float32 frozen
// IR: pipe.frozen_params = array<i64:
// NONE: pipe-freeze-params: 'h.0.*' matches no parameter; the parameters are torch_tensor_
