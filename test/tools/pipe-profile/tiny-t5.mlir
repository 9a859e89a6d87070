// The tiny T5 (encoder, decoder and the cross-attention between them):
// one table entry per distinct block, each with the parts that ran;
// measured while a co-runner keeps the other core busy.
// RUN: pipe-profile --preset tiny-t5 --repeats 1 --warmup 0 --co-runners 2 -o %t.table.json
// RUN: FileCheck %s --input-file %t.table.json
// RUN: not pipe-profile --preset no-such-model 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: not pipe-profile --repeats 0 2>&1 | FileCheck %s --check-prefix=REPEATS
// RUN: not pipe-profile --co-runners 0 2>&1 | FileCheck %s --check-prefix=CORUNNERS
//
// --microbatches M runs M micro-batches through the blocks per run (more
// activations live, as in a pipeline stage with M in flight); every part
// still has its time.
// RUN: pipe-profile --preset tiny-t5 --repeats 1 --warmup 0 --microbatches 3 -o %t.mb3.json
// RUN: FileCheck %s --check-prefix=MB3 --input-file %t.mb3.json
// RUN: not pipe-profile --microbatches 0 2>&1 | FileCheck %s --check-prefix=BADMB
// MB3: "backward_input_ms": {{[0-9.]*[1-9]}}
// MB3: "forward_ms": {{[0-9.]*[1-9]}}
// MB3: "name": "epilogue",
// MB3: "microbatches": 3,
// BADMB: pipe-profile: --microbatches wants an integer in [1, 1024], got '0'

// CHECK: "blocks": [
// CHECK: "name": "prologue",
// CHECK: "backward_input_ms":
// CHECK: "hash": "{{[0-9a-f]+}}",
// CHECK: "name": "layer",
// CHECK: "name": "middle0",
// CHECK: "name": "layer_1",
// CHECK: "name": "epilogue",
// CHECK: "co_runners": 2,
// CHECK: "format": "pipe-profile-1",
// CHECK: "model": "preset:tiny-t5",

// PRESET: pipe-profile: unknown preset 'no-such-model'
// REPEATS: pipe-profile: --repeats wants an integer in [1, 10000], got '0'
// CORUNNERS: pipe-profile: --co-runners wants an integer in [1, 1024], got '0'
