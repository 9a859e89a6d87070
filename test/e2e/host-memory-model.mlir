// The planner's memory model (--pipe-simulate's per-device peak) against
// the runtime's measured peak (--profile) for every schedule kind on
// tiny-gpt, with the blocks' working memory measured by pipe-profile. The
// model counts what the runtime charges to a device (docs/scheduling.md
// "Memory model"): parameters, gradients from the first backward to the
// update or push, kept activations, weight versions of a stash schedule,
// loads, offloads and prefetches, and while a block part runs its measured
// working memory (outputs and the lowered code's temporaries), and the
// recvs a peer-ordered schedule posts early (two stages per device). Every
// prediction must be within 10% of the measured peak; the ratios are
// printed for docs/scheduling.md.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt --vocab=256 -o %t/m.mlir
// RUN: for i in $(seq 1 40); do echo "line $i: predicted against measured."; done > %t/data.txt
// RUN: pipe-profile %t/m.mlir --repeats 1 --warmup 0 -o %t/table.json
// RUN: pipe-opt %t/m.mlir --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%t/table.json --pipe-differentiate -o %t/d.mlir
// RUN: %python %S/Inputs/memory-model-row.py %t gpipe "devices=2" "kind=gpipe microbatches=4" | FileCheck %s --check-prefix=GPIPE
// RUN: %python %S/Inputs/memory-model-row.py %t 1f1b "devices=2" "kind=1f1b microbatches=4" | FileCheck %s --check-prefix=ONEF
// RUN: %python %S/Inputs/memory-model-row.py %t interleaved "devices=2 stages-per-device=2" "kind=interleaved-1f1b microbatches=4" | FileCheck %s --check-prefix=INTER
// RUN: %python %S/Inputs/memory-model-row.py %t zb-h1 "devices=2" "kind=zb-h1 microbatches=4" | FileCheck %s --check-prefix=ZB
// RUN: %python %S/Inputs/memory-model-row.py %t stash "devices=2" "kind=pipedream-async microbatches=4 steps=4 weights=stash" | FileCheck %s --check-prefix=STASH
// RUN: %python %S/Inputs/memory-model-row.py %t stale "devices=2" "kind=pipedream-async microbatches=4 steps=4 weights=stale" | FileCheck %s --check-prefix=STALE
// RUN: %python %S/Inputs/memory-model-row.py %t mixed "devices=2" "kind=mixed microbatches=4" | FileCheck %s --check-prefix=MIXED
// RUN: %python %S/Inputs/memory-model-row.py %t recompute "devices=2" "kind=1f1b microbatches=4 recompute=true" | FileCheck %s --check-prefix=RECOMPUTE
// RUN: %python %S/Inputs/memory-model-row.py %t peer-order "devices=2 stages-per-device=2" "kind=1f1b microbatches=4 peer-order=true" | FileCheck %s --check-prefix=PEER
// RUN: %python %S/Inputs/memory-model-row.py %t l2l "devices=1 stages-per-device=0" "kind=l2l microbatches=2 constant-memory=true" | FileCheck %s --check-prefix=L2L

// GPIPE: gpipe within 10%
// ONEF: 1f1b within 10%
// INTER: interleaved within 10%
// ZB: zb-h1 within 10%
// STASH: stash within 10%
// STALE: stale within 10%
// MIXED: mixed within 10%
// RECOMPUTE: recompute within 10%
// PEER: peer-order within 10%
// L2L: l2l within 10%
