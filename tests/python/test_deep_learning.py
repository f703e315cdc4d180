"""Deep-learning trainables on real suites: examples/pytorch/tune_cnn.py (a CNN on the bundled
digits, ~10.7 MB checkpoints of model and optimizer state_dicts) under ASHA and under PBT, and
examples/xgboost/tune_xgboost.py with `tunebus.tune.integration.xgboost`'s callbacks under ASHA,
plus a restore of an XGBoost booster after a failed attempt.

Each example runs as its own script, unchanged, with `--quick` and TUNEBUS_ADDRESS naming a
suite this test started (suites.py), so the checkpoints stay fetchable from the checkpoint-store
after the script exits. Every check reads the results files (`result.json`), the trial objects
(`tunectl ls`) or checkpoints exported from the store. torch and xgboost are Debian's
python3-torch and python3-xgboost; missing, they fail the test under CI=true and skip it
otherwise.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import suites

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTORCH_EXAMPLE = os.path.join(SOURCE, "examples", "pytorch", "tune_cnn.py")
XGBOOST_EXAMPLE = os.path.join(SOURCE, "examples", "xgboost", "tune_xgboost.py")


def _load_example(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(argv, suite, timeout_s=240):
    """Runs a driver script against `suite`; returns its output (asserting exit code 0)."""
    out = subprocess.run(
        [sys.executable] + argv, capture_output=True, text=True, env=suite.env(), timeout=timeout_s
    )
    assert out.returncode == 0, out.stdout + out.stderr + suite.logs()
    return out.stdout


def _results(experiment_dir):
    """{trial folder name: [result rows, in file order]} of an experiment's folder."""
    rows = {}
    for name in sorted(os.listdir(experiment_dir)):
        path = os.path.join(experiment_dir, name, "result.json")
        if os.path.exists(path):
            with open(path) as f:
                rows[name] = [json.loads(line) for line in f if line.strip()]
    return rows


def _export(suite, experiment, trial_id, checkpoint_id, target):
    """Fetches a checkpoint from the suite's checkpoint-store into `target`."""
    return suite.ctl(
        "checkpoint",
        "export",
        trial_id,
        "--checkpoint",
        checkpoint_id,
        "--to",
        str(target),
        "-e",
        experiment,
    )


@pytest.fixture
def up_suite(tmp_path, tunectl):
    suite = suites.UpSuite(tunectl, tmp_path / "suite", ["--cpus", "2"])
    yield suite
    suite.close()


def test_pytorch_cnn_under_asha_checkpoints_state_dicts_of_10_mb(tmp_path, up_suite):
    # Four trials of the CNN, ASHA over 4 iterations, one CPU each on a 2-CPU worker. Every
    # result has a checkpoint; the store keeps each trial's best two by mean_accuracy. The best
    # trial's best checkpoint, fetched from the store after the script exited, holds the weights
    # whose digest that trial reported at that iteration.
    torch = suites.require("torch", "python3-torch")
    cnn = _load_example(PYTORCH_EXAMPLE, "tune_cnn")
    storage = tmp_path / "results"
    out = _run(
        [PYTORCH_EXAMPLE, "--scheduler", "asha", "--quick", "--storage", str(storage)], up_suite
    )
    assert "(4 trials, 0 errors)" in out, out
    rows = _results(storage / "cnn-asha")
    assert len(rows) == 4, rows.keys()
    for name, trial_rows in rows.items():
        iterations = [r["training_iteration"] for r in trial_rows]
        assert iterations == list(range(1, len(iterations) + 1)) and len(iterations) <= 4, name
        for r in trial_rows:
            assert 0 <= r["mean_accuracy"] <= 1 and len(r["state_sha256"]) == 64, r
        # Each step changed the weights.
        assert len({r["state_sha256"] for r in trial_rows}) == len(trial_rows), name
    assert max(len(r) for r in rows.values()) == 4  # ASHA let the best reach max_t

    trials = up_suite.ctl("ls", "-e", "cnn-asha")
    assert len(trials) == 4 and all(t["status"] == "TERMINATED" for t in trials), trials
    for t in trials:
        assert 1 <= len(t["checkpoints"]) <= 2, t["checkpoints"]  # num_to_keep=2
        for c in t["checkpoints"]:
            assert c["size_bytes"] >= 10_000_000, c
    best = max(trials, key=lambda t: max(c["score"] for c in t["checkpoints"]))
    kept = max(best["checkpoints"], key=lambda c: c["score"])
    exported = _export(
        up_suite, "cnn-asha", best["trial_id"], kept["checkpoint_id"], tmp_path / "best"
    )
    path = tmp_path / "best" / cnn.CHECKPOINT_FILE
    assert os.path.getsize(path) >= 10_000_000, exported
    saved = torch.load(str(path))
    digest = cnn.state_digest(saved["model"], saved["optimizer"])
    reported = next(
        r
        for r in rows[os.path.basename(best["dir"])]
        if r["training_iteration"] == kept["training_iteration"]
    )
    assert digest == reported["state_sha256"] == saved["meta"]["sha256"]
    assert saved["meta"]["trial_id"] == best["trial_id"]
    assert kept["score"] == pytest.approx(reported["mean_accuracy"])
    assert "best checkpoint: iteration" in out and "sha256 " in out, out


