"""Tuner.fit() on a real suite: the embedded `tunectl up` this process starts (shared by every
test of the module, which is also "several fit() calls in one process"), a connected one, and
scripts run as their own processes."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import tunebus
from tunebus import train, tune
from tunebus._errors import TuneError

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python")


@pytest.fixture(autouse=True)
def _tunectl(tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    # The trainables below are pickled by reference to this module: ship its folder.
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))


def _run(trainable, tmp_path, name, param_space=None, tune_config=None, **run):
    run.setdefault("verbose", 0)
    tuner = tune.Tuner(
        trainable,
        param_space=param_space or {"x": tune.grid_search([1, 2])},
        tune_config=tune_config or tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(name=name, storage_path=str(tmp_path), **run),
    )
    return tuner.fit()


def linear(config):
    for i in range(3):
        train.report({"score": config["x"] * (i + 1)})


def test_function_trainable_results_match_the_files(tmp_path):
    grid = _run(linear, tmp_path, "linear")
    assert len(grid) == 2 and grid.num_errors == 0 and grid.num_terminated == 2
    best = grid.get_best_result()
    assert best.config["x"] == 2 and best.metrics["score"] == 6
    assert grid.get_best_result(scope="all").config["x"] == 2
    assert grid.get_best_result(mode="min").config["x"] == 1
    import pandas as pd

    df = grid.get_dataframe().sort_values("trial_id").reset_index(drop=True)
    for result in grid:
        rows = pd.read_json(os.path.join(result.path, "result.json"), lines=True, dtype=False)
        assert list(rows["score"]) == list(result.metrics_dataframe["score"])
        last = df[df["trial_id"] == result.trial_id].iloc[0]
        assert last["score"] == rows["score"].iloc[-1]
        assert last["config/x"] == result.config["x"]


class Counter(tune.Trainable):
    """Counts; fails once at iteration 3 (a marker file says it did), so the retry must restore
    its checkpoint and go on counting from 2 (checkpoint_frequency 1)."""

    def setup(self, config):
        self.count = 0
        self.marker = config["marker"]

    def step(self):
        self.count += 1
        if self.count == 3 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("crash once")
        return {"score": self.count, "restored_count": self.count, "done": self.count >= 5}

    def save_checkpoint(self, checkpoint_dir):
        return {"count": self.count}

    def load_checkpoint(self, checkpoint):
        self.count = checkpoint["count"]


def test_class_trainable_resumes_from_its_checkpoint_after_a_crash(tmp_path):
    marker = str(tmp_path / "crashed")
    grid = _run(
        Counter,
        tmp_path,
        "counter",
        param_space={"marker": marker},
        failure_config=tune.FailureConfig(max_failures=1),
        checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1),
    )
    assert os.path.exists(marker)
    result = grid[0]
    assert result.error is None, result.error
    scores = [r["score"] for r in result._rows]
    assert scores == [1, 2, 3, 4, 5]  # the retry restored count 2: no restart from 1
    assert result.metrics["training_iteration"] == 5


def saving(config):
    for i in range(3):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump({"i": i}, f)
        train.report({"score": i}, checkpoint=train.Checkpoint.from_directory(d))
        shutil.rmtree(d)  # the script deletes its folder at once: report copied it


def _check_checkpoint(grid):
    ckpt = grid[0].checkpoint
    assert ckpt is not None
    with ckpt.as_directory() as d:
        with open(os.path.join(d, "state.json")) as f:
            assert json.load(f) == {"i": 2}
    assert grid[0].best_checkpoints[-1][1]["score"] == 2


def test_reported_checkpoint_is_kept_after_the_script_deletes_its_folder(tmp_path):
    grid = _run(
        saving,
        tmp_path,
        "saving",
        param_space={"x": 1},
        checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1),
    )
    _check_checkpoint(grid)


def test_reported_checkpoint_is_stored_without_a_checkpoint_frequency(tmp_path):
    _check_checkpoint(_run(saving, tmp_path, "saving2", param_space={"x": 1}))


def endless(config):
    i = 0
    while True:
        i += 1
        train.report({"score": i})


def test_endless_trainable_stops_at_the_stop_criterion(tmp_path):
    grid = _run(endless, tmp_path, "endless", param_space={"x": 1}, stop={"training_iteration": 3})
    assert grid.num_errors == 0 and grid[0].metrics["training_iteration"] == 3


def test_with_resources_and_with_parameters(tmp_path):
    def fn(config, offset):
        train.report({"score": config["x"] + offset, "trial": train.get_context().get_trial_id()})

    wrapped = tune.with_resources(tune.with_parameters(fn, offset=10), {"cpu": 1})
    grid = _run(wrapped, tmp_path, "resources")
    assert sorted(r.metrics["score"] for r in grid) == [11, 12]
    assert all(r.metrics["trial"] == r.trial_id for r in grid)


@pytest.mark.parametrize("form", ["callable", "stopper"])
def test_driver_side_stoppers_stop_at_the_chosen_result(tmp_path, form):
    class AtFour(tune.Stopper):
        def __call__(self, trial_id, result):
            return result["score"] >= 4

    stop = AtFour() if form == "stopper" else (lambda trial_id, result: result["score"] >= 4)
    grid = _run(endless, tmp_path, "stopper-" + form, param_space={"x": 1}, stop=stop)
    assert grid[0].metrics["score"] == 4


def test_sample_from_is_computed_in_the_driver_for_each_trial(tmp_path):
    # The scheduler's variant generator: grid x num_samples trials, each sample_from function
    # called in the driver with the trial's grid value and random draw in spec.config.
    def fn(config):
        train.report({"score": config["m"]["y"], "r": config["r"], "z": config["z"]})

    grid = _run(
        fn,
        tmp_path,
        "samplefrom",
        param_space={
            "x": tune.grid_search([1, 2]),
            "r": tune.uniform(0, 1),
            "m": {"y": tune.sample_from(lambda spec: spec.config.x * 10)},
            "z": tune.sample_from(lambda spec: spec.config.r + spec.config.m.y),
        },
        tune_config=tune.TuneConfig(metric="score", mode="max", num_samples=2),
    )
    assert grid.num_errors == 0
    assert sorted(r.metrics["score"] for r in grid) == [10, 10, 20, 20]
    assert all(r.config["m"]["y"] == r.config["x"] * 10 for r in grid)
    assert all(r.metrics["z"] == r.metrics["r"] + r.metrics["score"] for r in grid)
    assert len({r.metrics["r"] for r in grid}) == 4


def test_a_failing_sample_from_ends_the_search_and_fit_raises_it(tmp_path):
    # Ray's variant generator raises the function's exception out of fit(); the trial drawn
    # before it runs to its end, no later one starts.
    def fn(config):
        train.report({"score": config["y"]})

    def y(spec):
        if spec.config.x == 2:
            raise ZeroDivisionError("no y for x=2")
        return spec.config.x

    with pytest.raises(ZeroDivisionError, match="no y for x=2"):
        _run(
            fn,
            tmp_path,
            "samplefrom-error",
            param_space={"x": tune.grid_search([1, 2, 3]), "y": tune.sample_from(y)},
        )
    results = list((tmp_path / "samplefrom-error").glob("*/result.json"))
    assert len(results) == 1, results
    assert json.loads(results[0].read_text().splitlines()[-1])["score"] == 1


def pbt_fn(config):
    step = 0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            with open(os.path.join(d, "step.json")) as f:
                step = json.load(f)["step"]
    while step < 6:
        step += 1
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "step.json"), "w") as f:
            json.dump({"step": step}, f)
        train.report(
            {"score": config["lr"] * step, "lr": config["lr"]},
            checkpoint=train.Checkpoint.from_directory(d),
        )
        shutil.rmtree(d)


def test_pbt_function_mutation_is_sampled_in_the_driver(tmp_path):
    # resample_probability=1: every explore takes the driver's fresh sample of the lambda.
    drawn = (0.5, 0.25)
    scheduler = tune.schedulers.PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=2,
        resample_probability=1.0,
        hyperparam_mutations={"lr": lambda: random.choice(drawn)},
    )
    grid = _run(
        pbt_fn,
        tmp_path,
        "pbt-driver",
        param_space={"lr": tune.grid_search([0.01, 0.02, 0.03, 0.04])},
        tune_config=tune.TuneConfig(metric="score", mode="max", scheduler=scheduler),
    )
    assert grid.num_errors == 0
    rows = [row for r in grid for row in _rows(r.path)]
    exploited = [row for row in rows if row.get("lr") in drawn]
    assert exploited, "no result ran with a driver-sampled lr: %s" % [r.get("lr") for r in rows]
    assert all(row["training_iteration"] > 2 for row in exploited)
    assert max(row["training_iteration"] for row in rows) == 6


def _rows(trial_path):
    with open(os.path.join(trial_path, "result.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_api_errors_are_typed(tmp_path):
    with pytest.raises(TuneError) as e:
        _run(linear, tmp_path, "bad", param_space={"x": tune.loguniform(-1, 1)})
    assert e.value.code == "invalid_argument" and "loguniform" in e.value.message
    _run(linear, tmp_path, "for_errors")
    with pytest.raises(TuneError) as e:
        tunebus.Experiment().stop("no_such_trial")
    assert e.value.code == "not_found"


def test_a_connected_run_uses_a_separate_suite(tmp_path, tunectl):
    ready = tmp_path / "ready.json"
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
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        endpoint = json.loads(ready.read_text())["endpoints"]["control"]
        tunebus.init(address=endpoint)
        try:
            grid = _run(linear, tmp_path, "connected")
            exp = tunebus.Experiment("connected", connect=endpoint)
            assert exp.status()["counts"]["TERMINATED"] == 2
            assert len(exp.results()) == 2 and grid.num_terminated == 2
        finally:
            tunebus.init(address=None)
    finally:
        up.terminate()
        up.wait(20)


SCRIPT = textwrap.dedent(
    """\
    import os, sys
    sys.path.insert(0, {package!r})
    from tunebus import tune, train
    from tunebus import _suite

    with open("marker.txt", "a") as f:   # top level, no __main__ guard
        f.write("top\\n")

    def fn(config):
        for i in range({iterations}):
            train.report({{"score": i}})

    tuner = tune.Tuner(fn, param_space={{"x": tune.grid_search([1, 2])}},
                       run_config=tune.RunConfig(name="script", storage_path="results", verbose=0))
    print("suite", _suite.endpoint()[0] and _suite._embedded.process.pid, flush=True)
    grid = tuner.fit()
    print("trials", len(grid), grid.num_errors, flush=True)
