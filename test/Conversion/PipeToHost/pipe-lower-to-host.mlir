// The host back end's compiler half on hand-written scheduled modules:
// blocks become functions with read-only arguments and a C interface, each
// device's action list a function of runtime calls with an early exit, and
// the graph/stages/schedules a manifest (include/pipe/Runtime/Program.h).
// print-manifest.py prints the manifest global one record per line.
//
// RUN: pipe-opt %s -split-input-file --pipe-differentiate --pipe-verify-schedule --pipe-lower-to-host | %python %S/Inputs/print-manifest.py | FileCheck %s --check-prefix=MAN
// RUN: pipe-opt %s -split-input-file --pipe-differentiate --pipe-lower-to-host --canonicalize | FileCheck %s
// RUN: pipe-opt %s -split-input-file --pipe-differentiate --pipe-lower-to-host=device-memory-bytes=1048576 | %python %S/Inputs/print-manifest.py | FileCheck %s --check-prefix=MEM
// A device model's memory_bytes become the capacities; device-memory-bytes
// still overrides them; a device model that does not exist is an error.
// RUN: pipe-opt %s -split-input-file --pipe-differentiate --pipe-lower-to-host=device-model=rtx2080ti-x8 | %python %S/Inputs/print-manifest.py | FileCheck %s --check-prefix=MODEL
// RUN: pipe-opt %s -split-input-file --pipe-differentiate "--pipe-lower-to-host=device-model=rtx2080ti-x8 device-memory-bytes=1048576" | %python %S/Inputs/print-manifest.py | FileCheck %s --check-prefix=MEM
// RUN: not pipe-opt %s -split-input-file --pipe-differentiate --pipe-lower-to-host=device-model=%t.missing.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMODEL
//
// The weights option writes every param's initial value into one safetensors
// file (first split only: the splits would overwrite each other's file).
// RUN: rm -f %t.safetensors
// RUN: sed '/^\/\/ -----$/,$d' %s | pipe-opt --pipe-differentiate --pipe-lower-to-host=weights=%t.safetensors -o /dev/null
// RUN: %python -c "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q',f.read(8))[0]; h=json.loads(f.read(n)); b=f.read(); [print(k,t['dtype'],t['shape'],t['data_offsets'][1]-t['data_offsets'][0],struct.unpack_from('<f',b,t['data_offsets'][0])[0]) for k,t in sorted(h.items()) if k!='__metadata__']" %t.safetensors | FileCheck %s --check-prefix=W

// W:      w0 F32 [8, 8] 256 0.125
// W-NEXT: w1 F32 [8, 8] 256 0.25
// W-NEXT: w2 F32 [8, 8] 256 0.5
// W-NOT:  unused

// Split 1: two blocks (the linear one used twice), three runs, two stages on
// two devices, a 1F1B-like schedule for 2 micro-batches written out. Device 1
// recomputes micro-batch 0 (so its forward keeps nothing: flag 0) but not
// micro-batch 1 (flag 1); device 0 splits one backward into its input and
// weight parts.