def test_pytorch_cnn_under_pbt_restores_a_donors_weights_saved_on_another_worker(tmp_path, tunectl):
    # Four workers w1..w4 with one CPU each, four PBT trials of one CPU each: one runs on each and
    # nothing waits, so a trial restarts only when it exploits, in the slot it left, on its own
    # worker. The hosts are unequal: w1 and w2 share one core, w2 at niceness +3 (about a third
    # of the core), w3 and w4 the other, so w2's trial falls behind. (A population in step seldom
    # exploits: a donor's checkpoint of its perturbation point is stored only once it reports
    # again, and a trial that reports its perturbation first is compared with the others' older,
    # lower scores.) At every second iteration a trial in the lower half
    # exploits one of the upper half: it is stopped and started again from the donor's newest
    # stored checkpoint. The result after an exploit names the donor (pbt_exploit), and the
    # trainable reports the digest of the state it loaded (restored_sha256) and the checkpoint's
    # own record (restored_from): that digest is the one the donor reported when it saved that
    # checkpoint, on the worker it names, and the trial goes on from the donor's iteration with
    # the explored config. At least one exploit loads weights saved on another worker.
    suites.require("torch", "python3-torch")
    cores = sorted(os.sched_getaffinity(0))
    placed = (
        {
            "w1": {"cpus": cores[:1]},
            "w2": {"cpus": cores[:1], "nice": 3},
            "w3": {"cpus": cores[1:2]},
            "w4": {"cpus": cores[1:2]},
        }
        if len(cores) > 1
        else None
    )
    suite = suites.ProcessSuite(
        tunectl, tmp_path / "suite", {w: ["--cpus", "1"] for w in ("w1", "w2", "w3", "w4")}, placed
    )
    try:
        # PBT exploits only when a trial falls behind at a perturbation point; on an idle host
        # the unequal workers sometimes keep the population in step for a whole --quick run
        # (about 1 run in 4 here), so the experiment runs again, up to 3 times, until a run
        # exploits across workers. Every run is checked in full.
        crossed = []
        for attempt in range(3):
            crossed = _pbt_run(suite, tmp_path / ("results%d" % attempt))
            if crossed:
                break
        assert crossed, "no exploit across workers in 3 runs"
    finally:
        suite.close()


