// --fit-reference scales the rates fitted on the op-level blocks to the
// measured times of the layer-level blocks, profiled in the same run; the
// device model's notes give both granularities and each phase's factor.
// As in fit-device-model.mlir, whether the tiny GPT's parts resolve both
// rates depends on the machine's load: either the model says how it was
// scaled, or the run names the rate it cannot fit.
// RUN: pipe-gen --model=tiny-gpt > %t.model.mlir
// RUN: if pipe-profile %t.model.mlir --granularity op --repeats 2 --warmup 1 -o %t.table.json --fit-device-model %t.device.json 2> %t.err; then \
// RUN:   FileCheck %s --check-prefix=SCALED --input-file %t.device.json; \
// RUN: else \
// RUN:   FileCheck %s --check-prefix=UNRESOLVED --input-file %t.err; \
// RUN: fi
// RUN: not pipe-profile %t.model.mlir --fit-reference block 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pipe-profile %t.model.mlir --fit-reference 2>&1 | FileCheck %s --check-prefix=MISSING

// SCALED: "notes": "{{.*}} of the op-level blocks, divided by {{[0-9]+\.[0-9]+}} (forward) and {{[0-9]+\.[0-9]+}} (backward) so that the layer-level blocks' summed times are met;

// UNRESOLVED: pipe-profile: cannot fit the {{peak FLOP rate|memory bandwidth}}{{.*}}: {{.*}}; profile a larger model or more blocks

// BAD: pipe-profile: --fit-reference wants op, layer or coarse, got 'block'
// MISSING: pipe-profile: --fit-reference needs a value
