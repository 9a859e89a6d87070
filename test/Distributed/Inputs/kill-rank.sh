#!/usr/bin/env bash
# kill-rank.sh DIR SIGNAL: trains DIR/kill.so as 2 MPI ranks (MPIRUN, the
# lit substitution %mpirun) for far more steps than the test waits, sends
# SIGNAL to rank 1 once it trains, then reports how the job ended, within
# how long, and whether any of its processes remains.
set -uo pipefail
dir=$1 signal=$2
out="$dir/$signal.out"
$MPIRUN -np 2 pipe-runner "$dir/kill.so" --weights "$dir/kill.w0" \
  --data "$dir/data.safetensors" --steps 1000000 --watchdog 3 \
  --log-every 1 > "$out" 2>&1 &
job=$!
rank1=""
for _ in $(seq 1 600); do
  for pid in $(pgrep -f "pipe-runner $dir/kill.so"); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null |
        grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
      rank1=$pid
    fi
  done
  if [ -n "$rank1" ] && grep -q "^step " "$out"; then
    break
  fi
  sleep 0.1
done
[ -n "$rank1" ] || { echo "rank 1 never started"; cat "$out"; kill "$job"; exit 1; }
start=$(date +%s)
kill "-$signal" "$rank1"
wait "$job"
rc=$?
echo "job ended after $(( $(date +%s) - start )) s, exit $([ $rc -ne 0 ] && echo non-zero || echo 0)"
grep -o "rank [0-9]*: .*stuck?" "$out" | head -1
sleep 1
if pgrep -f "pipe-runner $dir/kill.so" > /dev/null; then
  echo "processes left behind:"; pgrep -af "pipe-runner $dir/kill.so"
  pkill -KILL -f "pipe-runner $dir/kill.so"
else
  echo "no process remains"
fi
