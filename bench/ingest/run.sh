#!/bin/bash
# Ingestion benchmark: GPT2-XL-shaped models (d = 1600, 25 heads, seq 1024,
# shape-only weights) with 12, 24, 48 and 96 layers through
#   pipe-opt --pipe-lift-params=init-missing --pipe-form-blocks
#            --pipe-annotate-costs
# (op-level blocks, the finest granularity), plus the layer and coarse
# granularities for comparison. Prints a Markdown table of the best of
# REPEATS wall-clock times of the whole pipe-opt run (parse, passes, print)
# and the per-pass times from -mlir-timing of the best run.
#
#   bench/ingest/run.sh [BUILD_DIR]      (default: build)
#
# Needs pipe-gen and pipe-opt built in BUILD_DIR/bin. Results are recorded
# in docs/benchmarks.md ("Ingestion").
set -euo pipefail

BUILD=${1:-build}
REPEATS=${REPEATS:-3}
LAYERS=${LAYERS:-"12 24 48 96"}
GEN="$BUILD/bin/pipe-gen"
OPT="$BUILD/bin/pipe-opt"
for tool in "$GEN" "$OPT"; do
  [ -x "$tool" ] || { echo "error: $tool not found; build it first" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

now() { date +%s.%N; }

# Best-of-REPEATS wall time of `pipe-opt INPUT PASS...`; leaves the timing
# report of the best run in $WORK/timing.txt and its output in $WORK/out.mlir.
measure() {
  local input=$1 best="" start end t
  shift
  for _ in $(seq "$REPEATS"); do
    start=$(now)
    "$OPT" "$input" "$@" -mlir-timing -o "$WORK/out.mlir" 2> "$WORK/timing.run"
    end=$(now)
    t=$(echo "$end - $start" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then
      best=$t
      cp "$WORK/timing.run" "$WORK/timing.txt"
    fi
  done
  printf '%.2f' "$best"
}

# Seconds the best run spent in one pass (or the parser/printer).
phase() { awk -v name="$1" '$0 ~ "  " name "$" { print $1; exit }' "$WORK/timing.txt"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
echo
echo "| layers | input ops | granularity | block instances | block functions | total s | parse | lift | form | costs | print |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for L in $LAYERS; do
  input="$WORK/gpt2-xl-$L.mlir"
  "$GEN" --model=gpt2-xl --weights=none --layers="$L" -o "$input"
  ops=$(grep -c ' = \(linalg\|tensor\|arith\|math\)\.' "$input" || true)
  for granularity in op layer "coarse num-blocks=16"; do
    total=$(measure "$input" --pipe-lift-params=init-missing \
      "--pipe-form-blocks=granularity=$granularity" --pipe-annotate-costs)
    runs=$(grep -c 'pipe.run ' "$WORK/out.mlir" || true)
    blocks=$(grep -c '^  pipe.block ' "$WORK/out.mlir" || true)
    echo "| $L | $ops | ${granularity%% *} | $runs | $blocks | $total | $(phase Parser) | $(phase PipeLiftParams) | $(phase PipeFormBlocks) | $(phase PipeAnnotateCosts) | $(phase Output) |"
  done
done
