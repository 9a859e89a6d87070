// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-partition="devices=2 text-report=" -o /dev/null
// RUN: not pipe-opt %s -split-input-file --pipe-partition="algorithm=nope text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALGO
// RUN: not pipe-opt %s -split-input-file --pipe-partition="schedule=zigzag text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCHED
// RUN: not pipe-opt %s -split-input-file --pipe-partition="device-model=/nonexistent.json text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODEL
// Counts and sizes out of range are errors naming the option, before any
// work (65536 devices once overflowed a 32-bit index and corrupted the heap).
// RUN: not pipe-opt %s -split-input-file --pipe-partition="devices=65536 text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEVICES
// RUN: not pipe-opt %s -split-input-file --pipe-place="devices=2 replicas=65536" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPLICAS
// RUN: not pipe-opt %s -split-input-file --pipe-partition="devices=2 microbatches=4294967295 text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not pipe-opt %s -split-input-file --pipe-partition="devices=2 memory-gib=1e999 text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEMORY
// RUN: not pipe-opt %s -split-input-file --pipe-partition="devices=2 memory-gib=nan text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEMORY-NAN
// RUN: not pipe-opt %s -split-input-file --pipe-partition="devices=2 reserve-mib=-5 text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RESERVE
// RUN: not pipe-opt %s -split-input-file --pipe-partition="devices=2 dtype=bogus text-report=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DTYPE

// ALGO: pipe-partition: unknown algorithm 'nope' (known: balanced, exact, mixed, seq)
// SCHED: pipe-partition: unknown schedule 'zigzag' (known: 1f1b, gpipe, interleaved-1f1b, l2l, looped-bfs, mixed, pipedream-async, zb-h1)
// MODEL: pipe-partition: device model '/nonexistent.json'
// DEVICES: pipe-partition: devices=65536 times replicas=1 is more than the 4096 machine devices a plan may use
// REPLICAS: pipe-place: devices=2 times replicas=65536 is more than the 4096 machine devices a plan may use
// MICRO: pipe-partition: microbatches=4294967295 is more than 65536
// MEMORY: pipe-partition: memory-gib=inf is not a number of GiB in [0, 1.67772e+07]
// MEMORY-NAN: pipe-partition: memory-gib=nan is not a number of GiB
// RESERVE: pipe-partition: reserve-mib=-5 is not a number of MiB in [0, 1.71799e+10]
// DTYPE: pipe-partition: dtype 'bogus' is not one of f64, f32, tf32, bf16, f16, f8, i8
// A pass's error about the whole module does not print the module after it.
// DTYPE-NOT: see current operation

pipe.param @w : tensor<8x8xf32>

pipe.block @nocost params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}

pipe.graph @g(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'pipe.run' op runs block @nocost, which has no #pipe.cost; run --pipe-annotate-costs first}}
  %a = pipe.run "a" @nocost(%x) params [@w] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %a : tensor<4x8xf32>
}

// -----

// A 4 GiB parameter with AdamW needs 16 GiB on its device; an RTX 2080 Ti
// has 11 GB.
pipe.param @big : tensor<32768x32768xf32>

pipe.block @b params(%w: tensor<32768x32768xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 100, backward_input_flops = 100,
                backward_weight_flops = 100, param_bytes = 4294967296,
                saved_bytes = 0, output_bytes = 128>} {
  pipe.return %x : tensor<4x8xf32>
}

// expected-error @+1 {{pipe-partition: mixed: no partition of 1 blocks over 2 devices fits in memory (10.24 GiB usable per device, adamw optimizer, gpipe schedule with 8 micro-batches); a contiguous split needs at least 16.00 GiB per device (17179869184 B); no partition fits in less than 16.00 GiB per device (17179869184 B)}}
pipe.graph @g(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = pipe.run "a" @b(%x) params [@big] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %a : tensor<4x8xf32>
}
