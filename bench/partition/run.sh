#!/bin/bash
# Partitioning benchmark: seq (contiguous, PipeDream-style) against mixed
# (FTPipe's Mixed-Pipe) on the FTPipe models (BERT-Large, GPT2-XL, T5-3B) at
# op-level and layer-level block granularity, on 8 RTX 2080 Ti
# (device-model rtx2080ti-x8: 11 GB, 13.4 TFLOP/s f32, 12 GB/s links), under
# GPipe and asynchronous PipeDream schedules with stage recomputation and 8
# micro-batches. Settings (schedule:optimizer): GPipe with AdamW, async with
# AdamW, and FTPipe's own setting, async with stale weights (no weight
# stashing) and Adafactor (FTPipe's T5 configurations). Costs:
# --pipe-annotate-costs (save-all, f32).
# Prints a Markdown table: stages, predicted step time (simulated, and the
# analytic model), the bottleneck speedup (all devices' compute per
# micro-batch, recomputation included, over the bottleneck device's cost:
# P for a perfect split), the balance speedup (FTPipe's planner figure:
# forward and backward of the whole model over the slowest device's, no
# recomputation, no communication) and the partitioning wall time.
#
#   bench/partition/run.sh [BUILD_DIR]      (default: build)
#
# Environment: MODELS, GRANULARITIES, MICROBATCHES, SETTINGS (space-separated
# schedule:optimizer pairs, e.g. SETTINGS="pipedream-async:adafactor").
#
# Results are recorded in docs/benchmarks.md ("Partitioning").
set -euo pipefail

BUILD=${1:-build}
MODELS=${MODELS:-"bert-large gpt2-xl t5-3b"}
GRANULARITIES=${GRANULARITIES:-"op layer"}
SETTINGS=${SETTINGS:-"gpipe:adamw pipedream-async:adamw pipedream-async:adafactor"}
MICROBATCHES=${MICROBATCHES:-8}
GEN="$BUILD/bin/pipe-gen"
OPT="$BUILD/bin/pipe-opt"
for tool in "$GEN" "$OPT"; do
  [ -x "$tool" ] || { echo "error: $tool not found; build it first" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "| model | blocks | schedule | weights | optimizer | algorithm | stages | stage -> device | step (simulated) | step (analytic) | bottleneck speedup | balance speedup | partitioning time |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for model in $MODELS; do
  "$GEN" --model="$model" --weights=none -o "$WORK/$model.mlir"
  for gran in $GRANULARITIES; do
    costed="$WORK/$model-$gran.mlir"
    "$OPT" "$WORK/$model.mlir" --pipe-lift-params=init-missing=true \
      --pipe-form-blocks=granularity="$gran" --pipe-annotate-costs -o "$costed"
    for setting in $SETTINGS; do
      schedule=${setting%%:*}
      optimizer=${setting#*:}
      # Weights: GPipe is synchronous; async runs without weight stashing
      # (stale weights, FTPipe's setting).
      weights=stale
      [ "$schedule" = pipedream-async ] || weights=sync
      for algorithm in seq mixed; do
        json="$WORK/r.json"
        if ! "$OPT" "$costed" -o /dev/null --pipe-partition="algorithm=$algorithm \
            devices=8 device-model=rtx2080ti-x8 schedule=$schedule \
            microbatches=$MICROBATCHES recompute=true optimizer=$optimizer \
            weight-stashing=false text-report= report=$json" 2> "$WORK/err.txt"; then
          echo "| $model | $gran | $schedule | $weights | $optimizer | $algorithm | infeasible: $(head -c 300 "$WORK/err.txt" | tr '\n|' '  ') | | | | | | |"
          continue
        fi
        python3 - "$json" "$model" "$gran" "$weights" "$optimizer" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
step = f"{r['step_seconds']:.3f} s" if r['simulated'] else "-"
stages = ",".join(str(d) for d in r['stage_to_device'])
print(f"| {sys.argv[2]} | {sys.argv[3]} ({r['blocks']}) | {r['schedule']} | "
      f"{sys.argv[4]} | {sys.argv[5]} | "
      f"{r['algorithm']} | {len(r['stage_to_device'])} | [{stages}] | {step} | "
      f"{r['analytic_step_seconds']:.3f} s | {r['bottleneck_speedup']:.2f}x | "
      f"{r['balance_speedup']:.2f}x | "
      f"{r['partitioning_seconds']:.2f} s |")
PY
      done
    done
  done
done
