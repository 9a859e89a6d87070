#!/usr/bin/env bash
# run-both.sh DIR NAME PLACE SCHEDULE [pipe-runner options]: schedules
# DIR/base.mlir (--pipe-place=PLACE, --pipe-schedule=SCHEDULE), compiles it
# and trains it on DIR/data.safetensors in one process and as 2 MPI ranks
# (the lit substitution %mpirun, passed in MPIRUN; the ranks' --transport
# in RANKS_TRANSPORT, default mpi), then compares the runs and the ranks'
# profiles.
set -euo pipefail
dir=$1 name=$2 place=$3 schedule=$4
shift 4
inputs=$(dirname "$0")
pipe-opt "$dir/base.mlir" "--pipe-place=$place" "--pipe-schedule=$schedule" \
  --pipe-verify-schedule -o "$dir/$name.mlir"
pipe-compile "$dir/$name.mlir" -o "$dir/$name.so" --weights "$dir/$name.w0" -O 0
train=(--weights "$dir/$name.w0" --data "$dir/data.safetensors" --steps 4
       --optimizer adamw --lr 0.01 "$@")
pipe-runner "$dir/$name.so" "${train[@]}" --log-json "$dir/$name.one.jsonl" \
  --save-weights "$dir/$name.one.st" > /dev/null
$MPIRUN -np 2 pipe-runner "$dir/$name.so" "${train[@]}" \
  --transport "${RANKS_TRANSPORT:-mpi}" --log-json "$dir/$name.two.jsonl" --save-weights "$dir/$name.two.st" \
  --profile "$dir/$name.prof" > /dev/null
python3 "$inputs/same-run.py" "$dir/$name.one.jsonl" "$dir/$name.two.jsonl" \
  "$dir/$name.one.st" "$dir/$name.two.st"
python3 "$inputs/check-ranks.py" "$dir/$name.prof" 2 1
