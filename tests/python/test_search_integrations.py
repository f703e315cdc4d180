"""Ray Tune's searchers at Ray's module paths (tunebus.tune.search.*): the imports with and
without their libraries, OptunaSearch with each form of space through a real embedded suite, a
user's Searcher subclass called in the driver, ConcurrencyLimiter, Repeater, many objectives, the
§7a replay after a new session, the library adapters over stand-in libraries (search_fakes.py),
and Ray's schedulers tunebus lacks."""

import importlib
import math
import os
import time

import pytest

import search_fakes
from tunebus import train, tune
from tunebus._errors import TuneError
from tunebus._tuner import build_experiment
from tunebus.tune.search import ConcurrencyLimiter, Repeater, Searcher

LIBRARIES = [  # module of tunebus.tune.search, class, library imported, pip name
    ("hyperopt", "HyperOptSearch", "hyperopt", "hyperopt"),
    ("bayesopt", "BayesOptSearch", "bayes_opt", "bayesian-optimization"),
    ("skopt", "SkOptSearch", "skopt", "scikit-optimize"),
    ("nevergrad", "NevergradSearch", "nevergrad", "nevergrad"),
    ("ax", "AxSearch", "ax", "ax-platform"),
    ("hebo", "HEBOSearch", "hebo", "HEBO"),
    ("zoopt", "ZOOptSearch", "zoopt", "zoopt"),
]


def _optuna():
    return pytest.importorskip("optuna")


def fn(config):
    pass


# ---- imports --------------------------------------------------------------------------------


def test_rays_module_paths_import():
    # Every module a Ray 2.x script imports searchers from exists, with Ray's class names.
    from tunebus.tune.search import (  # noqa: F401
        BasicVariantGenerator,
        TPESearch,
        TuneBOHB,
        create_searcher,
    )
    from tunebus.tune.search.basic_variant import BasicVariantGenerator as B2
    from tunebus.tune.search.bohb import TuneBOHB as T2
    from tunebus.tune.search.concurrency_limiter import ConcurrencyLimiter as C2
    from tunebus.tune.search.optuna import OptunaSearch  # noqa: F401
    from tunebus.tune.search.repeater import TRIAL_INDEX, Repeater as R2

    assert B2 is BasicVariantGenerator and T2 is TuneBOHB and C2 is ConcurrencyLimiter
    assert R2 is Repeater and TRIAL_INDEX == "__trial_index__"
    for module, cls, _, _ in LIBRARIES:
        assert hasattr(importlib.import_module("tunebus.tune.search." + module), cls)
    assert tune.search.Searcher.FINISHED == "FINISHED"
    assert create_searcher("random", max_concurrent=2, metric="x").max_concurrent == 2


@pytest.mark.parametrize("module,cls,library,pip", LIBRARIES)
def test_a_missing_library_fails_at_construction_naming_it_and_the_alternatives(
    module, cls, library, pip, monkeypatch
):
    # As Ray: the module imports, constructing the searcher fails (TuneError here).
    monkeypatch.setitem(__import__("sys").modules, library, None)  # importing it fails
    searcher_cls = getattr(importlib.import_module("tunebus.tune.search." + module), cls)
    kwargs = {"budget": 4} if module == "zoopt" else {}
    with pytest.raises(TuneError) as e:
        searcher_cls(metric="score", mode="max", **kwargs)
    message = e.value.message
    assert library in message and "pip install %s" % pip in message
    for alternative in ("OptunaSearch", "TPESearch", "TuneBOHB"):
        assert alternative in message


def test_builtin_tunebohb_at_rays_path_needs_no_library():
    from tunebus.tune.search.bohb import TuneBOHB

    exp, needs = build_experiment(
        fn,
        {"x": tune.uniform(0, 1)},
        tune.TuneConfig(metric="score", mode="max", search_alg=TuneBOHB(seed=3)),
    )
    assert exp["search"]["type"] == "bohb" and needs.search is None


