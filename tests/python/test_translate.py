"""A Tuner's translation into the experiment file, without a suite: Ray's argument names and
defaults, metric/mode inheritance, the driver's callables and its answers to the scheduler
(`driver_result`, `driver_sample`)."""

import copy
import os
import random
import subprocess
import sys

import pytest

from tunebus import tune
from tunebus._driver import DriverLink
from tunebus._errors import TuneError
from tunebus._router import ProtocolError
from tunebus._tuner import DriverNeeds, build_experiment
from tunebus.tune.schedulers import (
    ASHAScheduler,
    HyperBandForBOHB,
    MedianStoppingRule,
    PopulationBasedTraining,
)
from tunebus.tune.search import BasicVariantGenerator, ConcurrencyLimiter, TPESearch, TuneBOHB


def fn(config):
    pass


def test_param_space_takes_rays_argument_names():
    # Every sampling function with Ray's keyword names becomes its experiment-file form.
    space = {
        "a": tune.uniform(lower=0.1, upper=0.9),
        "b": tune.quniform(lower=0, upper=1, q=0.25),
        "c": tune.loguniform(lower=1e-4, upper=1e-1),
        "d": tune.qloguniform(lower=1e-4, upper=1e-1, q=1e-4, base=2),
        "e": tune.randn(mean=1.0, sd=2.0),
        "f": tune.qrandn(mean=0.0, sd=1.0, q=0.1),
        "g": tune.randint(lower=1, upper=10),
        "h": tune.qrandint(lower=2, upper=64, q=2),
        "i": tune.lograndint(lower=16, upper=1024),
        "j": tune.qlograndint(lower=2, upper=64, q=2, base=2),
        "k": tune.choice(categories=["relu", "tanh"]),
        "l": tune.grid_search([1, 2]),
        "m": {"n": tune.randn(), "const": [1, 2]},
        "o": "fixed",
    }
    exp, needs = build_experiment(fn, space)
    assert exp["param_space"] == {
        "a": {"uniform": [0.1, 0.9]},
        "b": {"quniform": [0, 1, 0.25]},
        "c": {"loguniform": [1e-4, 1e-1, 10]},
        "d": {"qloguniform": [1e-4, 1e-1, 1e-4, 2]},
        "e": {"randn": [1.0, 2.0]},
        "f": {"qrandn": [0.0, 1.0, 0.1]},
        "g": {"randint": [1, 10]},
        "h": {"qrandint": [2, 64, 2]},
        "i": {"lograndint": [16, 1024, 10]},
        "j": {"qlograndint": [2, 64, 2, 2]},
        "k": {"choice": ["relu", "tanh"]},
        "l": {"grid_search": [1, 2]},
        "m": {"n": {"randn": [0.0, 1.0]}, "const": [1, 2]},
        "o": "fixed",
    }
    assert not needs.sample_from and not needs.link


def test_a_choice_over_dicts_of_domains_is_a_conditional_branch():
    # Ray's tune.choice over dicts holding domains becomes the experiment file's conditional
    # branches; the driver's own draw of it samples only the picked branch.
    space = {
        "opt": tune.choice(
            [
                {"name": "sgd", "lr": tune.loguniform(1e-4, 1)},
                {"name": "adam", "lr": tune.loguniform(1e-5, 1e-1), "beta1": tune.uniform(0.5, 1)},
                "none",
            ]
        )
    }
    exp, _ = build_experiment(fn, space)
    assert exp["param_space"] == {
        "opt": {
            "choice": [
                {"name": "sgd", "lr": {"loguniform": [1e-4, 1, 10]}},
                {
                    "name": "adam",
                    "lr": {"loguniform": [1e-5, 1e-1, 10]},
                    "beta1": {"uniform": [0.5, 1]},
                },
                "none",
            ]
        }
    }
    rng = random.Random(3)
    drawn = [space["opt"].sample(rng) for _ in range(50)]
    assert "none" in drawn
    assert {d["name"] for d in drawn if isinstance(d, dict)} == {"sgd", "adam"}
    for d in drawn:
        if isinstance(d, dict) and d["name"] == "adam":
            assert set(d) == {"name", "lr", "beta1"} and 1e-5 <= d["lr"] <= 1e-1
    with pytest.raises(TuneError) as e:
        build_experiment(fn, {"opt": tune.choice([{"data": object()}])})
    assert "param_space.opt.choice[0].data" in e.value.message


