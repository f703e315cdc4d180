"""The searchers the scheduler runs itself (C++, libs/tune/), named in the experiment file's
`search:` map: `BuiltinSearcher` and tunebus's own `TPESearch`. `BasicVariantGenerator`
(basic_variant.py) and `TuneBOHB` (bohb.py) are built-ins too. Nothing of them runs in the
driver: `to_spec()` is all the Tuner asks of them (docs/reference/search.md).
"""

from tunebus.tune.search.searcher import Searcher


class BuiltinSearcher(Searcher):
    """A searcher the scheduler implements: a `type` of the experiment file and its parameters.
    `metric`/`mode` left out are the TuneConfig's; given in both places they are refused with
    Ray's ValueError (as for the trial schedulers)."""

    type = ""

    def __init__(
        self,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        evaluated_rewards=None,
        max_concurrent=0,
        **options,
    ):
        if mode is not None and mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max', got %r" % (mode,))
        super().__init__(metric, mode)
        self.points_to_evaluate = list(points_to_evaluate or [])
        self.evaluated_rewards = list(evaluated_rewards or [])
        self.max_concurrent = max_concurrent
        self.options = options
        self.seed = None

    def set_search_properties(self, metric, mode, config=None, **_):
        """Fills metric and mode from TuneConfig; False when both set them."""
        if (metric and self._metric) or (mode and self._mode):
            return False
        self._metric = self._metric or metric
        self._mode = self._mode or mode
        return True

    def suggest(self, trial_id):
        raise TypeError(
            "%s runs in the scheduler (search: %s); it suggests nothing in the "
            "driver" % (type(self).__name__, self.type)
        )

    def on_trial_complete(self, trial_id, result=None, error=False):
        pass

    def to_spec(self):
        """The experiment file's `search:` value."""
        spec = {"type": self.type}
        for key in ("metric", "mode"):
            if getattr(self, key) is not None:
                spec[key] = getattr(self, key)
        if self.max_concurrent:
            spec["max_concurrent"] = self.max_concurrent
        if self.points_to_evaluate:
            spec["points_to_evaluate"] = self.points_to_evaluate
        if self.evaluated_rewards:
            spec["evaluated_rewards"] = self.evaluated_rewards
        spec.update(self.options)
        return spec


class TPESearch(BuiltinSearcher):
    """tunebus's TPE searcher (`search: tpe`), Optuna 3.1's TPESampler in C++ inside the
    scheduler. Ray users reach TPE through `OptunaSearch(sampler=TPESampler())`, which runs
    Optuna in the driver (tune.search.optuna). Keyword options are TPESampler's:
    n_startup_trials, n_ei_candidates, consider_prior, prior_weight, consider_magic_clip,
    consider_endpoints, multivariate, group, bandwidth, constant_liar, normalized_density
    (docs/reference/search.md); `seed` becomes the experiment's seed."""

    type = "tpe"

    def __init__(
        self,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        evaluated_rewards=None,
        seed=None,
        **options,
    ):
        super().__init__(metric, mode, points_to_evaluate, evaluated_rewards, **options)
        self.seed = seed


class _ManyObjectiveSearch(BuiltinSearcher):
    """A searcher of several objectives run by the scheduler: `metric`/`mode` are lists (Ray's
    and Optuna's list form), which become the experiment's `metric:`/`mode:` lists (the
    TuneConfig's when left out). `seed` becomes the experiment's seed; keyword options are the
    searcher's parameters (docs/reference/search.md)."""

    def __init__(self, metric=None, mode=None, points_to_evaluate=None, seed=None, **options):
        if isinstance(mode, (list, tuple)):
            for m in mode:
                if m not in ("min", "max"):
                    raise ValueError("each mode must be 'min' or 'max', got %r" % (m,))
            mode_value = list(mode)
        else:
            mode_value = mode
        super().__init__(None, None, points_to_evaluate, None, **options)
        self._metric = list(metric) if isinstance(metric, (list, tuple)) else metric
        self._mode = mode_value
        self.seed = seed

    def to_spec(self):
        spec = super().to_spec()
        spec.pop("metric", None)  # the experiment's lists carry the objectives
        spec.pop("mode", None)
        return spec


class NSGA2Search(_ManyObjectiveSearch):
    """tunebus's NSGA-II (`search: nsga2`; Deb et al. 2002, as Optuna 3.1's NSGAIISampler) in
    C++ inside the scheduler. `OptunaSearch(metric=[...], mode=[...],
    sampler=NSGAIISampler(...))` becomes this searcher (tune.search.optuna)."""

    type = "nsga2"


class MOTPESearch(_ManyObjectiveSearch):
    """tunebus's multi-objective TPE (`search: motpe`; Ozaki et al. 2020, Optuna 3.1's
    MOTPESampler / TPESampler over several objectives) in C++ inside the scheduler.
    `OptunaSearch(metric=[...], mode=[...], sampler=TPESampler(...) or MOTPESampler(...))`
    becomes this searcher (tune.search.optuna)."""

    type = "motpe"


__all__ = ["BuiltinSearcher", "MOTPESearch", "NSGA2Search", "TPESearch"]
