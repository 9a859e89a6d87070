// One case per verifier rule of the pipe dialect (PipeOps.cpp,
// StageGraph.cpp) and per ODS constraint a user can hit.
// RUN: pipe-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// pipe.param
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'pipe.param' op expects a statically shaped tensor type, got 'tensor<?x4xf32>'}}
pipe.param @w : tensor<?x4xf32>

// -----

// expected-error @+1 {{expects an integer or floating-point element type, got 'complex<f32>'}}
pipe.param @w : tensor<4xcomplex<f32>>

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of any type values}}
pipe.param @w : memref<4xf32>

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint}}
pipe.param @w : tensor<*xf32>

// -----

// expected-error @+1 {{has a size that overflows 64 bits: 'tensor<4611686018427387904x8xf32>'}}
pipe.param @w : tensor<4611686018427387904x8xf32>

// -----

// expected-error @+1 {{expects an initial value of its type 'tensor<4xf32>', got 'tensor<3xf32>'}}
"pipe.param"() <{sym_name = "w", type = tensor<4xf32>, initial_value = dense<0.0> : tensor<3xf32>}> : () -> ()

// -----

// expected-error @+1 {{expects an initial value of its type 'tensor<4xf32>', got 'tensor<4xf16>'}}
"pipe.param"() <{sym_name = "w", type = tensor<4xf32>, initial_value = dense<0.0> : tensor<4xf16>}> : () -> ()

// -----

// expected-error @+1 {{has a dense_resource blob of 8 bytes, but 'tensor<4xf32>' needs 16}}
pipe.param @r : tensor<4xf32> = dense_resource<short_blob>
{-#
  dialect_resources: {
    builtin: {
      short_blob: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// expected-error @+1 {{initializes from dense_resource blob 'missing_blob', which has no data (no dialect_resources entry)}}
pipe.param @r : tensor<4xf32> = dense_resource<missing_blob>

// -----

// expected-error @+1 {{has both an initial value and external storage}}
pipe.param @w : tensor<4xf32> = dense<0.0> external("w.safetensors", "w")

// -----

// expected-error @+1 {{has an external key but no external file}}
"pipe.param"() <{sym_name = "w", type = tensor<4xf32>, external_key = "w"}> : () -> ()

// -----

// expected-error @+1 {{has an external file but no external key}}
"pipe.param"() <{sym_name = "w", type = tensor<4xf32>, external_file = "w.safetensors"}> : () -> ()

// -----

// expected-error @+1 {{expects a non-empty external file name}}
pipe.param @w : tensor<4xf32> external("", "w")

// -----

// expected-error @+1 {{expects a non-empty external key}}
pipe.param @w : tensor<4xf32> external("w.safetensors", "")

// -----

// expected-note @+1 {{see existing symbol definition here}}
pipe.param @w : tensor<4xf32>
// expected-error @+1 {{redefinition of symbol named 'w'}}
pipe.param @w : tensor<4xf32>

//===----------------------------------------------------------------------===//
// pipe.get_param
//===----------------------------------------------------------------------===//

// -----

func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.get_param' op 'nowhere' does not reference a pipe.param}}
  %w = pipe.get_param @nowhere : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

pipe.param @w : tensor<4xf32>
func.func @f() -> tensor<8xf32> {
  // expected-error @+1 {{'pipe.get_param' op expects type 'tensor<4xf32>' of parameter @w, got 'tensor<8xf32>'}}
  %w = pipe.get_param @w : tensor<8xf32>
  return %w : tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// pipe.block and pipe.return
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'pipe.block' op expects statically shaped tensor parameters, got 'tensor<?xf32>'}}
pipe.block @b params(%w: tensor<?xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'pipe.block' op expects statically shaped tensor parameters, got 'f32'}}
pipe.block @b params(%w: f32) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'pipe.block' op declares 2 parameters but has only 1 arguments}}
"pipe.block"() <{sym_name = "b", function_type = (tensor<4xf32>) -> (), num_params = 2 : i64}> ({
^bb0(%w: tensor<4xf32>):
  pipe.return
}) : () -> ()

// -----

// expected-error @+1 {{'pipe.block' op attribute 'num_params' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
"pipe.block"() <{sym_name = "b", function_type = () -> (), num_params = -1 : i64}> ({
  pipe.return
}) : () -> ()

// -----

pipe.block @b (%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<0.0> : tensor<8xf32>
  // expected-error @+1 {{'pipe.return' op expects operands of types [tensor<4xf32>] to match the results of its parent, got [tensor<8xf32>]}}
  pipe.return %c : tensor<8xf32>
}