def test_a_config_value_json_cannot_hold_names_its_path():
    with pytest.raises(TuneError) as e:
        build_experiment(fn, {"model": {"data": object()}})
    assert e.value.code == "invalid_argument"
    assert "param_space.model.data" in e.value.message


def test_configs_map_to_the_experiment_file():
    exp, _ = build_experiment(
        tune.with_resources(fn, {"CPU": 2, "gpu": 0.5, "custom": 1}),
        {},
        tune.TuneConfig(
            metric="acc",
            mode="max",
            num_samples=5,
            max_concurrent_trials=2,
            time_budget_s=60,
            reuse_actors=True,
        ),
        tune.RunConfig(
            name="exp1",
            storage_path="/tmp/x",
            stop={"training_iteration": 7},
            failure_config=tune.FailureConfig(max_failures=3, fail_fast=True),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=2,
                checkpoint_score_attribute="loss",
                checkpoint_score_order="min",
                checkpoint_frequency=4,
                checkpoint_at_end=True,
            ),
        ),
    )
    assert exp["name"] == "exp1" and exp["results_dir"] == "/tmp/x"
    assert exp["num_samples"] == 5 and exp["metric"] == "acc" and exp["mode"] == "max"
    assert exp["stop"] == {"training_iteration": 7, "time_budget_s": 60}
    assert exp["resources_per_trial"] == {"cpu": 2, "gpu": 0.5, "custom": 1}
    assert exp["max_concurrent_trials"] == 2
    assert exp["max_failures"] == 3 and exp["fail_fast"] is True
    assert exp["checkpoint_freq"] == 4 and exp["checkpoint_at_end"] is True
    assert exp["keep_checkpoints_num"] == 2 and exp["checkpoint_score_attr"] == "min-loss"
    assert exp["trainable"]["command"][1] == "_tunebus/run_trainable.py"


def test_schedulers_take_rays_names_and_inherit_metric_and_mode():
    exp, _ = build_experiment(
        fn,
        {},
        tune.TuneConfig(metric="acc", mode="max", scheduler=ASHAScheduler(max_t=9, grace_period=2)),
    )
    assert exp["scheduler"] == {
        "type": "asha",
        "metric": "acc",
        "mode": "max",
        "time_attr": "training_iteration",
        "max_t": 9,
        "grace_period": 2,
        "reduction_factor": 4,
        "brackets": 1,
        "stop_last_trials": True,
    }
    exp, _ = build_experiment(
        fn,
        {},
        tune.TuneConfig(scheduler=MedianStoppingRule(metric="loss", mode="min", grace_period=5)),
    )
    assert exp["scheduler"]["type"] == "median_stopping"
    assert exp["scheduler"]["metric"] == "loss" and "metric" not in exp
    exp, _ = build_experiment(
        fn,
        {},
        tune.TuneConfig(
            metric="acc", mode="max", scheduler=HyperBandForBOHB(max_t=27), search_alg=TuneBOHB()
        ),
    )
    assert exp["scheduler"]["type"] == "hyperband_bohb" and exp["search"]["type"] == "bohb"


def test_metric_in_both_scheduler_and_tune_config_is_refused_as_ray_does():
    with pytest.raises(ValueError, match="already instantiated"):
        build_experiment(
            fn,
            {},
            tune.TuneConfig(
                metric="acc", mode="max", scheduler=ASHAScheduler(metric="acc", mode="max")
            ),
        )


