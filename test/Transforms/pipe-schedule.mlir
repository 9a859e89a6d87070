// The Mixed-Pipe placement of examples/mixed-pipe-gpipe.mlir (device 0 hosts
// the first and the last stage) with a tied parameter, scheduled by every
// pipelined kind. Each schedule is checked by --pipe-verify-schedule and
// printed, parsed and printed again.
//
// RUN: pipe-opt %s --pipe-schedule="kind=gpipe microbatches=2" --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=GPIPE
// RUN: pipe-opt %s --pipe-schedule="kind=1f1b microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=ONEF
// RUN: pipe-opt %s --pipe-schedule="kind=mixed microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=MIXED
// RUN: pipe-opt %s --pipe-schedule="kind=zb-h1 microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ZB
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=1 steps=3" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=1 steps=3 weights=stale" --pipe-verify-schedule | FileCheck %s --check-prefix=STALE
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=1 steps=3 weights=predict" --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=PREDICT
// RUN: not pipe-opt %s --pipe-schedule="kind=pipedream-async weights=guess" 2>&1 | FileCheck %s --check-prefix=BADWEIGHTS
// RUN: pipe-opt %s --pipe-schedule="kind=1f1b microbatches=2 forward-only=true" --pipe-verify-schedule | FileCheck %s --check-prefix=FWD
// RUN: pipe-opt %s --pipe-schedule="kind=gpipe microbatches=2 recompute=true" --pipe-verify-schedule | FileCheck %s --check-prefix=RECOMP

pipe.param @wte : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.param @w2 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@wte]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @layer(%h0) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = pipe.run "l2" @layer(%h1) params [@w2]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = pipe.run "head" @layer(%h2) params [@wte]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %y : tensor<4x8xf32>
}
pipe.placement @placed graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1", "l2"]
  pipe.stage @s2 device 0 blocks ["head"]
}

// GPIPE-LABEL: pipe.schedule @placed_gpipe placement @placed kind "gpipe" microbatches 2 {
// GPIPE-NEXT:    pipe.device 0 {
// GPIPE-NEXT:      pipe.forward @s0 mb 0
// GPIPE-NEXT:      %[[A0:.*]] = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
// GPIPE-NEXT:      pipe.forward @s0 mb 1
// GPIPE-NEXT:      %[[A1:.*]] = pipe.send activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
// GPIPE-NEXT:      %[[R0:.*]] = pipe.recv activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
// GPIPE-NEXT:      pipe.wait %[[R0]]
// GPIPE-NEXT:      pipe.forward @s2 mb 0
// GPIPE:           pipe.forward @s2 mb 1
// GPIPE-NEXT:      pipe.backward @s2 mb 1
// GPIPE-NEXT:      pipe.send gradient @s2 -> @s1 mb 1
// GPIPE-NEXT:      pipe.backward @s2 mb 0
// GPIPE:           pipe.backward @s0 mb 0
// GPIPE-NEXT:      pipe.wait %[[A0]], %[[A1]],
// GPIPE-NEXT:      pipe.reduce_grad @wte
// GPIPE-NEXT:      pipe.update @s0
// GPIPE-NEXT:      pipe.update @s2
// GPIPE-NEXT:    }
// GPIPE-NEXT:    pipe.device 1 {
// GPIPE-NEXT:      %[[Q0:.*]] = pipe.recv activation @s0 -> @s1 mb 0
// GPIPE-NEXT:      pipe.wait %[[Q0]]
// GPIPE-NEXT:      pipe.forward @s1 mb 0
// GPIPE-NOT:       pipe.reduce_grad
// GPIPE:           pipe.update @s1
// GPIPE-NEXT:    }

// 1F1B: @s1 (height 2) never has more than two micro-batches in flight;
// device 0 interleaves its two stages.
// ONEF-LABEL: pipe.schedule @placed_1f1b placement @placed kind "1f1b" microbatches 4
// ONEF:         pipe.device 0 {
// ONEF:           pipe.forward @s0 mb 2
// ONEF:           pipe.forward @s2 mb 0
// ONEF:           pipe.backward @s2 mb 0
// ONEF:         pipe.device 1 {
// ONEF:           pipe.forward @s1 mb 0
// ONEF:           pipe.forward @s1 mb 1
// ONEF:           pipe.backward @s1 mb 0
// ONEF:           pipe.backward @s1 mb 1
// ONEF:           pipe.forward @s1 mb 2
// ONEF:           pipe.forward @s1 mb 3
// ONEF:           pipe.backward @s1 mb 2
// ONEF:           pipe.backward @s1 mb 3

// The deepest stage goes first on the shared device.
// MIXED-LABEL: pipe.schedule @placed_mixed placement @placed kind "mixed" microbatches 4
// MIXED:         pipe.device 0 {
// MIXED:           pipe.forward @s2 mb 0
// MIXED-NEXT:      pipe.backward @s2 mb 0

// ZB-LABEL: pipe.schedule @placed_zb_h1 placement @placed kind "zb-h1" microbatches 2
// ZB:           pipe.backward.input @s2 mb 0
// ZB:           pipe.backward.weight @s2 mb 0
// ZB-NOT:       pipe.backward @

// Asynchronous: step 1's forwards run before step 0's updates, and every
// backward uses the version its forward used.
// ASYNC-LABEL: pipe.schedule @placed_pipedream_async placement @placed kind "pipedream-async" microbatches 1 steps 3
// ASYNC:         pipe.device 1 {
// ASYNC:           pipe.forward @s1 mb 0 version 0
// ASYNC:           pipe.forward @s1 mb 0 step 1 version 0
// ASYNC:           pipe.backward @s1 mb 0 version 0
// ASYNC:           pipe.update @s1
// ASYNC:           pipe.backward @s1 mb 0 step 1 version 0
// ASYNC:           pipe.update @s1 step 1
// With stale weights the backward uses the latest version instead.
// STALE:         pipe.device 1 {
// STALE:           pipe.update @s1
// STALE:           pipe.backward @s1 mb 0 step 1 version 1
// With weight prediction the stale forward looks ahead by the update that
// comes before its backward; the others need none.
// PREDICT:       pipe.device 1 {
// PREDICT:         pipe.forward @s1 mb 0 version 0{{$}}
// PREDICT:         pipe.forward @s1 mb 0 step 1 version 0 predict 1
// PREDICT:         pipe.backward @s1 mb 0 version 0
// PREDICT:         pipe.update @s1
// PREDICT:         pipe.backward @s1 mb 0 step 1 version 1
// BADWEIGHTS: weights must be 'stash', 'stale' or 'predict', got 'guess'

// FWD-LABEL: pipe.schedule @placed_1f1b placement @placed kind "1f1b" microbatches 2 forward_only
// FWD-NOT:       pipe.backward
// FWD-NOT:       pipe.update

// RECOMP:        pipe.device 0 {
// RECOMP:          pipe.recompute @s0 mb 1
// RECOMP:          pipe.backward @s0 mb 1
// RECOMP-NOT:      pipe.recompute @s2
