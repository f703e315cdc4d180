"""Ray Tune 2.x's `ray.tune.search.hebo.HEBOSearch`: Huawei's HEBO in the driver. Needs HEBO
(`pip install HEBO`; Debian does not package it) and pandas: without HEBO, constructing the
searcher raises TuneError (importing this module does not). A thin adapter over HEBO's
suggest/observe, tested with a stand-in module.
"""

import importlib

from tunebus.tune.search._library import LibrarySearcher, bounds, is_int, is_log


class HEBOSearch(LibrarySearcher):
    """Ray 2.7's HEBOSearch(space=None, metric=None, mode=None, points_to_evaluate=None,
    evaluated_rewards=None, random_state_seed=None, max_concurrent=8, **kwargs); `kwargs` go to
    HEBO's constructor. A ready HEBO DesignSpace is not supported (TypeError). The loss is the
    metric, negated for mode "max"."""

    LIBRARY = "hebo"
    PIP = "HEBO"

    def __init__(
        self,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        evaluated_rewards=None,
        random_state_seed=None,
        max_concurrent=8,
        **kwargs,
    ):
        super().__init__(
            space, metric, mode, points_to_evaluate, evaluated_rewards, random_state_seed
        )
        self._hebo_kwargs = kwargs
        self.max_concurrent = max_concurrent

    def _setup(self, space):
        params = []
        for name, domain in space.items():
            if domain.sampler == "choice":
                params.append({"name": name, "type": "cat", "categories": list(domain.categories)})
                continue
            low, high = bounds(domain)
            kind = "int" if is_int(domain) else ("pow" if is_log(domain) else "num")
            if is_int(domain) and is_log(domain):
                kind = "pow_int"
            params.append({"name": name, "type": kind, "lb": low, "ub": high})
        design = importlib.import_module("hebo.design_space.design_space").DesignSpace()
        optimizers = importlib.import_module("hebo.optimizers.hebo")
        if self._seed is not None:
            import numpy

            numpy.random.seed(self._seed)
        self._optimizer = optimizers.HEBO(design.parse(params), **self._hebo_kwargs)

    def _ask(self):
        frame = self._optimizer.suggest(n_suggestions=1)
        params = {
            k: (v.item() if hasattr(v, "item") else v) for k, v in frame.iloc[0].to_dict().items()
        }
        return frame, params

    def _tell(self, frame, value):
        if value is not None:
            import numpy

            self._optimizer.observe(frame, numpy.array([[self._sign(value)]]))

    def _observe(self, params, value):
        import numpy
        import pandas

        self._optimizer.observe(pandas.DataFrame([params]), numpy.array([[self._sign(value)]]))


__all__ = ["HEBOSearch"]