def test_pbt_function_mutations_go_to_the_driver():
    pbt = PopulationBasedTraining(
        perturbation_interval=2,
        hyperparam_mutations={
            "lr": tune.loguniform(1e-4, 1e-1),
            "batch": [16, 32],
            "momentum": lambda: random.uniform(0.8, 0.99),
        },
    )
    exp, needs = build_experiment(fn, {}, tune.TuneConfig(metric="acc", mode="max", scheduler=pbt))
    assert exp["scheduler"]["hyperparam_mutations"] == {
        "lr": {"loguniform": [1e-4, 1e-1, 10]},
        "batch": [16, 32],
        "momentum": {"driver": {}},
    }
    assert exp["scheduler"]["perturbation_factors"] == [1.2, 0.8]
    assert list(needs.mutations) == ["momentum"] and needs.link


def test_searchers_map_to_search():
    exp, _ = build_experiment(
        fn,
        {},
        tune.TuneConfig(
            metric="acc",
            mode="max",
            search_alg=ConcurrencyLimiter(TPESearch(n_startup_trials=5, seed=3), max_concurrent=2),
        ),
    )
    assert exp["search"] == {
        "type": "tpe",
        "metric": "acc",
        "mode": "max",
        "n_startup_trials": 5,
        "max_concurrent": 2,
    }
    assert exp["seed"] == 3
    exp, _ = build_experiment(
        fn,
        {},
        tune.TuneConfig(
            search_alg=BasicVariantGenerator(points_to_evaluate=[{"x": 1}], random_state=7)
        ),
    )
    assert exp["search"] == {"type": "random", "points_to_evaluate": [{"x": 1}]}
    assert exp["seed"] == 7


def test_a_callable_stop_runs_in_the_driver():
    class Stop(tune.Stopper):
        def __call__(self, trial_id, result):
            return result["training_iteration"] >= 2

    stopper = Stop()
    exp, needs = build_experiment(fn, {}, run_config=tune.RunConfig(stop=stopper))
    assert "stop" not in exp and needs.stopper is stopper and needs.link


PLACEHOLDER = {"sample_from": "driver"}
HELLO = {"type": "hello", "session": "s1", "experiment": "e", "metric": "", "mode": ""}


def _sample(link, config, paths, session="s1"):
    return link.handle_link(
        {
            "type": "driver_sample",
            "session": session,
            "trial_id": "t0",
            "config": config,
            "paths": paths,
        }
    )


def test_sample_from_is_drawn_by_the_schedulers_variant_generator():
    # The file keeps the grid and the domains (search: random by default) and a placeholder at
    # each sample_from key; the driver link serves the values without seeing results.
    space = {
        "a": tune.grid_search([1, 2]),
        "r": tune.uniform(0, 1),
        "model": {"twice": tune.sample_from(lambda spec: spec.config.a * 2)},
    }
    exp, needs = build_experiment(fn, space, tune.TuneConfig(num_samples=3))
    assert exp["param_space"] == {
        "a": {"grid_search": [1, 2]},
        "r": {"uniform": [0, 1]},
        "model": {"twice": PLACEHOLDER},
    }
    assert "search" not in exp and exp["num_samples"] == 3
    assert needs.sample_from and needs.param_space is space and needs.search is None
    assert needs.link and not needs.on_result
    link = DriverLink(exp, needs)
    try:
        driver = link.amend(exp)["driver"]
        assert driver["endpoint"].startswith("tcp://127.0.0.1:") and driver["on_result"] is False
    finally:
        link.close()
    # A stopper beside it: every result goes to the driver as well.
    exp, needs = build_experiment(fn, space, run_config=tune.RunConfig(stop=lambda t, r: False))
    assert needs.link and needs.on_result


