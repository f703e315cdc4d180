"""Ray Tune 2.x's `ray.tune.search.nevergrad.NevergradSearch`: a nevergrad optimizer (ask/tell)
in the driver. Needs nevergrad (`pip install nevergrad`; Debian does not package it): without it,
constructing the searcher raises TuneError (importing this module does not). A thin adapter,
tested with a stand-in module.
"""

from tunebus.tune.search._library import LibrarySearcher, bounds, is_int, is_log


class NevergradSearch(LibrarySearcher):
    """Ray 2.7's NevergradSearch(optimizer=None, optimizer_kwargs=None, space=None, metric=None,
    mode=None, points_to_evaluate=None). `optimizer`: a nevergrad optimizer class (e.g.
    `ng.optimizers.OnePlusOne`) or its registry name; default "NGOpt". An optimizer instance with
    its own parametrization is not supported (TypeError). The loss is the metric, negated for
    mode "max"."""

    LIBRARY = PIP = "nevergrad"

    def __init__(
        self,
        optimizer=None,
        optimizer_kwargs=None,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
    ):
        super().__init__(space, metric, mode, points_to_evaluate)
        if optimizer is not None and not (isinstance(optimizer, str) or callable(optimizer)):
            raise TypeError(
                "NevergradSearch: pass an optimizer class or registry name; an "
                "optimizer instance is not supported by tunebus"
            )
        self._optimizer_cls = optimizer or "NGOpt"
        self._optimizer_kwargs = dict(optimizer_kwargs or {})

    def _setup(self, space):
        p = self._lib.p
        params = {}
        for name, domain in space.items():
            if domain.sampler == "choice":
                params[name] = p.Choice(list(domain.categories))
                continue
            low, high = bounds(domain)
            param = (
                p.Log(lower=low, upper=high) if is_log(domain) else p.Scalar(lower=low, upper=high)
            )
            params[name] = param.set_integer_casting() if is_int(domain) else param
        cls = self._optimizer_cls
        if isinstance(cls, str):
            cls = self._lib.optimizers.registry[cls]
        self._optimizer = cls(parametrization=p.Dict(**params), **self._optimizer_kwargs)

    def _ask(self):
        candidate = self._optimizer.ask()
        return candidate, dict(candidate.value)

    def _tell(self, candidate, value):
        if value is not None:
            self._optimizer.tell(candidate, self._sign(value))

    def _observe(self, params, value):
        candidate = self._optimizer.parametrization.spawn_child(new_value=params)
        self._optimizer.tell(candidate, self._sign(value))


__all__ = ["NevergradSearch"]
