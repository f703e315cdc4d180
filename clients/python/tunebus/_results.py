"""Ray Tune 2.x's `Result` and `ResultGrid`: one experiment's trials as its suite reports them.

A trial's outcome comes from the scheduler's control socket (tunebus._control.ControlClient): its
trial object (`list_trials`: config, status, error, checkpoints, the path of its folder on the
scheduler's host) and its history, every result it reported (`list_results`, asked when the grid
is made, as Ray reads its folder then: the rows of its result.json, each with Ray's auto-filled
keys and `config`). No file of the results folder is opened, so a driver on another host than
the scheduler reads them the same.
Stored checkpoints are exported from the checkpoint-store to this host on first use
(`Result.checkpoint`, tunebus._checkpoint).

`ResultGrid.from_folder` reads a results folder on its own instead
(docs/reference/results-folder.md's layout:
`<trial>/params.json`, `result.json` (one JSON object per result), `error.txt`), for a folder
whose suite does not report it (tunebus._analysis); its checkpoints are exported only with an
`exporter`.
"""

import json
import math
import os

from tunebus._checkpoint import Checkpoint
from tunebus._errors import TuneError


def _read_json_lines(path):
    rows = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except ValueError as e:
                        raise TuneError("corruption", "%s:%d: not JSON: %s" % (path, number, e))
    except FileNotFoundError:
        pass
    return rows


class Result:
    """One trial's outcome (Ray's `ray.train.Result`): `config` (dict), `metrics` (the last
    result, `{}` if it never reported), `metrics_dataframe` (every result, one row each, flattened
    as progress.csv is), `checkpoint` (the newest, or None), `best_checkpoints` ([(Checkpoint,
    metrics at its iteration)]), `path` (the trial's folder, on the scheduler's host), `error` (a
    TuneError with the trial's error, or None), `trial_id`, `status`. `rows`: the trial's
    results, oldest first."""

    def __init__(self, path, config, rows, error=None, trial=None, exporter=None):
        self.path = path
        self.config = config
        self._rows = rows
        self.metrics = dict(rows[-1]) if rows else {}
        self.error = error
        self.trial_id = (trial or {}).get("trial_id") or self.metrics.get("trial_id")
        self.status = (trial or {}).get("status")
        checkpoints = (trial or {}).get("checkpoints") or []
        by_iteration = {r.get("training_iteration"): r for r in rows}
        self.best_checkpoints = (
            [
                (
                    Checkpoint(
                        _exporter=_bind(exporter, self.trial_id, c["checkpoint_id"]),
                        _checkpoint_id=c["checkpoint_id"],
                    ),
                    by_iteration.get(c.get("training_iteration"), {}),
                )
                for c in checkpoints
            ]
            if exporter
            else []
        )
        self.checkpoint = self.best_checkpoints[-1][0] if self.best_checkpoints else None

    @property
    def metrics_dataframe(self):
        """The trial's results as progress.csv holds them: one row per result, flattened with
        "/" (`config/lr`), the columns of its first result (Ray's CSV logger keeps those)."""
        import pandas as pd

        rows = [_flatten(r) for r in self._rows]
        if not rows:
            return pd.DataFrame()
        return pd.DataFrame(rows, columns=list(rows[0]))

    def __repr__(self):
        return "Result(metrics=%r, path=%r, error=%r)" % (self.metrics, self.path, self.error)


def _bind(exporter, trial_id, checkpoint_id):
    return lambda target: exporter(trial_id, checkpoint_id, target)