def test_sample_from_with_a_search_alg_is_refused():
    with pytest.raises(TuneError) as e:
        build_experiment(
            fn,
            {"x": tune.sample_from(lambda spec: 1)},
            tune.TuneConfig(metric="acc", mode="max", search_alg=TPESearch()),
        )
    assert e.value.code == "invalid_argument" and "search_alg TPESearch" in e.value.message
    # Ray's BasicVariantGenerator is the variant generator that asks the driver: it is taken.
    exp, needs = build_experiment(
        fn,
        {"x": tune.sample_from(lambda spec: 1)},
        tune.TuneConfig(search_alg=BasicVariantGenerator(random_state=5)),
    )
    assert exp["search"]["type"] == "random" and exp["seed"] == 5 and needs.sample_from


def test_driver_sample_calls_each_function_in_order_with_the_config_so_far():
    seen = []

    def first(spec):
        seen.append(("first", copy.deepcopy(spec.config)))
        return spec.config.a * 2

    def second(spec):
        seen.append(("second", copy.deepcopy(spec.config)))
        return spec.config.b + spec.config["lr"] + spec.config.model.width

    space = {
        "a": tune.grid_search([1, 2]),
        "lr": tune.uniform(0, 1),
        "b": tune.sample_from(first),
        "c": {"d": tune.sample_from(second)},
        "e": tune.sample_from(lambda: ("no", "spec")),
        "model": {"width": 10},
    }
    link = DriverLink({"name": "e"}, DriverNeeds(param_space=space))
    try:
        assert link.handle_link(HELLO) == {"type": "hello_ok"}
        config = {
            "a": 1,
            "lr": 0.5,
            "b": PLACEHOLDER,
            "c": {"d": PLACEHOLDER},
            "e": PLACEHOLDER,
            "model": {"width": 10},
        }
        reply = _sample(link, config, [["b"], ["c", "d"], ["e"]])
        assert reply == {"type": "driver_samples", "values": [2, 12.5, ["no", "spec"]]}
        # Each function sees the values computed before it; the later keys are absent.
        assert seen == [
            ("first", {"a": 1, "lr": 0.5, "c": {}, "model": {"width": 10}}),
            ("second", {"a": 1, "lr": 0.5, "b": 2, "c": {}, "model": {"width": 10}}),
        ]
        assert link.error is None
        # Asked in another order, `second` reads `b` before it is computed: Ray's error.
        reply = _sample(link, config, [["c", "d"], ["b"], ["e"]])
        assert reply == {"type": "driver_samples", "error": "param_space.c.d: AttributeError: b"}
        assert isinstance(link.error, AttributeError)
    finally:
        link.close()


def test_driver_sample_answers_a_functions_error_and_keeps_the_first():
    def boom(spec):
        raise ValueError("boom")

    space = {
        "boom": tune.sample_from(boom),
        "obj": tune.sample_from(lambda spec: object()),
        "nan": tune.sample_from(lambda spec: float("nan")),
        "ok": tune.sample_from(lambda spec: 1),
    }
    link = DriverLink({"name": "e"}, DriverNeeds(param_space=space))
    try:
        link.handle_link(HELLO)
        config = {key: PLACEHOLDER for key in space}
        assert _sample(link, config, [["boom"], ["ok"]]) == {
            "type": "driver_samples",
            "error": "param_space.boom: ValueError: boom",
        }
        first = link.error
        assert isinstance(first, ValueError) and str(first) == "boom"
        error = _sample(link, config, [["ok"], ["obj"]])["error"]
        assert error.startswith(
            "param_space.obj: ValueError: the returned value: object is not a JSON value"
        )
        error = _sample(link, config, [["nan"]])["error"]
        assert error.startswith("param_space.nan: ValueError: the returned value: nan has no JSON")
        # A path without a sample_from in the driver's param space (a restore without it).
        error = _sample(link, {"gone": PLACEHOLDER}, [["gone"]])["error"]
        assert error.startswith("param_space.gone: TuneError: the driver's param_space has no")
        assert link.error is first  # the first error is the one fit() raises
        assert _sample(link, config, [["ok"]]) == {"type": "driver_samples", "values": [1]}
    finally:
        link.close()