// MAN:      pipe-program 5
// MAN-NEXT: type 0 f32 2 8 8
// MAN-NEXT: type 1 f32 2 4 8
// MAN-NEXT: type 2 f32 0
// MAN-NEXT: param 0 w0 0 1
// MAN-NEXT: param 1 w1 0 1
// MAN-NEXT: param 2 w2 0 1
// Graph values: the two inputs, then each run's results (outputs, then the
// activations save-all keeps for the backward).
// MAN-NEXT: value 0 1
// MAN-NEXT: value 1 1
// MAN-NEXT: value 2 1
// MAN-NEXT: value 3 1
// MAN-NEXT: value 4 1
// MAN-NEXT: value 5 1
// MAN-NEXT: value 6 2
// MAN-NEXT: value 7 1
// MAN-NEXT: input 0 0
// MAN-NEXT: input 1 1
// MAN-NEXT: loss 6 1{{$}}
// MAN-NEXT: function 0 pipe_fn_linear_relu 2 0 1 2 1 1
// MAN-NEXT: function 1 pipe_fn_linear_relu_bwd_input 4 0 1 1 1 1 1
// MAN-NEXT: function 2 pipe_fn_linear_relu_bwd_weight 4 0 1 1 1 1 0
// MAN-NEXT: function 3 pipe_fn_linear_relu_bwd_fused 4 0 1 1 1 2 1 0
// MAN-NEXT: function 4 pipe_fn_mse_head 3 0 1 1 2 2 1
// MAN-NEXT: function 5 pipe_fn_mse_head_bwd_input 5 0 1 1 2 1 2 1 1
// MAN-NEXT: function 6 pipe_fn_mse_head_bwd_weight 5 0 1 1 2 1 1 0
// MAN-NEXT: function 7 pipe_fn_mse_head_bwd_fused 5 0 1 1 2 1 3 1 1 0
// run <id> <name> <fwd> <bwd-in> <bwd-w> <nsaved> | params | inputs | outputs
// | differentiable inputs | results | params
// MAN-NEXT: run 0 l0 0 1 2 1 1 0 1 0 1 2 1 0 1 0 1 0
// MAN-NEXT: run 1 l1 0 1 2 1 1 1 1 2 1 4 1 0 1 0 1 0
// MAN-NEXT: run 2 head 4 5 6 1 1 2 2 4 1 1 6 2 0 1 1 0 1 0
// MAN-NEXT: fused 0 3
// MAN-NEXT: fused 1 3
// MAN-NEXT: fused 2 7
// MAN-NEXT: stage 0 s0 0 1 0
// MAN-NEXT: stage 1 s1 1 2 1 2
// MAN-NEXT: edge 0 1 1 2
// MAN-NEXT: schedule 0 onefoneb 1f1b 2 2 1 0
// MAN-NEXT: peer_order 0
// MAN-NEXT: device 0 0 0 pipe_device_0_0
// MAN-NEXT: device 0 1 0 pipe_device_0_1
// MAN-NEXT: owns 0 0 1 0
// MAN-NEXT: owns 0 1 2 1 2
// MAN-NEXT: end

// The module keeps only the manifest, the ABI version and functions.
// CHECK-LABEL: module
// CHECK-NOT:   pipe.
// CHECK:       llvm.mlir.global external constant @pipe_program_manifest("pipe-program 5\0A
// CHECK:       llvm.mlir.global external constant @pipe_program_abi_version(4 : i32)
// CHECK-NOT:   pipe.{{param|graph|placement|schedule|block|run}}
// CHECK-NOT:   @unused
// CHECK:       func.func @pipe_block_linear_relu(%{{.*}}: tensor<8x8xf32> {bufferization.writable = false}, %{{.*}}: tensor<4x8xf32> {bufferization.writable = false}) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-SAME:    attributes {llvm.emit_c_interface, pipe.packed_entry = "pipe_fn_linear_relu"}
// CHECK:       return
// CHECK:       func.func @pipe_block_linear_relu_bwd_input({{.*}}) -> tensor<4x8xf32> attributes {llvm.emit_c_interface, pipe.packed_entry = "pipe_fn_linear_relu_bwd_input"}
// CHECK:       func.func @pipe_block_linear_relu_bwd_weight({{.*}}) -> tensor<8x8xf32> attributes {llvm.emit_c_interface, pipe.packed_entry = "pipe_fn_linear_relu_bwd_weight"}
// CHECK:       func.func @pipe_block_mse_head(
// CHECK:       func.func @pipe_block_mse_head_bwd_input(
// CHECK:       func.func @pipe_block_mse_head_bwd_weight(