def _pbt_run(suite, storage):
    """One run of the PBT example on `suite`, results under `storage`: checks every trial and
    every exploit (see the test) and returns the exploits that loaded weights saved on another
    worker."""
    out = _run([PYTORCH_EXAMPLE, "--scheduler", "pbt", "--quick", "--storage", str(storage)], suite)
    assert "(4 trials, 0 errors)" in out, out
    rows = _results(storage / "cnn-pbt")
    by_trial = {trial_rows[0]["trial_id"]: trial_rows for trial_rows in rows.values()}
    assert len(by_trial) == 4, rows.keys()
    for trial_rows in by_trial.values():
        assert trial_rows[-1]["training_iteration"] == 12
        assert {r["worker"] for r in trial_rows} <= {"w1", "w2", "w3", "w4"}
    exploits = [r for trial_rows in by_trial.values() for r in trial_rows if "pbt_exploit" in r]
    for r in exploits:
        note, source = r["pbt_exploit"], r["restored_from"]
        assert source["trial_id"] == note["donor"] != r["trial_id"], r
        assert note["checkpoint_id"].endswith(
            "/%s/%08d-a%d"
            % (note["donor"], source["iteration"], int(note["checkpoint_id"].rsplit("-a", 1)[1]))
        ), note
        # The loaded weights are the donor's at that iteration, as the donor reported them.
        assert r["restored_sha256"] == source["sha256"], r
        donor_rows = [
            d
            for d in by_trial[note["donor"]]
            if d["training_iteration"] == source["iteration"]
            and d["state_sha256"] == source["sha256"]
        ]
        assert donor_rows, (r, by_trial[note["donor"]])
        assert donor_rows[0]["worker"] == source["worker"]
        assert r["training_iteration"] == source["iteration"] + 1, r
        assert r["config"]["lr"] == note["new_config"]["lr"], r
    trials = suite.ctl("ls", "-e", "cnn-pbt")
    assert all(t["status"] == "TERMINATED" for t in trials), trials
    assert all(c["size_bytes"] >= 10_000_000 for t in trials for c in t["checkpoints"])
    return [r for r in exploits if r["worker"] != r["restored_from"]["worker"]]


def test_xgboost_example_under_asha_checkpoints_the_booster_each_round(tmp_path, up_suite):
    # Ray's XGBoost example: six trials, ASHA over 10 rounds; TuneReportCheckpointCallback
    # reports eval-logloss and eval-error after every round with the booster as checkpoint. The
    # best trial's newest checkpoint, fetched from the store, is a booster of as many rounds as
    # the trial reported, predicting the reported eval-logloss.
    xgb = suites.require("xgboost", "python3-xgboost")
    example = _load_example(XGBOOST_EXAMPLE, "tune_xgboost")
    from sklearn.metrics import log_loss

    storage = tmp_path / "results"
    out = _run([XGBOOST_EXAMPLE, "--quick", "--storage", str(storage)], up_suite)
    assert "(6 trials, 0 errors)" in out, out
    rows = _results(storage / "xgboost-asha")
    assert len(rows) == 6
    for trial_rows in rows.values():
        assert [r["training_iteration"] for r in trial_rows] == list(range(1, len(trial_rows) + 1))
        assert all(0 < r["eval-logloss"] < 1 and 0 <= r["eval-error"] <= 1 for r in trial_rows)
        assert all(r.get("should_checkpoint") for r in trial_rows)  # frequency=1: every round
    trials = up_suite.ctl("ls", "-e", "xgboost-asha")
    best = min(trials, key=lambda t: t["last_result"]["eval-logloss"])
    newest = best["checkpoints"][-1]
    assert newest["training_iteration"] == best["training_iteration"]
    _export(up_suite, "xgboost-asha", best["trial_id"], newest["checkpoint_id"], tmp_path / "best")
    booster = xgb.Booster()
    booster.load_model(str(tmp_path / "best" / example.MODEL_FILE))
    assert booster.num_boosted_rounds() == best["training_iteration"]
    _, _, x_eval, y_eval = example.load_data()
    recomputed = log_loss(y_eval, booster.predict(xgb.DMatrix(x_eval)))
    assert recomputed == pytest.approx(best["last_result"]["eval-logloss"], abs=1e-5)
    assert "best checkpoint: %d rounds" % best["training_iteration"] in out, out


