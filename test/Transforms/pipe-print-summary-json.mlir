// pipe-print-summary's JSON (docs/summary-json.md): the worked example's
// graph, placement and schedule, and the costs of formed blocks.
// RUN: pipe-opt %pipe_src_root/examples/mixed-pipe-gpipe.mlir "--pipe-print-summary=format=json" -o /dev/null | FileCheck %s
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-ingest "--pipe-print-summary=format=json output=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=COST < %t.json
// RUN: not pipe-opt %s "--pipe-print-summary=format=yaml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORMAT

// CHECK:      "version": 1,
// CHECK:      "parameters": {
// CHECK-NEXT:   "count": 4,
// CHECK-NEXT:   "elements": 256
// CHECK:      "blocks": [
// CHECK:        "name": "linear_relu",
// CHECK-NEXT:   "cost": null
// CHECK:      "graphs": [
// CHECK:        "name": "model",
// CHECK:        "type": "tensor<4x8xf32>",
// CHECK-NEXT:   "shape": [
// CHECK-NEXT:     4,
// CHECK-NEXT:     8
// CHECK-NEXT:   ],
// CHECK-NEXT:   "element_type": "f32"
// CHECK:        "instances": [
// CHECK:          "name": "l0",
// CHECK-NEXT:     "block": "linear_relu"
// CHECK:          "name": "head",
// CHECK-NEXT:     "block": "mse_head"
// CHECK:      "placements": [
// CHECK:        "name": "placed",
// CHECK-NEXT:   "graph": "model",
// CHECK-NEXT:   "devices": 2,
// CHECK:          "name": "s1",
// CHECK-NEXT:     "device": 1,
// CHECK-NEXT:     "blocks": [
// CHECK-NEXT:       "l1",
// CHECK-NEXT:       "l2"
// CHECK:        "stage_order": [
// CHECK-NEXT:     "s0",
// CHECK-NEXT:     "s1",
// CHECK-NEXT:     "s2"
// CHECK:      "schedules": [
// CHECK:        "name": "gpipe",
// CHECK-NEXT:   "placement": "placed",
// CHECK-NEXT:   "kind": "gpipe",
// CHECK-NEXT:   "microbatches": 2,
// CHECK-NEXT:   "steps": 1,
// CHECK-NEXT:   "forward_only": false,
// CHECK-NEXT:   "devices": [
// CHECK:          "device": 0,
// CHECK-NEXT:     "actions": 23,
// CHECK-NEXT:     "counts": {
// CHECK-NEXT:       "forward": 4,
// CHECK-NEXT:       "send": 4,
// CHECK-NEXT:       "recv": 4,
// CHECK-NEXT:       "wait": 5,
// CHECK-NEXT:       "backward": 4,
// CHECK-NEXT:       "update": 2
// CHECK:          "device": 1,
// CHECK-NEXT:     "actions": 18,

// COST:      "name": "prologue",
// COST-NEXT: "cost": {
// COST-NEXT:   "forward_flops": {{[1-9][0-9]*}},
// COST-NEXT:   "backward_input_flops":
// COST-NEXT:   "backward_weight_flops":
// COST-NEXT:   "param_bytes": {{[1-9][0-9]*}},
// COST-NEXT:   "saved_bytes":
// COST-NEXT:   "output_bytes":
// COST-NEXT:   "bytes_accessed": {{[1-9][0-9]*}},
// COST-NEXT:   "backward_flops": {{[0-9]+}},
// COST-NEXT:   "forward_time_ns": 0,
// COST-NEXT:   "backward_time_ns": 0,
// COST-NEXT:   "backward_input_time_ns": 0,
// COST-NEXT:   "backward_weight_time_ns": 0,
// COST-NEXT:   "update_time_ns": 0,
// COST-NEXT:   "forward_working_bytes": 0,
// COST-NEXT:   "recompute_working_bytes": 0,
// COST-NEXT:   "backward_working_bytes": 0,
// COST-NEXT:   "backward_input_working_bytes": 0,
// COST-NEXT:   "backward_weight_working_bytes": 0
// COST:      "placements": [],
// COST-NEXT: "schedules": []

// FORMAT: error: pipe-print-summary: format 'yaml' is neither 'text' nor 'json'
