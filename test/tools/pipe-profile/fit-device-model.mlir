// --fit-device-model fits peak FLOP/s and memory bandwidth to the measured
// parts. The tiny GPT's parts are so small that per-call overhead dominates
// them, so whether its timings resolve both rates depends on the machine
// and its load: either the fitted model is one --device-model accepts, or
// the run fails naming the rate it cannot fit and writes no output (the
// files there before stay as they were). The fit's decisions themselves
// are unit-tested (test/unit/Analysis/DeviceModelFitTest.cpp).
// RUN: pipe-gen --model=tiny-gpt > %t.model.mlir
// RUN: echo before > %t.table.json && echo before > %t.device.json
// RUN: if pipe-profile %t.model.mlir --repeats 2 --warmup 1 -o %t.table.json --fit-device-model %t.device.json 2> %t.err; then \
// RUN:   FileCheck %s --check-prefix=DEVICE --input-file %t.device.json && \
// RUN:   pipe-opt %t.model.mlir --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%t.table.json --pipe-differentiate --pipe-partition-and-schedule="partitioner=seq devices=2 device-model=%t.device.json schedule=1f1b microbatches=2" --pipe-print-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=FITTED; \
// RUN: else \
// RUN:   FileCheck %s --check-prefix=UNRESOLVED --input-file %t.err && \
// RUN:   grep -qx before %t.table.json && grep -qx before %t.device.json; \
// RUN: fi

// DEVICE: "default_link": {
// DEVICE: "bandwidth":
// DEVICE: "memory_bandwidth":
// DEVICE: "peak_flops": {
// DEVICE-NEXT: "f32":
// DEVICE: "optimizer_params_per_second":
// DEVICE: "run_overhead":

// FITTED-NOT: warning
// FITTED: 2 devices of {{.*}}device.json (f32)
// FITTED-NOT: warning

// UNRESOLVED: pipe-profile: cannot fit the {{peak FLOP rate|memory bandwidth}}{{.*}}: {{.*}}; profile a larger model or more blocks