// Device 0: every call's status is checked; a non-zero one is returned at
// once. Token-returning calls fail when <= 0 with status = -token.
// Transfers go through the transport ABI (pipe/Runtime/Comm.h): the device's
// communicator, a buffer query by (kind, src, dst, mb, step) into one slot,
// then the send/recv naming the buffer, its element count and dtype (edge
// s0 -> s1 carries one tensor<4x8xf32>: 32 elements of PIPE_RT_DTYPE_F32 =
// 1) and the peer device. Transfers issued in a row are grouped.
// CHECK-LABEL: func.func @pipe_device_0_0(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[Z64:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[N32:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[ONE64:.*]] = arith.constant 1 : i64
// CHECK:         %[[COMM:.*]] = call @pipe_rt_comm_of(%[[CTX]]) : (!llvm.ptr) -> !llvm.ptr
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.alloca %[[ONE64]] x !llvm.ptr : (i64) -> !llvm.ptr
// forward(stage 0, mb 0, step 0, version -1, keep 1)
// CHECK-NEXT:    %[[F0:.*]] = call @pipe_rt_act_forward(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ONE]], %[[ZERO]])
// CHECK-NEXT:    %[[BAD:.*]] = arith.cmpi ne, %[[F0]], %[[ZERO]] : i32
// CHECK-NEXT:    cf.cond_br %[[BAD]], ^[[EXIT:bb[0-9]+]](%[[F0]] : i32), ^bb1
// CHECK:       ^bb1:
// send(activation, s0 -> s1, mb 0, step 0), alone: no group.
// CHECK-NEXT:    %[[Q0:.*]] = call @pipe_rt_comm_send_buffer(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[SLOT]]) : (!llvm.ptr, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// CHECK-NEXT:    %[[QBAD:.*]] = arith.cmpi ne, %[[Q0]], %[[ZERO]] : i32
// CHECK-NEXT:    cf.cond_br %[[QBAD]], ^[[EXIT]](%[[Q0]] : i32), ^bb2
// CHECK:       ^bb2:
// CHECK-NEXT:    %[[B0:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[A0:.*]] = call @pipe_rt_comm_send(%[[COMM]], %[[B0]], %[[N32]], %[[ONE]], %[[ONE]]) : (!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i64
// CHECK-NEXT:    %[[TBAD:.*]] = arith.cmpi sle, %[[A0]], %[[Z64]] : i64
// CHECK-NEXT:    %[[NEG:.*]] = arith.subi %[[Z64]], %[[A0]] : i64
// CHECK-NEXT:    %[[TR:.*]] = arith.trunci %[[NEG]] : i64 to i32
// CHECK-NEXT:    %[[IS0:.*]] = arith.cmpi eq, %[[A0]], %[[Z64]] : i64
// CHECK-NEXT:    %[[ST:.*]] = arith.select %[[IS0]], %[[ONE]], %[[TR]] : i32
// CHECK-NEXT:    cf.cond_br %[[TBAD]], ^[[EXIT]](%[[ST]] : i32), ^bb3
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ONE]], %[[ZERO]])
// The 1F1B exchange: send activation mb 1 and recv gradient mb 0 (from s1
// on device 1) in one group.
// CHECK-NOT:     call
// CHECK:         call @pipe_rt_comm_group_start(%[[COMM]]) : (!llvm.ptr) -> i32
// CHECK-NOT:     call
// CHECK:         call @pipe_rt_comm_send_buffer(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[SLOT]])
// CHECK-NOT:     call
// CHECK:         %[[B1:.*]] = llvm.load %[[SLOT]]
// CHECK-NEXT:    %[[A1:.*]] = call @pipe_rt_comm_send(%[[COMM]], %[[B1]], %[[N32]], %[[ONE]], %[[ONE]])
// CHECK-NOT:     call
// CHECK:         call @pipe_rt_comm_recv_buffer(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[SLOT]])
// CHECK-NOT:     call
// CHECK:         %[[B2:.*]] = llvm.load %[[SLOT]]
// CHECK-NEXT:    %[[G0:.*]] = call @pipe_rt_comm_recv(%[[COMM]], %[[B2]], %[[N32]], %[[ONE]], %[[ONE]])
// CHECK-NOT:     call
// CHECK:         call @pipe_rt_comm_group_end(%[[COMM]]) : (!llvm.ptr) -> i32
// CHECK-NOT:     call
// its token goes to the wait.
// CHECK:         %[[W0:.*]] = call @pipe_rt_act_wait(%[[CTX]], %[[G0]]) : (!llvm.ptr, i64) -> i32
// CHECK-NEXT:    %[[WBAD:.*]] = arith.cmpi ne, %[[W0]], %[[ZERO]] : i32
// CHECK-NEXT:    cf.cond_br %[[WBAD]], ^[[EXIT]](%[[W0]] : i32)
// backward(stage 0, mb 0, part 0 = full)
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]])
// A lone recv: no group.
// CHECK-NOT:     group_start
// CHECK:         call @pipe_rt_comm_recv_buffer(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[SLOT]])
// CHECK:         %[[G1:.*]] = call @pipe_rt_comm_recv(%[[COMM]], %{{.*}}, %[[N32]], %[[ONE]], %[[ONE]])
// CHECK-NOT:     group_end
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[G1]])
// part 1 = input gradients, part 2 = weight gradients
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ONE]])
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[M1]], %[[TWO]])
// `pipe.wait %a0, %a1`: one wait per token, in order.
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[A0]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[A1]])
// CHECK:         %[[U:.*]] = call @pipe_rt_act_update(%[[CTX]], %[[ZERO]], %[[ZERO]]) : (!llvm.ptr, i32, i32) -> i32
// CHECK-NEXT:    %[[UBAD:.*]] = arith.cmpi ne, %[[U]], %[[ZERO]] : i32
// CHECK-NEXT:    cf.cond_br %[[UBAD]], ^[[EXIT]](%[[U]] : i32), ^[[EXIT]](%[[ZERO]] : i32)
// CHECK-NEXT:  ^[[EXIT]](%[[STATUS:.*]]: i32):
// CHECK-NEXT:    return %[[STATUS]] : i32
// CHECK-NOT:   call
// CHECK:       func.func private @pipe_rt_comm_of(!llvm.ptr) -> !llvm.ptr
// CHECK:       func.func private @pipe_rt_act_forward(!llvm.ptr, i32, i32, i32, i32, i32, i32) -> i32
// CHECK:       func.func private @pipe_rt_comm_send_buffer(!llvm.ptr, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// CHECK:       func.func private @pipe_rt_comm_send(!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i64
// CHECK:       func.func private @pipe_rt_comm_group_start(!llvm.ptr) -> i32
// CHECK:       func.func private @pipe_rt_comm_recv_buffer(!llvm.ptr, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// CHECK:       func.func private @pipe_rt_comm_recv(!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i64
// CHECK:       func.func private @pipe_rt_comm_group_end(!llvm.ptr) -> i32
// CHECK:       func.func private @pipe_rt_act_wait(!llvm.ptr, i64) -> i32

