// pipe-partition chooses the data-parallel degree with the partition
// (replicas=0): every R dividing the 4 devices and the 4 micro-batches is
// partitioned on 4 / R devices with 4 / R micro-batches, the gradients'
// ring all-reduce over the replicas is played with the schedule in the
// simulator (bucketed, overlapping what backward work is left after a
// device's gradients are final; here none: device 0 finishes last), and
// the fastest plan wins.
//
// Four 1 ms blocks (forward and backward each), 4 MiB of weights each, on
// 2 hosts x 2 devices. With fast links between the hosts, 4 replicas of one
// device (each one micro-batch, 8 ms, and a 0.25 ms all-reduce) beat any
// pipeline; with slow ones (100 MB/s) the all-reduce would take 84 ms (2
// replicas) or 250 ms (4): one 4-device pipeline wins.
//
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=4 replicas=0 microbatches=4 schedule=1f1b device-model=%S/Inputs/two-fast-hosts.json text-report=%t.fast.txt report=%t.fast.json" | FileCheck %s --check-prefix=FAST
// RUN: FileCheck %s --check-prefix=FASTREPORT < %t.fast.txt
// RUN: FileCheck %s --check-prefix=JSON < %t.fast.json
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=4 replicas=0 microbatches=4 schedule=1f1b device-model=%S/Inputs/two-hosts.json text-report=%t.slow.txt" | FileCheck %s --check-prefix=SLOW
// RUN: FileCheck %s --check-prefix=SLOWREPORT < %t.slow.txt
//
// A fixed degree is partitioned as given, its all-reduce reported.
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=2 replicas=2 microbatches=2 schedule=1f1b device-model=%S/Inputs/two-hosts.json text-report=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIXED
//
// The replicated schedule is simulated with the run's buckets: with 10 ms
// per message between the hosts, one bucket of a device's two weights
// pays it once, two blocking reductions (reduce-bucket-bytes=0) twice.
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=2 replicas=2 microbatches=2 schedule=1f1b device-model=%S/Inputs/two-hosts-latency.json text-report=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUCKETS
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=2 replicas=2 microbatches=2 schedule=1f1b device-model=%S/Inputs/two-hosts-latency.json reduce-bucket-bytes=0 text-report=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLOCKING
// BUCKETS: gradient all-reduce {{.*}}; step time 105.953 ms
// BLOCKING: gradient all-reduce {{.*}}; step time 115.953 ms
//
// Memory decides too: with 27 MB per device only plans that split the
// 16 MiB of weights (and their AdamW state) over 4 devices fit.
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=4 replicas=0 microbatches=4 schedule=1f1b memory-gib=0.025 device-model=%S/Inputs/two-fast-hosts.json text-report=-" 2>&1 | FileCheck %s --check-prefix=MEMORY
//
// pipe-place cannot choose: it predicts no step time.
// RUN: not pipe-opt %s --pipe-place="devices=4 replicas=0" 2>&1 | FileCheck %s --check-prefix=PLACE

pipe.param @w0 : tensor<1024x1024xf32>
pipe.param @w1 : tensor<1024x1024xf32>
pipe.param @w2 : tensor<1024x1024xf32>
pipe.param @w3 : tensor<1024x1024xf32>

pipe.block @layer params(%w: tensor<1024x1024xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 10000000000, backward_input_flops = 10000000000,
                backward_weight_flops = 0, param_bytes = 4194304, saved_bytes = 128,
                output_bytes = 128>} {
  pipe.return %x : tensor<4x8xf32>
}

pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = pipe.run "l0" @layer(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = pipe.run "l1" @layer(%a) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = pipe.run "l2" @layer(%b) params [@w2] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = pipe.run "l3" @layer(%c) params [@w3] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %d : tensor<4x8xf32>
}

// FAST: pipe.placement @model_seq graph @model devices 1 microbatches 1 replicas 4 {
// FASTREPORT:      data parallelism: 4 replicas of these 1 devices, 1 micro-batches each; gradient all-reduce
// FASTREPORT:      data-parallel degrees tried (replicas x pipeline devices):
// FASTREPORT-NEXT:   1 x 4      4 micro-batches each: step
// FASTREPORT-NEXT:   2 x 2      2 micro-batches each: step
// FASTREPORT-NEXT:   4 x 1      1 micro-batches each: step {{.*}}  <- chosen
// JSON: "replicas": 4,
// JSON: "data_parallel_candidates": [
// JSON: "fits": true,

// SLOW: pipe.placement @model_seq graph @model devices 4 microbatches 4 {
// SLOWREPORT:      1 x 4      4 micro-batches each: step {{.*}}, all-reduce 0.000 us, 0.000 us exposed)  <- chosen
// SLOWREPORT-NEXT: 2 x 2      2 micro-batches each: step {{.*}}, all-reduce 83.886 ms, 83.886 ms exposed)
// SLOWREPORT-NEXT: 4 x 1      1 micro-batches each: step {{.*}}, all-reduce 251.658 ms, 251.658 ms exposed)

// FIXED: data parallelism: 2 replicas of these 2 devices, 2 micro-batches each; gradient all-reduce 83.886 ms (83.886 ms exposed); step time 95.953 ms

// MEMORY: 2 x 2      2 micro-batches each: does not fit
// MEMORY: 4 x 1      1 micro-batches each: does not fit
// MEMORY: pipe.placement @model_seq graph @model devices 4 microbatches 4 {

// PLACE: error: pipe-place: replicas=0 (choose the data-parallel degree) needs --pipe-partition, which predicts step times