FLAKY = """
import os, sys
import xgboost as xgb
from tunebus import train, tune
from tunebus.tune.integration.xgboost import TuneReportCallback, TuneReportCheckpointCallback
from tune_xgboost import load_data  # the example, copied beside this script: shipped with it

ROUNDS = 10

class CrashInFirstAttempt(TuneReportCheckpointCallback):
    # Reports, then kills the first attempt after round 6 (its newest checkpoint is round 5's).
    # One callback: XGBoost 1.7 keeps its callbacks in a set, so two would run in either order.
    def after_iteration(self, model, epoch, evals_log):
        super().after_iteration(model, epoch, evals_log)
        if os.environ.get("TUNEBUS_ATTEMPT") == "1" and model.num_boosted_rounds() == 6:
            os._exit(3)
        return False

def flaky(config):
    train_set, eval_set, _, _ = load_data()
    booster = None
    checkpoint = train.get_checkpoint()
    if checkpoint:
        booster = TuneReportCheckpointCallback.get_model(checkpoint, "booster.json")
    start = booster.num_boosted_rounds() if booster is not None else 0
    report = CrashInFirstAttempt(
        {"loss": "eval-logloss", "error": "eval-error"}, filename="booster.json", frequency=2,
        results_postprocessing_fn=lambda d: dict(d, rounds=start,
                                                 attempt=int(os.environ["TUNEBUS_ATTEMPT"])))
    xgb.train(config, train_set, num_boost_round=ROUNDS - start, evals=[(eval_set, "eval")],
              verbose_eval=False, xgb_model=booster, callbacks=[report])

def report_only(config):
    train_set, eval_set, _, _ = load_data()
    xgb.train(config, train_set, num_boost_round=4, evals=[(eval_set, "eval")],
              verbose_eval=False, callbacks=[TuneReportCallback("eval-logloss")])

params = {"objective": "binary:logistic", "eval_metric": ["logloss", "error"], "nthread": 1,
          "eta": 0.3, "max_depth": 3}
for name, fn in (("xgboost-flaky", flaky), ("xgboost-report", report_only)):
    grid = tune.Tuner(fn, param_space=params,
                      run_config=tune.RunConfig(name=name, storage_path=sys.argv[1], verbose=0,
                                                failure_config=tune.FailureConfig(max_failures=1))
                      ).fit()
    print("ERRORS %s %d" % (name, grid.num_errors))
"""


def test_xgboost_callbacks_restore_the_booster_after_a_failed_attempt(tmp_path, up_suite):
    # TuneReportCheckpointCallback with a metrics dict, frequency=2 and a postprocessing function;
    # the first attempt dies after round 6. The second starts from the checkpoint of round 5
    # (epoch 4: frequency 2 skips epoch 0 and checkpoints epochs 2, 4), loads that booster from
    # train.get_checkpoint() and boosts the 5 rounds left, so the trial ends with a booster of
    # 10 rounds and its results count on from iteration 6. TuneReportCallback reports one metric
    # per round and stores no checkpoint.
    xgb = suites.require("xgboost", "python3-xgboost")
    (tmp_path / "project").mkdir()
    script = tmp_path / "project" / "flaky.py"
    script.write_text(textwrap.dedent(FLAKY))
    shutil.copy(XGBOOST_EXAMPLE, tmp_path / "project")
    storage = tmp_path / "results"
    out = _run([str(script), str(storage)], up_suite)
    assert "ERRORS xgboost-flaky 0" in out and "ERRORS xgboost-report 0" in out, out

    [trial] = up_suite.ctl("ls", "-e", "xgboost-flaky")
    assert trial["status"] == "TERMINATED" and trial["num_failures"] == 1, trial
    [rows] = _results(storage / "xgboost-flaky").values()
    first = [r for r in rows if r["attempt"] == 1]
    second = [r for r in rows if r["attempt"] == 2]
    seen = [(r["attempt"], r["training_iteration"], r["rounds"]) for r in rows]
    assert [r["training_iteration"] for r in first] == [1, 2, 3, 4, 5, 6], (seen, trial)
    assert [r["training_iteration"] for r in second] == [6, 7, 8, 9, 10], (seen, trial)
    assert all(r["rounds"] == 0 for r in first) and all(r["rounds"] == 5 for r in second)
    assert all(set(r) >= {"loss", "error"} and "eval-logloss" not in r for r in rows)
    assert [r["training_iteration"] for r in rows if r.get("should_checkpoint")] == [3, 5, 8, 10]
    assert [c["training_iteration"] for c in trial["checkpoints"]] == [3, 5, 8, 10]
    newest = trial["checkpoints"][-1]
    assert newest["training_iteration"] == 10
    _export(
        up_suite, "xgboost-flaky", trial["trial_id"], newest["checkpoint_id"], tmp_path / "final"
    )
    booster = xgb.Booster()
    booster.load_model(str(tmp_path / "final" / "booster.json"))
    assert booster.num_boosted_rounds() == 10

    [trial] = up_suite.ctl("ls", "-e", "xgboost-report")
    assert trial["checkpoints"] == [] and trial["training_iteration"] == 4, trial
    [rows] = _results(storage / "xgboost-report").values()
    assert all(
        "eval-logloss" in r and "eval-error" not in r and "should_checkpoint" not in r for r in rows
    ), rows