// -----

pipe.block @b (%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.return' op expects parent op 'func.func'}}
  func.return %x : tensor<4xf32>
}

// -----

func.func @f() {
  // expected-error @+1 {{'pipe.return' op expects parent op to be one of 'pipe.block, pipe.graph'}}
  pipe.return
}

// -----

// expected-error @+1 {{'pipe.block' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
"pipe.block"() <{sym_name = "b", function_type = () -> (), num_params = 0 : i64}> ({
}) : () -> ()

//===----------------------------------------------------------------------===//
// pipe.graph, pipe.run
//===----------------------------------------------------------------------===//

// -----

pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.addf' op is not allowed in a pipe.graph, which holds only pipe.run and pipe.return}}
  %y = arith.addf %x, %x : tensor<4xf32>
  pipe.return %y : tensor<4xf32>
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{first used here}}
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'pipe.run' op reuses instance name "a"}}
  %1 = pipe.run "a" @id(%0) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op expects a non-empty instance name}}
  %0 = pipe.run "" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op expects parent op 'pipe.graph'}}
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @id(tensor<4xf32>) -> tensor<4xf32>
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op 'id' does not reference a pipe.block}}
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op 'nowhere' does not reference a pipe.block}}
  %0 = pipe.run "a" @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op expects inputs of types [tensor<4xf32>] for @id, got [tensor<8xf32>]}}
  %0 = pipe.run "a" @id(%x) : (tensor<8xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'pipe.run' op expects results of types [tensor<4xf32>] from @id, got [tensor<4xf16>]}}
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf16>
  pipe.return %0 : tensor<4xf16>
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op binds 0 parameters, but @lin takes 1}}
  %0 = pipe.run "a" @lin(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op binds 2 parameters, but @lin takes 1}}
  %0 = pipe.run "a" @lin(%x) params [@w, @w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op 'gone' does not reference a pipe.param}}
  %0 = pipe.run "a" @lin(%x) params [@gone] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.param @w : tensor<8xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.run' op binds parameter @w of type 'tensor<8xf32>' to an argument of type 'tensor<4xf32>'}}
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}

// -----

pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.return' op expects operands of types [tensor<4xf32>] to match the results of its parent, got []}}
  pipe.return
}

//===----------------------------------------------------------------------===//
// pipe.placement, pipe.stage and the stage graph
//===----------------------------------------------------------------------===//

// -----

pipe.graph @g() {
  pipe.return
}
// expected-error @+1 {{'pipe.placement' op attribute 'devices' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.placement @p graph @g devices 0 {
}

// -----

// The counts a plan may ask for are bounded (PlanLimits.h): 4096 machine
// devices, replicas included.
pipe.graph @g() {
  pipe.return
}
// expected-error @+1 {{'pipe.placement' op has 2048 devices times 4 replicas, more than the 4096 machine devices a plan may use}}
pipe.placement @p graph @g devices 2048 replicas 4 {
}

// -----

pipe.graph @g() {
  pipe.return
}
// expected-error @+1 {{'pipe.placement' op has 4294967298 micro-batches, more than 65536}}
pipe.placement @p graph @g devices 1 microbatches 4294967298 {
}

// -----

// expected-error @+1 {{'pipe.placement' op 'g' does not reference a pipe.graph}}
pipe.placement @p graph @g devices 1 {
}

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 1 {
  // expected-error @+1 {{'pipe.param' op is not allowed in a pipe.placement, which holds only pipe.stage}}
  pipe.param @w : tensor<4xf32>
}

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 2 {
  // expected-error @+1 {{'pipe.stage' op is bound to device 2, but placement @p has 2 devices}}
  pipe.stage @s0 device 2 blocks ["a"]
}

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 2 {
  // expected-error @+1 {{'pipe.stage' op attribute 'device' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  pipe.stage @s0 device -1 blocks ["a"]
}

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 2 {
  // expected-error @+1 {{'pipe.stage' op expects at least one block instance}}
  pipe.stage @s0 device 0 blocks []
}

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 2 {
  // expected-error @+1 {{'pipe.stage' op lists block instance "a" twice}}
  pipe.stage @s0 device 0 blocks ["a", "a"]
}

// -----

