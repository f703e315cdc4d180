"""Ray Tune 2.x's `ray.tune.search.zoopt.ZOOptSearch`: ZOOpt's SRacos (derivative-free) in the
driver. Needs zoopt (`pip install zoopt`; Debian does not package it): without it, constructing
the searcher raises TuneError (importing this module does not). A thin adapter over
`SRacosTune.suggest` / `complete`, tested with a stand-in module.
"""

import importlib

from tunebus.tune.search._library import LibrarySearcher, bounds, is_int
from tunebus.tune.search.searcher import Searcher


class ZOOptSearch(LibrarySearcher):
    """Ray 2.7's ZOOptSearch(algo="asracos", budget=None, dim_dict=None, metric=None, mode=None,
    points_to_evaluate=None, parallel_num=1, **kwargs). `budget` (the number of evaluations) is
    required, as in Ray; `dim_dict` (ZOOpt's own space) is not supported (TypeError): give the
    space as tune domains. ZOOpt cannot be told points it did not suggest: a replayed trial after
    a scheduler restart is not told. The loss is the metric, negated for mode "max"."""

    LIBRARY = PIP = "zoopt"

    def __init__(
        self,
        algo="asracos",
        budget=None,
        dim_dict=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        parallel_num=1,
        **kwargs,
    ):
        if dim_dict is not None:
            raise TypeError(
                "ZOOptSearch: `dim_dict` is not supported by tunebus; give the space "
                "as tune domains (param_space)"
            )
        super().__init__(None, metric, mode, points_to_evaluate)
        if budget is None:
            raise AssertionError("`budget` should not be None!")
        if algo not in ("sracos", "asracos"):
            raise AssertionError("`algo` must be in ['asracos', 'sracos'] currently")
        self._budget = budget
        self._algo = algo
        self._parallel_num = parallel_num
        self._kwargs = kwargs

    def _setup(self, space):
        zoopt = self._lib
        kinds = zoopt.ValueType
        dims = []
        for domain in space.values():
            if domain.sampler == "choice":
                dims.append((kinds.GRID, list(domain.categories)))
            elif is_int(domain):
                dims.append((kinds.DISCRETE, list(bounds(domain)), True))
            else:
                dims.append((kinds.CONTINUOUS, list(bounds(domain)), 1e-10))
        self._names = list(space)
        sracos = importlib.import_module("zoopt.algos.opt_algorithms.racos.sracos")
        self._optimizer = sracos.SRacosTune(
            dimension=zoopt.Dimension2(dims),
            parameter=zoopt.Parameter(budget=self._budget, **self._kwargs),
            parallel_num=self._parallel_num,
        )

    def suggest(self, trial_id):
        self._ensure()
        if self._points:
            return super().suggest(trial_id)
        solution = self._optimizer.suggest()
        if isinstance(solution, str) and solution == "FINISHED":
            return Searcher.FINISHED
        if not solution:
            return None
        self._live[trial_id] = ("asked", solution)
        return dict(zip(self._names, solution.get_x()))

    def _tell(self, solution, value):
        if value is not None:
            self._optimizer.complete(solution, self._sign(value))

    def _observe(self, params, value):
        pass  # ZOOpt takes only its own solutions


__all__ = ["ZOOptSearch"]
