// The host back end end to end on a hand-written model: the same
// differentiated graph scheduled two ways (1F1B on 2 devices; constant-memory
// layer-to-layer on 1 device with the parameter server, offload and
// prefetch), each compiled to a shared library by pipe-compile and trained by
// pipe-runner with plain SGD from the same weights and data. The two
// programs must agree bit for bit (same block code, same accumulation
// order), and the first step must match an independent Python reference of
// the forward and hand-derived backward (Inputs/mlp-reference.py).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-opt %s --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" --pipe-verify-schedule -o %t/1f1b.mlir
// RUN: pipe-opt %s --pipe-differentiate "--pipe-place=devices=1 stages-per-device=3" "--pipe-schedule=kind=l2l microbatches=2 constant-memory=true" --pipe-verify-schedule -o %t/l2l.mlir
// RUN: pipe-compile %t/1f1b.mlir -o %t/1f1b.so --weights %t/initial.safetensors -O 0
// RUN: pipe-compile %t/l2l.mlir -o %t/l2l.so -O 0
//
// Weights and data in [-0.5, 0.5) (the splat initial values above would hide
// a transposed operand); two rows: micro-batches 0 and 1 of every step.
// RUN: %python %S/Inputs/make-data.py %t/w.safetensors w0:F32:8x8:17:0.5 w1:F32:8x8:19:0.5 w2:F32:8x8:23:0.5
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:F32:2x4x8:13:0.5 input1:F32:2x4x8:11:0.5
//
// RUN: pipe-runner %t/1f1b.so --weights %t/w.safetensors --data %t/data.safetensors --steps 3 --optimizer sgd --lr 0.1 --log-every 1 --log-json %t/1f1b.jsonl --save-weights %t/1f1b.out.safetensors | FileCheck %s --check-prefix=RUN1F1B
// RUN: pipe-runner %t/l2l.so --weights %t/w.safetensors --data %t/data.safetensors --steps 3 --optimizer sgd --lr 0.1 --log-every 1 --log-json %t/l2l.jsonl --save-weights %t/l2l.out.safetensors | FileCheck %s --check-prefix=RUNL2L
// RUN: cat %t/1f1b.jsonl %t/l2l.jsonl | FileCheck %s --check-prefix=SAME
// RUN: %python %S/Inputs/compare-weights.py %t/1f1b.out.safetensors %t/l2l.out.safetensors 0 | FileCheck %s --check-prefix=WEIGHTS
//
// pipe-compile's weights file holds the initial values of the module (and
// is a valid --weights file).
// RUN: %python -c "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q',f.read(8))[0]; h=json.loads(f.read(n)); b=f.read(); [print(k,t['dtype'],t['shape'],set(struct.unpack_from('<64f',b,t['data_offsets'][0]))) for k,t in sorted(h.items()) if k!='__metadata__']" %t/initial.safetensors | FileCheck %s --check-prefix=INITIAL
// RUN: pipe-runner %t/l2l.so --weights %t/initial.safetensors --data %t/data.safetensors --steps 1 | FileCheck %s --check-prefix=RUNL2L1
//
// One step against the reference.
// RUN: pipe-runner %t/1f1b.so --weights %t/w.safetensors --data %t/data.safetensors --steps 1 --optimizer sgd --lr 0.5 --log-json %t/one.jsonl --save-weights %t/one.safetensors
// RUN: %python %S/Inputs/mlp-reference.py %t/w.safetensors %t/data.safetensors %t/one.jsonl 2 %t/one.safetensors 0.5 | FileCheck %s --check-prefix=REF

// RUN1F1B: training 'model_placement_1f1b' (1f1b, 2 devices, 2 micro-batches)
// RUN1F1B: step 1/3 loss {{[0-9.]+}}
// RUN1F1B: step 3/3 loss {{[0-9.]+}}
// RUNL2L: training 'model_placement_l2l' (l2l, 1 devices, 2 micro-batches)
// RUNL2L: step 3/3 loss {{[0-9.]+}}

// SAME:      {"step":1,"loss":[[L1:[0-9.e+-]+]],
// SAME-NEXT: {"step":2,"loss":[[L2:[0-9.e+-]+]],
// SAME-NEXT: {"step":3,"loss":[[L3:[0-9.e+-]+]],
// SAME-NEXT: {"step":1,"loss":[[L1]],
// SAME-NEXT: {"step":2,"loss":[[L2]],
// SAME-NEXT: {"step":3,"loss":[[L3]],

// WEIGHTS: match: 3 tensors, max abs diff 0
// INITIAL:      w0 F32 [8, 8] {0.125}
// INITIAL-NEXT: w1 F32 [8, 8] {0.25}
// INITIAL-NEXT: w2 F32 [8, 8] {0.5}
// RUNL2L1: step 1/1 loss {{[0-9.]+}}
// REF: reference loss {{.*}} matches
// REF-NEXT: reference SGD step matches

pipe.param @w0 : tensor<8x8xf32> = dense<0.125>
pipe.param @w1 : tensor<8x8xf32> = dense<0.25>
pipe.param @w2 : tensor<8x8xf32> = dense<0.5>

pipe.block @linear_relu params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %relu = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  pipe.return %relu : tensor<4x8xf32>
}

pipe.block @mse_head params(%w: tensor<8x8xf32>)
    (%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.03125 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum_init = tensor.empty() : tensor<f32>
  %sum0 = linalg.fill ins(%zero : f32) outs(%sum_init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%mm, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%sum0 : tensor<f32>) {
  ^bb0(%p: f32, %t: f32, %s: f32):
    %d = arith.subf %p, %t : f32
    %sq = arith.mulf %d, %d : f32
    %scaled = arith.mulf %sq, %scale : f32
    %acc2 = arith.addf %s, %scaled : f32
    linalg.yield %acc2 : f32
  } -> tensor<f32>
  pipe.return %sum : tensor<f32>
}

pipe.graph @model(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %h0 = pipe.run "l0" @linear_relu(%x) params [@w0]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @linear_relu(%h0) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = pipe.run "head" @mse_head(%h1, %y) params [@w2]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

