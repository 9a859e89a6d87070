// Every op of the pipe dialect and every optional piece of its syntax, in
// custom form: it must verify, print as written, survive a second
// round-trip, and reparse from the generic form.
// RUN: pipe-opt %s --verify-roundtrip | FileCheck %s
// RUN: pipe-opt %s --mlir-print-op-generic | pipe-opt | FileCheck %s
// RUN: pipe-opt %s | pipe-opt | FileCheck %s

// Parameters: inline splat and non-splat initializers, a dense_resource
// blob, external storage, frozen, and no initializer.
// CHECK-LABEL: pipe.param @w : tensor<4xf32> = dense<1.250000e-01>
pipe.param @w : tensor<4xf32> = dense<0.125>
// CHECK: pipe.param @v : tensor<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
pipe.param @v : tensor<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK: pipe.param @r : tensor<2xf32> = dense_resource<blob_r>
pipe.param @r : tensor<2xf32> = dense_resource<blob_r>
// CHECK: pipe.param @e frozen : tensor<4x4xf32> external("w.safetensors", "h.0.attn.w")
pipe.param @e frozen : tensor<4x4xf32> external("w.safetensors", "h.0.attn.w")
// CHECK: pipe.param @f frozen : tensor<4xi8> = dense<3>
pipe.param @f frozen : tensor<4xi8> = dense<3>
// CHECK: pipe.param @n : tensor<2x3xbf16>{{$}}
pipe.param @n : tensor<2x3xbf16>
// CHECK: pipe.param @d : tensor<2xf32> {note = "discardable"}
pipe.param @d : tensor<2xf32> {note = "discardable"}

// get_param inside an ordinary function (before block formation).
// CHECK-LABEL: func.func @lifted
// CHECK: %{{.*}} = pipe.get_param @w : tensor<4xf32>
func.func @lifted() -> tensor<4xf32> {
  %w = pipe.get_param @w : tensor<4xf32>
  return %w : tensor<4xf32>
}

