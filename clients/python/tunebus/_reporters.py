"""Ray Tune 2.x's progress reporters (`ray.tune.progress_reporter`): `ProgressReporter`,
`CLIReporter` and `JupyterNotebookReporter`, printed by the driver.

A reporter given as `progress_reporter` (tune.run, RunConfig) replaces `tunectl run`'s own table:
the driver's CallbackDispatcher (tunebus._callbacks) asks `should_report(trials, done=False)` at
the end of every step of the driver loop and calls `report(trials, done, *sys_info)` when it says
so, and once more with `done=True` when the experiment ends. The text matches Ray 2.x's
`TuneReporterBase._progress_str`: "== Status ==", the current time and time running, the
scheduler line, the result folder, "Number of trials: n/total (counts)", the best trial so far
(with `metric` and `mode`) and the trials as a psql table (tabulate, Debian's
python3-tabulate): trial name, status, loc, the parameter columns, then the metric columns.
"""

import abc
import collections
import datetime
import math
import sys
import time

from tunebus import _deps

# Ray 2.x's DEFAULT_COLUMNS: result keys shown when the result has them, with their headers.
DEFAULT_COLUMNS = collections.OrderedDict(
    [
        ("episode_reward_mean", "reward"),
        ("mean_accuracy", "acc"),
        ("mean_loss", "loss"),
        ("time_total_s", "total time (s)"),
        ("timesteps_total", "ts"),
        ("training_iteration", "iter"),
    ]
)
# The keys Ray Tune fills in (and tunebus's per-scheduler notes): never a user metric column,
# nor shown in verbose=2's result lines (tunebus._tuner.ResultPrinter).
AUTO_FILLED = {
    "time_this_iter_s",
    "time_total_s",
    "timestamp",
    "date",
    "trial_id",
    "pid",
    "hostname",
    "node_ip",
    "config",
    "done",
    "experiment_tag",
    "training_iteration",
    "iterations_since_restore",
    "time_since_restore",
    "should_checkpoint",
    "experiment_id",
    "timesteps_since_restore",
    "episodes_total",
    "timesteps_total",
    "checkpoint_dir_name",
    "pbt_exploit",
    "hyperband_info",
}


class ProgressReporter(abc.ABC):
    """Ray's `ProgressReporter`: a subclass implements `should_report(trials, done)` (True when
    `report` is due) and `report(trials, done, *sys_info)`; one that lacks either cannot be
    made (TypeError)."""

    def setup(self, start_time=None, total_samples=None, metric=None, mode=None, **kwargs):
        """Called once before the experiment starts, as Ray's `ProgressReporter.setup`:
        `start_time` (seconds since the epoch), `total_samples` (the trials the experiment
        will have, -1 unbounded), and the experiment's single `metric` and `mode` (None with
        several objectives)."""

    @abc.abstractmethod
    def should_report(self, trials, done=False):
        """True when `report` is due now (always when `done`)."""

    @abc.abstractmethod
    def report(self, trials, done, *sys_info):
        """Shows the trials' progress; `sys_info`: lines about the scheduler and results."""


def _columns(spec):
    if spec is None:
        return None
    if isinstance(spec, dict):
        return collections.OrderedDict(spec)
    return collections.OrderedDict((c, c) for c in spec)


def _lookup(mapping, dotted):
    for key in dotted.split("/") if "/" in dotted else [dotted]:
        if not isinstance(mapping, dict) or key not in mapping:
            return None
        mapping = mapping[key]
    return mapping


def _cell(value, width):
    if isinstance(value, float):
        value = round(value, 5) if math.isfinite(value) else value
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 3] + "..."