def test_schedulers_tunebus_lacks_fail_naming_what_to_use():
    from tunebus.tune.schedulers import PB2, ResourceChangingScheduler
    from tunebus.tune.schedulers.pb2 import PB2 as PB2b
    from tunebus.tune.schedulers.resource_changing_scheduler import DistributeResources

    assert PB2b is PB2
    with pytest.raises(TuneError, match="PopulationBasedTraining"):
        PB2(metric="score", mode="max", hyperparam_bounds={"lr": [1e-4, 1e-1]})
    with pytest.raises(TuneError, match="with_resources"):
        ResourceChangingScheduler(resources_allocation_function=None)
    with pytest.raises(TuneError, match="with_resources"):
        DistributeResources()


# ---- the experiment file --------------------------------------------------------------------


def test_a_driver_side_searcher_gets_the_param_space_as_dims():
    optuna = _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    space = {"x": tune.uniform(0, 1), "m": {"act": tune.choice(["a", "b"])}, "c": 3}
    exp, needs = build_experiment(
        fn,
        space,
        tune.TuneConfig(
            metric="score",
            mode="max",
            num_samples=3,
            search_alg=ConcurrencyLimiter(OptunaSearch(seed=1), max_concurrent=2),
        ),
    )
    assert exp["param_space"] == {
        "x": {"uniform": [0, 1]},
        "m": {"act": {"choice": ["a", "b"]}},
        "c": 3,
    }
    assert exp["search"] == {"type": "external", "timeout_s": 60, "max_concurrent": 2}
    assert needs.search is not None and exp["num_samples"] == 3
    # An Optuna distributions dict: typed dims; metric and mode from the searcher.
    dists = {
        "lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True),
        "n": optuna.distributions.IntDistribution(1, 8, step=1),
    }
    exp, _ = build_experiment(
        fn, {}, tune.TuneConfig(search_alg=OptunaSearch(dists, metric="loss", mode="min"))
    )
    assert exp["param_space"] == {"lr": {"loguniform": [1e-4, 1e-1, 10]}, "n": {"randint": [1, 9]}}
    assert (exp["metric"], exp["mode"]) == ("loss", "min")
    # A define-by-run function: every key it can suggest, any value.
    exp, _ = build_experiment(
        fn, {}, tune.TuneConfig(search_alg=OptunaSearch(_define_by_run, metric="score", mode="max"))
    )
    assert exp["param_space"] == {
        "deep": {"sample_from": "driver"},
        "layers": {"sample_from": "driver"},
        "lr": {"sample_from": "driver"},
    }


def test_rays_errors_for_a_space_the_searcher_does_not_take():
    class Own(Searcher):
        def suggest(self, trial_id):
            return {"a": 1}

        def on_trial_complete(self, trial_id, result=None, error=False):
            pass

    with pytest.raises(ValueError, match="unresolved parameters"):
        build_experiment(
            fn, {"x": tune.uniform(0, 1)}, tune.TuneConfig(metric="s", mode="max", search_alg=Own())
        )
    with pytest.raises(TuneError, match="grid_search cannot be combined"):
        build_experiment(
            fn,
            {"x": tune.grid_search([1, 2])},
            tune.TuneConfig(metric="s", mode="max", search_alg=Own()),
        )
    # Constants are fine; the keys it suggests come from one suggestion of a copy.
    exp, _ = build_experiment(
        fn, {"c": 1}, tune.TuneConfig(metric="s", mode="max", search_alg=Own())
    )
    assert exp["param_space"] == {"c": 1, "a": {"sample_from": "driver"}}

    class Reads(Own):  # a user searcher reading the param space's domains as Ray's
        def set_search_properties(self, metric, mode, config, **spec):
            self.bounds = {k: (d.lower, d.upper) for k, d in config.items()}
            return True

    reads = Reads()
    exp, needs = build_experiment(
        fn,
        {
            "f": tune.quniform(0, 1, 0.5),
            "i": tune.qrandint(2, 8, 2),
            "r": tune.randint(0, 5),
            "n": tune.randn(),
        },
        tune.TuneConfig(metric="s", mode="max", search_alg=reads),
    )
    assert not hasattr(reads, "bounds")  # build_experiment set a copy's properties
    _session(needs.search, exp, "s1")  # the user's object gets them at the first hello
    assert reads.bounds == {"f": (0, 1), "i": (2, 9), "r": (0, 5), "n": (None, None)}

    _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    with pytest.raises(RuntimeError, match="metric"):  # Ray's UNDEFINED_METRIC_MODE, at fit()
        build_experiment(
            fn,
            {},
            tune.TuneConfig(
                search_alg=OptunaSearch({"x": _optuna().distributions.FloatDistribution(0, 1)})
            ),
        )