def test_driver_sample_refuses_another_session_and_malformed_requests():
    link = DriverLink({"name": "e"}, DriverNeeds(param_space={"x": tune.sample_from(lambda s: 1)}))
    try:
        with pytest.raises(ProtocolError) as e:
            _sample(link, {"x": PLACEHOLDER}, [["x"]])  # before any hello
        assert e.value.code == "failed_precondition"
        link.handle_link(HELLO)
        with pytest.raises(ProtocolError) as e:
            _sample(link, {"x": PLACEHOLDER}, [["x"]], session="old")
        assert e.value.code == "failed_precondition"
        for paths in (None, ["x"], [[]], [["x", 1]]):
            with pytest.raises(ProtocolError) as e:
                _sample(link, {"x": PLACEHOLDER}, paths)
            assert e.value.code == "invalid_argument"
        with pytest.raises(ProtocolError) as e:
            _sample(link, None, [["x"]])
        assert e.value.code == "invalid_argument"
        assert link.error is None
    finally:
        link.close()


def test_driver_sample_over_the_link_socket():
    # The scheduler's side: a DEALER sending msgpack requests (PROTOCOL.md §1) to the link.
    from tunebus import _deps

    zmq, msgpack = _deps.load("zmq"), _deps.load("msgpack")
    space = {"n": {"v": tune.sample_from(lambda spec: {"list": [spec.config.x, (1, 2)]})}}
    exp, needs = build_experiment(fn, dict(space, x=tune.grid_search([3])))
    link = DriverLink(exp, needs)
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RCVTIMEO, 5000)
    try:
        dealer.connect(link.amend(exp)["driver"]["endpoint"])

        def ask(msg):
            dealer.send(msgpack.packb(dict(msg, v=1, id=7), use_bin_type=True))
            return msgpack.unpackb(dealer.recv(), raw=False)

        assert ask(HELLO)["type"] == "hello_ok"
        reply = ask(
            {
                "type": "driver_sample",
                "session": "s1",
                "trial_id": "t0",
                "config": {"n": {"v": PLACEHOLDER}, "x": 3},
                "paths": [["n", "v"]],
            }
        )
        assert reply == {
            "type": "driver_samples",
            "values": [{"list": [3, [1, 2]]}],
            "v": 1,
            "id": 7,
        }
        reply = ask({"type": "driver_sample", "session": "s0", "config": {}, "paths": []})
        assert reply["type"] == "error" and reply["code"] == "failed_precondition"
    finally:
        dealer.close()
        link.close()


def test_sample_from_takes_a_function_of_zero_or_one_argument():
    assert tune.sample_from(lambda: 3).sample(None, None) == 3
    assert tune.sample_from(lambda spec: spec).sample(None, "spec") == "spec"
    with pytest.raises(ValueError):
        tune.sample_from(lambda a, b: 1)


def test_driver_link_answers_results_and_refuses_unknown_sessions():
    seen = []

    class Stop(tune.Stopper):
        def __call__(self, trial_id, result):
            seen.append((trial_id, result["training_iteration"]))
            return result["training_iteration"] >= 3

        def stop_all(self):
            return len(seen) >= 5

    link = DriverLink({"num_samples": 1}, DriverNeeds(stopper=Stop(), mutations={"m": lambda: 7}))
    try:
        assert link.handle_link(
            {"type": "hello", "session": "s1", "experiment": "e", "metric": "acc", "mode": "max"}
        ) == {"type": "hello_ok"}
        reply = link.handle_link(
            {
                "type": "driver_result",
                "session": "s1",
                "trial_id": "t0",
                "result": {"training_iteration": 3},
            }
        )
        assert reply == {
            "type": "driver_decision",
            "stop_trial": True,
            "stop_all": False,
            "should_checkpoint": False,
            "samples": {"m": 7},
        }
        with pytest.raises(ProtocolError) as e:
            link.handle_link(
                {"type": "driver_result", "session": "old", "trial_id": "t0", "result": {}}
            )
        assert e.value.code == "failed_precondition"
        exp = link.amend({"name": "e"})
        assert exp["driver"]["endpoint"].startswith("tcp://127.0.0.1:")
        assert exp["driver"]["on_result"] is True
    finally:
        link.close()