// expected-error @+1 {{'pipe.stage' op expects parent op 'pipe.placement'}}
pipe.stage @s0 device 0 blocks ["a"]

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 2 {
  // expected-note @+1 {{see existing symbol definition here}}
  pipe.stage @s0 device 0 blocks ["a"]
  // expected-error @+1 {{redefinition of symbol named 's0'}}
  pipe.stage @s0 device 1 blocks ["b"]
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 {
  // expected-error @+1 {{'pipe.stage' op places block instance "zz", which graph @g does not have}}
  pipe.stage @s0 device 0 blocks ["a", "zz"]
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  // expected-note @+1 {{first placed here}}
  pipe.stage @s0 device 0 blocks ["a"]
  // expected-error @+1 {{'pipe.stage' op places block instance "a", which stage @s0 already places}}
  pipe.stage @s1 device 1 blocks ["a"]
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @id(%0) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
// expected-error @+1 {{'pipe.placement' op leaves block instance "b" of graph @g without a stage}}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @id(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @id(%1) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %2 : tensor<4xf32>
}
// Mixed-Pipe allows non-adjacent blocks in one stage, but "a" and "c" in
// @s0 with "b" in @s1 make data flow @s0 -> @s1 -> @s0.
// expected-error @+1 {{'pipe.placement' op has a cyclic stage graph: @s0 -> @s1 -> @s0; a pipeline needs an acyclic order of stages}}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a", "c"]
  pipe.stage @s1 device 1 blocks ["b"]
}

//===----------------------------------------------------------------------===//
// pipe.schedule and pipe.device
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'pipe.schedule' op attribute 'microbatches' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.schedule @s placement @p kind "gpipe" microbatches -2 {
}

// -----

// expected-error @+1 {{'pipe.schedule' op attribute 'microbatches' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.schedule @s placement @p kind "gpipe" microbatches 0 {
}

// -----

// expected-error @+1 {{'pipe.schedule' op attribute 'steps' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.schedule @s placement @p kind "gpipe" microbatches 1 steps 0 {
}

// -----

// A count beyond the bounds (once read as 32 bits: 2^32 + 2 passed as 2).
pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 1 {
}
// expected-error @+1 {{'pipe.schedule' op has 4294967298 micro-batches, more than 65536}}
pipe.schedule @s placement @p kind "gpipe" microbatches 4294967298 {
}

// -----

pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 1 {
}
// expected-error @+1 {{'pipe.schedule' op lists 4096 steps, more than 1024}}
pipe.schedule @s placement @p kind "pipedream-async" microbatches 1 steps 4096 {
}

// -----

// expected-error @+1 {{'pipe.schedule' op 'nowhere' does not reference a pipe.placement}}
pipe.schedule @s placement @nowhere kind "gpipe" microbatches 1 {
}

// -----

pipe.graph @g() {
  pipe.return
}
// expected-error @+1 {{'pipe.schedule' op 'g' does not reference a pipe.placement}}
pipe.schedule @s placement @g kind "gpipe" microbatches 1 {
}

// -----

// The schedule comes first, so its check of the placement's graph runs
// before the placement's own.
// expected-error @+1 {{'pipe.schedule' op uses placement @p, whose graph @gone is not a pipe.graph}}
pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
}
// expected-note @+1 {{placement defined here}}
pipe.placement @p graph @gone devices 1 {
}

// -----

pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}
// A schedule of an inconsistent placement reports the placement's error.
pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
}
pipe.placement @p graph @g devices 1 {
  // expected-error @+1 {{'pipe.stage' op places block instance "b", which graph @g does not have}}
  pipe.stage @s0 device 0 blocks ["a", "b"]
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  // expected-error @+1 {{'pipe.forward' op expects parent op 'pipe.device'}}
  pipe.forward @s0 mb 0
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  // expected-error @+1 {{'pipe.get_param' op is not allowed in a pipe.schedule, which holds only pipe.device}}
  %w = pipe.get_param @w : tensor<4xf32>
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  // expected-note @+1 {{first listed here}}
  pipe.device 0 {
  }
  // expected-error @+1 {{'pipe.device' op repeats device 0 of schedule @s}}
  pipe.device 0 {
  }
}

// -----

