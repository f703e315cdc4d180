"""Ray Tune 2.x's `ray.tune.search.bayesopt.BayesOptSearch`: bayes_opt's Gaussian process in the
driver. Needs bayesian-optimization (`pip install bayesian-optimization`; Debian does not package
it): without it, constructing the searcher raises TuneError (importing this module does not).
A thin adapter over bayes_opt's suggest/register API (1.x `UtilityFunction`, or the
`acquisition` module of 2.x), tested with a stand-in module.
"""

from tunebus.tune.search._library import LibrarySearcher, bounds


class BayesOptSearch(LibrarySearcher):
    """Ray 2.7's BayesOptSearch(space, metric, mode, points_to_evaluate, utility_kwargs=None,
    random_state=42, random_search_steps=10, verbose=0, patience=5, skip_duplicate=True,
    analysis=None). Only `tune.uniform` / `tune.quniform` dims, as bayes_opt models floats
    (ValueError otherwise, as Ray). The target is the metric, negated for mode "min".
    `patience`, `skip_duplicate` and `analysis` are accepted and not used."""

    LIBRARY = "bayes_opt"
    PIP = "bayesian-optimization"

    def __init__(
        self,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        utility_kwargs=None,
        random_state=42,
        random_search_steps=10,
        verbose=0,
        patience=5,
        skip_duplicate=True,
        analysis=None,
    ):
        super().__init__(space, metric, mode, points_to_evaluate, None, random_state)
        self._utility_kwargs = dict(utility_kwargs or {"kind": "ucb", "kappa": 2.576, "xi": 0.0})
        self._verbose = verbose

    def _setup(self, space):
        pbounds = {}
        for name, domain in space.items():
            if domain.sampler not in ("uniform", "quniform"):
                raise ValueError(
                    "BayesOpt does not support parameters of type `%s` with "
                    "samplers of type `%s`" % (type(domain).__name__, domain.sampler)
                )
            pbounds[name] = bounds(domain)
        lib = self._lib
        if hasattr(lib, "UtilityFunction"):  # bayes_opt 1.x
            self._optimizer = lib.BayesianOptimization(
                f=None, pbounds=pbounds, verbose=self._verbose, random_state=self._seed
            )
            self._utility = lib.UtilityFunction(**self._utility_kwargs)
        else:  # bayes_opt 2.x: the acquisition function is the optimizer's
            acquisition = lib.acquisition.UpperConfidenceBound(
                kappa=self._utility_kwargs.get("kappa", 2.576)
            )
            self._optimizer = lib.BayesianOptimization(
                f=None,
                pbounds=pbounds,
                acquisition_function=acquisition,
                verbose=self._verbose,
                random_state=self._seed,
            )
            self._utility = None

    def _ask(self):
        params = (
            self._optimizer.suggest(self._utility)
            if self._utility is not None
            else self._optimizer.suggest()
        )
        params = {k: float(v) for k, v in params.items()}
        return params, params

    def _tell(self, params, value):
        if value is not None:
            self._observe(params, value)

    def _observe(self, params, value):
        self._optimizer.register(params=params, target=-self._sign(value))


__all__ = ["BayesOptSearch"]
