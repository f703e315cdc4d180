"""Tuner.fit() against a connected suite started with CURVE keys (`tunectl keygen --suite`):
with TUNEBUS_KEYS_DIR set the driver reaches the control socket as the operator key "tunectl",
serves its driver link as a CURVE server that accepts only the scheduler's key, and names its
public key in the experiment (driver.server_key), which the scheduler's allow-list holds as an
operator's. A driver-side stopper and a sample_from then work as without keys, and a client
without keys gets nothing."""

import json
import os
import subprocess
import time

import pytest

import tunebus
from tunebus import _control, train, tune
from tunebus._errors import TuneError


@pytest.fixture(autouse=True)
def _tunectl(tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    # The trainables below are pickled by reference to this module: ship its folder.
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def secure_suite(tmp_path, tunectl, monkeypatch):
    """`tunectl up` serving tcp:// with the suite's keys, its scheduler holding the key named
    "scheduler"; yields (control endpoint, keys folder) with this process's TUNEBUS_KEYS_DIR set."""
    keys = str(tmp_path / "keys")
    made = subprocess.run(
        [tunectl, "keygen", "--suite", "--dir", keys], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    ready = tmp_path / "ready.json"
    env = dict(os.environ, TUNEBUS_KEYS_DIR=keys, TUNEBUS_KEY_NAME="scheduler")
    log = open(tmp_path / "suite.log", "wb")
    up = subprocess.Popen(
        [
            tunectl,
            "up",
            "--control",
            "tcp://127.0.0.1:*",
            "--events",
            "tcp://127.0.0.1:*",
            "--ready-file",
            str(ready),
            "--data-dir",
            str(tmp_path / "store"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and up.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), (tmp_path / "suite.log").read_text()
        endpoint = json.loads(ready.read_text())["endpoints"]["control"]
        monkeypatch.setenv("TUNEBUS_KEYS_DIR", keys)
        monkeypatch.delenv("TUNEBUS_KEY_NAME", raising=False)
        tunebus.init(address=endpoint)
        yield endpoint, keys
    finally:
        tunebus.init(address=None)
        up.terminate()
        up.wait(20)
        log.close()


def endless(config):
    i = 0
    while True:
        i += 1
        train.report({"score": i + config["y"]})


def test_driver_stopper_and_sample_from_work_over_curve(tmp_path, secure_suite, monkeypatch):
    endpoint, keys = secure_suite
    tuner = tune.Tuner(
        endless,
        param_space={
            "x": tune.grid_search([1, 2]),
            "y": tune.sample_from(lambda spec: spec.config.x * 10),
        },
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(
            name="curved",
            storage_path=str(tmp_path),
            verbose=0,
            stop=lambda trial_id, result: result["training_iteration"] >= 4,
        ),
    )
    grid = tuner.fit()
    assert grid.num_errors == 0 and grid.num_terminated == 2
    assert sorted(r.metrics["score"] for r in grid) == [14, 24]
    assert all(r.metrics["training_iteration"] == 4 for r in grid)
    # The submitted experiment named the driver's key for its link, which serves both the
    # stopper and the sample_from values (no driver searcher).
    with open(os.path.join(keys, "tunectl.key")) as f:
        public = [line.split('"')[1] for line in f if "public-key" in line][0]
    with open(os.path.join(grid.experiment_path, "tunebus_tuner.json")) as f:
        exp = json.load(f)["experiment"]
    assert exp["driver"]["server_key"] == public and exp["driver"]["on_result"] is True
    assert "search" not in exp

    # Without keys the suite answers nothing.
    monkeypatch.delenv("TUNEBUS_KEYS_DIR")
    with pytest.raises(TuneError) as e:
        _control.ControlClient(endpoint, timeout_s=1).request("get_experiment")
    assert e.value.code == "unavailable"
