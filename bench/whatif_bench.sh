#!/usr/bin/env bash
# The what-if replay end to end (docs/how-to/whatif.md "Speed"): a finished experiment of TRIALS trials x
# RESULTS results of the built-in mock trainable (FIFO, lr log-uniform, no sleep) run on an
# embedded suite (`tunectl up`), then `tunectl whatif` on it, timed with bash's `time`, through
# ASHA, HyperBand, the median stopping rule and a 9-setting ASHA sweep.
#   bash bench/whatif_bench.sh [BUILD_DIR] [TRIALS] [RESULTS]     (build-rel, 1000, 100)
# BUILD_DIR holds bin/tunectl (a Release build for the figures). Prints the runs' outputs and a
# `real` time per replay; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-rel}"
trials="${2:-1000}"
results="${3:-100}"
tunectl="$(realpath "$build/bin/tunectl")"
work="$(mktemp -d /tmp/tunebus-whatif-bench.XXXXXX)"
suite=""
cleanup() {
  [ -n "$suite" ] && kill "$suite" 2>/dev/null && wait "$suite" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$tunectl" up --control "ipc://$work/control" --events "ipc://$work/events" \
  --data-dir "$work/data" --ready-file "$work/ready.json" >"$work/suite.log" 2>&1 &
suite=$!
for _ in $(seq 200); do [ -s "$work/ready.json" ] && break; sleep 0.05; done
[ -s "$work/ready.json" ] || { cat "$work/suite.log" >&2; exit 1; }
ctl() { "$tunectl" --connect "ipc://$work/control" "$@"; }
cat >"$work/experiment.yaml" <<YAML
name: whatif-bench
trainable: {builtin: mock}
param_space:
  lr: {loguniform: [0.0001, 0.1]}
  mock_iterations: $results
num_samples: $trials
seed: 1
metric: mean_accuracy
mode: max
resources_per_trial: {cpu: 0.05}
max_concurrent_trials: 16
results_dir: $work/results
YAML
start=$(date +%s.%N)
ctl run "$work/experiment.yaml" >"$work/run.log" 2>&1 || { tail -20 "$work/run.log" >&2; exit 1; }
echo "experiment: $trials trials x $results results in $(echo "$(date +%s.%N) - $start" | bc) s"
replay() {
  echo "--- tunectl whatif whatif-bench --scheduler '$1'${2:+ --sweep '$2'}"
  if [ -n "${2:-}" ]; then
    time ctl whatif whatif-bench --scheduler "$1" --sweep "$2"
  else
    time ctl whatif whatif-bench --scheduler "$1"
  fi
}
replay "{type: asha, grace_period: 1, reduction_factor: 4, max_t: $results}"
replay "{type: hyperband, max_t: $results, reduction_factor: 3}"
replay "{type: median_stopping, time_attr: training_iteration, grace_period: 5}"
replay "{type: asha, max_t: $results}" "{grace_period: [1, 2, 4], reduction_factor: [2, 3, 4]}"
# Where the time goes (the scheduler's record of the replay: reading the journal's pages on its
# loop, decoding and folding them on the replay thread, the replay).
for s in "{type: asha, grace_period: 1, reduction_factor: 4, max_t: $results}" \
  "{type: median_stopping, time_attr: training_iteration, grace_period: 5}"; do
  echo "--- record of $s: $(ctl -o json whatif whatif-bench --scheduler "$s" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["record"])')"
done