// Blocks: with parameters and a cost; without parameters and with several
// results; with argument and result attributes; with no inputs and results.
// CHECK-LABEL: pipe.block @lin params(%{{.*}}: tensor<4xf32>) (%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME: attributes {cost = #pipe.cost<forward_flops = 8, backward_input_flops = 8, backward_weight_flops = 8, param_bytes = 16, saved_bytes = 16, output_bytes = 16, forward_time_ns = 120, backward_time_ns = 250>}
// CHECK: arith.mulf
// CHECK: pipe.return %{{.*}} : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {cost = #pipe.cost<forward_flops = 8, backward_input_flops = 8,
                                  backward_weight_flops = 8, param_bytes = 16,
                                  saved_bytes = 16, output_bytes = 16,
                                  forward_time_ns = 120, backward_time_ns = 250>} {
  %y = arith.mulf %x, %w : tensor<4xf32>
  pipe.return %y : tensor<4xf32>
}
// CHECK-LABEL: pipe.block @split (%{{.*}}: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-SAME: attributes {cost = #pipe.cost<forward_flops = 0, backward_input_flops = 0, backward_weight_flops = 0, param_bytes = 0, saved_bytes = 0, output_bytes = 32, forward_time_ns = 5>}
// CHECK: pipe.return %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
pipe.block @split (%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {cost = #pipe.cost<forward_flops = 0, backward_input_flops = 0,
                                  backward_weight_flops = 0, param_bytes = 0,
                                  saved_bytes = 0, output_bytes = 32,
                                  forward_time_ns = 5>} {
  pipe.return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: pipe.block @annotated params(%{{.*}}: tensor<4xf32> {pipe.tied}) (%{{.*}}: tensor<4xf32> {pipe.input = 0 : i64}) -> (tensor<4xf32> {pipe.output})
pipe.block @annotated params(%w: tensor<4xf32> {pipe.tied})
    (%x: tensor<4xf32> {pipe.input = 0}) -> (tensor<4xf32> {pipe.output}) {
  pipe.return %x : tensor<4xf32>
}
// CHECK-LABEL: pipe.block @nothing () {
// CHECK-NEXT: pipe.return{{$}}
pipe.block @nothing () {
  pipe.return
}

// The graph: @w is tied (read by l0 and l2); l1 has two results.
// CHECK-LABEL: pipe.graph @model(%{{.*}}: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: pipe.run "l0" @lin(%{{.*}}) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: pipe.run "l1" @split(%{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: pipe.run "l2" @lin(%{{.*}}#0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: pipe.run "l3" @nothing() : () -> ()
// CHECK: pipe.return %{{.*}}, %{{.*}}#1 : tensor<4xf32>, tensor<4xf32>
pipe.graph @model(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = pipe.run "l0" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %b:2 = pipe.run "l1" @split(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %c = pipe.run "l2" @lin(%b#0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.run "l3" @nothing() : () -> ()
  pipe.return %c, %b#1 : tensor<4xf32>, tensor<4xf32>
}

// Mixed-Pipe placement: device 0 hosts the non-adjacent stages @s0 and @s2.
// CHECK-LABEL: pipe.placement @placed graph @model devices 2 {
// CHECK-NEXT: pipe.stage @s0 device 0 blocks ["l0", "l3"]
// CHECK-NEXT: pipe.stage @s1 device 1 blocks ["l1"]
// CHECK-NEXT: pipe.stage @s2 device 0 blocks ["l2"]
// CHECK-NEXT: }
pipe.placement @placed graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0", "l3"]
  pipe.stage @s1 device 1 blocks ["l1"]
  pipe.stage @s2 device 0 blocks ["l2"]
}
// CHECK-LABEL: pipe.placement @tagged graph @model devices 4 attributes {origin = "manual"} {
pipe.placement @tagged graph @model devices 4 attributes {origin = "manual"} {
  pipe.stage @all device 3 blocks ["l0", "l1", "l2", "l3"] {note = 1 : i64}
}

// Every action, with and without the optional step and version.
// CHECK-LABEL: pipe.schedule @train placement @placed kind "custom" microbatches 2 steps 2 {
pipe.schedule @train placement @placed kind "custom" microbatches 2 steps 2 {
  // CHECK-NEXT: pipe.device 0 {
  pipe.device 0 {
    // CHECK-NEXT: %[[L:.*]] = pipe.ps.load @s0{{$}}
    %l = pipe.ps.load @s0
    // CHECK-NEXT: %[[L2:.*]] = pipe.ps.load @s2 step 1
    %l2 = pipe.ps.load @s2 step 1
    // CHECK-NEXT: pipe.wait %[[L]], %[[L2]]{{$}}
    pipe.wait %l, %l2
    // CHECK-NEXT: pipe.forward @s0 mb 0{{$}}
    pipe.forward @s0 mb 0
    // CHECK-NEXT: %[[A:.*]] = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    %a = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    // CHECK-NEXT: %[[R:.*]] = pipe.recv activation @s1 -> @s2 mb 1 step 1 payload [tensor<4xf32>]
    %r = pipe.recv activation @s1 -> @s2 mb 1 step 1 payload [tensor<4xf32>]
    // CHECK-NEXT: pipe.wait %[[R]]{{$}}
    pipe.wait %r
    // CHECK-NEXT: pipe.forward @s2 mb 1 step 1 version 3{{$}}
    pipe.forward @s2 mb 1 step 1 version 3
    // CHECK-NEXT: pipe.recompute @s2 mb 1 step 1 version 3{{$}}
    pipe.recompute @s2 mb 1 step 1 version 3
    // CHECK-NEXT: pipe.recompute @s2 mb 0{{$}}
    pipe.recompute @s2 mb 0
    // CHECK-NEXT: pipe.backward @s2 mb 1 step 1{{$}}
    pipe.backward @s2 mb 1 step 1
    // CHECK-NEXT: %[[G:.*]] = pipe.send gradient @s2 -> @s1 mb 1 step 1 payload [tensor<4xf32>]
    %g = pipe.send gradient @s2 -> @s1 mb 1 step 1 payload [tensor<4xf32>]
    // CHECK-NEXT: %[[Q:.*]] = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4xf32>]
    %q = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4xf32>]
    // CHECK-NEXT: pipe.wait %[[Q]]{{$}}
    pipe.wait %q
    // CHECK-NEXT: pipe.backward.input @s0 mb 0 version 1{{$}}
    pipe.backward.input @s0 mb 0 version 1
    // CHECK-NEXT: pipe.backward.weight @s0 mb 0 step 1{{$}}
    pipe.backward.weight @s0 mb 0 step 1
    // CHECK-NEXT: %[[O:.*]] = pipe.offload @s0 mb 1{{$}}
    %o = pipe.offload @s0 mb 1
    // CHECK-NEXT: %[[P:.*]] = pipe.prefetch @s0 mb 1 step 1{{$}}
    %p = pipe.prefetch @s0 mb 1 step 1
    // CHECK-NEXT: pipe.reduce_grad @w{{$}}
    pipe.reduce_grad @w
    // CHECK-NEXT: pipe.reduce_grad @w step 1{{$}}
    pipe.reduce_grad @w step 1
    // CHECK-NEXT: %[[H:.*]] = pipe.ps.push @s0{{$}}
    %h = pipe.ps.push @s0
    // CHECK-NEXT: %[[U:.*]] = pipe.ps.update @s0 step 1{{$}}
    %u = pipe.ps.update @s0 step 1
    // CHECK-NEXT: pipe.ps.release @s0{{$}}
    pipe.ps.release @s0
    // CHECK-NEXT: pipe.ps.release @s2 step 1{{$}}
    pipe.ps.release @s2 step 1
    // CHECK-NEXT: pipe.update @s2{{$}}
    pipe.update @s2
    // CHECK-NEXT: pipe.update @s0 step 1 {note = "x"}
    pipe.update @s0 step 1 {note = "x"}
    // CHECK-NEXT: pipe.wait %[[A]], %[[G]], %[[O]], %[[P]], %[[H]], %[[U]]{{$}}
    pipe.wait %a, %g, %o, %p, %h, %u
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: pipe.device 1 {
  pipe.device 1 {
    // CHECK-NEXT: pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    %r = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    pipe.wait %r
    pipe.forward @s1 mb 0
    // CHECK: pipe.send activation @s1 -> @s2 mb 1 step 1 payload [tensor<4xf32>]
    %a = pipe.send activation @s1 -> @s2 mb 1 step 1 payload [tensor<4xf32>]
    // CHECK: pipe.recv gradient @s2 -> @s1 mb 1 step 1 payload [tensor<4xf32>]
    %g = pipe.recv gradient @s2 -> @s1 mb 1 step 1 payload [tensor<4xf32>]
    // CHECK: pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4xf32>]
    %s = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4xf32>]
    // CHECK: pipe.wait %{{.*}}, %{{.*}}, %{{.*}}{{$}}
    pipe.wait %a, %g, %s
  }
}

// An evaluation schedule: forward_only, default step count, an empty
// device, and a device that the placement gives no stage.
// CHECK-LABEL: pipe.schedule @eval placement @tagged kind "gpipe" microbatches 65536 forward_only {
// CHECK-NEXT: pipe.device 3 {
// CHECK-NEXT: pipe.forward @all mb 65535
// CHECK-NEXT: }
// CHECK-NEXT: pipe.device 0 {
// CHECK-NEXT: }
// CHECK-NEXT: }
pipe.schedule @eval placement @tagged kind "gpipe" microbatches 65536 forward_only {
  pipe.device 3 {
    pipe.forward @all mb 65535
  }
  pipe.device 0 {
  }
}
// CHECK-LABEL: pipe.schedule @tagged_schedule placement @tagged kind "l2l" microbatches 1 steps 3 attributes {generator = "hand"} {
pipe.schedule @tagged_schedule placement @tagged kind "l2l" microbatches 1 steps 3 attributes {generator = "hand"} {
}

// Data parallelism: a bucket of gradients summed over the replicas.
// CHECK-LABEL: pipe.placement @replicated graph @model devices 1 replicas 2 {
pipe.placement @replicated graph @model devices 1 replicas 2 {
  pipe.stage @r0 device 0 blocks ["l0", "l1", "l2", "l3"]
}
// CHECK-LABEL: pipe.schedule @buckets placement @replicated
pipe.schedule @buckets placement @replicated kind "custom" microbatches 1 steps 2 {
  pipe.device 0 {
    // CHECK: %[[B0:.*]] = pipe.reduce_bucket [@w]{{$}}
    %b0 = pipe.reduce_bucket [@w]
    // CHECK-NEXT: %[[B1:.*]] = pipe.reduce_bucket [@w] step 1 {note = "x"}
    %b1 = pipe.reduce_bucket [@w] step 1 {note = "x"}
    // CHECK-NEXT: pipe.wait %[[B0]], %[[B1]]{{$}}
    pipe.wait %b0, %b1
  }
}

// CHECK: {-#
// CHECK-NEXT: dialect_resources: {
// CHECK-NEXT: builtin: {
// CHECK-NEXT: blob_r: "0x040000000000803F00000040"
{-#
  dialect_resources: {
    builtin: {
      blob_r: "0x040000000000803F00000040"
    }
  }
#-}
