"""The common part of the searchers over optimisation libraries Debian does not package
(hyperopt, bayes_opt, skopt, nevergrad, ax, hebo, zoopt): each runs in the driver
(tunebus._search_driver) and speaks to its library through four methods.

A subclass names its library (`LIBRARY`, `PIP`) and defines
    _setup(space)         space: {"a/b": tune domain} (nested keys joined by "/"), the metric's
                          direction in self._mode; builds the optimiser
    _ask()                -> (token, {"a/b": value}): one new point to try
    _tell(token, value)   the result of an asked point (value None: failed, no metric)
    _observe(params, value)  a point not asked (points_to_evaluate with evaluated_rewards, a
                          replayed trial after a scheduler restart, add_evaluated_point)
Values are the metric as reported; the subclass turns them into its library's loss (most
minimise). What this base does, as Ray's searchers over these libraries do: the search space
is the Tuner's param space (set_search_properties) or the `space` argument given as a dict of
tune domains (a library's own space objects are refused with TypeError: describe the space with
tune's sampling functions); `points_to_evaluate` are suggested first, in order, and told with
`_observe` when they end; `evaluated_rewards` are observed before the first suggestion and not
run; without the library, construction raises TuneError (tune.search._util.load_library).
"""

import math

from tunebus import _space
from tunebus.tune.search._util import (
    UNDEFINED_METRIC_MODE,
    UNDEFINED_SEARCH_SPACE,
    flatten,
    load_library,
    unflatten,
)
from tunebus.tune.search.searcher import DEFAULT_METRIC, Searcher


class LibrarySearcher(Searcher):
    """The base of the library searchers (see the module doc)."""

    LIBRARY = ""  # the module imported
    PIP = ""  # `pip install` name

    def __init__(
        self,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        evaluated_rewards=None,
        random_state_seed=None,
    ):
        self._lib = load_library(self.LIBRARY, self.PIP, type(self).__name__)
        super().__init__(metric=metric, mode=mode)
        if space is not None and not isinstance(space, dict):
            raise TypeError(
                "%s: `space` must be a dict of tune domains (tune.uniform, "
                "tune.choice, ...); a native %s space is not supported by tunebus"
                % (type(self).__name__, self.LIBRARY)
            )
        self._domains = None
        if space:
            self._domains = self._flat_domains(space)
        self._points = [flatten(p) for p in points_to_evaluate or []]
        self._evaluated_rewards = list(evaluated_rewards) if evaluated_rewards else None
        if self._evaluated_rewards is not None and len(self._evaluated_rewards) != len(
            self._points
        ):
            raise ValueError(
                "Dim of point %d and reward %d do not match"
                % (len(self._points), len(self._evaluated_rewards))
            )
        self._seed = random_state_seed
        self._ready = False
        self._live = {}  # trial id -> token, or ("observe", params) for points and adoptions

    def _flat_domains(self, space):
        out = {}
        for name, value in flatten(space).items():
            if _space.is_grid(value):
                raise ValueError(
                    "Grid search parameters cannot be automatically converted to a "
                    "%s search space." % self.LIBRARY
                )
            if not isinstance(value, _space.Domain):
                if isinstance(value, dict) and _space.is_grid(value):
                    continue
                raise TypeError(
                    "%s: `space` must be a dict of tune domains, %s is %r"
                    % (type(self).__name__, name, value)
                )
            out[name] = value
        return out

    # ---- Ray's API --------------------------------------------------------------------------
    def set_search_properties(self, metric, mode, config, **spec):
        if self._domains:
            return False
        domains = {}
        for name, value in flatten(config or {}).items():
            if _space.is_grid(value):
                raise ValueError(
                    "Grid search parameters cannot be automatically converted to a "
                    "%s search space." % self.LIBRARY
                )
            if isinstance(value, _space.Domain):
                domains[name] = value
        self._domains = domains
        if metric:
            self._metric = metric
        if mode:
            self._mode = mode
        return True

    def suggest(self, trial_id):
        self._ensure()
        if self._points:
            point = self._points.pop(0)
            self._live[trial_id] = ("observe", point)
            return unflatten(dict(point))
        token, params = self._ask()
        self._live[trial_id] = ("asked", token)
        return unflatten(dict(params))

    def on_trial_complete(self, trial_id, result=None, error=False):
        entry = self._live.pop(trial_id, None)
        if entry is None:
            return
        value = (result or {}).get(self._metric)
        if (
            error
            or isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            value = None
        if entry[0] == "asked":
            self._tell(entry[1], value)
        elif value is not None:
            self._observe(entry[1], value)

    def add_evaluated_point(
        self, parameters, value, error=False, pruned=False, intermediate_values=None
    ):
        self._ensure()
        if not error and value is not None:
            self._observe(flatten(parameters), value)

    # ---- the library ------------------------------------------------------------------------
    def _ensure(self):
        if self._ready:
            return
        if not self._domains:
            raise RuntimeError(
                UNDEFINED_SEARCH_SPACE.format(cls=type(self).__name__, space="space")
            )
        if self._metric is None and self._mode:
            self._metric = DEFAULT_METRIC
        if not self._metric or not self._mode:
            raise RuntimeError(
                UNDEFINED_METRIC_MODE.format(
                    cls=type(self).__name__, metric=self._metric, mode=self._mode
                )
            )
        self._setup(self._domains)
        self._ready = True
        if self._evaluated_rewards is not None:
            for point, reward in zip(self._points, self._evaluated_rewards):
                self._observe(point, reward)
            self._points = []

    def _sign(self, value):
        """The loss a minimising library gets for a metric value."""
        return value if self._mode == "min" else -value

    def _setup(self, space):
        raise NotImplementedError

    def _ask(self):
        raise NotImplementedError

    def _tell(self, token, value):
        raise NotImplementedError

    def _observe(self, params, value):
        raise NotImplementedError

    # ---- tunebus's hooks --------------------------------------------------------------------
    def _tunebus_copy(self):
        import copy

        if self._ready:
            raise TypeError("%s: copied only before its first suggestion" % type(self).__name__)
        lib = self.__dict__.pop("_lib")
        try:
            clone = copy.deepcopy(self)
        finally:
            self._lib = lib
        clone._lib = lib
        return clone

    def _tunebus_space(self):
        return {tuple(name.split("/")): d for name, d in (self._domains or {}).items()}

    def _tunebus_adopt(self, trial_id, config):
        """A replayed trial: told as an observed point when it ends (its config is the
        journal's, whatever the library would draw now)."""
        self._ensure()
        flat = flatten(config)
        params = {k: flat[k] for k in self._domains if k in flat}
        if self._points and all(params.get(k) == v for k, v in self._points[0].items()):
            self._points.pop(0)
        self._live[trial_id] = ("observe", params)
        return unflatten(dict(params))


def bounds(domain):
    """(low, high) of a numeric tune domain, both inclusive, in its own units."""
    name, args = domain.sampler, domain.args
    if name in ("randn", "qrandn"):
        return args[0] - 5 * args[1], args[0] + 5 * args[1]
    if name in ("randint", "lograndint"):
        return args[0], args[1] - 1
    return args[0], args[1]


def is_log(domain):
    return "log" in domain.sampler


def is_int(domain):
    return "randint" in domain.sampler


__all__ = ["LibrarySearcher", "bounds", "is_log", "is_int"]