class ResultGrid:
    """Ray's ResultGrid: the `Result` of every trial of one experiment, in trial order.

    `get_best_result(metric=None, mode=None, scope="last")`: `scope` "last" (each trial's last
    result), "all" (any result), "last-N-avg" / "avg" / "all-avg" as Ray; trials without the
    metric are skipped; metric and mode default to the TuneConfig's (ValueError when those are
    lists: several objectives have no one best result). `get_pareto_front()`: the non-dominated
    results of several objectives (docs/reference/python.md "Many objectives").
    `get_dataframe(filter_metric,
    filter_mode)`: one row per trial (its last result, or with filter_metric the best by it),
    flattened as Ray (`config/lr`). `errors`, `num_errors`, `num_terminated`,
    `experiment_path`."""

    def __init__(self, experiment_path, results, metric=None, mode=None, history=None):
        self.experiment_path = experiment_path
        self._results = results
        self._metric = metric
        self._mode = mode
        self._history = history  # the history of from_suite / from_trials, else None

    @classmethod
    def from_suite(cls, endpoint, experiment, trials, metric=None, mode=None, path=None):
        """The trials of `experiment` (a journal name, or a name) on the suite whose control
        endpoint is `endpoint`: `trials` are its trial objects (list_trials); their histories are
        asked now (list_results), their checkpoints exported on first use (fetch_checkpoint).
        `path`: the experiment's results folder (on the scheduler's host)."""
        return cls.from_trials(
            trials,
            SuiteHistory(endpoint, experiment),
            metric,
            mode,
            control_exporter(endpoint, experiment),
            path,
        )

    @classmethod
    def from_trials(cls, trials, history, metric=None, mode=None, exporter=None, path=None):
        """A Result per trial object of `trials` (list_trials' shape, in that order), with the
        results `history` gives now: a SuiteHistory (every trial's asked at once), or a function
        trial_id -> that trial's results. `exporter(trial_id, checkpoint_id, target)` exports
        checkpoints (None: none). Errors: the history's TuneError."""
        ids = [t["trial_id"] for t in trials]
        if isinstance(history, SuiteHistory):
            rows = history.many(ids)
        else:
            rows = {trial_id: history(trial_id) for trial_id in ids}
        entries = []
        for trial in trials:
            error = None
            if trial.get("status") == "ERROR":
                error = TuneError("internal", trial.get("error") or "the trial failed")
            entries.append(
                Result(
                    trial.get("dir"),
                    trial.get("config") or {},
                    rows[trial["trial_id"]],
                    error,
                    trial,
                    exporter,
                )
            )
        return cls(path, entries, metric, mode, history)

    @classmethod
    def from_folder(cls, path, metric=None, mode=None, trials=None, exporter=None):
        """Reads `path` (an experiment's results folder on this host, on its own); `trials` are
        trial objects (experiment_state.json's), which give the status and the checkpoints.
        Each Result's history is its result.json, read on first use."""
        by_id = {t["trial_id"]: t for t in (trials or [])}
        folders = sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
        entries = []
        for name in folders:
            trial_path = os.path.join(path, name)
            params = os.path.join(trial_path, "params.json")
            if not os.path.exists(params):
                continue
            with open(params) as f:
                config = json.load(f)
            rows = _read_json_lines(os.path.join(trial_path, "result.json"))
            trial_id = name.split("_", 2)
            trial_id = "_".join(trial_id[:2]) if len(trial_id) >= 2 else name
            trial = by_id.get(trial_id, {"trial_id": trial_id})
            error = None
            error_file = os.path.join(trial_path, "error.txt")
            if os.path.exists(error_file) and (trial.get("status") in (None, "ERROR")):
                with open(error_file, errors="replace") as f:
                    error = TuneError("internal", f.read().strip())
            entries.append(Result(trial_path, config, rows, error, trial, exporter))
        return cls(path, entries, metric, mode)

    def __len__(self):
        return len(self._results)

    def __getitem__(self, i):
        return self._results[i]

    def __iter__(self):
        return iter(self._results)

    @property
    def errors(self):
        """The errors of the trials that ended ERROR, in trial order, as Ray's
        `ResultGrid.errors`: TuneError objects whose message is the trial's error.txt."""
        return [r.error for r in self._results if r.error is not None]

    @property
    def num_errors(self):
        """How many trials ended ERROR."""
        return len(self.errors)

    @property
    def num_terminated(self):
        """How many trials ended TERMINATED (finished, or stopped by a stopper or a
        trial scheduler), without an error."""
        return sum(1 for r in self._results if r.error is None and r.status in (None, "TERMINATED"))

    def _metric_mode(self, metric, mode):
        metric = metric or self._metric
        mode = mode or self._mode
        if isinstance(metric, (list, tuple)) or isinstance(mode, (list, tuple)):
            raise ValueError(
                "get_best_result: the experiment has several objectives (%s), so no one result "
                "is best: pass one of them, e.g. get_best_result(metric=%r, mode=%r), or use "
                "get_pareto_front() for the results no other beats on every objective"
                % (_describe(metric, mode), _first(metric), _first(mode))
            )
        if not metric or not mode:
            raise ValueError("no metric/mode: pass them to get_best_result or to tune.TuneConfig")
        if mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max', got %r" % (mode,))
        return metric, mode

    @staticmethod
    def _score(result, metric, scope):
        values = [
            r[metric]
            for r in result._rows
            if isinstance(r.get(metric), (int, float))
            and not isinstance(r.get(metric), bool)
            and math.isfinite(r[metric])
        ]
        if not values:
            return None
        if scope == "last":
            return values[-1] if result._rows and metric in result._rows[-1] else None
        if scope in ("all", "avg", "all-avg"):
            return values if scope == "all" else sum(values) / len(values)
        if scope.startswith("last-") and scope.endswith("-avg"):
            n = int(scope[len("last-") : -len("-avg")])
            tail = values[-n:]
            return sum(tail) / len(tail)
        raise ValueError("scope must be last, avg, last-N-avg, all or all-avg, got %r" % (scope,))

    def get_best_result(self, metric=None, mode=None, scope="last", filter_nan_and_inf=True):
        """The Result whose `metric` is best, as Ray 2.x's `ResultGrid.get_best_result`.

        Args:
            metric (str): a result key; default the TuneConfig's metric.
            mode (str): "max" or "min"; default the TuneConfig's mode.
            scope (str): which of each trial's results count: "last" (its last result),
                "all" (its best one), "avg" / "all-avg" (the mean of all), "last-N-avg" (the
                mean of its last N).
            filter_nan_and_inf (bool): accepted for Ray's signature; NaN and infinite values
                are always left out.

        Returns:
            Result: the best trial's Result (its `metrics` are the trial's last result).

        Raises:
            ValueError: no metric or mode, a mode other than max/min, or several objectives
                (use `get_pareto_front`).
            RuntimeError: no trial reported `metric`.
        """
        metric, mode = self._metric_mode(metric, mode)
        best, best_value = None, None
        for result in self._results:
            score = self._score(result, metric, scope)
            if score is None:
                continue
            if isinstance(score, list):
                score = max(score) if mode == "max" else min(score)
            if best is None or (score > best_value if mode == "max" else score < best_value):
                best, best_value = result, score
        if best is None:
            raise RuntimeError("no trial reported %r (scope %s)" % (metric, scope))
        return best

    def get_pareto_front(self, metric=None, mode=None):
        """The non-dominated results of a multi-objective experiment (Optuna's
        `Study.best_trials`): among the trials that ended TERMINATED with every objective a
        finite number in their last result (Ray's scope "last"), those no other such trial is
        at least as good as on every objective and better on one. `metric`/`mode`: lists of
        equal length >= 2 (default: the TuneConfig's). Sorted by the first objective, best
        first (ties by the next ones), then in trial order. ValueError without several objectives.
        """
        metric = metric if metric is not None else self._metric
        mode = mode if mode is not None else self._mode
        objectives = _objectives(metric, mode, "get_pareto_front")
        return pareto_front(self._results, objectives)

    def get_dataframe(self, filter_metric=None, filter_mode=None):
        """One row per trial, as Ray 2.x's `ResultGrid.get_dataframe`: its last result, or
        with `filter_metric` its best result by that key (`filter_mode` "max", the default, or
        "min"); nested dicts flattened with "/" (`config/lr`), plus `logdir` (its results
        folder). Returns a pandas DataFrame (needs pandas)."""
        import pandas as pd

        rows = []
        for result in self._results:
            pick = result.metrics
            if filter_metric:
                candidates = [
                    r for r in result._rows if isinstance(r.get(filter_metric), (int, float))
                ]
                if candidates:
                    key = lambda r: r[filter_metric]  # noqa: E731
                    pick = (
                        max(candidates, key=key)
                        if filter_mode != "min"
                        else min(candidates, key=key)
                    )
            row = dict(pick)
            row.setdefault("config", result.config)
            row["logdir"] = result.path
            rows.append(_flatten(row))
        return pd.DataFrame(rows)

    def __repr__(self):
        return "ResultGrid<%d trials, %d errors, path %s>" % (
            len(self),
            self.num_errors,
            self.experiment_path,
        )


