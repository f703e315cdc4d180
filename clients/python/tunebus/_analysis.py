"""Ray Tune 2.x's `ExperimentAnalysis` (ray/tune/analysis/experiment_analysis.py): what
`tune.run` returns, and `tune.ExperimentAnalysis(path)` over a finished results folder.

Its trials and their histories are a ResultGrid's (tunebus._results): the trial objects
(`list_trials`) and each trial's results (`list_results`) from the suite that ran the experiment,
through its control socket. `tune.run` passes them; for a folder given by its path, the suite is
the one its `tunebus_tuner.json` names (the embedded one on its storage path, started then) and
the experiment the journal its `experiment_state.json` names. When that suite does not know the
experiment (another store, or no suite can be reached or started) or the folder names none (a
`tunectl run` folder), the folder's own files are read (`experiment_state.json`, each trial's
`params.json`, `result.json`, `error.txt`). Stored checkpoints are exported lazily on first use
(tunebus._checkpoint) from that suite.

Keys follow Ray 2.7+: `results`, `trial_dataframes` and `get_all_configs()` are keyed by trial
id (Ray 2.0-2.6 keyed the last two by the trial's logdir).
"""

import json
import math
import os

from tunebus._errors import TuneError
from tunebus._results import (
    ResultGrid,
    _describe,
    _flatten,
    control_exporter,
    control_history,
)
from tunebus._trial import Trial

_NO_METRIC = (
    "To fetch the `{what}`, pass a `metric` and `mode` parameter to `tune.run()`. "
    "Alternatively, use the `get_{what}(metric, mode)` method to set the metric and "
    "mode explicitly."
)


def _read_state(path):
    file = os.path.join(path, "experiment_state.json")
    if not os.path.exists(file):
        return {}
    with open(file) as f:
        try:
            return json.load(f)
        except ValueError as e:
            raise TuneError("corruption", "%s: not JSON: %s" % (file, e)) from None


def _folder_suite(path, journal):
    """(control endpoint, experiment) of the suite that ran the experiment of the folder `path`,
    from its `tunebus_tuner.json` (`journal`: its journal name, from experiment_state.json, else
    the experiment's name); None when the folder names no suite. Finding the endpoint may start
    the embedded suite on the folder's storage path (tunebus._suite.endpoint). Errors:
    TuneError from starting it."""
    from tunebus import _suite
    from tunebus._tuner import STATE_FILE

    state_file = os.path.join(path, STATE_FILE)
    if not os.path.exists(state_file):
        return None
    with open(state_file) as f:
        experiment = json.load(f)["experiment"]
    endpoint, _ = _suite.endpoint(experiment["results_dir"])
    return endpoint, journal or experiment["name"]


def folder_exporter(path, journal):
    """An exporter (trial_id, checkpoint_id, target) for the folder `path` read on its own: on
    first use it finds the suite through the folder's `tunebus_tuner.json` (TuneError
    `unavailable` when it has none)."""

    def export(trial_id, checkpoint_id, target):
        suite = _folder_suite(path, journal)
        if suite is None:
            raise TuneError(
                "unavailable",
                "%s names no suite (no tunebus_tuner.json): the suite holding checkpoint %s is "
                "not known" % (path, checkpoint_id),
            )
        control_exporter(*suite)(trial_id, checkpoint_id, target)

    return export


