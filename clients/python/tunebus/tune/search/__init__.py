"""Ray Tune 2.x's search algorithms at Ray's module paths (`ray.tune.search` →
`tunebus.tune.search`).

Where each runs (docs/reference/search.md, docs/reference/python.md "Search integrations"):
- in the scheduler (C++), named in the experiment file's `search:` map: `BasicVariantGenerator`
  (`search: random`), tunebus's `TPESearch` (`search: tpe`), `NSGA2Search` (`search: nsga2`) and
  `MOTPESearch` (`search: motpe`) for several objectives, `TuneBOHB` (`search: bohb`, also at
  Ray's path `tune.search.bohb`), and a `ConcurrencyLimiter` around one of them
  (`max_concurrent`); an `OptunaSearch` of several objectives whose sampler is NSGAIISampler,
  MOTPESampler or TPESampler becomes NSGA2Search / MOTPESearch (tune.search.optuna);
- in the driver, served to the scheduler over the external searcher protocol (proto/PROTOCOL.md
  §7a) by tunebus._search_driver: a user's `Searcher` subclass, `optuna.OptunaSearch`,
  `Repeater`, a `ConcurrencyLimiter` around one of them, and the searchers over libraries Debian
  does not package (`hyperopt.HyperOptSearch`, `bayesopt.BayesOptSearch`, `skopt.SkOptSearch`,
  `nevergrad.NevergradSearch`, `ax.AxSearch`, `hebo.HEBOSearch`, `zoopt.ZOOptSearch`). Their
  modules import without the library; constructing the searcher without it raises TuneError
  naming the library, its pip name and tunebus's alternatives (Ray asserts at the same point).
"""

from tunebus._space import grid_search
from tunebus.tune.search._builtin import BuiltinSearcher, MOTPESearch, NSGA2Search, TPESearch
from tunebus.tune.search._util import UNDEFINED_METRIC_MODE, UNDEFINED_SEARCH_SPACE
from tunebus.tune.search.basic_variant import BasicVariantGenerator
from tunebus.tune.search.bohb import TuneBOHB
from tunebus.tune.search.concurrency_limiter import ConcurrencyLimiter
from tunebus.tune.search.repeater import Repeater
from tunebus.tune.search.searcher import Searcher

UNRESOLVED_SEARCH_SPACE = (
    "You passed a `{par}` parameter to {cls} that contained unresolved search space "
    "definitions. {cls} should however be instantiated with fully configured search spaces "
    "only. To use Ray Tune's automatic search space conversion, pass the space definition as "
    "part of the `param_space` argument to `tune.Tuner()` instead."
)

_BY_NAME = {
    "variant_generator": ("basic_variant", "BasicVariantGenerator"),
    "random": ("basic_variant", "BasicVariantGenerator"),
    "ax": ("ax", "AxSearch"),
    "hyperopt": ("hyperopt", "HyperOptSearch"),
    "bayesopt": ("bayesopt", "BayesOptSearch"),
    "bohb": ("bohb", "TuneBOHB"),
    "nevergrad": ("nevergrad", "NevergradSearch"),
    "optuna": ("optuna", "OptunaSearch"),
    "zoopt": ("zoopt", "ZOOptSearch"),
    "hebo": ("hebo", "HEBOSearch"),
}


def create_searcher(search_alg, **kwargs):
    """Ray's `tune.search.create_searcher(name, **kwargs)`: the searcher named `search_alg`
    (variant_generator, random, ax, hyperopt, bayesopt, bohb, nevergrad, optuna, zoopt, hebo),
    constructed with the keyword arguments its constructor takes (the others are dropped)."""
    import importlib
    import inspect

    name = search_alg.lower()
    if name not in _BY_NAME:
        raise ValueError(
            "The `search_alg` argument must be one of %s. Got: %s" % (list(_BY_NAME), search_alg)
        )
    module, cls_name = _BY_NAME[name]
    cls = getattr(importlib.import_module("tunebus.tune.search." + module), cls_name)
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in kwargs.items() if k in accepted})


__all__ = [
    "Searcher",
    "ConcurrencyLimiter",
    "Repeater",
    "BasicVariantGenerator",
    "TPESearch",
    "NSGA2Search",
    "MOTPESearch",
    "TuneBOHB",
    "BuiltinSearcher",
    "grid_search",
    "create_searcher",
    "UNRESOLVED_SEARCH_SPACE",
    "UNDEFINED_SEARCH_SPACE",
    "UNDEFINED_METRIC_MODE",
]