# ---- §7a sessions ---------------------------------------------------------------------------


def _dims(exp_space, prefix=()):
    """hello's `space` for an experiment param space, as the scheduler builds it (§7a)."""
    dims = []
    for key, value in exp_space.items():
        path = prefix + (key,)
        if (
            isinstance(value, dict)
            and len(value) == 1
            and next(iter(value))
            in ("uniform", "loguniform", "choice", "randint", "sample_from", "quniform")
        ):
            sampler, args = next(iter(value.items()))
            dim = {"name": ".".join(path), "path": list(path), "sampler": sampler}
            if sampler == "choice":
                dim.update(type="categorical", choices=args)
            elif sampler == "sample_from":
                dim.update(type="any")
            elif sampler == "randint":
                dim.update(type="int", low=args[0], high=args[1] - 1)
            else:
                dim.update(type="float", low=args[0], high=args[1], log="log" in sampler)
            dims.append(dim)
        elif isinstance(value, dict):
            dims.extend(_dims(value, path))
    return dims


def _session(search, exp, name, replay=()):
    assert (
        search.handle(
            {
                "type": "hello",
                "session": name,
                "space": _dims(exp["param_space"]),
                "replay": len(replay),
            }
        )["type"]
        == "hello_ok"
    )
    if replay:
        search.handle({"type": "tell", "session": name, "events": list(replay)})


def _ask(search, session, trial_id):
    reply = search.handle({"type": "ask", "session": session, "trial_id": trial_id})
    return reply["status"], reply["params"]


def test_a_new_session_rebuilds_optuna_from_the_replay():
    # The scheduler restarts: hello, then every journaled suggestion and end. The study is
    # rebuilt with the journaled params (enqueue_trial), the sampler's stream goes on, a trial
    # asked again gets its params back, and unknown sessions are refused.
    _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    searcher = OptunaSearch(seed=5)
    exp, needs = build_experiment(
        fn,
        {"x": tune.uniform(0, 1), "k": tune.choice([1, 2, 3])},
        tune.TuneConfig(metric="s", mode="max", num_samples=8, search_alg=searcher),
    )
    search = needs.search
    _session(search, exp, "s1")
    asked = {t: _ask(search, "s1", t)[1] for t in ("t0", "t1", "t2")}
    done = [
        {"event": "completed", "trial_id": t, "result": {"s": v}, "error": False}
        for t, v in (("t0", 0.5), ("t1", 0.25))
    ]
    search.handle({"type": "tell", "session": "s1", "events": done})
    assert len(searcher._ot_study.trials) == 3
    replay = [
        {"event": "suggested", "trial_id": t, "params": p, "config": dict(p)}
        for t, p in asked.items()
    ] + done
    _session(search, exp, "s2", replay)
    study = searcher._ot_study  # the user's object holds the rebuilt state
    assert [t.params for t in study.trials] == [asked[t] for t in ("t0", "t1", "t2")]
    assert [t.value for t in study.trials[:2]] == [0.5, 0.25]
    assert _ask(search, "s2", "t1") == ("config", asked["t1"])
    status, params = _ask(search, "s2", "t3")
    assert status == "config" and params not in asked.values()
    from tunebus._router import ProtocolError

    with pytest.raises(ProtocolError) as e:
        search.handle({"type": "ask", "session": "s1", "trial_id": "t9"})
    assert e.value.code == "failed_precondition"


class Recording(Searcher):
    """A user's searcher: deterministic suggestions, every call recorded."""

    def __init__(self, metric=None, mode=None, total=None):
        super().__init__(metric=metric, mode=mode)
        self.total = total
        self.count = 0
        self.calls = []

    def suggest(self, trial_id):
        if self.total is not None and self.count >= self.total:
            return Searcher.FINISHED
        self.count += 1
        self.calls.append(("suggest", trial_id))
        return {"x": self.count, "nested": {"y": self.count * 10}}

    def on_trial_result(self, trial_id, result):
        self.calls.append(("result", trial_id, result.get("training_iteration")))

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.calls.append(("complete", trial_id, (result or {}).get("score"), error))