// Device 1: the forward of micro-batch 0 is recomputed later, so it keeps
// only the stage's inputs (keep = 0); micro-batch 1's keeps everything. Its
// peer is device 0; after the backward of mb 0 it sends the gradient and
// receives the next activation in one group.
// CHECK-LABEL: func.func @pipe_device_0_1(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[N32:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:         %[[COMM:.*]] = call @pipe_rt_comm_of(%[[CTX]])
// CHECK:         call @pipe_rt_comm_recv_buffer(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[ZERO]], %{{.*}})
// CHECK:         %[[R0:.*]] = call @pipe_rt_comm_recv(%[[COMM]], %{{.*}}, %[[N32]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[R0]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_recompute(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]])
// CHECK:         call @pipe_rt_comm_group_start(%[[COMM]])
// CHECK:         call @pipe_rt_comm_send_buffer(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %{{.*}})
// CHECK:         %[[S0:.*]] = call @pipe_rt_comm_send(%[[COMM]], %{{.*}}, %[[N32]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_comm_recv_buffer(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ONE]], %[[ZERO]], %{{.*}})
// CHECK:         %[[R1:.*]] = call @pipe_rt_comm_recv(%[[COMM]], %{{.*}}, %[[N32]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_comm_group_end(%[[COMM]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[R1]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ONE]], %[[ZERO]])
// CHECK-NOT:     call @pipe_rt_act_recompute
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ZERO]])
// CHECK:         call @pipe_rt_comm_send_buffer(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ONE]], %[[ZERO]], %{{.*}})
// CHECK:         %[[S1:.*]] = call @pipe_rt_comm_send(%[[COMM]], %{{.*}}, %[[N32]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[S0]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[S1]])
// CHECK:         call @pipe_rt_act_update(%[[CTX]], %[[ONE]], %[[ZERO]])
// CHECK:         return
// CHECK:       func.func private @pipe_rt_act_recompute(!llvm.ptr, i32, i32, i32, i32) -> i32

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

// Read by no run: dropped.
pipe.block @unused (%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
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

pipe.placement @two graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1", "head"]
}

