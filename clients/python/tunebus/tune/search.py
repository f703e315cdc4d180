"""Ray Tune 2.x's search algorithms (ray.tune.search) as the experiment file's `search:` map.

`BasicVariantGenerator` is `search: random`, `ConcurrencyLimiter` adds `max_concurrent` to the
searcher it wraps. `TPESearch` and `TuneBOHB` are tunebus's own model-based searchers implemented
in the scheduler (`search: tpe`, Optuna's TPESampler defaults; `search: bohb`, Ray's TuneBOHB;
docs/search.md) — Ray reaches them through `OptunaSearch` and `TuneBOHB`, which need Optuna or
hpbandster in the driver; here nothing runs in the driver.
"""


class Searcher:
    """Base of the searchers: a `type` of the experiment file and its parameters."""

    type = ""

    def __init__(self, metric=None, mode=None, points_to_evaluate=None, evaluated_rewards=None,
                 max_concurrent=0, **options):
        if mode is not None and mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max', got %r" % (mode,))
        self.metric = metric
        self.mode = mode
        self.points_to_evaluate = list(points_to_evaluate or [])
        self.evaluated_rewards = list(evaluated_rewards or [])
        self.max_concurrent = max_concurrent
        self.options = options
        self.seed = None

    def set_search_properties(self, metric, mode, config=None, **_):
        """Ray's hook: fills metric and mode from TuneConfig; False when both set them."""
        if (metric and self.metric) or (mode and self.mode):
            return False
        self.metric = self.metric or metric
        self.mode = self.mode or mode
        return True

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


class BasicVariantGenerator(Searcher):
    """Ray's BasicVariantGenerator: grid × num_samples random draws (`search: random`).
    `random_state` (an int) becomes the experiment's `seed`; `constant_grid_search` is not
    supported (TypeError)."""

    type = "random"

    def __init__(self, points_to_evaluate=None, max_concurrent=0, constant_grid_search=False,
                 random_state=None):
        if constant_grid_search:
            raise TypeError("BasicVariantGenerator: constant_grid_search is not supported by tunebus")
        super().__init__(points_to_evaluate=points_to_evaluate, max_concurrent=max_concurrent)
        self.seed = random_state


class TPESearch(Searcher):
    """tunebus's TPE searcher (`search: tpe`), Optuna's TPESampler in C++ inside the scheduler.
    Ray users reach TPE through `OptunaSearch(sampler=TPESampler())`. Keyword options are
    TPESampler's: n_startup_trials, n_ei_candidates, consider_prior, prior_weight,
    consider_magic_clip, consider_endpoints, multivariate, group, bandwidth, constant_liar,
    normalized_density (docs/search.md); `seed` becomes the experiment's seed."""

    type = "tpe"

    def __init__(self, metric=None, mode=None, points_to_evaluate=None, evaluated_rewards=None,
                 seed=None, **options):
        super().__init__(metric, mode, points_to_evaluate, evaluated_rewards, **options)
        self.seed = seed


class TuneBOHB(Searcher):
    """tunebus's BOHB searcher (`search: bohb`), Ray's TuneBOHB in C++ inside the scheduler; pair
    it with `HyperBandForBOHB`. Options: min_points_in_model, top_n_percent, num_samples,
    random_fraction, bandwidth_factor, min_bandwidth (docs/search.md); `seed` becomes the
    experiment's seed. Ray's `bohb_config` dict is accepted as the same options."""

    type = "bohb"

    def __init__(self, space=None, bohb_config=None, metric=None, mode=None,
                 points_to_evaluate=None, seed=None, max_concurrent=0, **options):
        if space is not None:
            raise TypeError("TuneBOHB: pass the search space as the Tuner's param_space")
        merged = dict(bohb_config or {})
        merged.update(options)
        super().__init__(metric, mode, points_to_evaluate, None, max_concurrent, **merged)
        self.seed = seed


class ConcurrencyLimiter(Searcher):
    """Ray's ConcurrencyLimiter: at most `max_concurrent` of the wrapped searcher's trials
    unfinished (`max_concurrent` in its `search:` map). `batch=True` is not supported."""

    def __init__(self, searcher, max_concurrent, batch=False):
        if batch:
            raise TypeError("ConcurrencyLimiter: batch=True is not supported by tunebus")
        if not isinstance(searcher, Searcher):
            raise TypeError("ConcurrencyLimiter wraps a tunebus.tune.search searcher, got %r"
                            % (searcher,))
        self.searcher = searcher
        self.max_concurrent = max_concurrent

    @property
    def metric(self):
        return self.searcher.metric

    @property
    def mode(self):
        return self.searcher.mode

    @property
    def seed(self):
        return self.searcher.seed

    def set_search_properties(self, metric, mode, config=None, **kwargs):
        return self.searcher.set_search_properties(metric, mode, config, **kwargs)

    def to_spec(self):
        spec = self.searcher.to_spec()
        spec["max_concurrent"] = self.max_concurrent
        return spec


__all__ = ["Searcher", "BasicVariantGenerator", "ConcurrencyLimiter", "TPESearch", "TuneBOHB"]