def test_numpy_values_of_a_user_searcher_reach_the_scheduler_as_plain_values():
    numpy = pytest.importorskip("numpy")
    from tunebus import _deps

    class Numpy(Recording):
        def suggest(self, trial_id):
            return {"n": numpy.int64(3), "f": numpy.float32(0.5), "v": numpy.arange(2)}

    exp, needs = build_experiment(
        fn, {}, tune.TuneConfig(metric="s", mode="max", search_alg=Numpy())
    )
    _session(needs.search, exp, "s1")
    params = _ask(needs.search, "s1", "t0")[1]
    assert params == {"f": 0.5, "n": 3, "v": [0, 1]} and type(params["n"]) is int
    _deps.load("msgpack").packb(params)  # what the driver sends


def test_a_user_searchers_replay_asks_it_again_in_journal_order():
    searcher = Recording(metric="score", mode="max")
    exp, needs = build_experiment(fn, {}, tune.TuneConfig(num_samples=4, search_alg=searcher))
    assert exp["param_space"] == {
        "x": {"sample_from": "driver"},
        "nested": {"y": {"sample_from": "driver"}},
    }
    assert searcher.calls == []  # the keys came from a copy
    search = needs.search
    _session(search, exp, "s1")
    first = _ask(search, "s1", "t0")[1]
    assert first == {"x": 1, "nested.y": 10}
    replay = [
        {"event": "suggested", "trial_id": "t0", "params": first, "config": {}},
        {"event": "result", "trial_id": "t0", "result": {"score": 3, "training_iteration": 1}},
        {"event": "result", "trial_id": "t0", "result": {"score": 3, "training_iteration": 1}},
        {"event": "completed", "trial_id": "t0", "result": {"score": 3}, "error": False},
    ]
    _session(search, exp, "s2", replay)
    assert searcher.calls == [("suggest", "t0"), ("result", "t0", 1), ("complete", "t0", 3, False)]
    assert _ask(search, "s2", "t1") == ("config", {"x": 2, "nested.y": 20})


def test_optuna_evaluated_rewards_are_told_and_not_run():
    optuna = _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    searcher = OptunaSearch(
        dist,
        metric="s",
        mode="max",
        seed=2,
        points_to_evaluate=[{"x": 0.1}, {"x": 0.9}],
        evaluated_rewards=[1.0, 5.0],
    )
    exp, needs = build_experiment(fn, {}, tune.TuneConfig(num_samples=3, search_alg=searcher))
    _session(needs.search, exp, "s1")
    status, params = _ask(needs.search, "s1", "t0")
    trials = searcher._ot_study.trials
    assert [(t.params, t.value, t.state.name) for t in trials[:2]] == [
        ({"x": 0.1}, 1.0, "COMPLETE"),
        ({"x": 0.9}, 5.0, "COMPLETE"),
    ]
    assert status == "config" and params["x"] not in (0.1, 0.9)


def test_searcher_exceptions_end_the_search_or_are_skipped(caplog):
    class Broken(Recording):
        def suggest(self, trial_id):
            if self.count >= 1:
                raise RuntimeError("no more ideas")
            return super().suggest(trial_id)

        def on_trial_complete(self, trial_id, result=None, error=False):
            raise KeyError("oops")

    exp, needs = build_experiment(
        fn, {}, tune.TuneConfig(num_samples=5, search_alg=Broken(metric="score", mode="max"))
    )
    search = needs.search
    _session(search, exp, "s1")
    assert _ask(search, "s1", "t0")[0] == "config"
    # on_trial_complete raises: logged once, the tell is answered (no error reply, which would
    # make the scheduler reconnect and replay into the same exception).
    reply = search.handle(
        {
            "type": "tell",
            "session": "s1",
            "events": [
                {"event": "completed", "trial_id": "t0", "result": {"score": 1}, "error": False}
            ],
        }
    )
    assert reply["type"] == "tell_ok"
    assert _ask(search, "s1", "t1")[0] == "finished"  # suggest raised: no new trial
    assert isinstance(search.error, RuntimeError)
    assert _ask(search, "s1", "t2")[0] == "finished"
    assert "no more ideas" in caplog.text and "on_trial_complete failed" in caplog.text