def test_the_trainable_helper_api_is_unchanged():
    import tunebus

    for name in (
        "config",
        "report",
        "checkpoint_dir",
        "restore_dir",
        "trial_id",
        "trial_dir",
        "start_iteration",
    ):
        assert callable(getattr(tunebus, name))
    assert tunebus.config() == {} or isinstance(tunebus.config(), dict)


def test_the_package_imports_under_an_interpreter_without_debians_modules():
    # The pyenv python3 on PATH (if any) lacks zmq/msgpack/cloudpickle: tunebus falls back to
    # Debian's dist-packages when the versions match, else names the Debian packages.
    other = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if os.path.exists(os.path.join(p, "python3"))
        and os.path.realpath(os.path.join(p, "python3")) != os.path.realpath(sys.executable)
    ]
    if not other:
        pytest.skip("no second python3 on PATH")
    python = os.path.join(other[0], "python3")
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "try:\n from tunebus import tune; tune.Tuner; from tunebus import _deps;"
        " _deps.load('zmq'); print('ok')\n"
        "except ImportError as e:\n print('importerror', 'python3-zmq' in str(e))\n"
        % os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python")
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() in ("ok", "importerror True"), out.stderr


def test_callback_dispatcher_calls_each_hook_once_per_event():
    """Pure: a result asked twice (a reconnect), events published twice (a restarted
    scheduler), a result before its start event, and the final list completing a dropped end."""
    from tunebus._callbacks import Callback, CallbackDispatcher

    class Notes(Callback):
        def __init__(self):
            self.calls = []

        def on_trial_start(self, iteration, trials, trial, **info):
            self.calls.append(("start", trial.trial_id, trial.attempt))

        def on_trial_result(self, iteration, trials, trial, result, **info):
            self.calls.append(("result", trial.trial_id, result["training_iteration"]))
            result["should_checkpoint"] = result["training_iteration"] == 2

        def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
            self.calls.append(("checkpoint", trial.trial_id, checkpoint.checkpoint_id))

        def on_trial_save(self, iteration, trials, trial, **info):
            self.calls.append(("save", trial.trial_id, None))

        def on_trial_complete(self, iteration, trials, trial, **info):
            self.calls.append(("complete", trial.trial_id, None))

        def on_trial_recover(self, iteration, trials, trial, **info):
            self.calls.append(("recover", trial.trial_id, trial.num_failures))

        def on_experiment_end(self, trials, **info):
            self.calls.append(("end", None, len(trials)))

    notes = Notes()
    d = CallbackDispatcher([notes])
    started = {
        "event": "trial_started",
        "trial_id": "t0",
        "body": {"trial_id": "t0", "attempt": 1, "status": "RUNNING", "config": {"a": 1}},
    }
    assert d.on_result("t0", 1, 1, {"training_iteration": 1, "config": {"a": 1}}) is False
    d.on_event(started)  # after its result: already started
    assert d.on_result("t0", 1, 2, {"training_iteration": 2}) is True
    assert d.on_result("t0", 1, 2, {"training_iteration": 2}) is False  # asked again
    saved = {
        "event": "checkpoint_saved",
        "trial_id": "t0",
        "body": {"checkpoint_id": "c1", "training_iteration": 2},
    }
    d.on_event(saved)
    d.on_event(saved)
    failed = {
        "event": "trial_status",
        "trial_id": "t0",
        "body": {"trial_id": "t0", "attempt": 1, "status": "PENDING", "num_failures": 1},
    }
    d.on_event(failed)
    d.on_event(dict(started, body=dict(started["body"], attempt=2, num_failures=1)))
    d.on_event(dict(started, body=dict(started["body"], attempt=2, num_failures=1)))
    d.finish([{"trial_id": "t0", "attempt": 2, "status": "TERMINATED"}])
    d.finish([{"trial_id": "t0", "attempt": 2, "status": "TERMINATED"}])
    assert notes.calls == [
        ("start", "t0", 1),
        ("result", "t0", 1),
        ("result", "t0", 2),
        ("checkpoint", "t0", "c1"),
        ("save", "t0", None),
        ("recover", "t0", 1),
        ("start", "t0", 2),
        ("complete", "t0", None),
        ("end", None, 1),
    ]