class TuneReporterBase(ProgressReporter):
    """Ray 2.x's reporter options: `metric_columns` and `parameter_columns` (a list, or a dict
    key → header; `None` infers up to `infer_limit` metrics from the results and shows every
    parameter), `total_samples`, `max_progress_rows` (the table's rows while running, all when
    done), `max_error_rows`, `max_column_length` (characters), `max_report_frequency` (seconds
    between reports), `print_intermediate_tables` (None: True), `metric` / `mode` (the "Current
    best trial" line; defaults are the experiment's), `sort_by_metric` (rows best first)."""

    def __init__(
        self,
        *,
        metric_columns=None,
        parameter_columns=None,
        total_samples=None,
        max_progress_rows=20,
        max_error_rows=20,
        max_column_length=20,
        max_report_frequency=5,
        infer_limit=3,
        print_intermediate_tables=None,
        metric=None,
        mode=None,
        sort_by_metric=False,
    ):
        if mode is not None and mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max', got %r" % (mode,))
        self._metric_columns = _columns(metric_columns)
        self._parameter_columns = _columns(parameter_columns)
        self._total_samples = total_samples
        self._max_progress_rows = max_progress_rows
        self._max_error_rows = max_error_rows
        self._max_column_length = max_column_length
        self._max_report_frequency = max_report_frequency
        self._infer_limit = infer_limit
        self._print_intermediate_tables = (
            True if print_intermediate_tables is None else print_intermediate_tables
        )
        self._metric = metric
        self._mode = mode
        self._sort_by_metric = sort_by_metric
        self._start_time = time.time()
        self._last_report_time = -math.inf

    def setup(self, start_time=None, total_samples=None, metric=None, mode=None, **kwargs):
        self._start_time = start_time or self._start_time
        self._total_samples = self._total_samples or total_samples
        self._metric = self._metric or metric
        self._mode = self._mode or mode

    def add_metric_column(self, metric, representation=None):
        if self._metric_columns is None:
            self._metric_columns = collections.OrderedDict()
        if metric in self._metric_columns:
            raise ValueError("Column {} already exists.".format(metric))
        self._metric_columns[metric] = representation or metric

    def add_parameter_column(self, parameter, representation=None):
        if self._parameter_columns is None:
            self._parameter_columns = collections.OrderedDict()
        if parameter in self._parameter_columns:
            raise ValueError("Column {} already exists.".format(parameter))
        self._parameter_columns[parameter] = representation or parameter

    def should_report(self, trials, done=False):
        if done or time.time() - self._last_report_time > self._max_report_frequency:
            self._last_report_time = time.time()
            return True
        return False

    # ---- the text ---------------------------------------------------------------------------
    def _progress_str(self, trials, done, *sys_info):
        now = time.time()
        running = datetime.timedelta(seconds=now - self._start_time)
        lines = [
            "== Status ==",
            "Current time: %s (running for %s)"
            % (datetime.datetime.fromtimestamp(now).strftime("%Y-%m-%d %H:%M:%S"), _clock(running)),
        ]
        lines.extend(sys_info)
        lines.append(self._trials_str(trials, done))
        errors = self._errors_str(trials, done)
        if errors:
            lines.append(errors)
        return "\n".join(lines) + "\n"

    def _metrics_shown(self, trials):
        if self._metric_columns is not None:
            return self._metric_columns
        shown = collections.OrderedDict()
        inferred = 0
        for trial in trials:
            for key, value in (trial.last_result or {}).items():
                if (
                    key in AUTO_FILLED
                    or key in shown
                    or inferred >= self._infer_limit
                    or not isinstance(value, (int, float))
                    or isinstance(value, bool)
                ):
                    continue
                shown[key] = key
                inferred += 1
        for key, header in DEFAULT_COLUMNS.items():
            if any(key in (t.last_result or {}) for t in trials):
                shown[key] = header
        return shown

    def _parameters_shown(self, trials):
        if self._parameter_columns is not None:
            return self._parameter_columns
        keys = collections.OrderedDict()
        for trial in trials:
            for key in _flat_keys(trial.config or {}):
                keys[key] = key
        return keys

    def _best(self, trials):
        if not self._metric or not self._mode:
            return None, None
        scored = [
            (t.last_result.get(self._metric), t)
            for t in trials
            if isinstance((t.last_result or {}).get(self._metric), (int, float))
        ]
        if not scored:
            return None, None
        pick = max if self._mode == "max" else min
        value, trial = pick(scored, key=lambda pair: pair[0])
        return trial, value

    def _trials_str(self, trials, done):
        tabulate = _deps.load("tabulate").tabulate
        counts = collections.Counter(t.status for t in trials)
        total = max(len(trials), self._total_samples or 0)
        lines = [
            "Number of trials: %d/%d (%s)"
            % (len(trials), total, ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))
        ]
        best, value = self._best(trials)
        if best is not None:
            lines.append(
                "Current best trial: %s with %s=%s and parameters=%s"
                % (best, self._metric, value, best.config)
            )
        if not (self._print_intermediate_tables or done):
            return "\n".join(lines)
        metrics, params = self._metrics_shown(trials), self._parameters_shown(trials)
        rows = list(trials)
        if self._sort_by_metric and best is not None:
            rows.sort(key=lambda t: _sort_key(t, self._metric, self._mode))
        limit = None if done else self._max_progress_rows
        more = len(rows) - limit if limit is not None and len(rows) > limit else 0
        rows = rows[:limit] if more else rows
        width = self._max_column_length
        table = []
        for t in rows:
            result = t.last_result or {}
            loc = (
                "%s:%s" % (result["node_ip"], result["pid"])
                if "pid" in result and "node_ip" in result
                else ""
            )
            table.append(
                [str(t), t.status, loc]
                + [_cell(_lookup(t.config or {}, key), width) for key in params]
                + [_cell(result.get(key), width) for key in metrics]
            )
        headers = ["Trial name", "status", "loc"] + list(params.values()) + list(metrics.values())
        lines.append(tabulate(table, headers=headers, tablefmt="psql", showindex=False))
        if more:
            lines.append(
                "... %d more trials not shown (%s)"
                % (more, ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))
            )
        return "\n".join(lines)

    def _errors_str(self, trials, done):
        errored = [t for t in trials if t.status == "ERROR"]
        if not errored:
            return ""
        tabulate = _deps.load("tabulate").tabulate
        limit = None if done else self._max_error_rows
        rows = [[str(t), t.num_failures, t.error_file or ""] for t in errored[:limit]]
        return "Number of errored trials: %d\n%s" % (
            len(errored),
            tabulate(
                rows,
                headers=["Trial name", "# failures", "error file"],
                tablefmt="psql",
                showindex=False,
            ),
        )


