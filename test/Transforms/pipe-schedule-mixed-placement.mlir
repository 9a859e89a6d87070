// A Mixed-Pipe placement: eight stages on four devices with the V-shaped
// stage -> device map [0, 1, 2, 3, 3, 2, 1, 0], so every device hosts two
// non-adjacent stages, and tied parameters read by stages on different
// devices (@shared: s0 and s7 on device 0, s4 on device 3; @rel: s2 on
// device 2, s6 on device 1). Every kind must give a schedule the checker
// accepts and the simulator plays to the end without deadlock; the
// asynchronous kind used to order the two stages of a device so that a
// device waited for gradients another device only sent after a reduction
// that device could not reach.
//
// RUN: pipe-opt %s --pipe-schedule="kind=gpipe microbatches=4 steps=2" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: pipe-opt %s --pipe-schedule="kind=1f1b microbatches=8" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=ONEF
// RUN: pipe-opt %s --pipe-schedule="kind=zb-h1 microbatches=8" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=ZB
// RUN: pipe-opt %s --pipe-schedule="kind=mixed microbatches=8" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=MIXED
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=8 steps=2" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=ASYNC-SIM
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=8 steps=2 weights=stale" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=STALE-SIM
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=3 steps=3 forward-only=true" --pipe-verify-schedule --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=FWD-SIM
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=4 steps=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async microbatches=4 steps=2 weights=stale" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC

pipe.param @shared : tensor<8x8xf32>
pipe.param @rel : tensor<8x8xf32>
pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.param @w2 : tensor<8x8xf32>
pipe.param @w3 : tensor<8x8xf32>
pipe.param @w4 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "embed" @layer(%x) params [@shared]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "enc0" @layer(%h0) params [@w0]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = pipe.run "enc1" @layer(%h1) params [@rel]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h3 = pipe.run "enc2" @layer(%h2) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h4 = pipe.run "enc3" @layer(%h3) params [@w2]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h5 = pipe.run "dec_embed" @layer(%h4) params [@shared]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h6 = pipe.run "dec0" @layer(%h5) params [@w3]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h7 = pipe.run "dec1" @layer(%h6) params [@rel]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h8 = pipe.run "dec2" @layer(%h7) params [@w4]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = pipe.run "head" @layer(%h8) params [@shared]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %y : tensor<4x8xf32>
}
pipe.placement @placed graph @model devices 4 {
  pipe.stage @s0 device 0 blocks ["embed"]
  pipe.stage @s1 device 1 blocks ["enc0"]
  pipe.stage @s2 device 2 blocks ["enc1"]
  pipe.stage @s3 device 3 blocks ["enc2", "enc3"]
  pipe.stage @s4 device 3 blocks ["dec_embed"]
  pipe.stage @s5 device 2 blocks ["dec0"]
  pipe.stage @s6 device 1 blocks ["dec1", "dec2"]
  pipe.stage @s7 device 0 blocks ["head"]
}

// GPIPE: @placed_gpipe on ideal: schedule gpipe: 4 micro-batches, 2 step(s)
// ONEF: @placed_1f1b on ideal: schedule 1f1b: 8 micro-batches, 1 step(s)
// ZB: @placed_zb_h1 on ideal: schedule zb-h1: 8 micro-batches, 1 step(s)
// MIXED: @placed_mixed on ideal: schedule mixed: 8 micro-batches, 1 step(s)
// ASYNC-SIM: @placed_pipedream_async on ideal: schedule pipedream-async: 8 micro-batches, 2 step(s)
// STALE-SIM: @placed_pipedream_async on ideal: schedule pipedream-async: 8 micro-batches, 2 step(s)
// FWD-SIM: @placed_pipedream_async on ideal: schedule pipedream-async: 3 micro-batches, 3 step(s)

// Every device hosting a reader of a tied parameter reduces it once per
// step, the parameters of one group in the same order everywhere, before
// updating its stages that read it.
// ASYNC-LABEL: pipe.schedule @placed_pipedream_async placement @placed kind "pipedream-async" microbatches 4 steps 2
// ASYNC:         pipe.device 0 {
// ASYNC:           pipe.reduce_grad @shared{{$}}
// ASYNC-NEXT:      pipe.update @s0{{$}}
// ASYNC-NEXT:      pipe.update @s7{{$}}
// ASYNC-NOT:       pipe.reduce_grad @rel
// ASYNC:           pipe.reduce_grad @shared step 1
// ASYNC-NEXT:      pipe.update @s0 step 1
// ASYNC-NEXT:      pipe.update @s7 step 1
// ASYNC-NOT:       pipe.reduce_grad
// ASYNC:         pipe.device 1 {
// ASYNC-NOT:       pipe.reduce_grad @shared
// ASYNC:           pipe.reduce_grad @rel{{$}}
// ASYNC-NEXT:      pipe.update @s6{{$}}
// ASYNC-NOT:       pipe.reduce_grad @shared
// ASYNC:           pipe.reduce_grad @rel step 1
// ASYNC-NEXT:      pipe.update @s6 step 1
// ASYNC:         pipe.device 2 {
// ASYNC-NOT:       pipe.reduce_grad @shared
// ASYNC:           pipe.reduce_grad @rel{{$}}
// ASYNC-NEXT:      pipe.update @s2{{$}}
// ASYNC-NOT:       pipe.reduce_grad @shared
// ASYNC:           pipe.reduce_grad @rel step 1
// ASYNC-NEXT:      pipe.update @s2 step 1
// ASYNC:         pipe.device 3 {
// ASYNC-NOT:       pipe.reduce_grad @rel
// ASYNC:           pipe.reduce_grad @shared{{$}}
// ASYNC-NEXT:      pipe.update @s4{{$}}
// ASYNC-NOT:       pipe.reduce_grad @rel
// ASYNC:           pipe.reduce_grad @shared step 1
// ASYNC-NEXT:      pipe.update @s4 step 1