def _first(value):
    return value[0] if isinstance(value, (list, tuple)) and value else value


def _describe(metric, mode):
    metrics = metric if isinstance(metric, (list, tuple)) else [metric]
    modes = mode if isinstance(mode, (list, tuple)) else [mode]
    return ", ".join("%s %s" % (m, d) for m, d in zip(metrics, modes))


def _objectives(metric, mode, what):
    """[(metric, mode)] of two lists of equal length >= 2; ValueError naming `what` else."""
    if not isinstance(metric, (list, tuple)) or not isinstance(mode, (list, tuple)):
        raise ValueError(
            "%s: the Pareto front needs several objectives: metric and mode lists (e.g. "
            "metric=['val_accuracy', 'latency_ms'], mode=['max', 'min']), got metric=%r, "
            "mode=%r" % (what, metric, mode)
        )
    if len(metric) != len(mode) or len(metric) < 2:
        raise ValueError(
            "%s: metric and mode must be lists of equal length >= 2, got %d metrics and %d "
            "modes" % (what, len(metric), len(mode))
        )
    for m in mode:
        if m not in ("min", "max"):
            raise ValueError("%s: each mode must be 'min' or 'max', got %r" % (what, m))
    return list(zip(metric, mode))


def _losses(result, objectives):
    """Each objective's value as a loss (max negated), or None when one is missing or not a
    finite number."""
    losses = []
    for metric, mode in objectives:
        value = result.metrics.get(metric)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if not math.isfinite(value):
            return None
        losses.append(-value if mode == "max" else value)
    return losses