pipe.schedule @onefoneb placement @two kind "1f1b" microbatches 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.forward @s0 mb 1
    %a1 = pipe.send activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    %g0 = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g0
    pipe.backward @s0 mb 0
    %g1 = pipe.recv gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g1
    pipe.backward.input @s0 mb 1
    pipe.backward.weight @s0 mb 1
    pipe.wait %a0, %a1
    pipe.update @s0
  }
  pipe.device 1 {
    %r0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r0
    pipe.forward @s1 mb 0
    pipe.recompute @s1 mb 0
    pipe.backward @s1 mb 0
    %g0 = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    %r1 = pipe.recv activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %r1
    pipe.forward @s1 mb 1
    pipe.backward @s1 mb 1
    %g1 = pipe.send gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g0, %g1
    pipe.update @s1
  }
}

// -----

// Split 2: layer-to-layer on one device, the constant-memory variant as
// --pipe-schedule="kind=l2l constant-memory=true" writes it: parameters
// loaded from and pushed to the parameter server, boundary activations
// offloaded and prefetched, every forward recomputed before its backward.

// MAN:      pipe-program 5
// MAN:      stage 0 s0 0 1 0
// MAN-NEXT: stage 1 s1 0 1 1
// MAN-NEXT: stage 2 s2 0 1 2
// MAN-NEXT: edge 0 1 1 2
// MAN-NEXT: edge 1 2 1 4
// MAN-NEXT: schedule 0 l2l l2l 1 2 1 0
// MAN-NEXT: peer_order 0
// MAN-NEXT: device 0 0 0 pipe_device_0_0
// MAN-NEXT: owns 0 0 1 0
// MAN-NEXT: owns 0 1 1 1
// MAN-NEXT: owns 0 2 1 2
// MAN-NEXT: ps 0 0
// MAN-NEXT: ps 0 1
// MAN-NEXT: ps 0 2
// MAN-NEXT: end