def _done(session, trial_id, score):
    return {
        "type": "tell",
        "session": session,
        "events": [
            {"event": "completed", "trial_id": trial_id, "result": {"score": score}, "error": False}
        ],
    }


def test_concurrency_limiter_batch_tells_the_searcher_when_the_batch_ended():
    inner = Recording(metric="score", mode="max")
    exp, needs = build_experiment(
        fn,
        {},
        tune.TuneConfig(
            num_samples=6, search_alg=ConcurrencyLimiter(inner, max_concurrent=2, batch=True)
        ),
    )
    search = needs.search
    _session(search, exp, "s1")
    assert [_ask(search, "s1", t)[0] for t in ("t0", "t1", "t2")] == ["config", "config", "not_now"]
    search.handle(_done("s1", "t0", 1))
    assert [c for c in inner.calls if c[0] == "complete"] == []  # the batch is not over
    assert _ask(search, "s1", "t2")[0] == "not_now"
    search.handle(_done("s1", "t1", 2))
    assert [c for c in inner.calls if c[0] == "complete"] == [
        ("complete", "t0", 1, False),
        ("complete", "t1", 2, False),
    ]
    assert _ask(search, "s1", "t2") == ("config", {"x": 3, "nested.y": 30})


def test_repeater_groups_are_rebuilt_from_the_replay():
    inner = Recording(metric="score", mode="max")
    exp, needs = build_experiment(
        fn, {}, tune.TuneConfig(num_samples=6, search_alg=Repeater(inner, repeat=2))
    )
    search = needs.search
    _session(search, exp, "s1")
    asked = {t: _ask(search, "s1", t)[1] for t in ("t0", "t1", "t2")}
    assert [p["__trial_index__"] for p in asked.values()] == [0, 1, 0]
    replay = [
        {
            "event": "suggested",
            "trial_id": t,
            "params": p,
            "config": {
                "x": p["x"],
                "nested": {"y": p["nested.y"]},
                "__trial_index__": p["__trial_index__"],
            },
        }
        for t, p in asked.items()
    ]
    _session(search, exp, "s2", replay)
    assert _ask(search, "s2", "t3") == ("config", {"x": 2, "nested.y": 20, "__trial_index__": 1})
    for trial_id, score in (("t0", 1.0), ("t1", 3.0)):
        search.handle(_done("s2", trial_id, score))
    # The rebuilt inner searcher (the user's object) was asked once per group and told the
    # mean of the first group.
    assert [c for c in inner.calls if c[0] != "result"] == [
        ("suggest", "t0"),
        ("suggest", "t2"),
        ("complete", "t0", 2.0, False),
    ]


# ---- library adapters over stand-ins --------------------------------------------------------


