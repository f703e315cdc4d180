#!/usr/bin/env bash
# A user's session at the size of a long-lived suite (docs/explanation/performance/memory.md): one
# embedded `tunectl up` runs two ASHA experiments of TRIALS mock trials one after the other, is
# restarted on the same store, and reads both back (`tunectl ls -e`); the suite's VmRSS is printed
# after each step and 20 s later, and the first `tunectl ls -e soak` after its release is timed.
# Usage: bench/memory_session.sh TUNECTL PORT DIR [TRIALS (12000)] [tunectl up flags...]
# DIR is made (its store and results replaced); PORT is the control port on 127.0.0.1.
set -euo pipefail
BIN=$1 PORT=$2 DIR=$3 TRIALS=${4:-12000}
shift $(($# < 4 ? $# : 4))
mkdir -p "$DIR" && cd "$DIR" && rm -rf store results
for name in soak soak2; do
  cat > "$name.yaml" <<EOT
name: $name
trainable: {builtin: mock}
param_space:
  lr: {loguniform: [0.001, 0.1]}
  mock_iterations: 27
  sleep_s: 0.0
num_samples: $TRIALS
seed: 1
metric: mean_accuracy
mode: max
scheduler: {type: asha, time_attr: training_iteration, max_t: 27, grace_period: 1, reduction_factor: 3}
max_concurrent_trials: 4
results_dir: results
EOT
done
export TUNEBUS_CONTROL_ENDPOINT=tcp://127.0.0.1:$PORT
rss() { echo "$(date -u +%T) $1: $(awk '/VmRSS/ {print $2}' "/proc/$pid/status") kB"; }
up() {
  "$BIN" up --control "tcp://127.0.0.1:$PORT" --data-dir store --ready-file ready.json --cpus 4 \
    "$@" > "up$((++ups)).log" 2>&1 &
  pid=$!
  sleep 5
}
ups=0
up "$@"
rss "idle"
"$BIN" run soak.yaml > run1.log 2>&1; rss "soak finished"; sleep 20; rss "soak finished +20 s"
start=$(date +%s.%N)
"$BIN" ls -e soak > ls0.txt
rss "after ls -e soak, released ($(echo "$(date +%s.%N) - $start" | bc) s)"
"$BIN" run soak2.yaml > run2.log 2>&1; rss "soak2 finished"; sleep 20; rss "soak2 finished +20 s"
kill "$pid"; wait "$pid" || true
up "$@"
rss "restarted, idle"
start=$(date +%s.%N)
"$BIN" ls -e soak > ls1.txt
rss "after ls -e soak ($(echo "$(date +%s.%N) - $start" | bc) s)"
"$BIN" ls -e soak2 > ls2.txt; rss "after ls -e soak2"
sleep 20; rss "20 s later"
kill "$pid"; wait "$pid" || true
echo "trials listed: $(($(wc -l < ls1.txt) - 1)) and $(($(wc -l < ls2.txt) - 1)); store and results:"
du -sh store results
