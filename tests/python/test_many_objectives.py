"""Experiments of several objectives (docs/reference/search.md "Many objectives"): Ray's list form
in
TuneConfig and OptunaSearch translated to the experiment file (metric and mode lists, the
scheduler's own searchers for NSGAIISampler / TPESampler), the rules the experiment file refuses
(a one-metric searcher, an ambiguous trial scheduler), and real embedded experiments from Python
and from YAML whose Pareto front (ResultGrid.get_pareto_front, ExperimentAnalysis.best_trials,
get_experiment's pareto_front, `tunectl best`) is checked against the front this test computes
from the trials' own results."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tunebus import train, tune
from tunebus._errors import TuneError
from tunebus._results import Result, ResultGrid
from tunebus._tuner import build_experiment


def fn(config):
    pass


def _optuna():
    return pytest.importorskip("optuna")


def _front(points, modes):
    """Indexes of the non-dominated `points` (tuples of values, `modes` per entry), by brute
    force: no other point at least as good on every objective and better on one."""
    losses = [tuple(-v if m == "max" else v for v, m in zip(p, modes)) for p in points]

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))

    return {i for i, a in enumerate(losses) if not any(dominates(b, a) for b in losses)}


# ---- translation (no suite) -------------------------------------------------------------------


def test_tune_config_lists_become_the_experiment_files_lists():
    exp, _ = build_experiment(
        fn,
        {"x": tune.uniform(0, 2)},
        tune.TuneConfig(metric=["f1", "f2"], mode=["min", "max"], num_samples=3),
    )
    assert exp["metric"] == ["f1", "f2"] and exp["mode"] == ["min", "max"]


@pytest.mark.parametrize(
    "metric,mode,words",
    [
        (["f1", "f2"], "min", "equal length"),
        (["f1", "f2"], ["min"], "2 metrics and 1 modes"),
        (["f1"], ["min"], ">= 2"),
        (["f1", "f2"], ["min", "maximize"], "'min' or 'max'"),
        (["f1", "f1"], ["min", "max"], "distinct"),
    ],
)
def test_malformed_lists_are_refused_before_anything_runs(metric, mode, words):
    with pytest.raises(ValueError) as e:
        build_experiment(fn, {}, tune.TuneConfig(metric=metric, mode=mode))
    assert words in str(e.value)


def test_a_trial_scheduler_keeps_its_own_metric_and_inherits_none_of_the_lists():
    # Ray's rule: the scheduler compares its own metric; the lists are not given to it (the
    # experiment file then refuses a scheduler without one, naming how to set it).
    from tunebus.tune.schedulers import ASHAScheduler

    exp, _ = build_experiment(
        fn,
        {"x": tune.uniform(0, 2)},
        tune.TuneConfig(
            metric=["f1", "f2"], mode=["min", "min"], scheduler=ASHAScheduler(metric="f2")
        ),
    )
    assert exp["scheduler"]["metric"] == "f2" and "mode" not in exp["scheduler"]
    exp, _ = build_experiment(
        fn,
        {"x": tune.uniform(0, 2)},
        tune.TuneConfig(metric=["f1", "f2"], mode=["min", "min"], scheduler=ASHAScheduler()),
    )
    assert "metric" not in exp["scheduler"]


def test_optuna_search_of_several_objectives_becomes_the_schedulers_searcher():
    ot = _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    space = {"x": tune.uniform(0, 2), "k": tune.choice(["a", "b"])}
    nsga = OptunaSearch(
        metric=["f1", "f2"],
        mode=["min", "min"],
        sampler=ot.samplers.NSGAIISampler(population_size=8, crossover_prob=0.8),
    )
    exp, needs = build_experiment(fn, space, tune.TuneConfig(search_alg=nsga, num_samples=4))
    assert needs.search is None  # nothing runs in the driver
    assert exp["search"]["type"] == "nsga2"
    assert exp["search"]["population_size"] == 8 and exp["search"]["crossover_prob"] == 0.8
    assert exp["metric"] == ["f1", "f2"] and exp["mode"] == ["min", "min"]
    assert set(exp["param_space"]) == {"x", "k"}
    # Optuna 3.x's TPESampler over several objectives is MOTPE; the lists may be TuneConfig's.
    tpe = OptunaSearch(sampler=ot.samplers.TPESampler(n_startup_trials=5))
    exp, needs = build_experiment(
        fn,
        space,
        tune.TuneConfig(metric=["f1", "f2"], mode=["max", "min"], search_alg=tpe),
    )
    assert needs.search is None and exp["search"] == {
        "type": "motpe",
        "n_startup_trials": 5,
        "n_ei_candidates": 24,
    }
    assert exp["metric"] == ["f1", "f2"] and exp["mode"] == ["max", "min"]
    # Its own space of Optuna distributions becomes the param space; the default sampler
    # (TPESampler(seed=seed)) gives its seed.
    own = OptunaSearch(
        space={"y": ot.distributions.FloatDistribution(0.1, 1.0, log=True)},
        metric=["f1", "f2"],
        mode=["min", "min"],
        seed=11,
    )
    exp, _ = build_experiment(fn, {}, tune.TuneConfig(search_alg=own))
    assert exp["search"]["type"] == "motpe" and exp["seed"] == 11
    assert list(exp["param_space"]) == ["y"] and "loguniform" in exp["param_space"]["y"]


def test_optuna_search_with_another_sampler_stays_in_the_driver():
    # A RandomSampler study runs in the driver (§7a serves one metric: the experiment file names
    # the first); the ResultGrid still knows both objectives for its Pareto front.
    ot = _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    searcher = OptunaSearch(
        metric=["f1", "f2"], mode=["min", "min"], sampler=ot.samplers.RandomSampler(seed=1)
    )
    exp, needs = build_experiment(
        fn, {"x": tune.uniform(0, 2)}, tune.TuneConfig(search_alg=searcher)
    )
    assert needs.search is not None and exp["search"]["type"] == "external"
    assert exp["metric"] == "f1" and exp["mode"] == "min"
    assert needs.objectives == (["f1", "f2"], ["min", "min"])


def _grid(rows, metric, mode, statuses=None):
    results = [
        Result("/r/%d" % i, {"i": i}, [row], None, {"trial_id": "t%d" % i, "status": s})
        for i, (row, s) in enumerate(zip(rows, statuses or ["TERMINATED"] * len(rows)))
    ]
    return ResultGrid("/r", results, metric, mode)


def test_get_best_result_with_lists_says_to_pick_one_or_use_the_front():
    grid = _grid([{"a": 1, "b": 2}, {"a": 2, "b": 1}], ["a", "b"], ["min", "min"])
    with pytest.raises(ValueError) as e:
        grid.get_best_result()
    assert "several objectives (a min, b min)" in str(e.value)
    assert "get_pareto_front()" in str(e.value) and "metric='a'" in str(e.value)
    assert grid.get_best_result(metric="b", mode="min").metrics["b"] == 1
    with pytest.raises(ValueError):
        _grid([{"a": 1}], "a", "min").get_pareto_front()


def test_get_pareto_front_skips_errored_running_and_incomplete_trials():
    rows = [
        {"a": 0.8, "b": 12},  # dominated by the next
        {"a": 0.85, "b": 10},
        {"a": 0.95, "b": 30},
        {"a": 0.7, "b": 2},
        {"a": 0.99, "b": 1},  # ERROR
        {"a": 0.99, "b": 1},  # RUNNING
        {"a": 0.99},  # no b
        {"a": float("nan"), "b": 0.5},
    ]
    statuses = ["TERMINATED"] * 4 + ["ERROR", "RUNNING", "TERMINATED", "TERMINATED"]
    grid = _grid(rows, ["a", "b"], ["max", "min"], statuses)
    grid._results[4].error = TuneError("internal", "boom")
    front = grid.get_pareto_front()
    assert [r.trial_id for r in front] == ["t2", "t1", "t3"]  # best a first


# ---- real experiments -------------------------------------------------------------------------


@pytest.fixture
def suite(tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))


def schaffer(config):
    # Schaffer's first problem: f1 = x^2, f2 = (x - 2)^2; the Pareto set is x in [0, 2].
    x = config["x"]
    train.report({"f1": x * x, "f2": (x - 2) ** 2, "x": x})


def _check_front(front, results, modes):
    points = [(r.metrics["f1"], r.metrics["f2"]) for r in results]
    truth = {results[i].trial_id for i in _front(points, modes)}
    assert truth and {r.trial_id for r in front} == truth
    firsts = [r.metrics["f1"] for r in front]
    assert firsts == sorted(firsts)  # best first by f1 (min)


def test_a_two_objective_experiment_from_python_gives_its_pareto_front(tmp_path, suite):
    from tunebus._control import ControlClient
    from tunebus import _suite

    tuner = tune.Tuner(
        schaffer,
        param_space={"x": tune.uniform(-1, 3)},
        tune_config=tune.TuneConfig(metric=["f1", "f2"], mode=["min", "min"], num_samples=12),
        run_config=tune.RunConfig(name="schaffer", storage_path=str(tmp_path), verbose=0),
    )
    grid = tuner.fit()
    assert len(grid) == 12 and grid.num_errors == 0
    front = grid.get_pareto_front()
    _check_front(front, list(grid), ["min", "min"])
    for r in front:  # each with its config and metrics
        assert r.config["x"] == pytest.approx(r.metrics["x"])
    # The scheduler's front (get_experiment) is the same trials in the same order.
    endpoint, _ = _suite.endpoint(str(tmp_path))
    summary = ControlClient(endpoint).get_experiment("schaffer")
    assert summary["metric"] == "" and summary["best"] is None
    assert summary["objectives"] == [
        {"metric": "f1", "mode": "min"},
        {"metric": "f2", "mode": "min"},
    ]
    assert [t["trial_id"] for t in summary["pareto_front"]] == [r.trial_id for r in front]
    with pytest.raises(ValueError):
        grid.get_best_result()


def test_tune_run_of_two_objectives_gives_best_trials(tmp_path, suite):
    analysis = tune.run(
        schaffer,
        config={"x": tune.uniform(-1, 3)},
        metric=["f1", "f2"],
        mode=["min", "max"],
        num_samples=8,
        storage_path=str(tmp_path),
        name="schaffer_run",
        verbose=0,
    )
    results = [analysis._result_of(t) for t in analysis.trials]
    points = [(r.metrics["f1"], r.metrics["f2"]) for r in results]
    truth = {results[i].trial_id for i in _front(points, ["min", "max"])}
    assert {t.trial_id for t in analysis.best_trials} == truth
    with pytest.raises(ValueError) as e:
        analysis.best_trial
    assert "best_trials" in str(e.value)


def test_an_asha_without_its_own_metric_is_refused_naming_the_objectives(tmp_path, suite):
    from tunebus.tune.schedulers import ASHAScheduler

    with pytest.raises(TuneError) as e:
        tune.Tuner(
            schaffer,
            param_space={"x": tune.uniform(-1, 3)},
            tune_config=tune.TuneConfig(
                metric=["f1", "f2"], mode=["min", "min"], scheduler=ASHAScheduler()
            ),
            run_config=tune.RunConfig(name="refused", storage_path=str(tmp_path), verbose=0),
        ).fit()
    assert "scheduler.metric: the experiment has 2 objectives (f1 min, f2 min); asha compares" in (
        e.value.message
    )


TRAINABLE = textwrap.dedent(
    """\
    import json, os
    config = json.loads(os.environ["TUNEBUS_CONFIG"])
    x = config["x"]
    out = os.fdopen(int(os.environ["TUNEBUS_REPORT_FD"]), "w")
    decisions = os.fdopen(int(os.environ["TUNEBUS_DECISION_FD"]))
    for t in (1, 2):
        out.write(json.dumps({"f1": x * x / t, "f2": (x - 2) ** 2 / t}) + "\\n")
        out.flush()
        if decisions.readline().strip() == "stop":
            break
    """
)


def test_a_two_objective_experiment_from_yaml_and_tunectl_best(tmp_path, tunectl):
    (tmp_path / "train.py").write_text(TRAINABLE)
    (tmp_path / "exp.yaml").write_text(
        textwrap.dedent(
            """\
            name: schaffer_yaml
            trainable: {command: [%s, train.py]}
            param_space:
              x: {uniform: [-1, 3]}
            num_samples: 10
            seed: 5
            metric: [f1, f2]
            mode: [min, min]
            scheduler: {type: asha, metric: f2, max_t: 2, grace_period: 1}
            results_dir: results
            """
            % sys.executable
        )
    )
    run = subprocess.run(
        [tunectl, "run", str(tmp_path / "exp.yaml")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Pareto front (f1 min, f2 min):" in run.stdout
    # The ground truth from the trials' own result files: each trial's last result.
    folder = tmp_path / "results" / "schaffer_yaml"
    last = {}
    for trial in sorted(p for p in folder.iterdir() if (p / "result.json").exists()):
        rows = [json.loads(x) for x in (trial / "result.json").read_text().splitlines() if x]
        last[rows[-1]["trial_id"]] = (rows[-1]["f1"], rows[-1]["f2"])
    ids = sorted(last)
    truth = {ids[i] for i in _front([last[i] for i in ids], ["min", "min"])}
    shown = {
        line.split()[0]
        for line in run.stdout.split("Pareto front (f1 min, f2 min):")[1].splitlines()[2:]
        if line.startswith("  ")
    }
    assert truth and shown == truth, run.stdout


def test_optuna_nsga2_runs_as_the_schedulers_nsga2_and_gives_the_front(tmp_path, suite):
    # OptunaSearch(NSGAIISampler) of two objectives becomes `search: nsga2` in the scheduler;
    # the front of its trials is the brute-force one.
    ot = _optuna()
    from tunebus import _suite
    from tunebus._control import ControlClient
    from tunebus.tune.search.optuna import OptunaSearch

    searcher = OptunaSearch(
        metric=["f1", "f2"],
        mode=["min", "min"],
        sampler=ot.samplers.NSGAIISampler(population_size=4),
    )
    grid = tune.Tuner(
        schaffer,
        param_space={"x": tune.uniform(-1, 3)},
        tune_config=tune.TuneConfig(search_alg=searcher, num_samples=10),
        run_config=tune.RunConfig(name="schaffer_nsga2", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert len(grid) == 10 and grid.num_errors == 0
    _check_front(grid.get_pareto_front(), list(grid), ["min", "min"])
    endpoint, _ = _suite.endpoint(str(tmp_path))
    summary = ControlClient(endpoint).get_experiment("schaffer_nsga2")
    assert summary["searcher"]["searcher"] == "nsga2", summary["searcher"]
