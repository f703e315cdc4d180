"""Suites the deep-learning and resource tests run against, as real processes on loopback:

* `UpSuite`: one `tunectl up` (checkpoint-store, resource-manager, scheduler and one worker in
  one process) with the worker's `--cpus` / `--gpus` chosen by the test;
* `ProcessSuite`: checkpoint-store, resource-manager and scheduler processes and several
  trial-worker processes, each worker with its own id and resources.

Every service binds wildcard loopback ports and names them in its `--ready-file`
(libs/service/ready_file.hpp), so nothing guesses free ports. A driver reaches either through
`TUNEBUS_ADDRESS=<control>`; the suite outlives it, so a test can still fetch checkpoints
(`tunectl checkpoint export`) after the driver script exited. `close()` kills what it started.
Also `require(module, package)`: a test's optional module, failed for under CI=true and
skipped otherwise.
"""

import importlib
import json
import os
import signal
import subprocess
import time

import pytest

ANY = "tcp://127.0.0.1:*"
PACKAGE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))


def require(module, debian_package):
    """Imports `module`; when it is missing, fails the test under CI=true (the package is in
    scripts/install-deps's test group) and skips it otherwise."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        reason = "needs the Python module %s (Debian: %s): %s" % (module, debian_package, e)
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but this test " + reason)
        pytest.skip(reason)


class _Processes:
    def __init__(self, tunectl, folder):
        self.tunectl = tunectl
        self.bin = os.path.dirname(tunectl)
        self.folder = str(folder)
        os.makedirs(self.folder, exist_ok=True)
        self.processes = {}

    def spawn(self, name, argv, cpus=None, nice=0):
        """Starts `argv` with its output in <folder>/<name>.log, on the CPUs numbered in `cpus`
        (sched_setaffinity; None: any) and `nice` added to its niceness, both inherited by its
        children; returns the Popen."""
        log = open(os.path.join(self.folder, name + ".log"), "wb")

        def placed():
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
            if nice:
                os.nice(nice)

        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=placed if cpus is not None or nice else None,
        )
        log.close()
        self.processes[name] = proc
        return proc

    def spawn_ready(self, name, argv, timeout_s=60):
        """spawn() with `--ready-file`, then waits for the file; returns its endpoints."""
        ready = os.path.join(self.folder, name + ".ready.json")
        proc = self.spawn(name, argv + ["--ready-file", ready])
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(ready):
            assert proc.poll() is None, "%s exited %s: %s" % (name, proc.returncode, self.log(name))
            assert time.monotonic() < deadline, "%s wrote no ready file: %s" % (
                name,
                self.log(name),
            )
            time.sleep(0.05)
        with open(ready) as f:
            return json.load(f)["endpoints"]

    def log(self, name):
        try:
            with open(os.path.join(self.folder, name + ".log"), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def logs(self):
        return "\n".join("--- %s ---\n%s" % (n, self.log(n)) for n in self.processes)

    def ctl(self, *args, timeout_s=30):
        """`tunectl --connect <control> -o json ARGS` → the parsed JSON output."""
        out = subprocess.run(
            [self.tunectl, "--connect", self.control, "-o", "json"] + list(args),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        assert out.returncode == 0, "tunectl %s: %s %s" % (" ".join(args), out.stdout, out.stderr)
        return json.loads(out.stdout)

    def wait_workers(self, count, timeout_s=30):
        """Waits until `count` workers are alive; returns `tunectl workers`'s list."""
        deadline = time.monotonic() + timeout_s
        while True:
            workers = self.ctl("workers")
            if sum(1 for w in workers if w.get("alive")) >= count:
                return workers
            assert time.monotonic() < deadline, "workers: %s\n%s" % (workers, self.logs())
            time.sleep(0.1)

    def env(self):
        """The environment of a driver script that submits to this suite, with the source tree's
        Python package on its path."""
        return dict(
            os.environ,
            TUNEBUS_ADDRESS=self.control,
            TUNEBUS_TUNECTL=self.tunectl,
            PYTHONPATH=PACKAGE,
        )

    def close(self):
        for proc in reversed(list(self.processes.values())):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class UpSuite(_Processes):
    """`tunectl up` with `args` (e.g. ["--cpus", "2", "--gpus", "2"]); its worker is the only
    one."""

    def __init__(self, tunectl, folder, args=()):
        super().__init__(tunectl, folder)
        endpoints = self.spawn_ready(
            "suite",
            [
                tunectl,
                "up",
                "--control",
                ANY,
                "--events",
                ANY,
                "--data-dir",
                os.path.join(self.folder, "store"),
            ]
            + list(args),
        )
        self.control = endpoints["control"]
        self.wait_workers(1)


class ProcessSuite(_Processes):
    """checkpoint-store, resource-manager, scheduler, and one trial-worker per entry of
    `workers` ({worker id: extra flags such as ["--cpus", "1"]}); `placed` ({worker id: {"cpus":
    CPU numbers, "nice": increment}}) runs a worker and its trainables on those CPUs only and at
    that niceness, as on a slower host."""

    def __init__(self, tunectl, folder, workers, placed=None):
        super().__init__(tunectl, folder)
        b = self.bin
        store = self.spawn_ready(
            "checkpoint-store",
            [
                os.path.join(b, "checkpoint-store"),
                "--endpoint",
                ANY,
                "--data-dir",
                os.path.join(self.folder, "store"),
            ],
        )["endpoint"]
        rm = self.spawn_ready(
            "resource-manager",
            [
                os.path.join(b, "resource-manager"),
                "--endpoint",
                ANY,
                "--events-endpoint",
                ANY,
                "--heartbeat-interval-ms",
                "200",
            ],
        )
        self._scheduler_argv = lambda control, workers, events: [
            os.path.join(b, "scheduler"),
            "--control",
            control,
            "--workers",
            workers,
            "--events",
            events,
            "--rm",
            rm["endpoint"],
            "--rm-events",
            rm["events-endpoint"],
            "--store",
            store,
        ]
        scheduler = self.spawn_ready("scheduler", self._scheduler_argv(ANY, ANY, ANY))
        self.scheduler_endpoints = scheduler
        self.control = scheduler["control"]
        for worker_id, flags in workers.items():
            self.spawn(
                worker_id,
                [
                    os.path.join(b, "trial-worker"),
                    "--worker-id",
                    worker_id,
                    "--scheduler",
                    scheduler["workers"],
                    "--rm",
                    rm["endpoint"],
                    "--store",
                    store,
                    "--heartbeat-interval-ms",
                    "200",
                    "--cache-dir",
                    os.path.join(self.folder, "cache-" + worker_id),
                ]
                + list(flags),
                **(placed or {}).get(worker_id, {}),
            )
        self.wait_workers(len(workers))

    def restart_scheduler(self, pause_s=0.5):
        """Kills the scheduler with SIGKILL and starts a new one on the same endpoints (the
        workers and drivers reconnect there), after `pause_s` seconds."""
        proc = self.processes.pop("scheduler")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        time.sleep(pause_s)
        ready = os.path.join(self.folder, "scheduler.ready.json")
        os.unlink(ready)
        e = self.scheduler_endpoints
        self.spawn_ready("scheduler", self._scheduler_argv(e["control"], e["workers"], e["events"]))