// expected-error @+1 {{'pipe.device' op expects parent op 'pipe.schedule'}}
pipe.device 0 {
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'arith.constant' op is not a schedule action; a pipe.device holds only ops that implement ActionOpInterface}}
    %c = arith.constant 0 : i32
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.ps.load' op produces a token that is never waited on}}
    %t = pipe.ps.load @s0
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.ps.load' op produces a token that is waited on more than once}}
    %t = pipe.ps.load @s0
    // expected-note @+1 {{waited on here}}
    pipe.wait %t
    // expected-note @+1 {{waited on here}}
    pipe.wait %t
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    %c = arith.constant 0 : i32
    // expected-error @+1 {{'pipe.wait' op operand #0 must be variadic of Completion token of an asynchronous action, but got 'i32'}}
    "pipe.wait"(%c) : (i32) -> ()
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.wait' op expects at least one token to wait on}}
    pipe.wait
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{operand #0 does not dominate this use}}
    pipe.wait %t
    // expected-note @+1 {{operand defined here}}
    %t = pipe.ps.load @s0
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.forward' op attribute 'microbatch' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    pipe.forward @s0 mb -1
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.backward' op attribute 'step' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    pipe.backward @s0 mb 0 step -1
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.recompute' op attribute 'version' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    pipe.recompute @s0 mb 0 version -3
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    // expected-error @+1 {{custom op 'pipe.send' expected string or keyword containing one of the following enum values for attribute 'kind' [activation, gradient]}}
    %t = pipe.send weights @s0 -> @s1 mb 0 payload [tensor<4xf32>]
  }
}

// -----