class ExperimentAnalysis:
    """Ray's ExperimentAnalysis over the experiment whose results folder is
    `experiment_checkpoint_path`.

    `trials` and `history`: the scheduler's trial objects (list_trials) and a function
    trial_id -> that trial's results (tunebus._results.control_history), as `tune.run` passes
    them (the folder may then be on another host); with `trials` alone the folder's files give
    the results. Without either, the folder (on this host) is read as the module docstring says.
    `default_metric` / `default_mode` serve `best_*` (ValueError without them, as Ray); lists
    of them (several objectives) serve `best_trials` / `get_pareto_front()`, the Pareto front.
    `exporter(trial_id, checkpoint_id, target)`: how checkpoints are exported (default: through
    the suite that answered, else `folder_exporter`). `trainable_name` names the trials
    (`str(trial)`). Raises TuneError `not_found` for a folder that does not exist when it is read.
    """

    def __init__(
        self,
        experiment_checkpoint_path,
        trials=None,
        default_metric=None,
        default_mode=None,
        exporter=None,
        trainable_name=None,
        history=None,
    ):
        path = os.path.abspath(os.path.expanduser(os.fspath(experiment_checkpoint_path)))
        if isinstance(default_mode, (list, tuple)):  # several objectives: checked where used
            pass
        elif default_mode is not None and default_mode not in ("min", "max"):
            raise ValueError("`default_mode` has to be None or one of [min, max]")
        self._experiment_path = path
        self.default_metric = default_metric
        self.default_mode = default_mode
        if trials is None or history is None:
            if not os.path.isdir(path):
                raise TuneError("not_found", "%s is not a results folder" % path)
        journal = None
        if trials is None:
            state = _read_state(path)
            journal = state.get("journal")
            trials, history, exporter = self._ask_suite(path, journal, exporter)
            if trials is None:
                trials = state.get("trials") or []
        self._exporter = exporter or folder_exporter(path, journal)
        if history is not None:
            self._grid = ResultGrid.from_trials(
                trials, history, default_metric, default_mode, self._exporter, path
            )
        else:
            self._grid = ResultGrid.from_folder(
                path, default_metric, default_mode, trials, self._exporter
            )
        by_id = {v.get("trial_id"): v for v in trials}
        self.trials = []
        for result in self._grid:
            view = dict(by_id.get(result.trial_id) or {"trial_id": result.trial_id})
            view.setdefault("config", result.config)
            view.setdefault("dir", result.path)
            if not view.get("last_result"):
                view["last_result"] = result.metrics
            if view.get("status") is None:
                view["status"] = "ERROR" if result.error is not None else "TERMINATED"
            self.trials.append(Trial(view, self._exporter, trainable_name))
        self._trial_by_id = {t.trial_id: t for t in self.trials}
        self._result_by_id = {r.trial_id: r for r in self._grid}

    @staticmethod
    def _ask_suite(path, journal, exporter):
        """(trials, history, exporter) of the folder `path`'s experiment from the suite that ran
        it; (None, None, exporter) when the folder names none, or the suite does not know the
        experiment or cannot be reached (not_found, unavailable)."""
        try:
            suite = _folder_suite(path, journal)
            if suite is None:
                return None, None, exporter
            from tunebus._control import ControlClient

            trials = ControlClient(suite[0]).list_trials(suite[1])
        except TuneError as e:
            if e.code not in ("not_found", "unavailable"):
                raise
            return None, None, exporter
        return trials, control_history(*suite), exporter or control_exporter(*suite)

    # ---- what the folder holds ------------------------------------------------------------------
    @property
    def experiment_path(self):
        """The results folder this analysis reads (absolute), Ray 2.x's `experiment_path`."""
        return self._experiment_path

    def _result_of(self, trial):
        result = self._result_by_id.get(trial.trial_id)
        if result is None:
            raise TuneError(
                "not_found", "no trial %s in %s" % (trial.trial_id, self._experiment_path)
            )
        return result

    @property
    def results(self):
        """{trial_id: last result}."""
        return {t.trial_id: t.last_result for t in self.trials}

    @property
    def results_df(self):
        """The trials' last results, flattened with "/" (`config/lr`), indexed by trial_id."""
        import pandas as pd

        rows = [_flatten(dict(t.last_result, trial_id=t.trial_id)) for t in self.trials]
        return pd.DataFrame.from_records(rows, index="trial_id") if rows else pd.DataFrame()

    @property
    def trial_dataframes(self):
        """{trial_id: that trial's progress.csv as a DataFrame, one row per result}."""
        return {t.trial_id: self._result_of(t).metrics_dataframe for t in self.trials}

    def fetch_trial_dataframes(self):
        """Ray's method behind `trial_dataframes`: {trial_id: DataFrame, one row per
        result}; reads the files again."""
        return self.trial_dataframes

    def dataframe(self, metric=None, mode=None):
        """One row per trial: with `metric` and `mode`, the trial's best result by it (not
        necessarily its last); else its last result. Flattened (`config/lr`), with `logdir`."""
        if mode is not None and mode not in ("min", "max"):
            raise ValueError("If set, `mode` has to be one of [min, max]")
        if metric is not None and mode is not None:
            return self._grid.get_dataframe(filter_metric=metric, filter_mode=mode)
        return self._grid.get_dataframe()

    def get_all_configs(self, prefix=False):
        """{trial_id: config}; `prefix=True` flattens each as `config/<key>`."""
        if prefix:
            return {t.trial_id: _flatten({"config": t.config}) for t in self.trials}
        return {t.trial_id: t.config for t in self.trials}

    # ---- the best ------------------------------------------------------------------------
    def _metric_mode(self, metric, mode, what):
        metric = metric or self.default_metric
        mode = mode or self.default_mode
        if isinstance(metric, (list, tuple)) or isinstance(mode, (list, tuple)):
            raise ValueError(
                "%s: the experiment has several objectives (%s), so no one trial is best: pass "
                "one metric and mode, or use `best_trials` (the Pareto front)"
                % (what, _describe(metric, mode))
            )
        if not metric or not mode:
            raise ValueError(_NO_METRIC.format(what=what))
        if mode not in ("min", "max"):
            raise ValueError("If set, `mode` has to be one of [min, max]")
        return metric, mode

    def get_best_trial(self, metric=None, mode=None, scope="last", filter_nan_and_inf=True):
        """The trial with the best `metric` under `scope`: "last" (its last result), "avg" (the
        mean of all its results), "last-5-avg", "last-10-avg" (the mean of the last 5 / 10),
        "all" (its best result). None when no trial reported `metric` (Ray logs a warning)."""
        metric, mode = self._metric_mode(metric, mode, "best_trial")
        if scope not in ("all", "last", "avg", "last-5-avg", "last-10-avg"):
            raise ValueError(
                "ExperimentAnalysis: attempting to get best trial for metric {} "
                'for scope {} not in ["all", "last", "avg", "last-5-avg", '
                '"last-10-avg"]. If you didn\'t pass a `metric` parameter to '
                "`tune.run()`, you have to pass one when fetching the best trial.".format(
                    metric, scope
                )
            )
        try:
            best = self._grid.get_best_result(metric, mode, scope, filter_nan_and_inf)
        except RuntimeError:
            return None
        return self._trial_by_id.get(best.trial_id)

    def get_best_config(self, metric=None, mode=None, scope="last"):
        """The config (dict) of `get_best_trial(metric, mode, scope)`, None when no trial
        reported `metric`. ValueError: no metric/mode (given or default), or several
        objectives."""
        trial = self.get_best_trial(metric, mode, scope)
        return trial.config if trial else None

    def get_best_logdir(self, metric=None, mode=None, scope="last"):
        """The results folder (absolute path) of `get_best_trial(metric, mode, scope)`, None
        when no trial reported `metric`. Errors as `get_best_config`."""
        trial = self.get_best_trial(metric, mode, scope)
        return trial.local_path if trial else None

    def get_trial_checkpoints_paths(self, trial, metric=None):
        """[(checkpoint folder, the value of `metric` at its iteration)] for each stored
        checkpoint of `trial` (a Trial or a trial id), oldest first; `metric` defaults to
        the default metric, else training_iteration. Exports each checkpoint (see the class)."""
        trial = self._trial_by_id.get(str(trial)) if not isinstance(trial, Trial) else trial
        if trial is None:
            raise ValueError("trial should be a Trial of this experiment or its trial id")
        metric = metric or self.default_metric or "training_iteration"
        rows = {r.get("training_iteration"): r for r in self._result_of(trial)._rows}
        return [
            (checkpoint.path, rows.get(ref.get("training_iteration"), {}).get(metric))
            for checkpoint, ref in trial.checkpoints
        ]

    def get_best_checkpoint(self, trial, metric=None, mode=None):
        """The checkpoint of `trial` whose iteration's `metric` is best (Ray 2.x); None when
        it has no stored checkpoint with that metric."""
        metric, mode = self._metric_mode(metric, mode, "best_checkpoint")
        rows = {r.get("training_iteration"): r for r in self._result_of(trial)._rows}
        best, best_value = None, None
        for checkpoint, ref in trial.checkpoints:
            value = rows.get(ref.get("training_iteration"), {}).get(metric)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            if best is None or (value > best_value if mode == "max" else value < best_value):
                best, best_value = checkpoint, value
        return best

    def get_pareto_front(self, metric=None, mode=None):
        """The trials on the Pareto front of several objectives (`metric`/`mode` lists, default
        the experiment's): ResultGrid.get_pareto_front's trials, best first by the first
        objective. ValueError without several objectives."""
        front = self._grid.get_pareto_front(
            metric if metric is not None else self.default_metric,
            mode if mode is not None else self.default_mode,
        )
        return [self._trial_by_id[r.trial_id] for r in front]

    @property
    def best_trials(self):
        """Optuna's `Study.best_trials` for a multi-objective experiment: the Pareto front's
        trials (get_pareto_front with the experiment's objectives)."""
        return self.get_pareto_front()

    @property
    def best_trial(self):
        """`get_best_trial` with the default metric and mode and scope "last" (Ray's
        property). ValueError when the experiment named no single metric and mode."""
        return self.get_best_trial(self.default_metric, self.default_mode)

    @property
    def best_config(self):
        """The best trial's config (dict); see `best_trial`."""
        return self.get_best_config(self.default_metric, self.default_mode)

    @property
    def best_logdir(self):
        """The best trial's results folder (absolute path); see `best_trial`."""
        return self.get_best_logdir(self.default_metric, self.default_mode)

    @property
    def best_checkpoint(self):
        """The best trial's checkpoint whose iteration scored best by the default metric
        (`get_best_checkpoint`), None without one. Fetching its files exports it (see the
        class)."""
        trial = self.best_trial
        return self.get_best_checkpoint(trial) if trial else None

    @property
    def best_dataframe(self):
        """The best trial's results as a pandas DataFrame, one row per result (its
        progress.csv); None when no trial is best."""
        trial = self.best_trial
        return self._result_of(trial).metrics_dataframe if trial else None

    @property
    def best_result(self):
        """The best trial's last result (dict); None when no trial is best."""
        trial = self.best_trial
        return trial.last_result if trial else None

    @property
    def best_result_df(self):
        """The best trial's last result as a one-row pandas DataFrame indexed by trial_id,
        flattened with "/" (`config/lr`)."""
        import pandas as pd

        trial = self.best_trial
        row = _flatten(dict(trial.last_result, trial_id=trial.trial_id))
        return pd.DataFrame.from_records([row], index="trial_id")

    def stats(self):
        """Trial counts by status."""
        counts = {}
        for t in self.trials:
            counts[t.status] = counts.get(t.status, 0) + 1
        return counts

    def __repr__(self):
        return "ExperimentAnalysis<%d trials, path %s>" % (len(self.trials), self._experiment_path)


__all__ = ["ExperimentAnalysis"]
