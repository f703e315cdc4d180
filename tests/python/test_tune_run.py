"""Ray Tune scripts in their classic form on a real embedded suite: `tune.run` and its
`ExperimentAnalysis` (every member against the results files), `tune.ExperimentAnalysis(path)`
in a new process, Ray 1.x's function API (`tune.report(**kw)`, `with tune.checkpoint_dir(step)`,
the `checkpoint_dir` argument), `register_trainable`, `resume`, `restore`, callbacks (each hook's
order and count, `should_checkpoint` from a callback, a raising callback) and `CLIReporter`."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pandas as pd
import pytest

import tunebus
from tunebus import tune
from tunebus._errors import TuneError

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python")

# Each trial's metric over 10 iterations, chosen so the five scopes pick different trials:
# last: c (9), all: b (20 at iteration 1), avg and last-10-avg: a (8), last-5-avg: d (8.8).
CURVES = {
    "a": [8] * 10,
    "b": [20] + [0] * 9,
    "c": [0] * 9 + [9],
    "d": [0] * 5 + [8.8] * 5,
}


@pytest.fixture(autouse=True)
def _tunectl(tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))


def restored_step(checkpoint_dir):
    """The step a Ray 1.x `checkpoint_dir` argument says to start from (0 without one)."""
    if not checkpoint_dir:
        return 0
    with open(os.path.join(checkpoint_dir, "state.json")) as f:
        return json.load(f)["step"]


def save_step(step):
    """Ray 1.x's `with tune.checkpoint_dir(step)`: the checkpoint of the next report."""
    with tune.checkpoint_dir(step=step) as folder:
        with open(os.path.join(folder, "state.json"), "w") as f:
            json.dump({"step": step + 1}, f)


def curve_v1(config, checkpoint_dir=None):
    """Ray 1.x's function API: `checkpoint_dir` argument, `tune.checkpoint_dir`, `tune.report`."""
    for step in range(restored_step(checkpoint_dir), 10):
        save_step(step)
        tune.report(
            score=CURVES[config["curve"]][step],
            step=step,
            trial=tune.get_trial_id(),
            dir=os.path.basename(tune.get_trial_dir()),
        )


def _analysis(tmp_path, name="curves", **kwargs):
    kwargs.setdefault("verbose", 0)
    return tune.run(
        curve_v1,
        name=name,
        storage_path=str(tmp_path),
        metric="score",
        mode="max",
        config={"curve": tune.grid_search(sorted(CURVES))},
        keep_checkpoints_num=3,
        checkpoint_score_attr="score",
        **kwargs,
    )