def test_reporters_print_rays_status_text(capsys):
    """Pure: CLIReporter's and JupyterNotebookReporter's text for four trials (Ray 2.x's
    _progress_str): counts, best trial, sorted rows, the row limit while running, the column
    length, and the errors table."""
    from tunebus._reporters import ReporterCallback
    from tunebus._trial import Trial
    from tunebus.tune import CLIReporter, JupyterNotebookReporter

    trials = [
        Trial(
            {
                "trial_id": "t%d" % i,
                "status": s,
                "config": {"lr": lr, "m": {"d": i}},
                "last_result": {"acc": acc, "training_iteration": 2, "long": "x" * 30},
            },
            trainable_name="fn",
        )
        for i, (s, lr, acc) in enumerate(
            [
                ("TERMINATED", 0.1, 0.5),
                ("RUNNING", 0.2, 0.9),
                ("ERROR", 0.3, 0.1),
                ("PENDING", 0.4, None),
            ]
        )
    ]
    reporter = CLIReporter(
        metric_columns={"acc": "accuracy", "long": "long"},
        parameter_columns=["lr", "m/d"],
        max_progress_rows=2,
        sort_by_metric=True,
        max_column_length=10,
    )
    callback = ReporterCallback(reporter, "acc", "max", ["Using FIFO scheduling algorithm."])
    callback.setup(total_num_samples=5)
    callback.on_step_end(0, trials)
    text = capsys.readouterr().out
    assert text.startswith("== Status ==\nCurrent time: ")
    assert (
        "Using FIFO scheduling algorithm.\nNumber of trials: 4/5 (1 ERROR, 1 PENDING, "
        "1 RUNNING, 1 TERMINATED)\n" in text
    )
    assert (
        "Current best trial: fn_t1 with acc=0.9 and parameters={'lr': 0.2, 'm': {'d': 1}}" in text
    )
    table, errors = text.split("Number of errored trials: 1")
    rows = [line for line in table.splitlines() if line.startswith("| fn_")]
    assert [r.split("|")[1].strip() for r in rows] == ["fn_t1", "fn_t0"]  # best first, 2 rows
    assert "| fn_t2" in errors
    assert "| xxxxxxx... |" in rows[0]
    assert "... 2 more trials not shown" in text
    callback.on_step_end(1, trials)  # within max_report_frequency: nothing
    assert capsys.readouterr().out == ""
    callback.on_experiment_end(trials)  # done: every row
    table = capsys.readouterr().out.split("Number of errored trials")[0]
    assert len([line for line in table.splitlines() if line.startswith("| fn_")]) == 4
    JupyterNotebookReporter(overwrite=True).report(trials, True)
    assert "Number of trials: 4/4" in capsys.readouterr().out


def test_a_progress_reporter_subclass_must_implement_its_methods():
    from tunebus.tune import ProgressReporter

    class Incomplete(ProgressReporter):
        def should_report(self, trials, done=False):
            return True

    class Counts(Incomplete):
        def report(self, trials, done, *sys_info):
            return len(trials)

    with pytest.raises(TypeError):
        Incomplete()
    assert Counts().report([1, 2], True) == 2
