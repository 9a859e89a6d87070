// The compile pipelines of pipe-train, registered (lib/Pipelines): each
// expands to the passes pipe-train runs, with the options it passes them.
// RUN: pipe-gen --model=tiny-gpt > %t.model.mlir
// RUN: pipe-opt %t.model.mlir --pipe-ingest --pipe-partition-and-schedule="devices=2 schedule=gpipe microbatches=2" --dump-pass-pipeline --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLACE

// --pipe-ingest is the ingestion pass list, nothing else.
// RUN: pipe-opt %t.model.mlir --pipe-ingest -o %t.ingest.mlir
// RUN: pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs --pipe-differentiate -o %t.passes.mlir
// RUN: diff %t.ingest.mlir %t.passes.mlir

// RUN: pipe-opt %t.ingest.mlir --pipe-partition-and-schedule="partitioner=seq devices=2 device-model=rtx2080ti-x8 schedule=1f1b microbatches=4 recompute=true partition-text-report=" --dump-pass-pipeline --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARTITION
// RUN: pipe-opt %t.ingest.mlir --pipe-partition-and-schedule="devices=2 schedule=pipedream-async microbatches=3 async-weights=stale async-steps=2 eval=false" --dump-pass-pipeline --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=ASYNC
// RUN: pipe-opt %t.ingest.mlir --pipe-partition-and-schedule="devices=1 stages-per-device=4 schedule=l2l microbatches=2 constant-memory=true" --pipe-print-summary -o /dev/null | FileCheck %s --check-prefix=L2L

// A loss attached to a function that returns logits.
// RUN: pipe-opt %s "--pipe-ingest=loss=nll loss-reduction=sum loss-result=1" --dump-pass-pipeline 2>&1 | FileCheck %s --check-prefix=LOSS

// PLACE:      pipe-check-input
// PLACE-NOT:  pipe-attach-loss
// PLACE-NEXT: pipe-lift-params
// PLACE-NEXT: pipe-form-blocks{{.*}}granularity=layer
// PLACE-NEXT: pipe-annotate-costs
// PLACE-NEXT: pipe-differentiate
// PLACE-NEXT: pipe-place{{.*}} devices=2 replicas=1 stages-per-device=1}
// PLACE-NEXT: pipe-schedule{{.*}} forward-only=false host-update=plain kind=gpipe microbatches=2 {{.*}}steps=1
// PLACE-NEXT: pipe-schedule{{.*}} forward-only=true host-update=plain kind=gpipe microbatches=2
// PLACE-NEXT: pipe-verify-schedule{device-model= memory-limit=0 peer-order=false}
// PLACE:      placement @forward_placement of graph @forward: 2 devices
// PLACE:      schedule @forward_placement_gpipe: kind gpipe, 2 micro-batches, 1 step(s)
// PLACE:      schedule @forward_placement_gpipe_1: kind gpipe, 2 micro-batches, 1 step(s), forward only

// PARTITION:      pipe-partition{algorithm=seq device-model=rtx2080ti-x8 devices=2 {{.*}}microbatches=4 {{.*}}recompute=true {{.*}}report= {{.*}}schedule=1f1b {{.*}}text-report= weight-stashing=false}
// PARTITION-NEXT: pipe-schedule{{.*}}device-model=rtx2080ti-x8 forward-only=false host-update=plain kind=1f1b {{.*}}recompute=true
// PARTITION-NEXT: pipe-schedule{{.*}}device-model=rtx2080ti-x8 forward-only=true host-update=plain kind=gpipe
// PARTITION-NEXT: pipe-verify-schedule{device-model=rtx2080ti-x8
// PARTITION:      schedule @{{.*}}: kind 1f1b, 4 micro-batches, 1 step(s)
// PARTITION:      forward only

// Asynchronous: its steps and weight policy reach the generator; no
// evaluation schedule.
// ASYNC:      pipe-schedule{{.*}} kind=pipedream-async microbatches=3 {{.*}}steps=2 weights=stale}
// ASYNC-NEXT: pipe-verify-schedule
// ASYNC:      schedule @forward_placement_pipedream_async: kind pipedream-async, 3 micro-batches, 2 step(s)
// ASYNC-NOT:  schedule @

// L2L evaluates with L2L's own forward-only schedule.
// L2L:     device 0: @s0 [prologue] @s1 [layer0] @s2 [layer1] @s3 [epilogue]
// L2L:     kind l2l, 2 micro-batches, 1 step(s)
// L2L:     kind l2l, 2 micro-batches, 1 step(s), forward only

// LOSS:      pipe-check-input
// LOSS-NEXT: pipe-attach-loss{func= kind=nll reduction=sum result=1}
// LOSS-NEXT: pipe-lift-params
// LOSS:      pipe.block
// LOSS:      pipe.graph @forward(%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<4xi64>)

func.func @forward(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]> : tensor<3x3xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %logits = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %x, %logits : tensor<4x3xf32>, tensor<4x3xf32>
}
