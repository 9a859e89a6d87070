// The main job's compile chain on tiny models: generate, check, lift, form
// layer blocks, cost, partition, schedule, verify and simulate. T5's decoder
// layers all read the encoder output, so its block graph is not a chain.
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs "--pipe-partition=devices=2 device-model=rtx2080ti-x8 schedule=1f1b microbatches=4 text-report=/dev/null" "--pipe-schedule=kind=1f1b microbatches=4 device-model=rtx2080ti-x8" --pipe-verify-schedule=device-model=rtx2080ti-x8 "--pipe-simulate=device-model=rtx2080ti-x8 report=%t.gpt.json" --pipe-print-summary -o /dev/null | FileCheck %s --check-prefix=GPT
// RUN: pipe-gen --model=tiny-t5 | pipe-opt --pipe-check-input --pipe-lift-params --pipe-form-blocks=granularity=op --pipe-annotate-costs "--pipe-place=devices=2" "--pipe-schedule=kind=gpipe microbatches=4" --pipe-verify-schedule --pipe-simulate --pipe-print-summary -o /dev/null | FileCheck %s --check-prefix=T5

// GPT: blocks: 3
// GPT: placement @forward_{{.*}} of graph @forward: 2 devices
// GPT: schedule @{{.*}}: kind 1f1b, 4 micro-batches, 1 step(s)

// T5: placement @{{.*}} of graph @forward: 2 devices
// T5: schedule @{{.*}}: kind gpipe, 4 micro-batches, 1 step(s)
// T5-NEXT: device 0: {{[0-9]+}} actions (forward 4
// T5-NEXT: device 1: {{[0-9]+}} actions