def test_run_returns_an_experiment_analysis_that_matches_the_files(tmp_path):
    analysis = _analysis(tmp_path)
    by_curve = {t.config["curve"]: t for t in analysis.trials}
    assert sorted(by_curve) == sorted(CURVES)
    # The scopes of Ray's get_best_trial.
    assert analysis.best_trial is by_curve["c"]
    assert analysis.get_best_trial("score", "max", "all") is by_curve["b"]
    assert analysis.get_best_trial("score", "max", "avg") is by_curve["a"]
    assert analysis.get_best_trial("score", "max", "last-5-avg") is by_curve["d"]
    assert analysis.get_best_trial("score", "max", "last-10-avg") is by_curve["a"]
    assert analysis.get_best_trial("score", "min", "all").config["curve"] in ("b", "c", "d")
    assert analysis.get_best_config("score", "max", "avg") == {"curve": "a"}
    with pytest.raises(ValueError):
        analysis.get_best_trial("score", "max", "first")
    assert analysis.best_config == {"curve": "c"}
    assert analysis.best_logdir == by_curve["c"].logdir == by_curve["c"].local_path
    assert analysis.best_result["score"] == 9 and analysis.best_result["training_iteration"] == 10
    # Every frame against the trial's own files.
    for trial in analysis.trials:
        rows = pd.read_json(os.path.join(trial.logdir, "result.json"), lines=True, dtype=False)
        progress = pd.read_csv(os.path.join(trial.logdir, "progress.csv"))
        assert list(analysis.trial_dataframes[trial.trial_id]["score"]) == list(rows["score"])
        assert list(progress["score"]) == CURVES[trial.config["curve"]]
        assert analysis.results[trial.trial_id]["score"] == rows["score"].iloc[-1]
        assert analysis.results_df.loc[trial.trial_id, "score"] == rows["score"].iloc[-1]
        assert analysis.results_df.loc[trial.trial_id, "config/curve"] == trial.config["curve"]
        assert rows["trial"].iloc[0] == trial.trial_id  # tune.get_trial_id() in the trainable
        assert rows["dir"].iloc[0] == os.path.basename(trial.logdir)  # tune.get_trial_dir()
        assert trial.status == "TERMINATED" and trial.error_file is None
        with open(os.path.join(trial.logdir, "params.json")) as f:
            assert json.load(f) == trial.config
    assert list(analysis.best_dataframe["score"]) == CURVES["c"]
    best_rows = analysis.dataframe("score", "max").set_index("trial_id")
    assert best_rows.loc[by_curve["b"].trial_id, "score"] == 20
    assert best_rows.loc[by_curve["b"].trial_id, "training_iteration"] == 1
    last_rows = analysis.dataframe().set_index("trial_id")
    assert last_rows.loc[by_curve["b"].trial_id, "score"] == 0
    assert "logdir" in last_rows.columns
    assert analysis.get_all_configs() == {t.trial_id: t.config for t in analysis.trials}
    assert analysis.get_all_configs(prefix=True)[by_curve["a"].trial_id] == {"config/curve": "a"}
    assert list(analysis.best_result_df.index) == [by_curve["c"].trial_id]
    # Checkpoints: 3 kept per trial, by score; the best is the best-scoring one kept.
    paths = analysis.get_trial_checkpoints_paths(by_curve["b"], "score")
    assert len(paths) == 3
    for folder, score in paths:
        with open(os.path.join(folder, "state.json")) as f:
            step = json.load(f)["step"]
        assert CURVES["b"][step - 1] == score
    best = analysis.get_best_checkpoint(by_curve["b"], "score", "max")
    with open(os.path.join(best.path, "state.json")) as f:
        assert json.load(f) == {"step": 1}
    with open(os.path.join(analysis.best_checkpoint.path, "state.json")) as f:
        assert json.load(f) == {"step": 10}  # trial c: its best score is its last

    # The folder read on its own, in a new process (tune.ExperimentAnalysis(path)), once this
    # driver's suite stopped: its best checkpoint comes from the store on the storage path.
    tunebus.shutdown()
    script = textwrap.dedent(
        """
        import json, os, sys
        sys.path.insert(0, %r)
        from tunebus import tune
        a = tune.ExperimentAnalysis(%r, default_metric="score", default_mode="max")
        with open(os.path.join(a.best_checkpoint.path, "state.json")) as f:
            state = json.load(f)
        print(json.dumps({"best": a.best_config, "avg": a.get_best_config(scope="avg"),
                          "statuses": sorted(t.status for t in a.trials), "state": state,
                          "rows": {k: len(v) for k, v in a.trial_dataframes.items()}}))
    """
        % (PACKAGE, os.path.dirname(analysis.best_logdir))
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    read = json.loads(out.stdout)
    assert read["best"] == {"curve": "c"} and read["avg"] == {"curve": "a"}
    assert read["state"] == {"step": 10}
    assert read["statuses"] == ["TERMINATED"] * 4
    assert read["rows"] == {t.trial_id: 10 for t in analysis.trials}


def test_best_members_need_a_metric_as_in_ray(tmp_path):
    analysis = tune.run(
        curve_v1, name="nometric", storage_path=str(tmp_path), verbose=0, config={"curve": "a"}
    )
    with pytest.raises(ValueError, match="pass a `metric` and `mode`"):
        analysis.best_trial
    assert analysis.get_best_trial("score", "max").config == {"curve": "a"}


def crashes_once(config, checkpoint_dir=None):
    """Fails at step 3 of its first attempt; the retry restores the step-2 checkpoint."""
    start = restored_step(checkpoint_dir)
    for step in range(start, 5):
        if step == 3 and not os.path.exists(config["marker"]):
            open(config["marker"], "w").close()
            raise RuntimeError("crash once")
        save_step(step)
        tune.report(step=step, restored_from=start)


def always_fails(config):
    tune.report(x=1)
    raise ValueError("boom")


def test_v1_checkpoint_dir_restores_a_retry_and_errors_raise(tmp_path):
    marker = str(tmp_path / "crashed")
    recorder = Recorder()
    analysis = tune.run(
        crashes_once,
        name="retry",
        storage_path=str(tmp_path),
        verbose=0,
        config={"marker": marker},
        max_failures=1,
        callbacks=[recorder],
    )
    trial = analysis.trials[0]
    rows = pd.read_json(os.path.join(trial.logdir, "result.json"), lines=True, dtype=False)
    assert list(rows["step"]) == [0, 1, 2, 3, 4]
    assert list(rows["restored_from"]) == [0, 0, 0, 3, 3]
    assert trial.num_failures == 1 and trial.status == "TERMINATED"
    # The retry: on_trial_recover, then the second attempt's start and its restore.
    names = [h for h, _ in recorder.hooks(trial.trial_id)]
    recover = names.index("on_trial_recover")
    assert names[recover : recover + 3] == [
        "on_trial_recover",
        "on_trial_start",
        "on_trial_restore",
    ]
    assert names.count("on_trial_start") == 2 and names.count("on_trial_restore") == 1
    assert [d for h, d in recorder.hooks(trial.trial_id) if h == "on_trial_result"] == [
        1,
        2,
        3,
        4,
        5,
    ]

    with pytest.raises(TuneError, match="Trials did not complete: "):
        tune.run(always_fails, name="fails", storage_path=str(tmp_path), verbose=0)
    analysis = tune.run(
        always_fails,
        name="fails2",
        storage_path=str(tmp_path),
        verbose=0,
        raise_on_failed_trial=False,
    )
    trial = analysis.trials[0]
    assert trial.status == "ERROR"
    with open(trial.error_file) as f:
        assert "boom" in f.read()


def counts_to(config):
    for i in range(config["n"]):
        tune.report(i=i + 1, _metric=10 * (i + 1))  # Ray 1.x's DEFAULT_METRIC keyword


def test_register_trainable_ignored_arguments_and_restore(tmp_path):
    tune.register_trainable("counter", counts_to)
    with pytest.warns(UserWarning, match="reuse_actors"):
        analysis = tune.run(
            "counter",
            config={"n": 3},
            name="named",
            verbose=0,
            storage_path=str(tmp_path),
            reuse_actors=True,
            resources_per_trial=tune.PlacementGroupFactory([{"CPU": 1}, {"CPU": 0.5}]),
        )
    assert analysis.trials[0].last_result["i"] == 3
    assert analysis.trials[0].last_result["_metric"] == 30
    assert analysis.trials[0].resources["cpu"] == 1.5  # the bundles summed
    with pytest.raises(TypeError, match="no_such_argument"):
        tune.run("counter", no_such_argument=1)
    with pytest.raises(TuneError, match="unknown trainable 'nope'"):
        tune.run("nope")
    # restore: every trial starts from the given checkpoint folder.
    folder = tmp_path / "start"
    folder.mkdir()
    (folder / "state.json").write_text(json.dumps({"step": 7}))
    analysis = tune.run(
        curve_v1,
        name="restored",
        storage_path=str(tmp_path),
        verbose=0,
        config={"curve": "a"},
        restore=str(folder),
    )
    rows = pd.read_json(
        os.path.join(analysis.trials[0].logdir, "result.json"), lines=True, dtype=False
    )
    assert list(rows["step"]) == [7, 8, 9]


def test_resume_errored_only_reruns_the_errored_trials(tmp_path):
    marker = str(tmp_path / "fixed")

    # A driver-side stopper: the experiment names this driver's link, which the resumed run
    # serves again at the same endpoint (the scheduler reconnects only there).
    first = tune.run(
        fails_until_fixed,
        name="rerun",
        storage_path=str(tmp_path),
        verbose=0,
        config={"x": tune.grid_search([1, 2]), "marker": marker},
        raise_on_failed_trial=False,
        stop=StopAtTwo(),
    )
    assert sorted(t.status for t in first.trials) == ["ERROR", "TERMINATED"]
    with pytest.raises(ValueError, match="no checkpoint exists"):
        tune.run(fails_until_fixed, name="never-ran", storage_path=str(tmp_path), resume=True)
    open(marker, "w").close()
    second = tune.run(
        fails_until_fixed,
        name="rerun",
        storage_path=str(tmp_path),
        verbose=0,
        config={"x": tune.grid_search([1, 2]), "marker": marker},
        resume="ERRORED_ONLY",
    )
    assert sorted(t.status for t in second.trials) == ["TERMINATED", "TERMINATED"]
    assert {t.trial_id for t in second.trials} == {t.trial_id for t in first.trials}
    # The rerun trial was stopped by the stopper unpickled from the first run.
    assert [t.last_result["training_iteration"] for t in second.trials] == [2, 2]


class StopAtTwo(tune.Stopper):
    def __call__(self, trial_id, result):
        return result["training_iteration"] >= 2


def fails_until_fixed(config):
    if config["x"] == 2 and not os.path.exists(config["marker"]):
        raise RuntimeError("not fixed yet")
    while True:
        tune.report(ok=config["x"])


class Recorder(tune.Callback):
    """Notes each hook call as (hook, trial id or None, detail)."""

    def __init__(self, ask_checkpoint_at=None):
        self.calls = []
        self.ask_checkpoint_at = ask_checkpoint_at

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        self.calls.append(("setup", None, total_num_samples))

    def on_step_begin(self, iteration, trials, **info):
        self.calls.append(("on_step_begin", None, iteration))

    def on_step_end(self, iteration, trials, **info):
        self.calls.append(("on_step_end", None, iteration))

    def on_trial_start(self, iteration, trials, trial, **info):
        self.calls.append(("on_trial_start", trial.trial_id, trial.config))

    def on_trial_restore(self, iteration, trials, trial, **info):
        self.calls.append(("on_trial_restore", trial.trial_id, None))

    def on_trial_save(self, iteration, trials, trial, **info):
        self.calls.append(("on_trial_save", trial.trial_id, None))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.calls.append(("on_trial_result", trial.trial_id, result["training_iteration"]))
        if result["training_iteration"] == self.ask_checkpoint_at:
            result["should_checkpoint"] = True

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.calls.append(("on_trial_complete", trial.trial_id, trial.status))

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.calls.append(("on_trial_recover", trial.trial_id, None))

    def on_trial_error(self, iteration, trials, trial, **info):
        self.calls.append(("on_trial_error", trial.trial_id, trial.status))

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        self.calls.append(("on_checkpoint", trial.trial_id, checkpoint.checkpoint_id))

    def on_experiment_end(self, trials, **info):
        self.calls.append(("on_experiment_end", None, len(trials)))

    def hooks(self, trial_id):
        return [(hook, detail) for hook, tid, detail in self.calls if tid == trial_id]


class Saver(tune.Trainable):
    """Counts to `n` (or fails at `fail_at`); saves only when asked."""

    def setup(self, config):
        self.count = 0

    def step(self):
        self.count += 1
        if self.count == self.config.get("fail_at"):
            raise RuntimeError("fails at %d" % self.count)
        return {"count": self.count, "done": self.count >= self.config["n"]}

    def save_checkpoint(self, checkpoint_dir):
        return {"count": self.count}


def check_hooks_of(recorder, trial, results):
    """One trial's hooks: start, its results in order, its checkpoints (each on_checkpoint
    followed by on_trial_save), then one end, and nothing after it but the announcement of a
    checkpoint the store acknowledged after the trial ended (docs/reference/python.md)."""
    hooks = recorder.hooks(trial.trial_id)
    names = [h for h, _ in hooks]
    assert names[0] == "on_trial_start" and names.count("on_trial_start") == 1
    assert [d for h, d in hooks if h == "on_trial_result"] == list(range(1, results + 1))
    end = "on_trial_error" if trial.status == "ERROR" else "on_trial_complete"
    lifecycle = [n for n in names if n not in ("on_checkpoint", "on_trial_save")]
    assert lifecycle[-1] == end and names.count(end) == 1
    for i, name in enumerate(names):
        if name == "on_checkpoint":
            assert names[i + 1] == "on_trial_save"
    return hooks


def test_callback_hooks_each_once_in_order_and_should_checkpoint(tmp_path, capsys):
    recorder = Recorder(ask_checkpoint_at=2)
    reporter = tune.CLIReporter(
        metric_columns=["count"], parameter_columns=["n"], max_report_frequency=0
    )
    analysis = tune.run(
        Saver,
        name="hooks",
        storage_path=str(tmp_path),
        config={"n": 4, "fail_at": tune.grid_search([0, 3])},
        callbacks=[recorder],
        progress_reporter=reporter,
        raise_on_failed_trial=False,
        metric="count",
        mode="max",
    )
    calls = recorder.calls
    assert calls[0] == ("setup", None, 2)
    assert calls[-1] == ("on_experiment_end", None, 2)
    assert [c[0] for c in calls].count("on_experiment_end") == 1
    steps = [c for c in calls if c[0] in ("on_step_begin", "on_step_end")]
    assert [c[0] for c in steps] == ["on_step_begin", "on_step_end"] * (len(steps) // 2)
    assert [c[2] for c in steps[::2]] == list(range(len(steps) // 2))
    ok, failed = sorted(analysis.trials, key=lambda t: t.config["fail_at"])
    hooks = check_hooks_of(recorder, ok, 4)
    # should_checkpoint from the callback at iteration 2: stored, announced once.
    assert [ref["training_iteration"] for ref in ok.view["checkpoints"]] == [2]
    assert [d for h, d in hooks if h == "on_checkpoint"] == [
        ok.view["checkpoints"][0]["checkpoint_id"]
    ]
    assert ok.checkpoint.to_dict() == {"count": 2}
    check_hooks_of(recorder, failed, 2)
    assert failed.status == "ERROR"
    assert [ref["training_iteration"] for ref in failed.view["checkpoints"]] == [2]
    # Ray's CLIReporter text, the last report with done=True.
    out = capsys.readouterr().out
    final = out[out.rindex("== Status ==") :]
    assert "Using FIFO scheduling algorithm." in final
    assert "Number of trials: 2/2 (1 ERROR, 1 TERMINATED)" in final
    assert "Current best trial: Saver_%s with count=4" % ok.trial_id in final
    header = [line for line in final.splitlines() if line.startswith("| Trial name")][0]
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "Trial name",
        "status",
        "loc",
        "n",
        "count",
    ]
    assert "Number of errored trials: 1" in final


class Raises(tune.Callback):
    def on_trial_result(self, iteration, trials, trial, result, **info):
        if result["training_iteration"] == 2:
            raise KeyError("callback failed")


def endless(config):
    i = 0
    while True:
        i += 1
        tune.report(i=i)


def test_a_raising_callback_stops_the_experiment_and_is_raised(tmp_path):
    with pytest.raises(KeyError, match="callback failed"):
        tune.run(
            endless, name="raising", storage_path=str(tmp_path), verbose=0, callbacks=[Raises()]
        )


def test_logger_callbacks_are_accepted_and_user_loggers_called(tmp_path):
    from tunebus.tune.logger import CSVLoggerCallback, JsonLoggerCallback, LoggerCallback
    from tunebus.tune.logger import TBXLoggerCallback

    class Lines(LoggerCallback):
        def __init__(self):
            self.lines = []

        def log_trial_start(self, trial):
            self.lines.append("start")

        def log_trial_result(self, iteration, trial, result):
            self.lines.append("result %d" % result["i"])

        def log_trial_end(self, trial, failed=False):
            self.lines.append("end failed=%s" % failed)

    lines = Lines()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tune.run(
            counts_to,
            name="loggers",
            storage_path=str(tmp_path),
            verbose=0,
            config={"n": 2},
            callbacks=[CSVLoggerCallback(), JsonLoggerCallback(), TBXLoggerCallback(), lines],
        )
    assert lines.lines == ["start", "result 1", "result 2", "end failed=False"]


def test_ray_stoppers_decide_as_ray_and_run_in_the_driver(tmp_path):
    from tunebus.tune.stopper import (
        CombinedStopper,
        ExperimentPlateauStopper,
        FunctionStopper,
        MaximumIterationStopper,
        TimeoutStopper,
        TrialPlateauStopper,
    )

    plateau = TrialPlateauStopper("m", std=0.01, num_results=3, grace_period=3)
    assert [plateau("t", {"m": v}) for v in (1, 5, 5, 5)] == [False, False, False, True]
    threshold = TrialPlateauStopper(
        "m", num_results=2, grace_period=2, metric_threshold=3, mode="max"
    )
    assert [threshold("t", {"m": v}) for v in (2, 2, 4, 4)] == [False, False, False, True]
    experiment = ExperimentPlateauStopper("m", std=0.0, top=2, mode="max", patience=2)
    assert [experiment("t", {"m": v}) for v in (1, 1, 1)] == [False, False, True]
    assert TimeoutStopper(1e9).stop_all() is False
    combined = CombinedStopper(FunctionStopper(lambda t, r: r["m"] > 9), MaximumIterationStopper(2))
    assert [combined("a", {"m": 10}), combined("b", {"m": 0}), combined("b", {"m": 0})] == [
        True,
        False,
        True,
    ]
    analysis = tune.run(
        endless,
        name="stopped",
        storage_path=str(tmp_path),
        verbose=0,
        config={"x": tune.grid_search([1, 2])},
        stop=MaximumIterationStopper(3),
    )
    assert [t.last_result["i"] for t in analysis.trials] == [3, 3]


@pytest.mark.parametrize("script", ["classic_run.py", "optuna_run.py"])
def test_classic_example_scripts_print_what_ray_prints(tmp_path, script):
    """examples/ray_classic/: Ray scripts with only their imports changed, run as a user runs
    them (their own process, the embedded suite, results in TUNEBUS_STORAGE_PATH)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ray_classic", script)
    env = dict(os.environ, TUNEBUS_STORAGE_PATH=str(tmp_path))
    env.pop("TUNEBUS_WORKING_DIR", None)
    run = subprocess.run(
        [sys.executable, path, "--smoke-test"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=str(tmp_path),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    final = run.stdout[run.stdout.rindex("== Status ==") :]
    assert "Number of trials: " in final and " TERMINATED)" in final
    best = [
        line
        for line in run.stdout.splitlines()
        if line.startswith("Best hyperparameters found were: ")
    ]
    assert len(best) == 1
    name = script[: -len(".py")]
    analysis = tune.ExperimentAnalysis(
        str(tmp_path / name), default_metric="mean_loss", default_mode="min"
    )
    assert best[0].endswith(str(analysis.best_config))
    assert all(t.status == "TERMINATED" for t in analysis.trials)


def test_a_searcher_that_raises_ends_the_run_with_its_exception(tmp_path):
    from tunebus.tune.search import Searcher

    class OneIdea(Searcher):
        def __init__(self):
            super().__init__(metric="i", mode="max")
            self.asked = 0

        def suggest(self, trial_id):
            self.asked += 1
            if self.asked > 2:  # the first is the driver's probe on a copy
                raise RuntimeError("no more ideas")
            return {"n": 2}

        def on_trial_complete(self, trial_id, result=None, error=False):
            pass

    with pytest.raises(RuntimeError, match="no more ideas"):
        tune.run(
            counts_to,
            name="searcher-raises",
            storage_path=str(tmp_path),
            verbose=0,
            search_alg=OneIdea(),
            num_samples=3,
        )
    ran = [d for d in os.listdir(tmp_path / "searcher-raises") if d.endswith("n=2")]
    assert len(ran) >= 1  # the experiment ran until the searcher failed


RESUMABLE = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, %(package)r)
    from tunebus import tune
    from tunebus.tune.search.optuna import OptunaSearch

    def slow(config):
        for i in range(4):
            time.sleep(0.3)
            tune.report(score=config["x"] * (i + 1))

    if __name__ == "__main__":
        analysis = tune.run(slow, name="resumable", storage_path=%(storage)r, verbose=0,
                            metric="score", mode="max", num_samples=6,
                            max_concurrent_trials=2, config={"x": tune.uniform(0, 1)},
                            search_alg=OptunaSearch(seed=3), resume=sys.argv[1] == "resume",
                            stop=lambda trial_id, result: result["training_iteration"] >= 3)
        print("TRIALS", sorted((t.status, t.last_result["training_iteration"])
                               for t in analysis.trials))
"""
)


def test_an_interrupted_run_with_driver_side_optuna_and_stopper_resumes_in_a_new_process(tmp_path):
    """Ctrl-C interrupts the run; `tune.run(..., resume=True)` in a new process serves the
    pickled OptunaSearch and stopper again where the journaled experiment names them."""
    import signal
    import time

    script = tmp_path / "resumable.py"
    script.write_text(RESUMABLE % {"package": PACKAGE, "storage": str(tmp_path / "results")})
    env = dict(os.environ, TUNEBUS_WORKING_DIR=str(tmp_path))
    first = subprocess.Popen(
        [sys.executable, str(script), "new"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(tmp_path),
    )
    folder = tmp_path / "results" / "resumable"
    deadline = time.monotonic() + 60
    while not any(
        (folder / d / "result.json").exists()
        for d in (os.listdir(folder) if folder.exists() else [])
    ):
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    assert first.returncode != 0 and "tune.run(..., name='resumable', resume=True)" in err, err
    # Run again without resume: a new run beside the interrupted one (Ray's Tuner.fit), which
    # its own driver serves.
    fresh = subprocess.run(
        [sys.executable, str(script), "new"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=120,
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert "('TERMINATED', 3)" in fresh.stdout
    assert len([d for d in os.listdir(tmp_path / "results") if d.startswith("resumable-")]) == 1
    second = subprocess.run(
        [sys.executable, str(script), "resume"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=120,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert (
        "TRIALS [('TERMINATED', 3), ('TERMINATED', 3), ('TERMINATED', 3), "
        "('TERMINATED', 3), ('TERMINATED', 3), ('TERMINATED', 3)]" in second.stdout
    )
