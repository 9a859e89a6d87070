// A pipe-profile cost table (docs/profiler.md) sets the times of the blocks
// whose structural hash and shapes it lists; the others keep analytic
// times, and one warning counts them. The hand-made table makes the
// epilogue cost seconds and the layers milliseconds: the seq partitioner
// then gives the epilogue a device of its own, where analytic costs split
// the model between the layers.
// RUN: pipe-gen --model=tiny-gpt > %t.model.mlir
// RUN: pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs --pipe-differentiate --pipe-partition-and-schedule="partitioner=seq devices=2 device-model=rtx2080ti-x8 schedule=1f1b microbatches=4" --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=ANALYTIC
// RUN: pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-slow-layers.json --pipe-differentiate --pipe-partition-and-schedule="partitioner=seq devices=2 device-model=rtx2080ti-x8 schedule=1f1b microbatches=4" --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEASURED
// RUN: pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-slow-layers.json | FileCheck %s --check-prefix=COST
// The key is structural: a renamed block still finds its entry.
// RUN: pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer -o %t.blocks.mlir
// RUN: sed -e 's/@layer /@renamed_block /; s/@layer(/@renamed_block(/g' %t.blocks.mlir > %t.renamed.mlir
// RUN: pipe-opt %t.renamed.mlir --pipe-annotate-costs=profile=%S/Inputs/profile-table-slow-layers.json | FileCheck %s --check-prefix=RENAMED
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-malformed.json 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-missing-field.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-no-hash.json 2>&1 | FileCheck %s --check-prefix=NOHASH
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-bad-format.json 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-bad-working-bytes.json 2>&1 | FileCheck %s --check-prefix=WORKING
// Times beyond 1e6 s (they saturated forward_time_ns at 2^64-1 and gave
// reports of 9e10 s) and two entries for one block (the last won) are errors.
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-huge-time.json 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/profile-table-duplicate.json 2>&1 | FileCheck %s --check-prefix=DUPLICATE

// ANALYTIC-NOT: warning
// ANALYTIC: stages: 2
// ANALYTIC: device 0: @s0 [prologue, layer0]
// ANALYTIC: device 1: @s1 [layer1, epilogue]

// MEASURED: warning: pipe-annotate-costs: {{.*}}profile-table-slow-layers.json: 1 of 3 block(s) have no entry with their hash and shapes; their times are analytic
// MEASURED-NOT: warning
// MEASURED: stages: 2
// MEASURED: device 0: @s0 [prologue, layer0, layer1]
// MEASURED: device 1: @s1 [epilogue]

// COST: pipe.block @prologue{{.*}} output_bytes = {{[0-9]+}}, bytes_accessed = {{[0-9]+}}>}
// COST-LABEL: pipe.block @layer
// COST-SAME: forward_time_ns = 1000000, backward_time_ns = 2000000, backward_input_time_ns = 1500000, backward_weight_time_ns = 1250000, update_time_ns = 250000, forward_working_bytes = 123456, backward_working_bytes = 234567>
// COST-LABEL: pipe.block @epilogue
// COST-SAME: forward_time_ns = 500000000, backward_time_ns = 1000000000>

// RENAMED: pipe.block @renamed_block{{.*}}forward_time_ns = 1000000, backward_time_ns = 2000000

// MALFORMED: error: pipe-annotate-costs: {{.*}}profile-table-malformed.json: invalid JSON
// MISSING: error: pipe-annotate-costs: {{.*}}profile-table-missing-field.json: missing field 'blocks[1].backward_ms'
// NOHASH: error: pipe-annotate-costs: {{.*}}profile-table-no-hash.json: missing or non-string field 'blocks[0].hash'
// FORMAT: error: pipe-annotate-costs: {{.*}}profile-table-bad-format.json: field 'format' must be "pipe-profile-1"
// WORKING: error: pipe-annotate-costs: {{.*}}profile-table-bad-working-bytes.json: field 'blocks[1].forward_working_bytes' must be a non-negative integer number of bytes

// HUGE: profile-table-huge-time.json: field 'blocks[1].forward_ms' must be a number of milliseconds in [0, 1e9]
// DUPLICATE: profile-table-duplicate.json: 'blocks[2]' has the hash and shapes of 'blocks[1]': one entry per block
