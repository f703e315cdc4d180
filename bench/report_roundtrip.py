"""The report round trip a Python function trainable pays per `train.report`,
beside a bare ZeroMQ request-reply over the same transport, in the same run (run by bench/run's
`report` step).

Prints one JSON object per line:

  report_baseline_zmq   a bare pyzmq REQ -> REP echo of the report's line over tcp://127.0.0.1
                        between this process and a child Python process: the transport's floor
                        for one request and its reply.
  report_pipe_only      bench/report_trainable.py (the trainable below) with this process
                        answering `continue` on its pipes at once: the Python side (the session's
                        exchange: JSON, the pipe write and the read of the decision) and two
                        pipe hops, with no worker, scheduler or store.
  report_roundtrip      the same trainable run by a real trial-worker, scheduler, resource-manager
                        and checkpoint-store, each its own process on tcp://127.0.0.1
                        (bench/e2e.py's Cluster), one trial of N reports, FIFO: each report goes
                        trainable -> pipe -> worker -> scheduler -> journal append (store, synced
                        write) -> scheduler -> decision -> worker -> pipe -> trainable. Once with
                        the store syncing (as deployed), once with `--no-sync`: the difference is
                        the fsync's share.

Figures are from the trainable's own clock around each `train.report` call (ms): p50, p99, mean,
and the loop's wall and CPU seconds; for each service process, its CPU microseconds and context
switches (all its threads: the loop and ZeroMQ's I/O thread) per report, over the experiment;
`ratio_to_baseline` is the p50 over the bare ZeroMQ p50 of this run; the target is a p50 of
0.25 ms or less. The full run reports the median of --runs runs by p50 (every run's p50
alongside).

Usage: report_roundtrip.py --bin BUILD/bin [--reports N] [--runs R] [--quick]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Cluster  # noqa: E402
from machine import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINABLE = os.path.join(HERE, "report_trainable.py")
LINE = b'{"i":0,"loss":1.0}\n'  # what the trainable's report writes, about

ECHO_SERVER = r"""
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.REP)
s.bind("tcp://127.0.0.1:*")
print(s.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
n = int(sys.argv[1])
for _ in range(n):
    s.send(b"continue\n" if s.recv() else b"")
"""


def quantiles_ms(latency_ns):
    s = sorted(latency_ns)

    def q(p):
        return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))] / 1e6

    return {
        "p50_ms": q(50),
        "p99_ms": q(99),
        "max_ms": s[-1] / 1e6,
        "mean_ms": statistics.fmean(s) / 1e6,
    }


def bare_zmq(n):
    """Latencies (ns) of n REQ -> REP round trips of LINE over tcp loopback."""
    server = subprocess.Popen(
        [sys.executable, "-c", ECHO_SERVER, str(n)], stdout=subprocess.PIPE, text=True
    )
    endpoint = server.stdout.readline().strip()
    ctx = zmq.Context()
    req = ctx.socket(zmq.REQ)
    req.connect(endpoint)
    clock = time.perf_counter_ns
    latency = []
    for _ in range(n):
        t0 = clock()
        req.send(LINE)
        req.recv()
        latency.append(clock() - t0)
    req.close(linger=0)
    ctx.term()
    server.wait(timeout=30)
    return latency


def pipe_only(n, tmp):
    """Runs the trainable with this process answering `continue` at once on its pipes."""
    out = os.path.join(tmp, "pipe_only.json")
    report_r, report_w = os.pipe()
    decision_r, decision_w = os.pipe()
    env = dict(
        os.environ,
        TUNEBUS_CONFIG=json.dumps({"reports": n, "out": out}),
        TUNEBUS_REPORT_FD=str(report_w),
        TUNEBUS_DECISION_FD=str(decision_r),
        TUNEBUS_TRIAL_DIR=tmp,
    )
    child = subprocess.Popen([sys.executable, TRAINABLE], env=env, pass_fds=(report_w, decision_r))
    os.close(report_w)
    os.close(decision_r)
    buffered = b""
    while True:
        chunk = os.read(report_r, 65536)
        if not chunk:
            break
        buffered += chunk
        lines = buffered.count(b"\n")
        buffered = buffered[buffered.rfind(b"\n") + 1 :]
        if lines:
            os.write(decision_w, b"continue\n" * lines)
    os.close(report_r)
    os.close(decision_w)
    if child.wait(timeout=60) != 0:
        raise RuntimeError("the trainable failed on the bare pipes")
    with open(out) as f:
        return json.load(f)


def spec(n, out):
    return (
        "name: reports\n"
        "trainable: {command: [%s, %s]}\n"
        "param_space: {reports: %d, out: %s}\n"
        "num_samples: 1\nmetric: loss\nmode: min\n"
        "resources_per_trial: {cpu: 1}\nresults_dir: results\nscheduler: fifo\n"
        % (json.dumps(sys.executable), json.dumps(TRAINABLE), n, json.dumps(out))
    )


SERVICES = ("store", "resource_manager", "scheduler", "worker")  # Cluster's start order


def thread_figures(pid):
    """(CPU seconds, context switches) of every thread of process `pid` so far."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, switches = 0, 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, task)) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu += int(fields[11]) + int(fields[12])
        with open("/proc/%d/task/%s/status" % (pid, task)) as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    switches += int(line.split()[1])
    return cpu / tick, switches


def through_services(a, n, sync):
    """One trial of n reports through the services as processes on tcp loopback; with each
    service's CPU microseconds and context switches (all its threads) per report."""
    c = Cluster(a.bin, 1, 1, transport="tcp", store_args=() if sync else ("--no-sync",))
    try:
        out = os.path.join(c.tmp, "report_latency.json")
        before = [thread_figures(p.pid) for p in c.procs]
        summary, wall = c.run_experiment(spec(n, out), timeout_s=600)
        after = [thread_figures(p.pid) for p in c.procs]
        with open(out) as f:
            figures = json.load(f)
    finally:
        c.stop()
    figures["experiment_status"] = summary["status"]
    figures["experiment_wall_s"] = wall
    figures["cpu_us_per_report"] = {
        name: (a_[0] - b[0]) / n * 1e6 for name, b, a_ in zip(SERVICES, before, after)
    }
    figures["context_switches_per_report"] = {
        name: (a_[1] - b[1]) / n for name, b, a_ in zip(SERVICES, before, after)
    }
    return figures


def median_by_p50(runs):
    runs = sorted(runs, key=lambda r: r["p50_ms"])
    median = dict(runs[len(runs) // 2])
    median["runs_p50_ms"] = [r["p50_ms"] for r in runs]
    median["figure"] = "median of %d runs" % len(runs)
    return median


def emit(obj):
    obj["machine"] = machine()
    print(json.dumps(obj), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True, help="folder of the service binaries (BUILD/bin)")
    p.add_argument("--quick", action="store_true", help="1,000 reports, 1 run (CI)")
    p.add_argument(
        "--reports", type=int, default=0, help="reports per run (default 10,000; --quick 1,000)"
    )
    p.add_argument("--runs", type=int, default=0, help="runs per figure (default 3; --quick 1)")
    a = p.parse_args()
    n = a.reports or (1000 if a.quick else 10000)
    runs = a.runs or (1 if a.quick else 3)
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "tunebus-report-bench-%d" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    try:
        base = median_by_p50([dict(quantiles_ms(bare_zmq(n))) for _ in range(runs)])
        emit(
            dict(
                base,
                benchmark="report_baseline_zmq",
                reports=n,
                transport="tcp://127.0.0.1",
                what="pyzmq REQ -> REP echo of one report line, process to process",
            )
        )
        pipes = []
        for _ in range(runs):
            f = pipe_only(n, tmp)
            pipes.append(
                dict(quantiles_ms(f["latency_ns"]), loop_s=f["loop_s"], trainable_cpu_s=f["cpu_s"])
            )
        pipe = median_by_p50(pipes)
        emit(
            dict(
                pipe,
                benchmark="report_pipe_only",
                reports=n,
                what="the trainable's train.report answered `continue` at once by a Python process "
                "on its pipes",
            )
        )
        for sync in (True, False):
            rows = []
            for _ in range(runs):
                f = through_services(a, n, sync)
                rows.append(
                    dict(
                        quantiles_ms(f["latency_ns"]),
                        loop_s=f["loop_s"],
                        trainable_cpu_s=f["cpu_s"],
                        experiment_wall_s=f["experiment_wall_s"],
                        experiment_status=f["experiment_status"],
                        cpu_us_per_report=f["cpu_us_per_report"],
                        context_switches_per_report=f["context_switches_per_report"],
                    )
                )
            row = median_by_p50(rows)
            emit(
                dict(
                    row,
                    benchmark="report_roundtrip",
                    reports=n,
                    store_sync=sync,
                    transport="tcp://127.0.0.1",
                    trainable="bench/report_trainable.py (train.report in a loop)",
                    baseline="report_baseline_zmq p50 (this run)",
                    baseline_p50_ms=base["p50_ms"],
                    ratio_to_baseline=row["p50_ms"] / base["p50_ms"],
                    pipe_only_p50_ms=pipe["p50_ms"],
                    target_p50_ms=0.25,
                    meets_target=row["p50_ms"] <= 0.25,
                )
            )
    finally:
        subprocess.run(["rm", "-rf", tmp], check=False)


if __name__ == "__main__":
    main()
