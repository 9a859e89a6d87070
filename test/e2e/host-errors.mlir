// Bad input to the host back end's tools: every case exits non-zero with a
// message naming the file, symbol, tensor or location at fault.
//
// RUN: rm -rf %t && mkdir -p %t
//
// pipe-compile on a module without a schedule: a located diagnostic (at the
// graph, not the whole module printed), and no artifact or weights written.
// RUN: not pipe-compile %s -o %t/none.so --weights %t/none.safetensors 2>&1 | FileCheck %s --check-prefix=NOSCHED
// RUN: test ! -e %t/none.so && test ! -e %t/none.safetensors
// RUN: not pipe-compile %t/missing.mlir -o %t/none.so 2>&1 | FileCheck %s --check-prefix=NOFILE
//
// A good program for the runner cases.
// RUN: pipe-opt %s --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" -o %t/ok.mlir
// RUN: pipe-compile %t/ok.mlir -o %t/ok.so --weights %t/w.safetensors -O 0
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:F32:2x4x8:13:0.5 input1:F32:2x4x8:11:0.5
// RUN: pipe-runner %t/ok.so --weights %t/w.safetensors --data %t/data.safetensors | FileCheck %s --check-prefix=OK
//
// Artifacts: another ABI version; a library that is no pipe program; a
// manifest the runtime cannot parse; a manifest of an older format.
// RUN: cc -shared -fPIC -o %t/abi999.so %S/Inputs/abi999.c
// RUN: not pipe-runner %t/abi999.so --weights %t/w.safetensors --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=ABI
// RUN: cc -shared -fPIC -x c /dev/null -o %t/empty.so
// RUN: not pipe-runner %t/empty.so --weights %t/w.safetensors --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=NOTPROG
// RUN: cc -shared -fPIC -o %t/bad-manifest.so %S/Inputs/bad-manifest.c
// RUN: not pipe-runner %t/bad-manifest.so --weights %t/w.safetensors --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=MANIFEST
// RUN: cc -shared -fPIC -o %t/manifest-v1.so %S/Inputs/manifest-v1.c
// RUN: not pipe-runner %t/manifest-v1.so --weights %t/w.safetensors --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=OLDFORMAT
//
// Weights: a missing file; a file without the program's params.
// RUN: not pipe-runner %t/ok.so --weights %t/missing.safetensors --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=NOWEIGHTS
// RUN: not pipe-runner %t/ok.so --weights %t/data.safetensors --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=WRONGWEIGHTS
//
// Data: an input of the wrong shape; an input missing; no such file.
// RUN: %python %S/Inputs/make-data.py %t/shape.safetensors input0:F32:2x4x9:13 input1:F32:2x4x8:11
// RUN: not pipe-runner %t/ok.so --weights %t/w.safetensors --data %t/shape.safetensors 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: %python %S/Inputs/make-data.py %t/one.safetensors input0:F32:2x4x8:13
// RUN: not pipe-runner %t/ok.so --weights %t/w.safetensors --data %t/one.safetensors 2>&1 | FileCheck %s --check-prefix=MISSINGINPUT
// RUN: not pipe-runner %t/ok.so --weights %t/w.safetensors --data %t/nodata.safetensors 2>&1 | FileCheck %s --check-prefix=NODATA
// RUN: not pipe-runner %t/ok.so --weights %t/w.safetensors --data %t/data.safetensors --schedule nope 2>&1 | FileCheck %s --check-prefix=NOSCHEDULE

// NOFILE: missing.mlir: error: cannot open: No such file or directory
// OK: step 1/1 loss
// ABI: pipe-runner: {{.*}}abi999.so: compiled for runtime ABI 999, this runner is 4
// NOTPROG: pipe-runner: {{.*}}empty.so: missing symbol pipe_program_abi_version (not a compiled pipe program?)
// MANIFEST: pipe-runner: {{.*}}bad-manifest.so: manifest line 2: missing dimension
// OLDFORMAT: pipe-runner: {{.*}}manifest-v1.so: manifest line 1: format version 1 is older than this runtime's version 5: recompile the program with this release's pipe-compile (or pipe-train)
// NOWEIGHTS: pipe-runner: {{.*}}ok.so: {{.*}}missing.safetensors: cannot open: No such file or directory
// WRONGWEIGHTS: pipe-runner: {{.*}}ok.so: {{.*}}data.safetensors: no tensor 'w0' (param of the program)
// SHAPE: pipe-runner: {{.*}}shape.safetensors: tensor 'input0' is F32 [2, 4, 9], input 0 of the program needs F32 [N, 4, 8] (N >= 1 micro-batches) or [S, 8] (S >= 4 samples)
// MISSINGINPUT: pipe-runner: {{.*}}one.safetensors: no tensor 'input1'
// NODATA: pipe-runner: {{.*}}nodata.safetensors: cannot open: No such file or directory
// NOSCHEDULE: pipe-runner: no schedule 'nope'; the program has: model_placement_1f1b (1f1b)

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

// NOSCHED: host-errors.mlir:[[@LINE+2]]:1: error: --pipe-lower-to-host needs a pipe.schedule; run --pipe-schedule first
// NOSCHED-NOT: see current operation
pipe.graph @model(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %h0 = pipe.run "l0" @linear_relu(%x) params [@w0]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @linear_relu(%h0) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = pipe.run "head" @mse_head(%h1, %y) params [@w2]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

