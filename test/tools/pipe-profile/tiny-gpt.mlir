// pipe-profile measures every part of every block of the tiny GPT on the
// host runtime and writes the cost table of docs/profiler.md; the schema's
// keys are checked, not the timings; every part that allocates has a
// working memory. --pipe-annotate-costs then finds every
// block of the same model in the table by hash and shapes (no warning).
// fit-device-model.mlir tests --fit-device-model.
// RUN: pipe-gen --model=tiny-gpt > %t.model.mlir
// RUN: pipe-profile %t.model.mlir --repeats 2 --warmup 1 -o %t.table.json
// RUN: FileCheck %s --input-file %t.table.json
// The FLOPs of each part as it ran: the fused backward runs what the split
// parts share once, so it does no less than either and less than both.
// RUN: python3 -c "import json, sys; b = [b for b in json.load(open(sys.argv[1]))['blocks'] if b['name'] == 'layer'][0]; f, i, w = (b['backward_%%s_run_flops' %% p] for p in ('fused', 'input', 'weight')); print('run flops:', max(i, w) <= f < i + w)" %t.table.json | FileCheck %s --check-prefix=RUN-FLOPS
// RUN-FLOPS: run flops: True
// RUN: pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%t.table.json --pipe-differentiate --pipe-partition-and-schedule="partitioner=seq devices=2 device-model=h200 schedule=1f1b microbatches=2" --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=ANNOTATE

// CHECK: "blocks": [
// CHECK: "backward_fused_ms": {{[0-9.e-]+}},
// CHECK: "backward_fused_working_bytes": {{[1-9][0-9]*}},
// CHECK: "backward_input_flops": 1024,
// CHECK: "backward_input_ms":
// CHECK: "backward_ms":
// CHECK: "backward_weight_ms":
// CHECK: "backward_weight_working_bytes": {{[1-9][0-9]*}},
// CHECK: "forward_ms":
// CHECK: "forward_working_bytes": {{[1-9][0-9]*}},
// CHECK: "hash": "{{[0-9a-f]+}}",
// CHECK: "name": "prologue",
// CHECK: "recompute_ms":
// CHECK: "recompute_working_bytes": {{[1-9][0-9]*}},
// CHECK: "shapes": "(tensor<64x32xf32>, tensor<64x32xf32>, tensor<2x16xi64>) -> (tensor<2x16x32xf32>)",
// CHECK: "update_ms":
// CHECK: "instances": 2,
// CHECK: "name": "layer",
// CHECK: "name": "epilogue",
// CHECK: "date": "{{[0-9]+-[0-9]+-[0-9]+T}}
// CHECK: "format": "pipe-profile-1",
// CHECK: "machine": {
// CHECK-NEXT: "cores": {{[0-9]+}},
// CHECK-NEXT: "cpu": "{{.+}}"
// CHECK: "optimizer_params_per_second":
// CHECK: "repeats": 2,
// CHECK: "run_overhead_ms": {{[0-9.e-]+}},
// CHECK: "target": "host",
// CHECK: "transfers": {
// CHECK-NEXT: "d2h_bandwidth":
// CHECK-NEXT: "h2d_bandwidth":
// CHECK-NEXT: "link_bandwidth":
// CHECK-NEXT: "link_latency":
// CHECK: "warmup": 1

// ANNOTATE-NOT: warning
// ANNOTATE: 2 devices of h200 (f32)
// ANNOTATE-NOT: warning