@pytest.mark.parametrize("module,cls,library,pip", LIBRARIES)
def test_library_searchers_ask_and_tell_their_library(module, cls, library, pip, monkeypatch):
    # Each adapter asks its library for points inside the space and tells it the loss
    # (negated for max) of each ended trial; a replayed trial is told as an observed point.
    rec = search_fakes.install(monkeypatch, library, budget=5)
    searcher_cls = getattr(importlib.import_module("tunebus.tune.search." + module), cls)
    kwargs = {"budget": 5} if module == "zoopt" else {}
    space = {"lr": tune.uniform(0.1, 0.5), "width": tune.uniform(1.0, 3.0)}
    if module != "bayesopt":
        space = {
            "lr": tune.loguniform(1e-3, 1e-1),
            "layers": tune.randint(1, 5),
            "act": tune.choice(["relu", "tanh"]),
        }
    exp, needs = build_experiment(
        fn,
        space,
        tune.TuneConfig(
            metric="score", mode="max", num_samples=5, search_alg=searcher_cls(**kwargs)
        ),
    )
    assert rec["space"] is None  # the library is set up at the first suggestion
    search = needs.search
    _session(search, exp, "s1")
    params = [_ask(search, "s1", "t%d" % i)[1] for i in range(3)]
    for p in params:
        for name, domain in space.items():
            value = p[name]
            if domain.sampler == "choice":
                assert value in domain.categories
            else:
                low, high = domain.args[0], domain.args[1]
                assert low <= value <= high, (name, value)
    search.handle(
        {
            "type": "tell",
            "session": "s1",
            "events": [
                {"event": "completed", "trial_id": "t0", "result": {"score": 2.0}, "error": False},
                {"event": "completed", "trial_id": "t1", "result": None, "error": True},
            ],
        }
    )
    told = rec["told_fn"]() if library == "hyperopt" else rec["told"]
    losses = [t[1] for t in told if t[1] is not None]
    if library == "ax":
        assert losses == [{"score": (2.0, None)}]
        assert rec["space"][1] == {"score": {"minimize": False}}
    elif library == "bayes_opt":
        assert losses == [2.0]  # bayes_opt maximises its target
    else:
        assert losses == [-2.0]
    # A new session: the library is set up anew and told the replayed ends as observed points
    # (ZOOpt takes only its own solutions).
    replay = [
        {"event": "suggested", "trial_id": "t%d" % i, "params": p, "config": dict(p)}
        for i, p in enumerate(params)
    ]
    replay.append(
        {"event": "completed", "trial_id": "t2", "result": {"score": 1.0}, "error": False}
    )
    _session(search, exp, "s2", replay)
    told = rec["told_fn"]() if library == "hyperopt" else rec["told"]
    if library != "zoopt":
        last = told[-1][1]
        assert last == (
            {"score": (1.0, None)} if library == "ax" else 1.0 if library == "bayes_opt" else -1.0
        )
    assert _ask(search, "s2", "t2") == ("config", params[2])


# ---- through a real suite -------------------------------------------------------------------


@pytest.fixture()
def suite(tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))


def _fit(tmp_path, name, trainable, param_space, **tune_config):
    return tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(**tune_config),
        run_config=tune.RunConfig(name=name, storage_path=str(tmp_path), verbose=0),
    ).fit()


def quadratic(config):
    x = config.get("x", 0.0)
    train.report(
        {"score": -((x - 0.3) ** 2), "x": x, "loss": (x - 0.3) ** 2, "size": config.get("n", 1)}
    )


def _define_by_run(trial):
    lr = trial.suggest_float("lr", 1e-3, 1e-1, log=True)
    if trial.suggest_categorical("deep", [True, False]):
        trial.suggest_int("layers", 2, 4)
    return {"lr": lr}


def report_lr(config):
    train.report({"score": config["lr"] * (config["layers"] or 1), "deep": config["deep"]})


@pytest.mark.parametrize("form", ["domains", "distributions", "define_by_run"])
def test_optuna_search_with_each_form_of_space(tmp_path, suite, form):
    optuna = _optuna()
    from tunebus.tune.search.optuna import OptunaSearch

    if form == "domains":  # the Tuner's param space, metric and mode from TuneConfig
        searcher = OptunaSearch(seed=7)
        grid = _fit(
            tmp_path,
            "optuna-" + form,
            quadratic,
            {"x": tune.uniform(0, 1), "n": tune.randint(1, 4)},
            metric="score",
            mode="max",
            num_samples=4,
            search_alg=searcher,
        )
    elif form == "distributions":  # OptunaSearch's own space, metric and mode
        searcher = OptunaSearch(
            {
                "x": optuna.distributions.FloatDistribution(0, 1),
                "n": optuna.distributions.IntDistribution(1, 3),
            },
            metric="loss",
            mode="min",
            seed=7,
            points_to_evaluate=[{"x": 0.3, "n": 2}],
        )
        grid = _fit(tmp_path, "optuna-" + form, quadratic, {}, num_samples=4, search_alg=searcher)
    else:
        searcher = OptunaSearch(_define_by_run, metric="score", mode="max", seed=7)
        grid = _fit(tmp_path, "optuna-" + form, report_lr, {}, num_samples=4, search_alg=searcher)
    assert len(grid) == 4 and grid.num_errors == 0, grid.errors
    trials = searcher._ot_study.trials  # the user's object ran the study, as Ray's does
    assert len(trials) == 4 and all(t.state.name == "COMPLETE" for t in trials)
    by_value = sorted(t.value for t in trials)
    metric = "loss" if form == "distributions" else "score"
    assert by_value == sorted(r.metrics[metric] for r in grid)
    for result in grid:
        config = result.config
        if form == "define_by_run":
            assert 1e-3 <= config["lr"] <= 1e-1 and isinstance(config["deep"], bool)
            assert (config["layers"] in (2, 3, 4)) if config["deep"] else config["layers"] is None
        else:
            assert 0 <= config["x"] <= 1 and config["n"] in (1, 2, 3)
    if form == "distributions":
        assert any(r.config == {"x": 0.3, "n": 2} for r in grid)  # the point ran first
    if form == "domains":  # each result reached the Optuna trial as an intermediate value
        assert sorted(v for t in trials for v in t.intermediate_values.values()) == by_value