"""
)


def _gone(pid, within_s):
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        state = (
            open("/proc/%d/stat" % pid).read().split()[2]
            if os.path.exists("/proc/%d" % pid)
            else "X"
        )
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_a_script_without_main_guard_runs_once_and_leaves_nothing(tmp_path, tunectl):
    (tmp_path / "script.py").write_text(
        SCRIPT.format(package=os.path.abspath(PACKAGE), iterations=2)
    )
    # Files of the script's folder are linked into the staging folder, never written through.
    for name in ("experiment.yaml", "_tunebus_experiment.yaml"):
        (tmp_path / name).write_text("mine\n")
    out = subprocess.run(
        [sys.executable, "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, TUNEBUS_TUNECTL=tunectl),
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "marker.txt").read_text() == "top\n"
    for name in ("experiment.yaml", "_tunebus_experiment.yaml"):
        assert (tmp_path / name).read_text() == "mine\n"
    assert "trials 2 0" in out.stdout
    suite_pid = int(out.stdout.split("suite ")[1].split()[0])
    assert _gone(suite_pid, 10)


def test_a_killed_driver_leaves_no_suite_running(tmp_path, tunectl):
    (tmp_path / "script.py").write_text(
        SCRIPT.format(package=os.path.abspath(PACKAGE), iterations=10**9)
    )
    proc = subprocess.Popen(
        [sys.executable, "script.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, TUNEBUS_TUNECTL=tunectl),
    )
    line = proc.stdout.readline()
    suite_pid = int(line.split()[1])
    time.sleep(2)  # trials running
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _gone(suite_pid, 10)


RESUMABLE = textwrap.dedent(
    """\
    import sys, time
    sys.path.insert(0, {package!r})
    from tunebus import tune, train

    def fn(config):
        i = 0
        while True:
            i += 1
            time.sleep(0.05)
            train.report({{"score": i}})

    if sys.argv[1] == "fit":
        tuner = tune.Tuner(fn, run_config=tune.RunConfig(
            name="resumable", storage_path="results", verbose=0, stop={{"training_iteration": 60}}))
        print("fitting", flush=True)
    else:
        tuner = tune.Tuner.restore(sys.argv[2], fn)
    grid = tuner.fit()
    print("done", grid[0].metrics["training_iteration"], grid.num_errors, flush=True)
    print("path", grid.experiment_path, flush=True)