// CHECK-LABEL: func.func @pipe_device_0_0(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i32
// ps.load(stage, step, version) returns a token; -1: the latest weights.
// The first load names weight version 0; the others the latest (-1).
// CHECK:         %[[L0:.*]] = call @pipe_rt_act_ps_load(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ZERO]]) : (!llvm.ptr, i32, i32, i32) -> i64
// CHECK:         %[[L1:.*]] = call @pipe_rt_act_ps_load(%[[CTX]], %[[ONE]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[L0]])
// Every forward here is recomputed later: keep = 0.
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// offload(stage, mb, step)
// CHECK:         %[[O0:.*]] = call @pipe_rt_act_offload(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ZERO]]) : (!llvm.ptr, i32, i32, i32) -> i64
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ZERO]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         %[[O1:.*]] = call @pipe_rt_act_offload(%[[CTX]], %[[ZERO]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_ps_release(%[[CTX]], %[[ZERO]], %[[ZERO]]) : (!llvm.ptr, i32, i32) -> i32
// CHECK:         %[[L2:.*]] = call @pipe_rt_act_ps_load(%[[CTX]], %[[TWO]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[L1]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_offload(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_offload(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_ps_release(%[[CTX]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[O0]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[O1]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[L2]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[TWO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         %[[B1:.*]] = call @pipe_rt_act_ps_load(%[[CTX]], %[[ONE]], %[[ZERO]], %[[M1]])
// prefetch(stage, mb, step)
// CHECK:         %[[P0:.*]] = call @pipe_rt_act_prefetch(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]]) : (!llvm.ptr, i32, i32, i32) -> i64
// CHECK:         %[[P1:.*]] = call @pipe_rt_act_prefetch(%[[CTX]], %[[ONE]], %[[ONE]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_recompute(%[[CTX]], %[[TWO]], %[[ZERO]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[TWO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_recompute(%[[CTX]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[M1]], %[[ZERO]])
// ps.push / ps.update(stage, step) return tokens.
// CHECK:         %[[PUSH2:.*]] = call @pipe_rt_act_ps_push(%[[CTX]], %[[TWO]], %[[ZERO]]) : (!llvm.ptr, i32, i32) -> i64
// CHECK:         %[[UPD2:.*]] = call @pipe_rt_act_ps_update(%[[CTX]], %[[TWO]], %[[ZERO]]) : (!llvm.ptr, i32, i32) -> i64
// CHECK:         call @pipe_rt_act_ps_release(%[[CTX]], %[[TWO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_ps_load(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[B1]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[P0]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[P1]])
// CHECK:         call @pipe_rt_act_recompute(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[M1]])
// CHECK:         call @pipe_rt_act_ps_push(%[[CTX]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_ps_update(%[[CTX]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_ps_release(%[[CTX]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[PUSH2]])
// CHECK-NEXT:    arith.cmpi
// CHECK-NEXT:    cf.cond_br
// CHECK-NEXT:  ^bb{{[0-9]+}}:
// CHECK-NEXT:    call @pipe_rt_act_wait(%[[CTX]], %[[UPD2]])
// CHECK:         return
// CHECK-NOT:   @pipe_device_0_1

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

pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
  pipe.stage @s2 device 0 blocks ["head"]
}
pipe.schedule @l2l placement @one kind "l2l" microbatches 2 {
  pipe.device 0 {
    %0 = pipe.ps.load @s0 version 0
    %1 = pipe.ps.load @s1
    pipe.wait %0
    pipe.forward @s0 mb 0
    %2 = pipe.offload @s0 mb 0
    pipe.forward @s0 mb 1
    %3 = pipe.offload @s0 mb 1
    pipe.ps.release @s0
    %4 = pipe.ps.load @s2
    pipe.wait %1
    pipe.forward @s1 mb 0
    %5 = pipe.offload @s1 mb 0
    pipe.forward @s1 mb 1
    %6 = pipe.offload @s1 mb 1
    pipe.ps.release @s1
    pipe.wait %2, %3
    pipe.wait %4
    pipe.forward @s2 mb 0
    pipe.forward @s2 mb 1
    pipe.wait %5, %6
    %7 = pipe.ps.load @s1
    %8 = pipe.prefetch @s1 mb 0
    %9 = pipe.prefetch @s1 mb 1
    pipe.recompute @s2 mb 0
    pipe.backward @s2 mb 0
    pipe.recompute @s2 mb 1
    pipe.backward @s2 mb 1
    %10 = pipe.ps.push @s2
    %11 = pipe.ps.update @s2
    pipe.ps.release @s2
    %12 = pipe.ps.load @s0
    %13 = pipe.prefetch @s0 mb 0
    %14 = pipe.prefetch @s0 mb 1
    pipe.wait %7
    pipe.wait %8, %9
    pipe.recompute @s1 mb 0
    pipe.backward @s1 mb 0
    pipe.recompute @s1 mb 1
    pipe.backward @s1 mb 1
    %15 = pipe.ps.push @s1
    %16 = pipe.ps.update @s1
    pipe.ps.release @s1
    pipe.wait %12
    pipe.wait %13, %14
    pipe.recompute @s0 mb 0
    pipe.backward @s0 mb 0
    pipe.recompute @s0 mb 1
    pipe.backward @s0 mb 1
    %17 = pipe.ps.push @s0
    %18 = pipe.ps.update @s0
    pipe.ps.release @s0
    pipe.wait %10, %11, %15, %16, %17, %18
  }
}

// -----

// Split 3: @w0 is read by the first and the last run (tied), both on device
// 0, whose stages s0 and s2 are not adjacent. The last stage to update it
// (s2) owns its update; pipe.reduce_grad names the param id. A second,
// forward-only schedule on the same placement keeps nothing.

// MAN:      pipe-program 5
// MAN-NEXT: type 0 f32 2 8 8
// MAN-NEXT: type 1 f32 2 4 8
// MAN-NEXT: type 2 f32 0
// MAN-NEXT: param 0 w0 0 1
// MAN-NEXT: param 1 w1 0 1
// MAN-NOT:  param
// MAN:      run 2 head 4 5 6 1 1 0 2 4 1 1 6 2 0 1 1 0 1 0
// MAN-NEXT: fused 0 3
// MAN-NEXT: fused 1 3
// MAN-NEXT: fused 2 7
// MAN-NEXT: stage 0 s0 0 1 0
// MAN-NEXT: stage 1 s1 1 1 1
// MAN-NEXT: stage 2 s2 0 1 2
// MAN-NEXT: edge 0 1 1 2
// MAN-NEXT: edge 1 2 1 4
// MAN-NEXT: schedule 0 vee_gpipe gpipe 2 1 1 0
// MAN-NEXT: peer_order 0
// MAN-NEXT: device 0 0 0 pipe_device_0_0
// MAN-NEXT: device 0 1 0 pipe_device_0_1
// MAN-NEXT: owns 0 2 1 0
// MAN-NEXT: owns 0 1 1 1
// MAN-NEXT: schedule 1 vee_eval gpipe 2 1 1 1
// MAN-NEXT: peer_order 1
// MAN-NEXT: device 1 0 0 pipe_device_1_0
// MAN-NEXT: device 1 1 0 pipe_device_1_1
// MAN-NEXT: end

// MEM: device 0 0 1048576 pipe_device_0_0
// MEM: device 0 1 1048576 pipe_device_0_1

// MODEL: device 0 0 11000000000 pipe_device_0_0
// MODEL: device 0 1 11000000000 pipe_device_0_1

// NOMODEL: error: 'pipe.schedule' op device-model: {{.*}}missing.json

// CHECK-LABEL: func.func @pipe_device_0_0(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[N64:.*]] = arith.constant 64 : i64
// CHECK:         %[[COMM:.*]] = call @pipe_rt_comm_of(%[[CTX]])
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.alloca
// reduce_grad(param 0, step 0): the gradient's buffer, then its all-reduce
// of the 8x8 f32 param (64 elements of PIPE_RT_DTYPE_F32 = 1).
// CHECK:         %[[Q:.*]] = call @pipe_rt_comm_grad_buffer(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[SLOT]]) : (!llvm.ptr, i32, i32, !llvm.ptr) -> i32
// CHECK-NEXT:    arith.cmpi ne, %[[Q]]
// CHECK-NEXT:    cf.cond_br
// CHECK:         %[[G:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[R:.*]] = call @pipe_rt_comm_allreduce(%[[COMM]], %[[G]], %[[N64]], %[[ONE]]) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
// CHECK-NEXT:    arith.cmpi ne, %[[R]]
// CHECK-NEXT:    cf.cond_br
// CHECK:         call @pipe_rt_act_update(%[[CTX]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_update(%[[CTX]], %[[TWO]], %[[ZERO]])
// CHECK-LABEL: func.func @pipe_device_0_1(
// CHECK-NOT:     reduce_grad
// CHECK:         call @pipe_rt_act_update
// Forward-only: every forward keeps nothing.
// CHECK-LABEL: func.func @pipe_device_1_0(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i32
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[TWO]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])
// CHECK-NOT:     call @pipe_rt_act_backward
// CHECK-LABEL: func.func @pipe_device_1_1(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:         call @pipe_rt_act_forward(%[[CTX]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[M1]], %[[ZERO]], %[[ZERO]])