class Logged(Searcher):
    """A user's searcher over x in 1..n; its calls are checked against the trials."""

    def __init__(self, n):
        super().__init__(metric="score", mode="max")
        self.n, self.suggested, self.completed = n, {}, {}

    def suggest(self, trial_id):
        if len(self.suggested) >= self.n:
            return Searcher.FINISHED
        self.suggested[trial_id] = {"x": len(self.suggested) + 1}
        return dict(self.suggested[trial_id])

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.completed[trial_id] = (result["score"], result["config/x"], error)


def doubled(config):
    train.report({"score": config["x"] * 2})


def test_a_user_searcher_is_called_in_the_driver(tmp_path, suite):
    searcher = Logged(3)
    grid = _fit(tmp_path, "user-searcher", doubled, {}, num_samples=10, search_alg=searcher)
    assert len(grid) == 3 and grid.num_errors == 0
    by_id = {r.trial_id: r for r in grid}
    assert sorted(searcher.suggested) == sorted(by_id)
    for trial_id, config in searcher.suggested.items():
        assert by_id[trial_id].config == config
        score, x, error = searcher.completed[trial_id]
        assert (score, x, error) == (by_id[trial_id].metrics["score"], config["x"], False)


def timed(config):
    start = time.time()
    time.sleep(0.4)
    train.report({"score": config["x"], "start": start, "end": time.time()})


def _most_at_once(grid):
    spans = [(r.metrics["start"], r.metrics["end"]) for r in grid]
    return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)


@pytest.mark.parametrize("limit", [1, 2])
def test_concurrency_limiter_limits_the_trials_running_at_once(tmp_path, suite, limit):
    # The embedded suite's worker has a slot per core: with 2 cores, 2 trials would run at once.
    if limit > 1 and (os.cpu_count() or 1) < limit:
        pytest.skip("needs %d cores" % limit)
    searcher = ConcurrencyLimiter(Logged(4), max_concurrent=limit)
    grid = _fit(tmp_path, "limited%d" % limit, timed, {}, num_samples=4, search_alg=searcher)
    assert len(grid) == 4 and grid.num_errors == 0
    assert _most_at_once(grid) == limit
    assert searcher.live_trials == set()


class Noisy(Searcher):
    """Suggests x = 1, 2, ...; remembers what on_trial_complete told it."""

    def __init__(self):
        super().__init__(metric="score", mode="max")
        self.count, self.told = 0, {}

    def suggest(self, trial_id):
        self.count += 1
        return {"x": self.count}

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.told[trial_id] = result


def seeded(config):
    train.report({"score": config["x"] * 10 + config["__trial_index__"]})


def test_repeater_repeats_each_config_and_tells_the_mean(tmp_path, suite):
    inner = Noisy()
    grid = _fit(
        tmp_path, "repeater", seeded, {}, num_samples=6, search_alg=Repeater(inner, repeat=3)
    )
    assert len(grid) == 6 and grid.num_errors == 0
    groups = {}
    for r in grid:
        groups.setdefault(r.config["x"], []).append(r.config["__trial_index__"])
    assert {x: sorted(i) for x, i in groups.items()} == {1: [0, 1, 2], 2: [0, 1, 2]}
    # The inner searcher heard one end per group, with the mean of its repeats (x*10 + 0..2).
    assert sorted(v["score"] for v in inner.told.values()) == [11.0, 21.0]
    assert len(inner.told) == 2


