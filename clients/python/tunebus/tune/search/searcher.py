"""Ray Tune 2.x's `Searcher` base class (`ray.tune.search.Searcher`), as user code subclasses it.

A searcher proposes configs: `suggest(trial_id)` returns a config dict, None (nothing now: asked
again later) or `Searcher.FINISHED` (nothing ever again); `on_trial_result(trial_id, result)` gets
each intermediate result and `on_trial_complete(trial_id, result, error)` each trial's end;
`set_search_properties(metric, mode, config, **spec)` hands it the Tuner's metric, mode and param
space, and returns False when it keeps its own (Ray 2.x's contract, also for the subclasses here).

Where it runs: a searcher of this package other than the built-ins (`TPESearch`, `TuneBOHB`,
`BasicVariantGenerator`, which the scheduler runs in C++) and every user subclass runs in the
driver process, served to the scheduler over the external searcher protocol (proto/PROTOCOL.md
§7a) by tunebus._search_driver: its methods are called from the driver's background thread, one
call at a time, in the order the scheduler reports suggestions, results and ends.

Methods whose names start with `_tunebus_` are tunebus's hooks for that adapter (replay after a
scheduler restart, the keys a searcher suggests); a user subclass need not define them.
"""

import copy
import glob
import os
import uuid

DEFAULT_METRIC = "_metric"  # Ray's anonymous metric, used when only a mode is given


class Searcher:
    """Ray Tune 2.x's `Searcher` (ray/tune/search/searcher.py, Ray 2.7): subclass it and define
    `suggest` and `on_trial_complete`.

    `metric`: a result key, or a list of keys for many objectives; `mode`: "min" | "max", or a
    list of them as long as `metric` (for a list, each "min", "max" or "obs"). Subclasses that
    define `__init__` call `super().__init__(metric=..., mode=...)`.
    """

    FINISHED = "FINISHED"
    CKPT_FILE_TMPL = "searcher-state-{}.pkl"

    def __init__(self, metric=None, mode=None):
        self._metric = metric
        self._mode = mode
        if not mode or not metric:
            return
        if not isinstance(metric, type(mode)):
            raise AssertionError("metric and mode must be of the same type")
        if isinstance(mode, str):
            if mode not in ("min", "max"):
                raise AssertionError("if `mode` is a str must be 'min' or 'max'!")
        elif isinstance(mode, list):
            if len(mode) != len(metric):
                raise AssertionError("Metric and mode must be the same length")
            if not all(m in ("min", "max", "obs") for m in mode):
                raise AssertionError("All of mode must be 'min' or 'max' or 'obs'!")
        else:
            raise ValueError("Mode most either be a list or string")

    def set_search_properties(self, metric, mode, config, **spec):
        """Ray's hook: the Tuner's metric, mode and param space (`config`; `spec` holds the
        experiment's `stop`, `num_samples`, `time_budget_s`). Returns True when taken, False when
        the searcher keeps its own (the base class always does)."""
        return False

    def on_trial_result(self, trial_id, result):
        """An intermediate result of a trial this searcher suggested (flattened: nested metrics
        are "a/b" keys, as Ray flattens them). The default ignores it."""

    def on_trial_complete(self, trial_id, result=None, error=False):
        """The end of a trial this searcher suggested: its last result (flattened; None when it
        reported nothing) and whether it ended in ERROR."""
        raise NotImplementedError

    def suggest(self, trial_id):
        """A config (dict) for trial `trial_id`, None for "not now", or `Searcher.FINISHED`."""
        raise NotImplementedError

    def add_evaluated_point(
        self, parameters, value, error=False, pruned=False, intermediate_values=None
    ):
        """A point evaluated outside the suggest / on_trial_complete loop."""
        raise NotImplementedError

    def add_evaluated_trials(self, trials_or_analysis, metric):
        """`add_evaluated_point` for each trial (objects with `config`, `last_result`,
        `status`), a list of them, or an ExperimentAnalysis / ResultGrid-like object with
        `trials`."""
        if type(self).add_evaluated_point is Searcher.add_evaluated_point:
            raise NotImplementedError
        if isinstance(trials_or_analysis, (list, tuple)):
            trials = trials_or_analysis
        elif hasattr(trials_or_analysis, "trials"):
            trials = trials_or_analysis.trials
        else:
            trials = [trials_or_analysis]
        for trial in trials:
            last = getattr(trial, "last_result", None) or {}
            if metric not in last:
                continue
            status = getattr(trial, "status", "TERMINATED")
            self.add_evaluated_point(
                trial.config,
                last[metric],
                error=status == "ERROR",
                pruned=status == "TERMINATED" and not last.get("done"),
            )

    def save(self, checkpoint_path):
        raise NotImplementedError

    def restore(self, checkpoint_path):
        raise NotImplementedError

    def set_max_concurrency(self, max_concurrent):
        """True when the searcher limits its concurrency itself (then a ConcurrencyLimiter
        around it does not)."""
        return False

    def get_state(self):
        raise NotImplementedError

    def set_state(self, state):
        raise NotImplementedError

    def save_to_dir(self, checkpoint_dir, session_str="default"):
        """`save` into `checkpoint_dir`/searcher-state-<session_str>.pkl (atomically); nothing
        when `save` is not implemented."""
        name = self.CKPT_FILE_TMPL.format(session_str)
        tmp = os.path.join(checkpoint_dir, ".%s-tmp-%s" % (uuid.uuid4(), name))
        try:
            self.save(tmp)
        except NotImplementedError:
            return
        if os.path.exists(tmp):
            os.replace(tmp, os.path.join(checkpoint_dir, name))

    def restore_from_dir(self, checkpoint_dir):
        """`restore` from the newest searcher-state-*.pkl in `checkpoint_dir`."""
        paths = glob.glob(os.path.join(checkpoint_dir, self.CKPT_FILE_TMPL.format("*")))
        if not paths:
            raise RuntimeError("Searcher unable to find checkpoint in %s" % checkpoint_dir)
        self.restore(max(paths))

    @property
    def metric(self):
        """The result key (or keys) this searcher optimises."""
        return self._metric

    @property
    def mode(self):
        """ "min" or "max" (or a list of them)."""
        return self._mode

    # ---- tunebus's hooks (tunebus._search_driver) ----------------------------------------------
    def _tunebus_copy(self):
        """An independent copy in the state this searcher has now: the driver keeps one made
        before the first suggestion and rebuilds the searcher from it when the scheduler starts a
        new session. The default is `copy.deepcopy`."""
        return copy.deepcopy(self)

    def _tunebus_take(self, fresh):
        """Takes the state of `fresh`, a rebuilt copy (`_tunebus_copy` of the pristine one), so
        that the object the user holds is the rebuilt searcher."""
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)

    def _tunebus_space(self):
        """The config keys this searcher suggests, as {key path (tuple): a tune domain whose
        values it suggests, or None for any value}, or None when it cannot tell (the driver then
        asks a copy for one suggestion and takes its keys). Keys of the param space it was given
        need not be listed."""
        return None

    def _tunebus_adopt(self, trial_id, config):
        """The scheduler's journal says trial `trial_id` runs `config` (the whole config, nested):
        a suggestion of an earlier session replayed, or one made elsewhere. The default asks
        `suggest(trial_id)` again, which gives `config` back for a searcher whose suggestions are
        a function of its seed and what it was told (the replay tells it in the original order);
        the searchers of this package that can take a given config override it. Returns what
        `suggest` gave (the adapter compares it with `config`)."""
        return self.suggest(trial_id)


__all__ = ["Searcher", "DEFAULT_METRIC"]
