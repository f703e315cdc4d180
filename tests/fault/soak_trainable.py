"""Ground-truth command trainable of the crash soak (tests/fault/crash_soak_test.cpp).

Stdlib only; runs under any python3 >= 3.6. It speaks the command trainable protocol
(proto/PROTOCOL.md section 7) itself rather than through clients/python/tunebus/'s report(),
because it must log every decision it reads, "stop" and end of file included, before acting.

Before acting on anything it appends one JSON object per line (write, flush, fsync) to
<truth dir>/<trial id>.jsonl, where the truth dir is $SOAK_TRUTH_DIR or the config key
`truth_dir` (the soak gives each experiment its own). Events, each with "trial", "experiment"
(the experiment's name, $TUNEBUS_EXPERIMENT), "attempt" ($TUNEBUS_ATTEMPT) and "pid":
    start       start_iteration ($TUNEBUS_START_ITERATION), restoring (bool)
    restore     from_iteration, from_attempt (read from the checkpoint), state_ok (its state is
                what the config gives at that iteration, and it is the iteration the worker said)
    report      iteration, metrics (exactly what goes to the report fd: score, acc and the
                soak_iteration, soak_attempt and soak_experiment it belongs to)
    decision    iteration, decision ("continue" | "checkpoint" | "stop" | "eof")
    checkpoint  iteration (logged once the state is saved and fsynced, before the next report)
    fail        iteration (an intended failure: the process exits with code 3 right after)
    exit        iteration, why ("stop" | "eof" | "done" | "worker gone")

Config keys: iterations (default 10), sleep_s (per iteration, default 0), fail_at (iteration
at which to fail, 0 = never), fail_times (how many attempts fail there, default 1; counted in
<truth dir>/<trial id>.failures so that a retry from a checkpoint does not fail again),
lr (the metric's parameter). The metric is deterministic: score(lr, i).
"""

import json
import math
import os
import sys
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(SCRIPT_DIR, "..", "..", "clients", "python"))
import tunebus  # noqa: E402  (config(), checkpoint_dir(), restore_dir(), start_iteration())

CONFIG = tunebus.config()
TRIAL = tunebus.trial_id() or "standalone"
ATTEMPT = int(os.environ.get("TUNEBUS_ATTEMPT", "1"))
EXPERIMENT = os.environ.get("TUNEBUS_EXPERIMENT", "")
TRUTH_DIR = os.environ.get("SOAK_TRUTH_DIR") or CONFIG.get("truth_dir") or "."


def score(i):
    """The metric at training iteration i: rises with i, wiggles so that retention by score
    does not simply keep the newest checkpoints."""
    lr = float(CONFIG.get("lr", 0.05))
    return round(1.0 - math.exp(-lr * 10.0 * i) + 0.05 * math.sin(7.0 * i + 100.0 * lr), 9)


def accumulated(i):
    """The state a trainable holds after i iterations (restores must bring it back)."""
    acc = 0.0
    for j in range(1, i + 1):
        acc += score(j)
    return acc


def append_line(name, obj):
    path = os.path.join(TRUTH_DIR, name)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        # One write per line: with O_APPEND, lines of concurrent attempts never interleave.
        os.write(fd, (json.dumps(obj, sort_keys=True) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def log(event, **fields):
    fields.update(event=event, trial=TRIAL, experiment=EXPERIMENT, attempt=ATTEMPT, pid=os.getpid())
    append_line(TRIAL + ".jsonl", fields)


def failures_so_far():
    try:
        with open(os.path.join(TRUTH_DIR, TRIAL + ".failures")) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def save_checkpoint(iteration, acc):
    path = os.path.join(tunebus.checkpoint_dir(), "state.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"iteration": iteration, "attempt": ATTEMPT, "acc": acc}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def restore(start):
    """Returns the accumulated state to continue from (logs the restore)."""
    with open(os.path.join(tunebus.restore_dir(), "state.json")) as f:
        state = json.load(f)
    it = int(state["iteration"])
    ok = it == start and float(state["acc"]) == accumulated(it)
    log("restore", from_iteration=it, from_attempt=state.get("attempt"), state_ok=ok)
    return float(state["acc"])


class Channel:
    """The report fd and the decision fd (None outside tunebus: then every decision is
    "continue")."""

    def __init__(self):
        rfd, dfd = os.environ.get("TUNEBUS_REPORT_FD"), os.environ.get("TUNEBUS_DECISION_FD")
        self.report_fd = int(rfd) if rfd else None
        self.decision_fd = int(dfd) if dfd else None
        self.buffer = b""

    def report(self, metrics):
        """Sends one report; returns the decision word, "eof" if the worker is gone."""
        line = (json.dumps(metrics, separators=(",", ":")) + "\n").encode("utf-8")
        if self.report_fd is None:
            print("report: " + line.decode().strip(), flush=True)
            return "continue"
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self.report_fd, view) :]
        except OSError:  # BrokenPipeError: the worker died
            return "eof"
        while b"\n" not in self.buffer:
            chunk = os.read(self.decision_fd, 4096)
            if not chunk:
                return "eof"
            self.buffer += chunk
        word, _, self.buffer = self.buffer.partition(b"\n")
        return word.decode("utf-8", "replace").strip()


def main():
    os.makedirs(TRUTH_DIR, exist_ok=True)
    iterations = int(CONFIG.get("iterations", 10))
    sleep_s = float(CONFIG.get("sleep_s", 0))
    fail_at, fail_times = int(CONFIG.get("fail_at", 0)), int(CONFIG.get("fail_times", 1))
    start = tunebus.start_iteration()
    log("start", start_iteration=start, restoring=tunebus.restore_dir() is not None)
    acc = restore(start) if tunebus.restore_dir() else 0.0
    channel = Channel()
    for i in range(start + 1, iterations + 1):
        if i == fail_at and failures_so_far() < fail_times:
            append_line(TRIAL + ".failures", {"attempt": ATTEMPT, "iteration": i})
            log("fail", iteration=i)
            print(
                "soak_trainable: failing on purpose at iteration %d" % i,
                file=sys.stderr,
                flush=True,
            )
            sys.exit(3)
        time.sleep(sleep_s)
        acc += score(i)
        metrics = {
            "score": score(i),
            "acc": round(acc, 6),
            "soak_iteration": i,
            "soak_attempt": ATTEMPT,
            "soak_experiment": EXPERIMENT,
        }
        log("report", iteration=i, metrics=metrics)
        decision = channel.report(metrics)
        log("decision", iteration=i, decision=decision)
        if decision == "checkpoint":
            save_checkpoint(i, acc)
            log("checkpoint", iteration=i)
        elif decision in ("stop", "eof"):
            log("exit", iteration=i, why=decision)
            return
    log("exit", iteration=iterations, why="done")


if __name__ == "__main__":
    main()
