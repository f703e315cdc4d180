"""Driver callbacks across a scheduler SIGKILL: the four services run as their own processes on
loopback (suites.ProcessSuite); `tune.run` with a recording callback runs in a thread while the test
kills the scheduler with SIGKILL mid-experiment and starts a new one on the same endpoints. The new
scheduler resumes the experiment from its journal, asks the driver again about the results it held
(a new driver-link session) and publishes its events again; still every hook is called once per
event: each result once, in order, each trial's start and end once, the experiment's end once.
Ground truth: the trials' result.json files."""

import json
import os
import threading
import time

import pandas as pd
import pytest
from suites import ProcessSuite

import tunebus
from tunebus import tune


@pytest.fixture
def suite(tmp_path, tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))
    s = ProcessSuite(tunectl, tmp_path / "suite", {"w1": ["--cpus", "2"]})
    try:
        tunebus.init(address=s.control)
        yield s
    finally:
        tunebus.init(address=None)
        s.close()


def paced(config):
    for i in range(config["n"]):
        time.sleep(0.25)
        tune.report(i=i + 1)


class Recorder(tune.Callback):
    def __init__(self):
        self.calls = []

    def on_trial_start(self, iteration, trials, trial, **info):
        self.calls.append(("start", trial.trial_id, trial.attempt))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.calls.append(("result", trial.trial_id, result["i"]))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.calls.append(("complete", trial.trial_id, None))

    def on_trial_error(self, iteration, trials, trial, **info):
        self.calls.append(("error", trial.trial_id, None))

    def on_experiment_end(self, trials, **info):
        self.calls.append(("end", None, len(trials)))


def test_no_hook_is_called_twice_across_a_scheduler_sigkill(suite, tmp_path):
    recorder = Recorder()
    out = {}

    def run():
        try:
            out["analysis"] = tune.run(
                paced,
                name="restarted",
                storage_path=str(tmp_path / "r"),
                config={"n": 12, "x": tune.grid_search([1, 2])},
                callbacks=[recorder],
                verbose=0,
            )
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            out["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while sum(1 for c in recorder.calls if c[0] == "result") < 6:
        assert time.monotonic() < deadline and thread.is_alive(), (out, suite.log("scheduler"))
        time.sleep(0.05)
    at_kill = len(recorder.calls)
    suite.restart_scheduler()
    thread.join(120)
    assert not thread.is_alive()
    assert "error" not in out, (out, suite.log("scheduler"))
    analysis = out["analysis"]
    calls = recorder.calls
    assert calls[-1] == ("end", None, 2) and [c[0] for c in calls].count("end") == 1
    for trial in analysis.trials:
        rows = pd.read_json(os.path.join(trial.logdir, "result.json"), lines=True, dtype=False)
        assert list(rows["i"]) == list(range(1, 13))  # ground truth: each result once
        mine = [c for c in calls if c[1] == trial.trial_id]
        assert [c[2] for c in mine if c[0] == "result"] == list(range(1, 13)), mine
        assert [c for c in mine if c[0] == "start"] == [("start", trial.trial_id, 1)]
        assert mine[-1] == ("complete", trial.trial_id, None)
        assert [c[0] for c in mine].count("complete") == 1
    # Results came after the restart, from the experiment the new scheduler resumed.
    assert any(c[0] == "result" for c in calls[at_kill:])
    assert "resum" in suite.log("scheduler").lower()
    with open(os.path.join(analysis.experiment_path, "experiment_state.json")) as f:
        assert json.load(f)["status"] == "FINISHED"
