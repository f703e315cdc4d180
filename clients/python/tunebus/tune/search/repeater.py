"""Ray Tune 2.x's `ray.tune.search.Repeater`: each config of a searcher run `repeat` times, the
searcher told the mean of the repeats' metric. Runs in the driver (tunebus._search_driver).
"""

import copy
import logging
import math

from tunebus.tune.search._wrapper import WrapperSearcher
from tunebus.tune.search.searcher import Searcher

LOG = logging.getLogger("tunebus")

TRIAL_INDEX = "__trial_index__"
"""The config key holding a trial's index within its group of repeats (0 .. repeat - 1)."""


class _TrialGroup:
    """The trials that run one suggested config; the first (primary) is the one the searcher
    knows."""

    def __init__(self, primary_trial_id, config, max_trials):
        self.primary_trial_id = primary_trial_id
        self.config = config
        self.max_trials = max_trials
        self.scores = {primary_trial_id: None}  # trial id -> score once it ended (nan: none)

    def add(self, trial_id):
        self.scores.setdefault(trial_id, None)

    def full(self):
        return len(self.scores) >= self.max_trials

    def finished_reporting(self):
        return self.full() and all(s is not None for s in self.scores.values())


class Repeater(WrapperSearcher):
    """Ray 2.7's Repeater(searcher, repeat=1, set_index=True): the wrapped searcher is asked once
    per `repeat` trials; every trial of the group runs its config (with `__trial_index__`: 0 ..
    repeat - 1 in the config when `set_index`), and when all of them ended the searcher gets
    `on_trial_complete(primary_trial_id, {metric: mean})`, the mean over the repeats that
    reported the metric (NaN when none did; numpy's nanmean). Set `num_samples` to a multiple of
    `repeat`: the last group of a smaller remainder is never complete, so the searcher never
    hears of it (Ray's behaviour)."""

    def __init__(self, searcher, repeat=1, set_index=True):
        if not isinstance(searcher, Searcher):
            raise TypeError("Repeater wraps a tune.search.Searcher, got %r" % (searcher,))
        self.searcher = searcher
        self.repeat = repeat
        self._set_index = set_index
        self._groups = []
        self._trial_id_to_group = {}
        self._current_group = None
        super().__init__(metric=searcher.metric, mode=searcher.mode)

    def suggest(self, trial_id):
        config = None
        if self._current_group is None or self._current_group.full():
            config = self.searcher.suggest(trial_id)
            if config is None or config == Searcher.FINISHED:
                return config
        return self._place(trial_id, config)

    def _place(self, trial_id, config):
        """Trial `trial_id` starts a group running `config`, or (None) joins the current group;
        returns its config."""
        if config is not None:
            self._current_group = _TrialGroup(trial_id, copy.deepcopy(config), self.repeat)
            self._groups.append(self._current_group)
        else:
            self._current_group.add(trial_id)
        self._trial_id_to_group[trial_id] = self._current_group
        config = dict(self._current_group.config)
        if self._set_index:
            config[TRIAL_INDEX] = len(self._current_group.scores) - 1
        return config

    def on_trial_result(self, trial_id, result):
        """Not passed on: the searcher hears of a group only at its end (as in Ray)."""

    def on_trial_complete(self, trial_id, result=None, error=False):
        group = self._trial_id_to_group.get(trial_id)
        if group is None:
            LOG.error(
                "Trial %s not in group; cannot report score. Seen trials: %s",
                trial_id,
                list(self._trial_id_to_group),
            )
            return
        metric = self.searcher.metric
        value = (result or {}).get(metric)
        score = (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else math.nan
        )
        group.scores[trial_id] = score
        if group.finished_reporting():
            scores = [s for s in group.scores.values() if not math.isnan(s)]
            mean = sum(scores) / len(scores) if scores else math.nan
            self.searcher.on_trial_complete(
                group.primary_trial_id, result={metric: mean}, error=error
            )

    # ---- tunebus's hooks --------------------------------------------------------------------
    def _tunebus_space(self):
        space = self.searcher._tunebus_space()
        if space is None:
            return None
        space = dict(space)
        if self._set_index:
            space[(TRIAL_INDEX,)] = None
        return space

    def _tunebus_adopt(self, trial_id, config):
        inner = {k: v for k, v in config.items() if k != TRIAL_INDEX}
        new = (
            self._current_group is None
            or self._current_group.full()
            or config.get(TRIAL_INDEX) == 0
        )
        if new:
            self.searcher._tunebus_adopt(trial_id, inner)
        return self._place(trial_id, inner if new else None)


__all__ = ["Repeater", "TRIAL_INDEX"]