def two_objectives(config):
    x = config["x"]
    train.report({"a": x * x, "b": (x - 2) ** 2})


def test_many_objective_optuna_search_gives_a_pareto_set(tmp_path, suite):
    from tunebus.tune.search.optuna import OptunaSearch

    # A RandomSampler study runs in the driver (an NSGAIISampler or TPESampler would become the
    # scheduler's nsga2 / motpe: tests/python/test_many_objectives.py).
    ot = _optuna()
    searcher = OptunaSearch(
        metric=["a", "b"], mode=["min", "min"], sampler=ot.samplers.RandomSampler(seed=3)
    )
    grid = _fit(
        tmp_path,
        "pareto",
        two_objectives,
        {"x": tune.uniform(-1, 3)},
        num_samples=6,
        search_alg=searcher,
    )
    assert len(grid) == 6 and grid.num_errors == 0
    points = [(r.metrics["a"], r.metrics["b"]) for r in grid]

    def dominated(p):
        return any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)

    pareto = sorted(p for p in points if not dominated(p))
    study_pareto = sorted(tuple(t.values) for t in searcher._ot_study.best_trials)
    assert pareto and [tuple(map(lambda v: round(v, 9), p)) for p in pareto] == [
        tuple(map(lambda v: round(v, 9), p)) for p in study_pareto
    ]
    # The ResultGrid's front is the study's.
    assert sorted((r.metrics["a"], r.metrics["b"]) for r in grid.get_pareto_front()) == pareto
    # Optuna ran a study with two directions; the experiment's metric is the first.
    assert [d.name for d in searcher._ot_study.directions] == ["MINIMIZE", "MINIMIZE"]
    assert not math.isnan(grid.get_best_result(metric="a", mode="min").metrics["a"])


def slow_quadratic(config):
    for _ in range(4):
        time.sleep(0.2)
        train.report({"score": -((config["x"] - 0.3) ** 2)})


def test_optuna_search_survives_a_scheduler_sigkill(tmp_path, tunectl, monkeypatch):
    # The scheduler is SIGKILLed after two trials and started again on the same endpoints: it
    # resumes the experiment and starts a new §7a session, replaying its journal. The driver
    # rebuilds OptunaSearch (a new study, the replayed params enqueued, the same sampler) and
    # the ConcurrencyLimiter (the running trial is live again), so the study ends with exactly
    # the experiment's trials, each told once with its result, and no config drawn twice.
    _optuna()
    import threading

    import tunebus
    from suites import ProcessSuite
    from tunebus.tune.search.optuna import OptunaSearch

    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))
    suite = None
    optuna_search = OptunaSearch(seed=11)
    out = {}

    def run():
        try:
            out["grid"] = _fit(
                tmp_path / "r",
                "optuna-restart",
                slow_quadratic,
                {"x": tune.uniform(0, 1)},
                metric="score",
                mode="max",
                num_samples=6,
                search_alg=ConcurrencyLimiter(optuna_search, max_concurrent=1),
            )
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            out["error"] = e

    try:
        suite = ProcessSuite(tunectl, tmp_path / "suite", {"w1": ["--cpus", "2"]})
        tunebus.init(address=suite.control)
        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 60
        while len(optuna_search._completed_trials) < 2:
            assert time.monotonic() < deadline and thread.is_alive(), (out, suite.log("scheduler"))
            time.sleep(0.05)
        first_study = optuna_search._ot_study
        suite.restart_scheduler()
        thread.join(120)
        assert not thread.is_alive()
    finally:
        tunebus.init(address=None)
        if suite is not None:
            suite.close()
    assert "error" not in out, (out, suite.log("scheduler"))
    grid = out["grid"]
    assert len(grid) == 6 and grid.num_errors == 0
    study = optuna_search._ot_study
    assert study is not first_study  # rebuilt in the new session
    trials = study.trials
    assert len(trials) == 6 and all(t.state.name == "COMPLETE" for t in trials)
    by_x = {round(r.config["x"], 12): r.metrics["score"] for r in grid}
    assert len(by_x) == 6  # no config twice
    assert {round(t.params["x"], 12): t.value for t in trials} == by_x