def _flat_keys(config, prefix=""):
    for key, value in config.items():
        name = prefix + str(key)
        if isinstance(value, dict) and value:
            yield from _flat_keys(value, name + "/")
        else:
            yield name


def _sort_key(trial, metric, mode):
    value = (trial.last_result or {}).get(metric)
    if not isinstance(value, (int, float)):
        return (1, 0)
    return (0, -value if mode == "max" else value)


def _clock(delta):
    seconds = delta.total_seconds()
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "%02d:%02d:%05.2f" % (hours, minutes, secs)


class CLIReporter(TuneReporterBase):
    """Ray 2.x's CLIReporter: prints the status text to stdout (see TuneReporterBase)."""

    def report(self, trials, done, *sys_info):
        """Prints the status table of `trials` (list[Trial]) to stdout; `done` is True for
        the final report; `sys_info`: lines about the scheduler and the results folder."""
        print(self._progress_str(trials, done, *sys_info), flush=True)


class JupyterNotebookReporter(TuneReporterBase):
    """Ray 2.x's JupyterNotebookReporter: in IPython, replaces the cell's output with the status
    (`overwrite=True`, IPython.display.clear_output); elsewhere prints it as CLIReporter."""

    def __init__(self, *, overwrite=True, **kwargs):
        super().__init__(**kwargs)
        self._overwrite = overwrite

    def report(self, trials, done, *sys_info):
        """Shows the status table of `trials` in place of the cell's output (IPython), or
        prints it; arguments as `CLIReporter.report`."""
        text = self._progress_str(trials, done, *sys_info)
        try:
            from IPython.display import clear_output
        except ImportError:
            clear_output = None
        if self._overwrite and clear_output is not None:
            clear_output(wait=True)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


class ReporterCallback:
    """Drives a ProgressReporter from the driver's hooks (tunebus._callbacks): `setup` with the
    experiment's total samples, metric and mode; `should_report` / `report(trials, False,
    *sys_info)` after each step; `report(trials, True, *sys_info)` at the experiment's end, as
    Ray's `_report_progress`. `sys_info`: the lines Ray prints after the time (the scheduler's,
    the result folder's)."""

    def __init__(self, reporter, metric=None, mode=None, sys_info=()):
        self.reporter = reporter
        self.metric, self.mode = metric, mode
        self.sys_info = list(sys_info)

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        self.reporter.setup(
            start_time=time.time(),
            total_samples=total_num_samples,
            metric=self.metric,
            mode=self.mode,
        )

    def on_step_end(self, iteration, trials, **info):
        if self.reporter.should_report(trials, done=False):
            self.reporter.report(trials, False, *self.sys_info)

    def on_experiment_end(self, trials, **info):
        self.reporter.report(trials, True, *self.sys_info)


__all__ = ["CLIReporter", "JupyterNotebookReporter", "ProgressReporter"]
