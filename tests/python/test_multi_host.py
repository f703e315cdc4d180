"""A function trainable runs on a worker host that has no copy of its file.

Two network namespaces stand for two hosts joined by a veth link (10.78.1.0/24): host "c" runs
the checkpoint-store, resource-manager and scheduler, and the driver script; host "a" runs the
only trial-worker, inside its own mount namespace where a tmpfs hides the script's folder. The
trainable is a function of a module beside the script (`model_lib.train_fn`), so cloudpickle
pickles it by reference and the worker must import `model_lib` from the working_dir the driver
shipped through the checkpoint-store. Every service and the worker run with CURVE keys made by
`tunectl keygen --suite` (docs/explanation/security.md), so the link carries only encrypted,
authenticated
traffic; the driver reaches the scheduler on its own host through an ipc:// control socket (a
file in the test's folder: no CURVE there, file permissions guard it). Needs root, iproute2 and
util-linux's unshare; skipped
with the reason otherwise, and failed instead of skipped under CI=true, as
tests/integration/multi_host_test.cpp does.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin")
PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")


def _sh(*args):
    return subprocess.run(list(args), capture_output=True, text=True).returncode == 0


def _unavailable(reason):
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but " + reason)
    pytest.skip(reason)


class Hosts:
    """Namespaces c and a with one veth link; every process started here is killed on close."""

    def __init__(self, folder):
        tag = str(os.getpid() % 100000)
        self.ns = {"c": "tbpy%sc" % tag, "a": "tbpy%sa" % tag}
        self.folder = folder
        self.processes = []

    def create(self):
        c, a = self.ns["c"], self.ns["a"]
        return (
            _sh("ip", "netns", "add", c)
            and _sh("ip", "netns", "add", a)
            and _sh("ip", "-n", c, "link", "set", "lo", "up")
            and _sh("ip", "-n", a, "link", "set", "lo", "up")
            and _sh(
                "ip",
                "link",
                "add",
                "tbpyc" + c[-6:],
                "netns",
                c,
                "type",
                "veth",
                "peer",
                "name",
                "tbpya" + a[-6:],
                "netns",
                a,
            )
            and _sh("ip", "-n", c, "addr", "add", "10.78.1.1/24", "dev", "tbpyc" + c[-6:])
            and _sh("ip", "-n", c, "link", "set", "tbpyc" + c[-6:], "up")
            and _sh("ip", "-n", a, "addr", "add", "10.78.1.2/24", "dev", "tbpya" + a[-6:])
            and _sh("ip", "-n", a, "link", "set", "tbpya" + a[-6:], "up")
        )

    def start(self, host, name, argv):
        log = open(os.path.join(self.folder, name + ".log"), "wb")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[host]] + argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.processes.append(proc)
        return proc

    def log(self, name):
        try:
            with open(os.path.join(self.folder, name + ".log"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def close(self):
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for ns in self.ns.values():
            _sh("ip", "netns", "del", ns)


MODEL_LIB = """
import os

def train_fn(config):
    from tunebus import train
    for i in range(3):
        train.report({"score": config["x"] * (i + 1),
                      "sees_original_file": int(os.path.exists(
                          os.path.join(config["original"], "model_lib.py"))),
                      "cwd_is_original": int(os.getcwd() == config["original"])})
"""

DRIVER = """
import json, os, sys
from tunebus import tune
from model_lib import train_fn

here = os.path.dirname(os.path.abspath(__file__))
results = tune.Tuner(
    train_fn,
    param_space={"x": tune.grid_search([1, 2, 3]), "original": here},
    tune_config=tune.TuneConfig(metric="score", mode="max"),
    run_config=tune.RunConfig(name="shipped", storage_path=sys.argv[1], verbose=0),
).fit()
print("ROWS " + json.dumps(sorted([r.metrics.get("score"), r.metrics.get("sees_original_file"),
                                   r.metrics.get("cwd_is_original")] for r in results)))
