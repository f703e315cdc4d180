"""Ray Tune 2.x's stoppers (ray/tune/stopper/): run in the driver over the driver link like any
`tune.Stopper` (docs/reference/python.md "The driver link"), with Ray's semantics."""

import collections
import datetime
import statistics
import time

from tunebus._trainable import Stopper


class NoopStopper(Stopper):
    """Never stops anything."""

    def __call__(self, trial_id, result):
        return False


class FunctionStopper(Stopper):
    """Ray's FunctionStopper: `function(trial_id, result) -> bool` stops that trial."""

    def __init__(self, function):
        if not callable(function):
            raise ValueError("FunctionStopper takes a function (trial_id, result) -> bool")
        self._fn = function

    def __call__(self, trial_id, result):
        return bool(self._fn(trial_id, result))


class MaximumIterationStopper(Stopper):
    """Ray's MaximumIterationStopper: stops a trial after `max_iter` results it reported."""

    def __init__(self, max_iter):
        self._max_iter = max_iter
        self._iter = collections.defaultdict(int)

    def __call__(self, trial_id, result):
        self._iter[trial_id] += 1
        return self._iter[trial_id] >= self._max_iter


class TimeoutStopper(Stopper):
    """Ray's TimeoutStopper: ends the experiment `timeout` seconds (a number or a timedelta)
    after the stopper was made (checked at each result)."""

    def __init__(self, timeout):
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(
                "TimeoutStopper: timeout must be a positive number of seconds or a "
                "datetime.timedelta, got %r" % (timeout,)
            )
        self._budget = float(timeout)
        self._start = time.time()

    def __call__(self, trial_id, result):
        return False

    def stop_all(self):
        return time.time() - self._start >= self._budget


class TrialPlateauStopper(Stopper):
    """Ray's TrialPlateauStopper: stops a trial once its last `num_results` values of `metric`
    have a (population) standard deviation below `std`, after `grace_period` results, and, with
    `metric_threshold`, only once the metric is at or better than it (`mode` min or max)."""

    def __init__(
        self, metric, std=0.01, num_results=4, grace_period=4, metric_threshold=None, mode=None
    ):
        if metric_threshold is not None and mode not in ("min", "max"):
            raise ValueError(
                "When specifying a `metric_threshold`, the `mode` argument has to "
                "be one of [min, max]. Got: {}".format(mode)
            )
        self._metric, self._std, self._mode = metric, std, mode
        self._num_results, self._grace_period = num_results, grace_period
        self._metric_threshold = metric_threshold
        self._iter = collections.defaultdict(int)
        self._results = collections.defaultdict(lambda: collections.deque(maxlen=num_results))

    def __call__(self, trial_id, result):
        value = result.get(self._metric)
        self._results[trial_id].append(value)
        self._iter[trial_id] += 1
        if self._iter[trial_id] < self._grace_period:
            return False
        if len(self._results[trial_id]) < self._num_results:
            return False
        if self._metric_threshold is not None:
            if self._mode == "min" and value > self._metric_threshold:
                return False
            if self._mode == "max" and value < self._metric_threshold:
                return False
        try:
            current = statistics.pstdev(self._results[trial_id])
        except (TypeError, statistics.StatisticsError):
            current = float("inf")
        return current < self._std


class ExperimentPlateauStopper(Stopper):
    """Ray's ExperimentPlateauStopper: ends the experiment once the best `top` values of
    `metric` over all results have a standard deviation at most `std` for `patience` results
    in a row."""

    def __init__(self, metric, std=0.001, top=10, mode="min", patience=0):
        if mode not in ("min", "max"):
            raise ValueError("The mode parameter can only be either min or max.")
        if not isinstance(top, int) or top <= 1:
            raise ValueError(
                "Top results to consider must be a positive integer greater than " "one."
            )
        if not isinstance(patience, int) or patience < 0:
            raise ValueError("Patience must be a strictly positive integer.")
        self._metric, self._std, self._top, self._mode = metric, std, top, mode
        self._patience = patience
        self._values = []
        self._iterations = 0

    def __call__(self, trial_id, result):
        self._values.append(result[self._metric])
        self._values.sort(reverse=self._mode == "max")
        del self._values[self._top :]
        self._iterations = self._iterations + 1 if self.has_plateaued() else 0
        return self.stop_all()

    def has_plateaued(self):
        return len(self._values) == self._top and statistics.pstdev(self._values) <= self._std

    def stop_all(self):
        return self.has_plateaued() and self._iterations >= self._patience


class CombinedStopper(Stopper):
    """Ray's CombinedStopper: a trial stops when any stopper says so; the experiment when any
    stopper's `stop_all` does."""

    def __init__(self, *stoppers):
        self._stoppers = stoppers

    def __call__(self, trial_id, result):
        return any(s(trial_id, result) for s in self._stoppers)

    def stop_all(self):
        return any(s.stop_all() for s in self._stoppers)


__all__ = [
    "CombinedStopper",
    "ExperimentPlateauStopper",
    "FunctionStopper",
    "MaximumIterationStopper",
    "NoopStopper",
    "TimeoutStopper",
    "TrialPlateauStopper",
]