def test_xgboost_report_dict_and_checkpoint_rounds_follow_ray(monkeypatch):
    # The callback's choices without a suite: which names it reports and at which rounds it
    # checkpoints (Ray 2.7: every `frequency` rounds from epoch 0, skipping epoch 0 when
    # frequency > 1).
    suites.require("xgboost", "python3-xgboost")
    from tunebus.tune.integration import xgboost as integration

    log = {"train": {"logloss": [0.6, 0.5]}, "eval": {"logloss": [0.7, 0.55], "error": [0.2, 0.1]}}
    every = integration.TuneReportCheckpointCallback()
    assert every._get_report_dict(log) == {
        "train-logloss": 0.5,
        "eval-logloss": 0.55,
        "eval-error": 0.1,
    }
    assert integration.TuneReportCallback("eval-error")._get_report_dict(log) == {"eval-error": 0.1}
    assert integration.TuneReportCheckpointCallback(
        ["eval-error", "train-logloss"]
    )._get_report_dict(log) == {"eval-error": 0.1, "train-logloss": 0.5}
    renamed = integration.TuneReportCheckpointCallback(
        {"loss": "eval-logloss"}, results_postprocessing_fn=lambda d: {"loss2": d["loss"] * 2}
    )
    assert renamed._get_report_dict(log) == {"loss2": 1.1}
    with pytest.raises(KeyError):
        integration.TuneReportCheckpointCallback("eval-auc")._get_report_dict(log)
    due = lambda frequency: [
        e
        for e in range(7)  # noqa: E731
        if integration.TuneReportCheckpointCallback(frequency=frequency)._checkpoint_due(e)
    ]
    assert due(1) == [0, 1, 2, 3, 4, 5, 6]
    assert due(3) == [3, 6]
    assert due(0) == []
    assert integration.TuneReportCallback()._frequency == 0

    # checkpoint_at_end (Ray 2.10's): the last round's metrics again with the final booster, only
    # when that round had no checkpoint. Reports are captured here; the booster is a real one.
    import xgboost as xgb
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    data = xgb.DMatrix(x, label=y)
    for frequency, expected in ((3, [None, None, None, 4, None, 5]), (1, [1, 2, 3, 4, 5])):
        reports = []

        def capture(metrics, checkpoint=None):
            rounds = None
            if checkpoint is not None:
                booster = xgb.Booster()
                booster.load_model(os.path.join(checkpoint.path, "model.json"))
                rounds = booster.num_boosted_rounds()
            reports.append((metrics["loss"], rounds))

        monkeypatch.setattr(integration, "report", capture)
        xgb.train(
            {"nthread": 1, "objective": "binary:logistic"},
            data,
            5,
            evals=[(data, "eval")],
            verbose_eval=False,
            callbacks=[
                integration.TuneReportCheckpointCallback(
                    {"loss": "eval-logloss"}, "model.json", frequency, checkpoint_at_end=True
                )
            ],
        )
        assert [rounds for _, rounds in reports] == expected, (frequency, reports)
        assert reports[-1][0] == reports[4][0]  # the last round's metrics