pipe.param @w0 : tensor<8x8xf32> = dense<0.125>
pipe.param @w1 : tensor<8x8xf32> = dense<0.25>

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
  %loss = pipe.run "head" @mse_head(%h1, %y) params [@w0]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

pipe.placement @vee graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1"]
  pipe.stage @s2 device 0 blocks ["head"]
}

pipe.schedule @vee_gpipe placement @vee kind "gpipe" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    %1 = pipe.recv activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %1
    pipe.forward @s2 mb 0
    pipe.backward @s2 mb 0
    %2 = pipe.send gradient @s2 -> @s1 mb 0 payload [tensor<4x8xf32>]
    %3 = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %3
    pipe.backward @s0 mb 0
    pipe.wait %0, %2
    pipe.reduce_grad @w0
    pipe.update @s0
    pipe.update @s2
  }
  pipe.device 1 {
    %0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %0
    pipe.forward @s1 mb 0
    %1 = pipe.send activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
    %2 = pipe.recv gradient @s2 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %2
    pipe.backward @s1 mb 0
    %3 = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %1, %3
    pipe.update @s1
  }
}

pipe.schedule @vee_eval placement @vee kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    %1 = pipe.recv activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %1
    pipe.forward @s2 mb 0
    pipe.wait %0
  }
  pipe.device 1 {
    %0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %0
    pipe.forward @s1 mb 0
    %1 = pipe.send activation @s1 -> @s2 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %1
  }
}
