"""The trainable of bench/report_roundtrip.py: a trivial loop of `train.report` calls, the path a
Python function trainable takes per report (tunebus._session.Session.exchange over the worker's
pipes, proto/PROTOCOL.md §7).

Config: `reports` (how many), `out` (a JSON file to write, default `report_latency.json` in the
trial folder). The file holds `latency_ns` (each report call: from before train.report to its
return, nanoseconds), `loop_s` (wall seconds of the whole loop), `cpu_s` (this process's CPU
seconds during the loop) and `first_report_unix_s`. It reports no `done`: after the last report it
writes the file and exits 0, which ends the trial.
"""
import json
import os
import sys
import time

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python")
)

from tunebus import config, train  # noqa: E402


def main():
    cfg = config()
    n = int(cfg.get("reports", 1000))
    out = cfg.get("out") or os.path.join(
        os.environ.get("TUNEBUS_TRIAL_DIR", "."), "report_latency.json"
    )
    latency = []
    clock = time.perf_counter_ns
    cpu0, wall0, unix0 = time.process_time(), time.perf_counter(), time.time()
    for i in range(n):
        t0 = clock()
        train.report({"i": i, "loss": 1.0 / (i + 1)})
        latency.append(clock() - t0)
    loop_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    with open(out + ".tmp", "w") as f:
        json.dump(
            {"latency_ns": latency, "loop_s": loop_s, "cpu_s": cpu_s, "first_report_unix_s": unix0},
            f,
        )
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