"""
)


def _fit_until_a_result(tmp_path, tunectl, results):
    """Starts tmp_path/script.py `fit` in a session of its own (so a Ctrl-C reaches the driver
    and its tunectl) and returns (process, env) once a trial under `results` wrote a result (or
    60 s passed)."""
    env = dict(os.environ, TUNEBUS_TUNECTL=tunectl, TUNEBUS_DATA_DIR=str(tmp_path / "store"))
    proc = subprocess.Popen(
        [sys.executable, "script.py", "fit"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout.readline().strip() == "fitting"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(results.glob("*/result.json")):
        time.sleep(0.1)
    return proc, env


def test_an_interrupted_fit_is_restored_by_a_later_driver(tmp_path, tunectl):
    # Ctrl-C interrupts the experiment resumably; a new driver on the same TUNEBUS_DATA_DIR
    # continues it with Tuner.restore(path, trainable) to its stop criterion.
    (tmp_path / "script.py").write_text(RESUMABLE.format(package=os.path.abspath(PACKAGE)))
    results = tmp_path / "results" / "resumable"
    proc, env = _fit_until_a_result(tmp_path, tunectl, results)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the driver and tunectl run
    _, err = proc.communicate(timeout=60)
    assert "Tuner.restore(" in err, err
    rows_before = len(next(results.glob("*/result.json")).read_text().splitlines())
    assert 0 < rows_before < 60
    out = subprocess.run(
        [sys.executable, "script.py", "restore", str(results)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "done 60 0" in out.stdout
    assert "path %s\n" % results in out.stdout  # the same run continued, not a new one


SAMPLED = textwrap.dedent(
    """\
    import os, sys, time
    sys.path.insert(0, {package!r})
    from tunebus import tune, train

    def fn(config):
        while True:
            train.report({{"y": config["y"]}})
            if os.path.exists(config["gate"]):
                return
            time.sleep(0.05)

    if sys.argv[1] == "fit":
        tuner = tune.Tuner(
            fn,
            param_space={{"gate": {gate!r}, "y": tune.sample_from(lambda spec: sys.argv[1])}},
            tune_config=tune.TuneConfig(num_samples=36),
            run_config=tune.RunConfig(name="sampled", storage_path="results", verbose=0))
        print("fitting", flush=True)
    else:
        open({gate!r}, "w").close()
        tuner = tune.Tuner.restore(sys.argv[2], fn)
    grid = tuner.fit()
    ys = [r.config["y"] for r in grid]
    print("done", len(ys), grid.num_errors, flush=True)
    print("drivers", ys.count("fit"), ys.count("restore"), flush=True)
