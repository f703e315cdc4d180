"""The soak: one long-lived embedded suite (`tunectl up`) run through many experiments of mock
trials, several at once, with SIGKILLs of the suite and restarts on the same data folder on the
way, sampling the suite process's resident memory, open file descriptors, threads, the
checkpoint-store's folder size and the results folder's size every --sample-s seconds into a
JSONL file (one object a sample). docs/explanation/performance/soak.md holds its
figures and plot (bench/soak_plot.py draws it from the JSONL).

Sizes: --quick (CI, bench/run --quick): 20 experiments x 500 trials, 3 at once, one SIGKILL
(after 10 ended), samples every 2 s; full (by hand, the default): 100 experiments x 10,000
trials (10^6 trials), 4 at once, a SIGKILL each time 25 more ended, samples every 60 s.
Trials are the builtin mock trainable with 3 iterations and a 1 ms sleep each, so the suite's
own cost is what is measured.
The suite runs with --retain-experiments (--retain, default 5): finished experiments beyond the
newest 5 are deleted, so the store and the results folder are bounded by the policy, not by
the trials run. It runs with --release-after-ms (--release-after-ms, default 11000, the least the
scheduler takes): an ended experiment leaves memory that long after its end
(docs/explanation/performance/memory.md), so the last sample is taken --settle-s (default: the
release delay plus two samples) after the last end; and with --finished-cache-mb (--cache-mb,
default 8): the reads of finished experiments (lsx rows, retention) fill that cache up to its cap,
which is memory the suite is told it may keep, not growth.

Verdict (exit 1 when it fails; the last JSON line says why):
  - memory: the resident set (VmRSS) of the suite after the last experiment ended (the sample
    --settle-s after it) is more than 20% above its value after the first experiment ended (the
    first sample after it), or above its value after the first experiment that ended --settle-s
    or more after the newest restart (a restart starts a fresh process: this compares within one
    process; an end sooner after the restart comes before the resumed experiments are loaded:
    27.1 MB, RssAnon 6.8 MB, 0.5 s after the quick soak's restart in CI at b8456a4, settling at
    32.9 MB. With no such end, as at --quick size, whose last segment is shorter than that, this
    comparison is reported as not judged);
  - counts: open file descriptors or threads grow with the trials run: a least-squares line of
    the count against trials run, fitted over the samples from the first experiment's end to the
    last one's (samples within --settle-s after a restart left out), rises by more than
    max(3, 10% of the median count) across that span.
Store and results sizes are reported (bytes per trial of the same fit), not judged: with
retention they stay bounded by the experiments kept.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import machine  # noqa: E402

ENDED = ("FINISHED", "STOPPED", "ERROR")


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def proc_figures(pid):
    """(rss bytes, fds, threads, {"anon": bytes, "file": bytes}) of process `pid` (VmRSS and its
    RssAnon/RssFile parts from /proc/PID/status), or None once it is gone."""
    try:
        rss = threads = 0
        parts = {}
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("RssAnon:"):
                    parts["anon"] = int(line.split()[1]) * 1024
                elif line.startswith("RssFile:"):
                    parts["file"] = int(line.split()[1]) * 1024
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
        return rss, fds, threads, parts
    except (OSError, ValueError):
        return None


def fit_slope(xs, ys):
    """Least-squares slope of ys against xs (0 when xs do not vary)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if s else 0