print("ERRORS %d" % results.num_errors)
"""


def test_function_trainable_runs_on_a_host_without_its_file(tmp_path):
    if os.geteuid() != 0:
        _unavailable("network namespaces need root (ip netns)")
    if not shutil.which("unshare") or not shutil.which("ip"):
        _unavailable("needs iproute2's ip and util-linux's unshare")
    hosts = Hosts(str(tmp_path))
    try:
        if not hosts.create():
            _unavailable("cannot create network namespaces and a veth link (ip netns add failed)")
        project = tmp_path / "project"
        project.mkdir()
        (project / "model_lib.py").write_text(textwrap.dedent(MODEL_LIB))
        (project / "driver.py").write_text(textwrap.dedent(DRIVER))
        results = tmp_path / "results"
        b = os.path.abspath(BIN)
        keys = str(tmp_path / "keys")
        keygen = subprocess.run(
            [os.path.join(b, "tunectl"), "keygen", "--suite", "--dir", keys],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert keygen.returncode == 0, keygen.stdout + keygen.stderr
        control = "ipc://%s" % (tmp_path / "control.sock")
        hosts.start(
            "c",
            "checkpoint-store",
            [
                os.path.join(b, "checkpoint-store"),
                "--endpoint",
                "tcp://0.0.0.0:5557",
                "--data-dir",
                str(tmp_path / "store"),
                "--keys-dir",
                keys,
            ],
        )
        hosts.start(
            "c",
            "resource-manager",
            [
                os.path.join(b, "resource-manager"),
                "--endpoint",
                "tcp://0.0.0.0:5556",
                "--events-endpoint",
                "tcp://127.0.0.1:5558",
                "--heartbeat-interval-ms",
                "200",
                "--keys-dir",
                keys,
            ],
        )
        hosts.start(
            "c",
            "scheduler",
            [
                os.path.join(b, "scheduler"),
                "--control",
                control,
                "--workers",
                "tcp://0.0.0.0:5559",
                "--events",
                "tcp://127.0.0.1:5560",
                "--rm",
                "tcp://127.0.0.1:5556",
                "--rm-events",
                "tcp://127.0.0.1:5558",
                "--store",
                "tcp://127.0.0.1:5557",
                "--keys-dir",
                keys,
            ],
        )
        # Host a: the worker's own mount namespace hides the project folder under a tmpfs.
        worker = [
            os.path.join(b, "trial-worker"),
            "--worker-id",
            "w-a",
            "--cpus",
            "2",
            "--heartbeat-interval-ms",
            "200",
            "--scheduler",
            "tcp://10.78.1.1:5559",
            "--rm",
            "tcp://10.78.1.1:5556",
            "--store",
            "tcp://10.78.1.1:5557",
            "--keys-dir",
            keys,
        ]
        hosts.start(
            "a",
            "w-a",
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                'mount -t tmpfs tmpfs "$0" && exec "$@"',
                str(project),
            ]
            + worker,
        )
        env = dict(
            os.environ,
            PYTHONPATH=os.path.abspath(PACKAGE),
            TUNEBUS_ADDRESS=control,
            TUNEBUS_TUNECTL=os.path.join(b, "tunectl"),
        )
        deadline = time.monotonic() + 20
        while True:  # the worker registered: tunectl workers lists it alive
            out = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    hosts.ns["c"],
                    os.path.join(b, "tunectl"),
                    "--connect",
                    control,
                    "-o",
                    "json",
                    "workers",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
            try:
                if any(w.get("alive") for w in json.loads(out.stdout or "[]")):
                    break
            except ValueError:
                pass
            assert time.monotonic() < deadline, hosts.log("w-a") + hosts.log("scheduler")
            time.sleep(0.2)
        driver = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                hosts.ns["c"],
                sys.executable,
                str(project / "driver.py"),
                str(results),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )
        assert driver.returncode == 0, driver.stdout + driver.stderr + hosts.log("w-a")
        rows = next(line for line in driver.stdout.splitlines() if line.startswith("ROWS "))
        assert "ERRORS 0" in driver.stdout, driver.stdout + hosts.log("w-a")
        # Every trial reached its last score [score, sees the project's model_lib.py, runs in the
        # project folder]: in a folder that is not the project's, on a host where the project's
        # folder is an empty tmpfs.
        assert json.loads(rows[5:]) == [[3, 0, 0], [6, 0, 0], [9, 0, 0]], rows
        assert "shipped" in os.listdir(results)
        for name in ("w-a", "scheduler"):  # the link's sockets ran CURVE
            with open(tmp_path / (name + ".log"), errors="replace") as f:
                assert "CURVE on every tcp:// socket" in f.read(), hosts.log(name)
    finally:
        hosts.close()
