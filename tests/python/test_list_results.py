"""A trial's history over the control socket (`list_results`, proto/PROTOCOL.md §2) on a real
embedded suite: its pages match the trial's result.json, its errors are typed, a ResultGrid and
an ExperimentAnalysis read every history through it (no results folder on the driver's host),
and a finished experiment read back from its journal by a new suite answers the same."""

import json
import os

import pytest

import tunebus
from tunebus import _suite, train, tune
from tunebus._analysis import ExperimentAnalysis
from tunebus._control import ControlClient
from tunebus._errors import TuneError
from tunebus._results import ResultGrid, control_history


@pytest.fixture(autouse=True)
def _tunectl(tunectl, monkeypatch):
    monkeypatch.setenv("TUNEBUS_TUNECTL", tunectl)
    # The trainable below is pickled by reference to this module: ship its folder.
    monkeypatch.setenv("TUNEBUS_WORKING_DIR", os.path.dirname(os.path.abspath(__file__)))


def five_steps(config):
    for i in range(5):
        train.report({"score": config["x"] * i, "nested": {"step": i}})


def _file_rows(trial_dir):
    with open(os.path.join(trial_dir, "result.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_a_trials_history_is_read_over_the_control_socket(tmp_path):
    tuner = tune.Tuner(
        five_steps,
        param_space={"x": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(name="history", storage_path=str(tmp_path), verbose=0),
    )
    grid = tuner.fit()
    endpoint, _ = _suite.endpoint(str(tmp_path))
    client = ControlClient(endpoint)
    journal = client.get_experiment("history")["journal"]
    trials = client.list_trials(journal)
    assert len(trials) == 2

    # Pages of two rows lead through the five rows of result.json, oldest first.
    first = trials[0]
    expected = _file_rows(first["dir"])
    assert len(expected) == 5 and expected[0]["config"] == first["config"]
    rows, offset, pages = [], 0, 0
    while offset is not None:
        page = client.list_results(journal, first["trial_id"], offset=offset, limit=2)
        assert page["experiment"] == journal and page["trial_id"] == first["trial_id"]
        assert page["total"] == 5 and page["offset"] == offset
        rows += page["results"]
        offset = page["next_offset"]
        pages += 1
    assert pages == 3 and rows == expected
    assert [r["training_iteration"] for r in rows] == [1, 2, 3, 4, 5]
    assert client.trial_results(journal, first["trial_id"]) == expected
    past = client.list_results(journal, first["trial_id"], offset=7)
    assert past["results"] == [] and past["next_offset"] is None and past["total"] == 5

    # Typed errors.
    for fields, code in (
        ({"offset": -1}, "invalid_argument"),
        ({"limit": 10001}, "invalid_argument"),
        ({"trial_id": "nope_00000"}, "not_found"),
        ({"experiment": "no-such-experiment"}, "not_found"),
    ):
        request = {"experiment": journal, "trial_id": first["trial_id"]}
        request.update(fields)
        with pytest.raises(TuneError) as refused:
            client.list_results(**request)
        assert refused.value.code == code, (fields, refused.value)

    # fit()'s ResultGrid, and one whose results folder is on no host of this driver: each
    # history is the trial's result.json, asked over the socket.
    remote = ResultGrid.from_suite(endpoint, journal, trials, "score", "max", "/elsewhere/history")
    for result in list(grid) + list(remote):
        assert result._rows == _file_rows(os.path.join(str(tmp_path), "history", _dir(result)))
        frame = result.metrics_dataframe
        assert list(frame["score"]) == [r["score"] for r in result._rows]
        assert list(frame["nested/step"]) == [0, 1, 2, 3, 4]
        assert "config/x" in frame.columns
    assert remote.get_best_result().config == {"x": 2}
    assert remote.get_best_result(scope="all").metrics["score"] == 8
    analysis = ExperimentAnalysis(
        "/elsewhere/history",
        trials=trials,
        history=control_history(endpoint, journal),
        default_metric="score",
        default_mode="max",
    )
    assert analysis.best_config == {"x": 2}
    assert {k: len(v) for k, v in analysis.trial_dataframes.items()} == {
        t["trial_id"]: 5 for t in trials
    }

    # A new suite on the same store reads the finished experiment from its journal, read-only,
    # and answers the same rows.
    tunebus.shutdown()
    endpoint, _ = _suite.endpoint(str(tmp_path))
    client = ControlClient(endpoint)
    assert client.get_experiment(journal)["read_only"] is True
    for trial in trials:
        assert client.trial_results(journal, trial["trial_id"]) == _file_rows(trial["dir"])


def _dir(result):
    """The trial folder's name of a Result (its path may name another host's folder)."""
    return os.path.basename(result.path)
