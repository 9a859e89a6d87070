// Costs of the toy LM (Inputs/tiny-lm.mlir: S = 4 tokens, D = 8, vocab 16)
// at layer granularity, checked against the closed forms worked out below.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer --pipe-annotate-costs | FileCheck %s
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer --pipe-annotate-costs=recompute=recompute | FileCheck %s --check-prefix=RECOMPUTE
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer --pipe-annotate-costs=recompute=save-inputs | FileCheck %s --check-prefix=RECOMPUTE
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer --pipe-annotate-costs=dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/costs-profile.json | FileCheck %s --check-prefix=PROFILE
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks --pipe-annotate-costs | FileCheck %s --check-prefix=OP
// RUN: not pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks --pipe-annotate-costs=profile=%S/Inputs/costs-bad-profile.json 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks=granularity=layer --pipe-annotate-costs=profile=%S/Inputs/costs-stale-profile.json 2>&1 | FileCheck %s --check-prefix=STALE
// RUN: not pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks --pipe-annotate-costs=profile=%S/Inputs/no-such-profile.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks --pipe-annotate-costs=recompute=sometimes 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks --pipe-annotate-costs=dtype=f12 2>&1 | FileCheck %s --check-prefix=DTYPE

// Prologue: the gather costs nothing forward and a scatter-add of S*D = 32
// into @wte backward; + wpe is 32 FLOPs, and its gradient into the gathered
// rows (32) feeds only @wte, so it counts as weight gradient; ids come from
// the graph's arguments and need no gradient, but the scatter-add needs
// them kept (4 x i64 = 32 bytes). Parameters (16*8 + 4*8) * 4 = 640 bytes.
// CHECK-LABEL: pipe.block @prologue
// CHECK-SAME: cost = #pipe.cost<forward_flops = 32, backward_input_flops = 0, backward_weight_flops = 96, param_bytes = 640, saved_bytes = 32, output_bytes = 128, bytes_accessed = 672>
//
// Layer: sum of squares 2*32 = 64; norm 5 ops * 32 = 160 (div, add eps,
// rsqrt, two muls); matmul 2*4*8*8 = 512; bias + tanh 2*32 = 64; residual
// 32: 832 forward. Input gradients: one pass per differentiable input:
// 64 + 2*160 (x and the sum of squares) + 512 + 64 + 2*32 = 1024. Weight
// gradients: g 160 + W 512 + b 64 = 736. Saved: x (128 bytes, read by the
// squares, the norm), the sums (16), the norm output (128, for dW) and the
// matmul output (128, for tanh') = 400; the residual add needs nothing.
// CHECK-LABEL: pipe.block @layer
// CHECK-SAME: cost = #pipe.cost<forward_flops = 832, backward_input_flops = 1024, backward_weight_flops = 736, param_bytes = 320, saved_bytes = 400, output_bytes = 128, bytes_accessed = 2440>
//
// Epilogue: logits 2*4*16*8 = 1024 plus (p - t)^2 summed: 3*64 = 192. The
// labels need no gradient; x (128), logits and labels (256 each) are kept.
// CHECK-LABEL: pipe.block @epilogue
// CHECK-SAME: cost = #pipe.cost<forward_flops = 1216, backward_input_flops = 1216, backward_weight_flops = 1024, param_bytes = 512, saved_bytes = 640, output_bytes = 4, bytes_accessed = 1940>

// Recompute keeps only the inputs and adds the forward to the backward.
// RECOMPUTE-LABEL: pipe.block @prologue
// RECOMPUTE-SAME: cost = #pipe.cost<forward_flops = 32, backward_input_flops = 32, backward_weight_flops = 96, param_bytes = 640, saved_bytes = 32, output_bytes = 128, bytes_accessed = 672>
// RECOMPUTE-LABEL: pipe.block @layer
// RECOMPUTE-SAME: cost = #pipe.cost<forward_flops = 832, backward_input_flops = 1856, backward_weight_flops = 736, param_bytes = 320, saved_bytes = 128, output_bytes = 128, bytes_accessed = 2440>
// RECOMPUTE-LABEL: pipe.block @epilogue
// RECOMPUTE-SAME: cost = #pipe.cost<forward_flops = 1216, backward_input_flops = 2432, backward_weight_flops = 1024, param_bytes = 512, saved_bytes = 384, output_bytes = 4, bytes_accessed = 1940>

// bf16 halves every float tensor; the i64 ids keep their 8 bytes.
// BF16-LABEL: pipe.block @prologue
// BF16-SAME: param_bytes = 320, saved_bytes = 32, output_bytes = 64, bytes_accessed = 352>
// BF16-LABEL: pipe.block @layer
// BF16-SAME: param_bytes = 160, saved_bytes = 200, output_bytes = 64, bytes_accessed = 1220>
// BF16-LABEL: pipe.block @epilogue
// BF16-SAME: param_bytes = 256, saved_bytes = 320, output_bytes = 2, bytes_accessed = 970>

// Measured times: the layer block gets the mean over its instances (forward
// (1 + 3) / 2 ms, backward 2 ms from layer0 only); the prologue has none.
// PROFILE-LABEL: pipe.block @prologue
// PROFILE-SAME: output_bytes = 128, bytes_accessed = 672>
// PROFILE-LABEL: pipe.block @layer
// PROFILE-SAME: output_bytes = 128, bytes_accessed = 2440, forward_time_ns = 2000000, backward_time_ns = 2000000>
// PROFILE-LABEL: pipe.block @epilogue
// PROFILE-SAME: output_bytes = 4, bytes_accessed = 1940, forward_time_ns = 500000, backward_time_ns = 250000>

// Op granularity: the shared matmul block is 2*4*8*8 in each direction.
// OP-LABEL: pipe.block @matmul
// OP-SAME: cost = #pipe.cost<forward_flops = 512, backward_input_flops = 512, backward_weight_flops = 512, param_bytes = 256, saved_bytes = 128, output_bytes = 128, bytes_accessed = 1284>

// BAD: error: pipe-annotate-costs: {{.*}}costs-bad-profile.json: field 'blocks.layer0.forward_ms' must be a number of milliseconds in [0, 1e9]
// STALE: error: pipe-annotate-costs: {{.*}}costs-stale-profile.json: field 'blocks.layer7' names no pipe.block and no block instance
// MISSING: error: pipe-annotate-costs: {{.*}}no-such-profile.json: cannot read profile
// POLICY: error: pipe-annotate-costs: unknown recompute policy 'sometimes' (expected save-all, recompute or save-inputs)
// DTYPE: error: pipe-annotate-costs: unknown dtype 'f12'
