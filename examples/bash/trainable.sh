#!/usr/bin/env bash
# A tunebus trainable in bash: the config arrives as JSON in TUNEBUS_CONFIG, each result goes
# out as one JSON line on the report pipe, and the decision comes back on the decision pipe.
set -euo pipefail
x=$(printf '%s' "$TUNEBUS_CONFIG" | sed -E 's/.*"x": *([-0-9.eE+]+).*/\1/')
step=${TUNEBUS_START_ITERATION:-0}
if [ -n "${TUNEBUS_RESTORE_DIR:-}" ]; then        # restored: go on from the saved step
  step=$(cat "$TUNEBUS_RESTORE_DIR/step")
fi
while [ "$step" -lt 10 ]; do
  step=$((step + 1))
  loss=$(awk -v x="$x" -v s="$step" 'BEGIN { printf "%.6f", (x - 3) ^ 2 + 1 / s }')
  echo "{\"loss\": $loss, \"step\": $step}" >&"$TUNEBUS_REPORT_FD"
  read -r decision <&"$TUNEBUS_DECISION_FD"
  case "$decision" in
    stop) exit 0 ;;
    checkpoint) echo "$step" >"$TUNEBUS_CHECKPOINT_DIR/step" ;;
  esac
done
