"""The trainable helper (re-exported as `tunebus.config()`, `tunebus.checkpoint_dir()`, ...):
stdlib only, Python 3.9+. `tunebus.report(...)` is tunebus._session.report, which writes the
result lines and reads the decisions through this module's pipes.

A tunebus *command trainable* is any program the trial-worker starts once per trial attempt.
This module speaks its side of the protocol (specified in proto/PROTOCOL.md, "Trainable
protocol"):

Environment (set by the worker):
    TUNEBUS_CONFIG           the trial's config, a JSON object
    TUNEBUS_TRIAL_ID         the trial id; TUNEBUS_ATTEMPT: 1 for the first start, +1 per retry
    TUNEBUS_TRIAL_DIR        the trial's folder (stdout and stderr are appended to files there)
    TUNEBUS_CHECKPOINT_DIR   save a checkpoint into this folder when told "checkpoint"
    TUNEBUS_RESTORE_DIR      set only when the attempt restores: load the checkpoint from here
    TUNEBUS_START_ITERATION  iterations already done before this attempt (0 unless restoring)
    TUNEBUS_REPORT_FD        write one JSON object per line here: the result of one iteration
    TUNEBUS_DECISION_FD      after each report read one line here: the decision
    TUNEBUS_RESOURCES        what the attempt was allocated: a JSON object of whole units
                             ({"cpu": 1.0, "gpu": 1.0}; memory in bytes)
    TUNEBUS_WORKER_ID        the id of the worker running the attempt
    CUDA_VISIBLE_DEVICES     the GPUs assigned to the trial ("" when none)

Decisions:
    continue    go on with the next iteration
    checkpoint  save state into TUNEBUS_CHECKPOINT_DIR before the next report, then go on
    stop        exit now with code 0 (report() does it for you)

A report may carry any JSON-serialisable metrics; the worker adds time_this_iter_s and the
scheduler adds training_iteration. Report "done": True on the last iteration (or just exit 0
after it). Exiting with a non-zero code, or dying by a signal, fails the attempt.

Example:
    import tunebus
    cfg = tunebus.config()
    for epoch in range(100):
        acc = train_one_epoch(cfg["lr"])
        if tunebus.report(val_accuracy=acc) == "checkpoint":
            save(tunebus.checkpoint_dir())

Outside tunebus (no TUNEBUS_REPORT_FD) report() prints the metrics and returns "continue", so
the same script runs standalone.
"""

import json
import math
import os
import sys
import tempfile

__all__ = [
    "config",
    "checkpoint_dir",
    "restore_dir",
    "trial_id",
    "trial_dir",
    "start_iteration",
]

CONTINUE = "continue"
CHECKPOINT = "checkpoint"
STOP = "stop"
_DECISIONS = (CONTINUE, CHECKPOINT, STOP)

_config_cache = None
_local_checkpoint_dir = None
_decision_buffer = b""


def config():
    """The trial's config as a dict ({} when TUNEBUS_CONFIG is unset)."""
    global _config_cache
    if _config_cache is None:
        raw = os.environ.get("TUNEBUS_CONFIG")
        _config_cache = json.loads(raw) if raw else {}
        if not isinstance(_config_cache, dict):
            raise ValueError("TUNEBUS_CONFIG is not a JSON object")
    return _config_cache


def trial_id():
    """The trial id, or None outside tunebus."""
    return os.environ.get("TUNEBUS_TRIAL_ID")


def trial_dir():
    """The trial's folder (the current directory outside tunebus)."""
    return os.environ.get("TUNEBUS_TRIAL_DIR") or os.getcwd()


def start_iteration():
    """Iterations completed before this attempt (0 unless restoring)."""
    try:
        return int(os.environ.get("TUNEBUS_START_ITERATION", "0"))
    except ValueError:
        return 0


def checkpoint_dir():
    """The folder to save a checkpoint into (created). A temporary folder outside tunebus."""
    global _local_checkpoint_dir
    path = os.environ.get("TUNEBUS_CHECKPOINT_DIR")
    if not path:
        if _local_checkpoint_dir is None:
            _local_checkpoint_dir = tempfile.mkdtemp(prefix="tunebus_checkpoint_")
        path = _local_checkpoint_dir
    os.makedirs(path, exist_ok=True)
    return path


def restore_dir():
    """The checkpoint folder to restore from, or None when starting fresh."""
    return os.environ.get("TUNEBUS_RESTORE_DIR") or None


def _jsonable(value):
    """Converts numpy scalars/arrays and tuples to plain JSON values; NaN and +-inf become None
    (JSON has no spelling for them)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) != 0:  # numpy array
        return _jsonable(value.tolist())
    if hasattr(value, "item"):  # numpy scalar
        return _jsonable(value.item())
    try:
        return _jsonable(float(value))
    except (TypeError, ValueError):
        return str(value)


def _default(value):
    """json.dumps fallback for anything _jsonable missed."""
    if hasattr(value, "item"):
        return value.item()
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _fd(name):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    return int(raw)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_line(fd):
    """Reads one line from fd (without the newline); None at end of file."""
    global _decision_buffer
    while b"\n" not in _decision_buffer:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        _decision_buffer += chunk
    line, _, _decision_buffer = _decision_buffer.partition(b"\n")
    return line.decode("utf-8", "replace").strip()


def _exit_now():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.exit(0)