class Suite:
    """`tunectl up` on a fixed loopback port and data folder; Kill() and Start() again."""

    def __init__(self, bin_dir, tmp, cpus, retain, release_after_ms, cache_mb):
        self.tunectl = os.path.join(os.path.abspath(bin_dir), "tunectl")
        self.tmp = tmp
        self.cpus = cpus
        self.retain = retain
        self.release_after_ms = release_after_ms
        self.cache_mb = cache_mb
        self.control = "tcp://127.0.0.1:*"
        self.proc = None
        self.starts = 0

    def start(self):
        ready = os.path.join(self.tmp, "ready.json")
        if os.path.exists(ready):
            os.unlink(ready)
        self.starts += 1
        log = open(os.path.join(self.tmp, "suite-%d.log" % self.starts), "w")
        args = [
            self.tunectl,
            "up",
            "--control",
            self.control,
            "--data-dir",
            os.path.join(self.tmp, "store"),
            "--ready-file",
            ready,
            "--cpus",
            str(self.cpus),
            "--release-after-ms",
            str(self.release_after_ms),
            "--finished-cache-mb",
            str(self.cache_mb),
        ]
        if self.retain > 0:
            args += ["--retain-experiments", str(self.retain)]
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp)
        deadline = time.time() + 60
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("tunectl up did not start; see %s" % log.name)
            time.sleep(0.05)
        with open(ready) as f:
            self.control = json.load(f)["endpoints"]["control"]  # pinned for restarts

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def ctl(self, *args, timeout=60):
        r = subprocess.run(
            [self.tunectl, "--connect", self.control, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return r.returncode, r.stdout, r.stderr


def experiment_yaml(name, trials, results):
    return (
        "name: %s\n"
        "trainable: {builtin: mock}\n"
        "param_space:\n"
        "  lr: {loguniform: [0.0001, 0.1]}\n"
        "  mock_iterations: 3\n"
        "  sleep_s: 0.001\n"
        "num_samples: %d\n"
        "metric: loss\nmode: min\n"
        "resources_per_trial: {cpu: 1}\n"
        "results_dir: %s\n" % (name, trials, results)
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="folder of the Release binaries (BUILD/bin)")
    p.add_argument("--quick", action="store_true", help="CI size: 20 x 500 trials, 1 kill")
    p.add_argument("--experiments", type=int, default=0)
    p.add_argument("--trials", type=int, default=0, help="trials per experiment")
    p.add_argument("--at-once", type=int, default=0, help="experiments running at once")
    p.add_argument(
        "--kill-every",
        type=int,
        default=0,
        help="SIGKILL and restart the suite each time N more experiments ended",
    )
    p.add_argument("--sample-s", type=float, default=0)
    p.add_argument(
        "--settle-s",
        type=float,
        default=0,
        help="wait after the last end (and skip after a restart) before sampling",
    )
    p.add_argument("--cpus", type=int, default=4)
    p.add_argument("--retain", type=int, default=5, help="--retain-experiments of the suite")
    p.add_argument(
        "--release-after-ms", type=int, default=11000, help="--release-after-ms of the suite"
    )
    p.add_argument("--cache-mb", type=int, default=8, help="--finished-cache-mb of the suite")
    p.add_argument("--out", default="soak.jsonl", help="the samples' JSONL")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = p.parse_args()
    experiments = a.experiments or (20 if a.quick else 100)
    trials = a.trials or (500 if a.quick else 10000)
    at_once = a.at_once or (3 if a.quick else 4)
    kill_every = a.kill_every or (experiments // 2 if a.quick else 25)
    sample_s = a.sample_s or (2.0 if a.quick else 60.0)
    settle_s = a.settle_s or (a.release_after_ms / 1000.0 + 2 * sample_s)

    tmp = tempfile.mkdtemp(prefix="tunebus-soak-")
    results = os.path.join(tmp, "results")
    out = a.out
    suite = Suite(a.bin, tmp, a.cpus, a.retain, a.release_after_ms, a.cache_mb)
    samples = []
    state = {"trials_done": 0, "ended": 0, "restarting": False, "last_restart": 0.0}
    lock = threading.Lock()
    t0 = time.time()
    stop = threading.Event()

    def sample(event=""):
        with lock:
            if suite.proc is None or state["restarting"]:
                return None
            figures = proc_figures(suite.proc.pid)
            if figures is None:
                return None
            rss, fds, threads, parts = figures
            s = {
                "t_s": round(time.time() - t0, 3),
                "trials_done": state["trials_done"],
                "experiments_ended": state["ended"],
                "rss_bytes": rss,
                "rss_anon_bytes": parts.get("anon", 0),
                "rss_file_bytes": parts.get("file", 0),
                "fds": fds,
                "threads": threads,
                "store_bytes": du(os.path.join(tmp, "store")),
                "results_bytes": du(results),
                "suite_start": suite.starts,
                "since_restart_s": round(time.time() - state["last_restart"], 3),
            }
            if event:
                s["event"] = event
            samples.append(s)
            f.write(json.dumps(s) + "\n")
            f.flush()
            return s

    def sampler():
        while not stop.wait(sample_s):
            sample()

    seen = {}  # name -> trials done (max seen), until it ended
    ended = set()
    first_end_sample = last_end_sample = None
    submitted = 0
    kills = 0
    next_kill = kill_every
    ended_at_restart = 0
    state["segment_first_end"] = None
    with open(out, "w") as f:
        try:
            suite.start()
            state["last_restart"] = time.time()
            threading.Thread(target=sampler, daemon=True).start()
            deadline = time.time() + (170 if a.quick else 7 * 86400)
            while len(ended) < experiments:
                if time.time() > deadline:
                    raise RuntimeError("the soak ran past its time limit")
                rc, body, err = suite.ctl("-o", "json", "lsx", timeout=60)
                if rc != 0:
                    time.sleep(0.5)
                    continue
                rows = {r["name"]: r for r in json.loads(body)}
                running = 0
                for name in list(seen):
                    if name in ended:
                        continue
                    row = rows.get(name)
                    if row is None:  # deleted by retention: it had ended
                        done = True
                    else:
                        counts = row.get("counts", {})
                        n = sum(v for k, v in counts.items() if k in ("TERMINATED", "ERROR"))
                        seen[name] = max(seen[name], n)
                        done = row.get("status") in ENDED
                    if done:
                        ended.add(name)
                    else:
                        running += 1
                with lock:
                    state["trials_done"] = sum(seen.values())
                    state["ended"] = len(ended)
                if len(ended) >= 1 and first_end_sample is None:
                    first_end_sample = sample("first_end")
                if (
                    len(ended) > ended_at_restart
                    and state["segment_first_end"] is None
                    and time.time() - state["last_restart"] >= settle_s
                ):
                    # The first end after the newest restart, --settle-s or more after it (as
                    # the fit leaves out the samples before that): an end right after a restart
                    # comes before the resumed experiments are loaded.
                    state["segment_first_end"] = sample("segment_first_end")
                while running < at_once and submitted < experiments:
                    name = "soak%03d" % submitted
                    path = os.path.join(tmp, name + ".yaml")
                    with open(path, "w") as y:
                        y.write(experiment_yaml(name, trials, results))
                    rc, _, err = suite.ctl("run", "--detach", path)
                    if rc != 0:
                        raise RuntimeError("submitting %s failed: %s" % (name, err))
                    seen[name] = 0
                    submitted += 1
                    running += 1
                if len(ended) >= next_kill and len(ended) < experiments and running > 0:
                    # Mid-experiment: the running ones resume from their journals.
                    next_kill += kill_every
                    with lock:
                        state["restarting"] = True
                    time.sleep(1.0)  # the experiments just submitted run their first trials
                    suite.kill()
                    kills += 1
                    ended_at_restart = len(ended)
                    suite.start()
                    with lock:
                        state["restarting"] = False
                        state["last_restart"] = time.time()
                        state["segment_first_end"] = None
                time.sleep(0.5)
            time.sleep(settle_s)
            last_end_sample = sample("last_end_settled")
        finally:
            stop.set()
            suite.stop()

    wall = time.time() - t0
    # The fit: samples from the first end to the last, not within settle_s of a restart.
    span = [
        s
        for s in samples
        if first_end_sample
        and s["t_s"] >= first_end_sample["t_s"]
        and s["since_restart_s"] >= settle_s
    ]
    xs = [s["trials_done"] for s in span]
    growth = {}
    failures = []
    for key in ("fds", "threads", "store_bytes", "results_bytes", "rss_bytes"):
        slope = fit_slope(xs, [s[key] for s in span])
        rise = slope * ((max(xs) - min(xs)) if xs else 0)
        growth[key] = {
            "per_trial": slope,
            "rise_over_span": rise,
            "median": median([s[key] for s in span]),
        }
        if key in ("fds", "threads"):
            allowed = max(3.0, 0.1 * growth[key]["median"])
            growth[key]["allowed_rise"] = allowed
            if rise > allowed:
                failures.append("%s rise %.1f over the run > %.1f" % (key, rise, allowed))
    rss_first = first_end_sample["rss_bytes"] if first_end_sample else 0
    rss_last = last_end_sample["rss_bytes"] if last_end_sample else 0
    segment = state["segment_first_end"]
    rss_segment_first = segment["rss_bytes"] if segment else 0
    ratio = rss_last / rss_first if rss_first else 0
    segment_ratio = rss_last / rss_segment_first if rss_segment_first else 0
    if not rss_first or not rss_last:
        failures.append("no sample after the first or the last end")
    else:
        judged = [("the first end", rss_first, ratio)]
        if rss_segment_first:
            judged.append(
                ("the first end after the last restart", rss_segment_first, segment_ratio)
            )
        for what, base, r in judged:
            if r > 1.2:
                failures.append(
                    "RSS after the last end %.1f MB is %.0f%% above the %.1f MB after %s"
                    % (rss_last / 2**20, (r - 1) * 100, base / 2**20, what)
                )
    line = {
        "benchmark": "soak",
        "experiments": experiments,
        "trials_per_experiment": trials,
        "trials_run": sum(seen.values()),
        "at_once": at_once,
        "kills": kills,
        "retain_experiments": a.retain,
        "wall_s": round(wall, 1),
        "samples": len(samples),
        "sample_s": sample_s,
        "rss_mb_after_first_end": round(rss_first / 2**20, 1),
        "rss_mb_after_last_end": round(rss_last / 2**20, 1),
        "rss_ratio_last_to_first": round(ratio, 3),
        "rss_mb_after_first_end_since_restart": round(rss_segment_first / 2**20, 1),
        "rss_ratio_last_to_first_since_restart": round(segment_ratio, 3),
        "rss_rule_since_restart": (
            "judged"
            if rss_segment_first
            else "not judged: no experiment ended %.0f s (--settle-s) or more after the last "
            "restart" % settle_s
        ),
        "rss_mb_peak": round(max((s["rss_bytes"] for s in samples), default=0) / 2**20, 1),
        "growth": growth,
        "store_mb_end": round((last_end_sample or {}).get("store_bytes", 0) / 2**20, 1),
        "results_mb_end": round((last_end_sample or {}).get("results_bytes", 0) / 2**20, 1),
        "jsonl": os.path.abspath(out),
        "verdict": "fail" if failures else "pass",
        "failures": failures,
        "machine": machine(),
    }
    print(json.dumps(line), flush=True)
    if a.keep:
        print("soak: kept %s" % tmp, file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