// The schedule tests below share this model: "a" on device 0 feeds "b" on
// device 1; "c" on device 1 reads only the graph input, so nothing flows
// between @s0 and @s2. @u is read on device 0 only, @w on device 1 only.
pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  // expected-error @+1 {{'pipe.device' op is device 2, but placement @p has only 2 devices}}
  pipe.device 2 {
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.forward' op names stage @s9, which placement @p does not have}}
    pipe.forward @s9 mb 0
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  // expected-note @+1 {{stage placed here}}
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 1 {
    // expected-error @+1 {{'pipe.backward.weight' op runs stage @s0 on device 1, but the stage is placed on device 0}}
    pipe.backward.weight @s0 mb 0
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  // expected-note @+1 {{stage placed here}}
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.recv' op runs stage @s1 on device 0, but the stage is placed on device 1}}
    %t = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.offload' op uses micro-batch 2, but schedule @s has 2 (0 to 1)}}
    %t = pipe.offload @s0 mb 2
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "pipedream" microbatches 2 steps 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.ps.update' op belongs to step 2, but schedule @s covers 2 (0 to 1)}}
    %t = pipe.ps.update @s0 step 2
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.send' op expects payload [tensor<4xf32>] (the values crossing from @s0 to @s1), got [tensor<4xbf16>]}}
    %t = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4xbf16>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.recv' op expects payload [tensor<4xf32>] (the values crossing from @s0 to @s1), got [tensor<4xf32>, tensor<4xf32>]}}
    %t = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4xf32>, tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-note @+1 {{the send is here}}
    %t = pipe.send activation @s0 -> @s1 mb 1 payload [tensor<4xf32>]
    pipe.wait %t
  }
  pipe.device 1 {
    // expected-error @+1 {{'pipe.recv' op expects payload [tensor<4xf16>] to match its send, got [tensor<4xf32>]}}
    %t = pipe.recv activation @s0 -> @s1 mb 1 payload [tensor<4xf16>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.send' op moves activations from @s0 to @s2, but no values flow from @s0 to @s2 in the graph}}
    %t = pipe.send activation @s0 -> @s2 mb 0 payload [tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // Gradients flow against the data: from the consumer @s1 back to @s0.
    // expected-error @+1 {{'pipe.send' op moves gradients from @s0 to @s1, but no values flow from @s1 to @s0 in the graph}}
    %t = pipe.send gradient @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.send' op expects different source and destination stages, got @s0 for both}}
    %t = pipe.send activation @s0 -> @s0 mb 0 payload [tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.send' op names stage @s7, which its placement does not have}}
    %t = pipe.send activation @s0 -> @s7 mb 0 payload [tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-note @+1 {{first listed here}}
    %t0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    // expected-error @+1 {{'pipe.send' op repeats the transfer activation @s0 -> @s1 mb 0 step 0; each (kind, source, destination, micro-batch, step) may be sent and received once}}
    %t1 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    pipe.wait %t0, %t1
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 steps 2 {
  pipe.device 1 {
    // The same transfer in another step is a different transfer.
    %t0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4xf32>]
    %t1 = pipe.recv activation @s0 -> @s1 mb 0 step 1 payload [tensor<4xf32>]
    // expected-note @+1 {{first listed here}}
    %t2 = pipe.recv gradient @s2 -> @s1 mb 0 payload [tensor<4xf32>]
    // expected-error @+1 {{'pipe.recv' op repeats the transfer gradient @s2 -> @s1 mb 0 step 0}}
    %t3 = pipe.recv gradient @s2 -> @s1 mb 0 step 0 payload [tensor<4xf32>]
    pipe.wait %t0, %t1, %t2, %t3
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_grad' op 'v' does not reference a pipe.param}}
    pipe.reduce_grad @v
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 1 {
    pipe.reduce_grad @w
  }
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_grad' op reduces the gradient of @w on device 0, where no stage reads it}}
    pipe.reduce_grad @w
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 1 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    // expected-error @+1 {{'pipe.backward.input' op is a training action, but schedule @s is forward_only}}
    pipe.backward.input @s0 mb 0
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 2 forward_only {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.send' op is a training action, but schedule @s is forward_only}}
    %t = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4xf32>]
    pipe.wait %t
  }
}

// -----

pipe.schedule @s placement @p kind "gpipe" microbatches 2 forward_only {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.ps.push' op is a training action, but schedule @s is forward_only}}
    %t = pipe.ps.push @s0
    pipe.wait %t
  }
}

//===----------------------------------------------------------------------===//
// #pipe.cost
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{struct is missing required parameter: backward_input_flops}}
pipe.block @b () attributes {cost = #pipe.cost<forward_flops = 1>} {
  pipe.return
}

// -----

// expected-error @+2 {{expected a non-negative integer, got -1}}
// expected-error @+1 {{failed to parse Pipe_CostAttr parameter 'forward_flops' which is to be a `uint64_t`}}
pipe.block @b () attributes {cost = #pipe.cost<forward_flops = -1, backward_input_flops = 0, backward_weight_flops = 0, param_bytes = 0, saved_bytes = 0, output_bytes = 0>} {
  pipe.return
}

// -----

// expected-error @+1 {{Invalid attribute `cost` in property conversion: 3 : i64}}
"pipe.block"() <{sym_name = "b", function_type = () -> (), num_params = 0 : i64, cost = 3 : i64}> ({
  pipe.return
}) : () -> ()

// -----

// expected-error @+2 {{integer 18446744073709551616 does not fit in 64 bits}}
// expected-error @+1 {{failed to parse Pipe_CostAttr parameter 'param_bytes'}}
pipe.block @b () attributes {cost = #pipe.cost<forward_flops = 1, backward_input_flops = 0, backward_weight_flops = 0, param_bytes = 18446744073709551616, saved_bytes = 0, output_bytes = 0>} {
  pipe.return
}

// -----

// expected-error @+2 {{expected a non-negative integer}}
// expected-error @+1 {{failed to parse Pipe_CostAttr parameter 'saved_bytes'}}
pipe.block @b () attributes {cost = #pipe.cost<forward_flops = 1, backward_input_flops = 0, backward_weight_flops = 0, param_bytes = 0, saved_bytes = many, output_bytes = 0>} {
  pipe.return
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 0 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_bucket' op sums gradients over the replicas, but placement @p has one replica; only a data-parallel placement (replicas > 1) has gradients to reduce}}
    %b = pipe.reduce_bucket [@u]
    pipe.wait %b
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 0 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_bucket' op has an empty bucket}}
    %b = pipe.reduce_bucket []
    pipe.wait %b
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 0 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_bucket' op 'v' does not reference a pipe.param}}
    %b = pipe.reduce_bucket [@u, @v]
    pipe.wait %b
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 0 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_bucket' op lists @u twice; a bucket holds each gradient once}}
    %b = pipe.reduce_bucket [@u, @u]
    pipe.wait %b
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 0 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 1 {
    // expected-error @+1 {{'pipe.reduce_bucket' op reduces the gradient of @u on device 1, where no stage reads it}}
    %b = pipe.reduce_bucket [@u]
    pipe.wait %b
  }
}

// -----

pipe.param @u : tensor<4xf32>
pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
  pipe.stage @s2 device 0 blocks ["c"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_bucket' op reduces the gradient of @w over the replicas only, but stages on devices 0, 1 read it; use pipe.reduce_grad for a parameter shared across devices}}
    %b = pipe.reduce_bucket [@w]
    pipe.wait %b
  }
}

// -----

pipe.param @u frozen : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@u] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 2 {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.reduce_bucket' op lists @u, which is frozen: it has no gradient to reduce}}
    %b = pipe.reduce_bucket [@u]
    pipe.wait %b
  }
}
