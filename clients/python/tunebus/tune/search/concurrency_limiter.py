"""Ray Tune 2.x's `ray.tune.search.ConcurrencyLimiter`: at most `max_concurrent` of a searcher's
trials unfinished.

Around a built-in searcher (TPESearch, TuneBOHB, BasicVariantGenerator) it is the `search:` map's
`max_concurrent`, enforced by the scheduler (docs/reference/search.md). Around any other searcher it
runs in
the driver with Ray's semantics (below), and the experiment also gets `max_concurrent` so the
scheduler does not ask while the limit is reached (the same count: trials this limiter suggested
and that have not ended).
"""

import logging

from tunebus.tune.search._builtin import BuiltinSearcher
from tunebus.tune.search._wrapper import WrapperSearcher, set_search_properties
from tunebus.tune.search.searcher import Searcher

LOG = logging.getLogger("tunebus")


class ConcurrencyLimiter(WrapperSearcher):
    """Ray 2.7's ConcurrencyLimiter(searcher, max_concurrent, batch=False): `suggest` answers None
    while `max_concurrent` of the trials it suggested are live; `batch=True` holds every end
    until the whole batch of `max_concurrent` trials has ended and then tells the searcher all of
    them (driver-side searchers only: the scheduler's limiter has no batches, TypeError). A
    searcher whose `set_max_concurrency` returns True limits itself and this only passes calls
    on."""

    def __init__(self, searcher, max_concurrent, batch=False):
        if not (isinstance(max_concurrent, int) and max_concurrent > 0):
            raise AssertionError("max_concurrent must be an int > 0, got %r" % (max_concurrent,))
        if not isinstance(searcher, Searcher):
            raise RuntimeError(
                "The `ConcurrencyLimiter` only works with `Searcher` objects (got %s). Please try "
                "to pass `max_concurrent` to the search generator directly." % type(searcher)
            )
        if batch and isinstance(searcher, BuiltinSearcher):
            raise TypeError(
                "ConcurrencyLimiter: batch=True is not supported around %s, which "
                "runs in the scheduler" % type(searcher).__name__
            )
        self.searcher = searcher
        self.max_concurrent = max_concurrent
        self.batch = batch
        self.live_trials = set()
        self.num_unfinished_live_trials = 0
        self.cached_results = {}
        self._limit_concurrency = True
        self._set_searcher_max_concurrency()
        super().__init__(metric=searcher.metric, mode=searcher.mode)

    @property
    def seed(self):
        return getattr(self.searcher, "seed", None)

    def _set_searcher_max_concurrency(self):
        self._limit_concurrency = not self.searcher.set_max_concurrency(self.max_concurrent)

    def set_max_concurrency(self, max_concurrent):
        self.max_concurrent = max_concurrent
        return True

    def set_search_properties(self, metric, mode, config=None, **spec):
        self._set_searcher_max_concurrency()
        return set_search_properties(self.searcher, metric, mode, config, **spec)

    def suggest(self, trial_id):
        if not self._limit_concurrency:
            return self.searcher.suggest(trial_id)
        if trial_id in self.live_trials:
            raise AssertionError("Trial ID %s must be unique: already found in set." % trial_id)
        if len(self.live_trials) >= self.max_concurrent:
            LOG.debug(
                "not suggesting for %s: concurrency limit %d/%d",
                trial_id,
                len(self.live_trials),
                self.max_concurrent,
            )
            return None
        suggestion = self.searcher.suggest(trial_id)
        if suggestion is not None and suggestion != Searcher.FINISHED:
            self.live_trials.add(trial_id)
            self.num_unfinished_live_trials += 1
        return suggestion

    def on_trial_complete(self, trial_id, result=None, error=False):
        if not self._limit_concurrency:
            return self.searcher.on_trial_complete(trial_id, result=result, error=error)
        if trial_id not in self.live_trials:
            return None
        if self.batch:
            self.cached_results[trial_id] = (result, error)
            self.num_unfinished_live_trials -= 1
            if self.num_unfinished_live_trials > 0:
                return None
            cached, self.cached_results = self.cached_results, {}
            self.live_trials.difference_update(cached)
            self.num_unfinished_live_trials = 0
            for done_id, (done_result, done_error) in cached.items():
                self.searcher.on_trial_complete(done_id, result=done_result, error=done_error)
            return None
        # The trial leaves the live set first: a searcher whose on_trial_complete raises does
        # not keep the limit full for good (Ray's order would, and block the experiment).
        self.live_trials.remove(trial_id)
        self.num_unfinished_live_trials -= 1
        self.searcher.on_trial_complete(trial_id, result=result, error=error)
        return None

    def on_trial_result(self, trial_id, result):
        self.searcher.on_trial_result(trial_id, result)

    def add_evaluated_point(
        self, parameters, value, error=False, pruned=False, intermediate_values=None
    ):
        return self.searcher.add_evaluated_point(
            parameters, value, error, pruned, intermediate_values
        )

    def save(self, checkpoint_path):
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path):
        self.searcher.restore(checkpoint_path)

    def to_spec(self):
        """Around a built-in searcher: its `search:` map with `max_concurrent`."""
        if not isinstance(self.searcher, BuiltinSearcher):
            raise TypeError("%s runs in the driver" % type(self.searcher).__name__)
        spec = self.searcher.to_spec()
        spec["max_concurrent"] = self.max_concurrent
        return spec

    # ---- tunebus's hooks --------------------------------------------------------------------
    def _tunebus_adopt(self, trial_id, config):
        got = self.searcher._tunebus_adopt(trial_id, config)
        if self._limit_concurrency:
            self.live_trials.add(trial_id)
            self.num_unfinished_live_trials += 1
        return got


__all__ = ["ConcurrencyLimiter"]
