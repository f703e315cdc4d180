"""Ray Tune 2.x's `ray.tune.search.skopt.SkOptSearch`: scikit-optimize's Optimizer (ask/tell) in
the driver. Needs scikit-optimize (`pip install scikit-optimize`; Debian does not package it):
without it, constructing the searcher raises TuneError (importing this module does not). A thin
adapter, tested with a stand-in module.
"""

from tunebus.tune.search._library import LibrarySearcher, bounds, is_int, is_log


class SkOptSearch(LibrarySearcher):
    """Ray 2.7's SkOptSearch(optimizer=None, space=None, metric=None, mode=None,
    points_to_evaluate=None, evaluated_rewards=None, convert_to_python=True). `optimizer`, a
    ready skopt.Optimizer with its own space, is not supported (TypeError): give the space as
    tune domains. The loss is the metric, negated for mode "max"."""

    LIBRARY = "skopt"
    PIP = "scikit-optimize"

    def __init__(
        self,
        optimizer=None,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        evaluated_rewards=None,
        convert_to_python=True,
    ):
        if optimizer is not None:
            raise TypeError(
                "SkOptSearch: a ready `optimizer` is not supported by tunebus; give "
                "the space as tune domains (param_space or `space`)"
            )
        super().__init__(space, metric, mode, points_to_evaluate, evaluated_rewards)

    def _setup(self, space):
        dims = self._lib.space
        self._names = list(space)
        dimensions = []
        for domain in space.values():
            if domain.sampler == "choice":
                dimensions.append(dims.Categorical(list(domain.categories)))
            elif is_int(domain):
                low, high = bounds(domain)
                prior = "log-uniform" if is_log(domain) else "uniform"
                dimensions.append(dims.Integer(low, high, prior=prior))
            else:
                low, high = bounds(domain)
                dimensions.append(
                    dims.Real(low, high, prior="log-uniform" if is_log(domain) else "uniform")
                )
        self._optimizer = self._lib.Optimizer(dimensions)

    def _ask(self):
        x = [_python(v) for v in self._optimizer.ask()]
        return x, dict(zip(self._names, x))

    def _tell(self, x, value):
        if value is not None:
            self._optimizer.tell(x, self._sign(value))

    def _observe(self, params, value):
        self._optimizer.tell([params[n] for n in self._names], self._sign(value))


def _python(value):
    return value.item() if hasattr(value, "item") else value


__all__ = ["SkOptSearch"]
