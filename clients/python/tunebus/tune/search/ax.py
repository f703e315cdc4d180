"""Ray Tune 2.x's `ray.tune.search.ax.AxSearch`: Ax's AxClient (Bayesian optimisation) in the
driver. Needs ax-platform (`pip install ax-platform`; Debian does not package it): without it,
constructing the searcher raises TuneError (importing this module does not). A thin adapter over
AxClient's get_next_trial / complete_trial / attach_trial, tested with a stand-in module.
"""

import importlib

from tunebus.tune.search._library import LibrarySearcher, bounds, is_int, is_log


class AxSearch(LibrarySearcher):
    """Ray 2.7's AxSearch(space=None, metric=None, mode=None, points_to_evaluate=None,
    parameter_constraints=None, outcome_constraints=None, ax_client=None, **ax_kwargs). A ready
    `ax_client` is not supported (TypeError): give the space as tune domains. Ax minimises the
    metric for mode "min", maximises it for "max"."""

    LIBRARY = "ax"
    PIP = "ax-platform"

    def __init__(
        self,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        parameter_constraints=None,
        outcome_constraints=None,
        ax_client=None,
        **ax_kwargs,
    ):
        if ax_client is not None:
            raise TypeError(
                "AxSearch: a ready `ax_client` is not supported by tunebus; give "
                "the space as tune domains (param_space or `space`)"
            )
        super().__init__(space, metric, mode, points_to_evaluate)
        self._parameter_constraints = parameter_constraints
        self._outcome_constraints = outcome_constraints
        self._ax_kwargs = ax_kwargs

    def _setup(self, space):
        parameters = []
        for name, domain in space.items():
            if domain.sampler == "choice":
                parameters.append(
                    {"name": name, "type": "choice", "values": list(domain.categories)}
                )
            else:
                low, high = bounds(domain)
                parameters.append(
                    {
                        "name": name,
                        "type": "range",
                        "bounds": [low, high],
                        "value_type": "int" if is_int(domain) else "float",
                        "log_scale": is_log(domain),
                    }
                )
        module = importlib.import_module("ax.service.ax_client")
        self._client = module.AxClient(**self._ax_kwargs)
        minimize = self._mode != "max"
        if hasattr(module, "ObjectiveProperties"):  # Ax >= 0.2.4
            objective = {
                "objectives": {self._metric: module.ObjectiveProperties(minimize=minimize)}
            }
        else:
            objective = {"objective_name": self._metric, "minimize": minimize}
        self._client.create_experiment(
            parameters=parameters,
            parameter_constraints=self._parameter_constraints,
            outcome_constraints=self._outcome_constraints,
            **objective,
        )

    def _ask(self):
        params, index = self._client.get_next_trial()
        return index, dict(params)

    def _tell(self, index, value):
        if value is None:
            self._client.log_trial_failure(trial_index=index)
        else:
            self._client.complete_trial(
                trial_index=index, raw_data={self._metric: (float(value), None)}
            )

    def _observe(self, params, value):
        _, index = self._client.attach_trial(parameters=params)
        self._tell(index, value)


__all__ = ["AxSearch"]
