#!/bin/bash
# Cluster planning: a GPT-3-175B-shaped model (96 layers, d_model 12288, 96
# heads, ff 49152, sequence 2048, vocabulary 50257) at op-level block
# granularity, planned over 8 hosts x 8 H200-class GPUs (device model
# h200-8x8: 141 GB each, NVLink-class links within a host, 400 Gb/s between
# hosts). The partitioner chooses the data-parallel degree together with the
# pipeline partition (--pipe-partition replicas=0): every degree R that
# divides the 64 GPUs and the step's micro-batches is partitioned on 64 / R
# GPUs, and the best predicted step time (the replicated schedule
# simulated with the gradients' bucketed all-reduces over the replicas) among
# the plans that fit in memory wins.
# Prints the partitioner's text report and the planning wall time.
#
#   bench/cluster/run.sh [BUILD_DIR]      (default: build)
#
# Environment: ALGORITHM (default seq), SCHEDULE (default 1f1b),
# MICROBATCHES (the whole step's, default 64), OPTIMIZER (default adamw).
# Results are recorded in docs/benchmarks.md ("Planning for clusters").
set -euo pipefail

BUILD=${1:-build}
ALGORITHM=${ALGORITHM:-seq}
SCHEDULE=${SCHEDULE:-1f1b}
MICROBATCHES=${MICROBATCHES:-64}
OPTIMIZER=${OPTIMIZER:-adamw}
GEN="$BUILD/bin/pipe-gen"
OPT="$BUILD/bin/pipe-opt"
for tool in "$GEN" "$OPT"; do
  [ -x "$tool" ] || { echo "error: $tool not found; build it first" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

start=$(date +%s.%N)
"$GEN" --model=gpt2-xl --layers=96 --d-model=12288 --heads=96 --ff=49152 \
  --seq=2048 --vocab=50257 --max-positions=2048 --batch=1 --dtype=bf16 \
  --weights=none -o "$WORK/gpt3.mlir"
"$OPT" "$WORK/gpt3.mlir" --pipe-lift-params=init-missing=true \
  --pipe-form-blocks=granularity=op --pipe-annotate-costs -o "$WORK/costed.mlir"
prepared=$(date +%s.%N)
"$OPT" "$WORK/costed.mlir" -o /dev/null --pipe-partition="algorithm=$ALGORITHM \
  devices=64 replicas=0 device-model=h200-8x8 dtype=bf16 schedule=$SCHEDULE \
  microbatches=$MICROBATCHES optimizer=$OPTIMIZER recompute=true \
  report=$WORK/plan.json" 2>&1
planned=$(date +%s.%N)
python3 - "$WORK/plan.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"chosen: {r['replicas']} data-parallel replicas x {r['devices']} pipeline GPUs, "
      f"{r['microbatches']} micro-batches per replica; predicted step "
      f"{r['data_parallel_step_seconds']:.3f} s (all-reduce {r['all_reduce_seconds']:.3f} s, "
      f"{r['exposed_all_reduce_seconds']:.3f} s of it exposed); "
      f"peak memory {max(d['memory_bytes'] for d in r['device_reports']) / 1e9:.1f} GB of "
      f"{r['device_reports'][0]['capacity_bytes'] / 1e9:.1f} GB")
PY
python3 -c "import sys; a, b, c = map(float, sys.argv[1:]); print(f'generation, lifting, blocks and costs: {b - a:.2f} s'); print(f'planning (every data-parallel degree): {c - b:.2f} s')" "$start" "$prepared" "$planned"