"""
)


def test_a_restored_driver_computes_the_later_trials_sample_from(tmp_path, tunectl):
    # The sample_from function (naming the driver that ran it) is kept with the results folder.
    # The variant generator keeps at most 32 unstarted trials (Ray's _max_pending_trials) and the
    # trials wait for the gate, so at Ctrl-C at least 2 of the 36 are not drawn yet: the restored
    # driver computes theirs.
    gate = str(tmp_path / "gate")
    (tmp_path / "script.py").write_text(SAMPLED.format(package=os.path.abspath(PACKAGE), gate=gate))
    results = tmp_path / "results" / "sampled"
    proc, env = _fit_until_a_result(tmp_path, tunectl, results)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Tuner.restore(" in err, err
    out = subprocess.run(
        [sys.executable, "script.py", "restore", str(results)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    assert "done 36 0" in out.stdout, out.stdout + out.stderr
    fit, restore = map(int, out.stdout.split("drivers ", 1)[1].split())
    assert fit >= 1 and restore >= 2 and fit + restore == 36, out.stdout


def test_verbose_2_prints_each_result(tmp_path, capfd):
    _run(linear, tmp_path, "verbose2", param_space={"x": 3}, verbose=2)
    out = capfd.readouterr().out
    assert 'iter 3: {"score": 9}' in out, out
    assert "Experiment verbose2 FINISHED" in out


def sleeps(config):
    train.report({"score": 1})
    time.sleep(60)


def test_an_embedded_suite_that_dies_ends_fit_with_its_exit_code_and_log(tmp_path):
    """SIGKILL of the embedded `tunectl up` during fit(): fit raises TuneError unavailable naming
    the suite's exit (signal 9 as code -9) and its log, without the 60 s wait a connected
    scheduler gets; the next fit() starts a new suite, and the dead one's folder is removed."""
    import threading

    from tunebus import _suite

    def kill_after_first_result():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if list(tmp_path.glob("dies/*/result.json")):
                _suite._embedded.process.kill()
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_after_first_result, daemon=True)
    killer.start()
    started = time.monotonic()
    with pytest.raises(TuneError) as raised:
        _run(sleeps, tmp_path, "dies", param_space={"x": 1})
    waited = time.monotonic() - started
    killer.join()
    assert raised.value.code == "unavailable"
    assert "the embedded suite (tunectl up) exited with code -9" in raised.value.message
    with open(_suite._embedded.log_path, errors="replace") as f:
        log = f.read().strip()
    assert log and log[-200:] in raised.value.message  # its log's last lines
    assert waited < 45, waited  # one request's 10 s timeout, not the 60 s wait for a scheduler
    dead = _suite._embedded.folder
    grid = _run(linear, tmp_path / "after", "after", param_space={"x": 3})
    assert grid.num_terminated == 1
    assert not os.path.exists(dead)