def _dominates(a, b):
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def pareto_front(results, objectives):
    """The Results of `results` on the Pareto front of `objectives` ([(metric, mode)]): see
    ResultGrid.get_pareto_front. O(n^2 m)."""
    candidates = []
    for index, result in enumerate(results):
        if result.error is not None or result.status not in (None, "TERMINATED"):
            continue
        losses = _losses(result, objectives)
        if losses is not None:
            candidates.append((losses, index, result))
    front = [c for c in candidates if not any(_dominates(o[0], c[0]) for o in candidates)]
    front.sort(key=lambda c: (c[0], c[1]))  # by the losses (the first objective first), then order
    return [c[2] for c in front]


def _flatten(row, prefix=""):
    out = {}
    for key, value in row.items():
        name = prefix + str(key)
        if isinstance(value, dict) and value:
            out.update(_flatten(value, name + "/"))
        elif not isinstance(value, dict):
            out[name] = value
    return out


class SuiteHistory:
    """The results the trials of `experiment` (a journal name, or a name) reported, asked of the
    suite's control socket at `endpoint` (list_results) and kept: `history(trial_id)` is one
    trial's, oldest first (each with Ray's auto-filled keys and `config`); `many(trial_ids)` asks
    for several at once over one socket (ControlClient.trial_results_many). A trial's rows are
    asked once: a new SuiteHistory sees the rows a running trial reported since. Errors:
    TuneError with the scheduler's code (not_found, unavailable)."""

    def __init__(self, endpoint, experiment):
        self.endpoint = endpoint
        self.experiment = experiment
        self._rows = {}

    def many(self, trial_ids):
        """{trial_id: its results} for every id of `trial_ids`."""
        from tunebus._control import ControlClient

        missing = [t for t in trial_ids if t not in self._rows]
        if missing:
            client = ControlClient(self.endpoint)
            self._rows.update(client.trial_results_many(self.experiment, missing))
        return {t: self._rows[t] for t in trial_ids}

    def __call__(self, trial_id):
        return self.many([trial_id])[trial_id]


def control_history(endpoint, experiment):
    """The SuiteHistory of `experiment` on the suite at `endpoint`."""
    return SuiteHistory(endpoint, experiment)


def control_exporter(endpoint, experiment):
    """An exporter (trial_id, checkpoint_id, target) → writes the checkpoint's files to `target`
    through the suite's control socket (ControlClient.export_checkpoint: fetch_checkpoint);
    TuneError with the scheduler's code when it is unreachable or refuses."""

    def export(trial_id, checkpoint_id, target):
        from tunebus._control import ControlClient

        try:
            ControlClient(endpoint).export_checkpoint(experiment, trial_id, checkpoint_id, target)
        except TuneError as e:
            raise TuneError(
                e.code,
                "cannot export checkpoint %s of trial %s from %s: %s"
                % (checkpoint_id, trial_id, endpoint, e.message),
            ) from None

    return export
