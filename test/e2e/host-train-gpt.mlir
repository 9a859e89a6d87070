// A generated tiny GPT-2 (tied embeddings, 2 layers) through the whole host
// back end: lift, layer blocks, differentiate, place on 2 devices, 1F1B,
// verify, pipe-compile to a shared library plus weights, then pipe-runner
// trains it for 5 SGD steps on two fixed token rows (the same two
// micro-batches every step), so the loss must go down.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" --pipe-verify-schedule -o %t/gpt.mlir
// RUN: pipe-compile %t/gpt.mlir -o %t/gpt.so --weights %t/gpt.safetensors -O 0
// Token ids < 64 (the vocabulary), labels likewise.
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:I64:2x2x16:64 input1:I64:2x2x16:61
// RUN: pipe-runner %t/gpt.so --weights %t/gpt.safetensors --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-every 1 --log-json %t/log.jsonl | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t/log.jsonl
// RUN: %python -c "import json,sys; l=[json.loads(x)['loss'] for x in open(sys.argv[1])]; print('decreased' if l[-1] < l[0] - 0.1 else l)" %t/log.jsonl | FileCheck %s --check-prefix=LEARN

// CHECK: data: {{.*}}data.safetensors, 2 rows train
// CHECK: training 'forward_placement_1f1b' (1f1b, 2 devices, 2 micro-batches) from step 0 to 5
// CHECK: step 1/5 loss
// CHECK: step 5/5 loss
// CHECK: peak memory: device 0 {{.*}}, device 1

// Random initial weights: about ln(64) = 4.16.
// JSON: {"step":1,"loss":4.1
// JSON: {"step":5,"loss":

// LEARN: decreased
