"""Ray Tune 2.x's trial schedulers (ray.tune.schedulers) as the experiment file's `scheduler:` map.

Each class takes Ray's parameter names and defaults and turns into
`{type: <name>, <param>: <value>, ...}` (docs/reference/experiment-file.md;
docs/reference/schedulers.md has
each
algorithm). `metric` and `mode` left out are the TuneConfig's, as Ray's `Tuner` sets them; given
in both places they are refused as Ray refuses them. PBT's `hyperparam_mutations` values may be
lists, search space functions, nested dicts, or functions: a function is called in the driver
(Ray calls it there too) over the driver link, written `{driver: {}}`.

Ray's schedulers tunebus does not implement (`PB2`, also at `tune.schedulers.pb2`;
`ResourceChangingScheduler` and its `DistributeResources*`, also at
`tune.schedulers.resource_changing_scheduler`; `PopulationBasedTrainingReplay`) import as in Ray
and raise TuneError at construction, naming what to use instead (tune.schedulers._missing).
"""

from tunebus import _space
from tunebus.tune.schedulers._missing import (  # noqa: F401 - Ray's names, not implemented
    PB2,
    DistributeResources,
    DistributeResourcesToTopJob,
    PopulationBasedTrainingReplay,
    ResourceChangingScheduler,
)


class TrialScheduler:
    """Base of the schedulers: a `type` of the experiment file and Ray's parameters."""

    type = ""

    def __init__(self, metric=None, mode=None, **params):
        if mode is not None and mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max', got %r" % (mode,))
        self.metric = metric
        self.mode = mode
        self.params = params

    def set_search_properties(self, metric, mode, **_):
        """Ray's hook: fills metric and mode from TuneConfig when the scheduler has none.
        Returns False when both set them, as Ray's Tuner then refuses."""
        if (metric and self.metric) or (mode and self.mode):
            return False
        self.metric = self.metric or metric
        self.mode = self.mode or mode
        return True

    def driver_mutations(self):
        """Keys whose values the driver computes per result (PBT's function mutations)."""
        return {}

    def to_spec(self):
        """The experiment file's `scheduler:` value."""
        spec = {"type": self.type}
        if self.metric is not None:
            spec["metric"] = self.metric
        if self.mode is not None:
            spec["mode"] = self.mode
        spec.update(self.params)
        return spec


class FIFOScheduler(TrialScheduler):
    """Ray's FIFOScheduler: every trial runs until it stops (`scheduler: fifo`)."""

    type = "fifo"

    def __init__(self):
        super().__init__()

    def to_spec(self):
        return {"type": "fifo"}


class AsyncHyperBandScheduler(TrialScheduler):
    """Ray's AsyncHyperBandScheduler, asynchronous successive halving (`scheduler: asha`;
    Li et al., MLSys 2020)."""

    type = "asha"

    def __init__(
        self,
        time_attr="training_iteration",
        metric=None,
        mode=None,
        max_t=100,
        grace_period=1,
        reduction_factor=4,
        brackets=1,
        stop_last_trials=True,
    ):
        super().__init__(
            metric,
            mode,
            time_attr=time_attr,
            max_t=max_t,
            grace_period=grace_period,
            reduction_factor=reduction_factor,
            brackets=brackets,
            stop_last_trials=stop_last_trials,
        )


ASHAScheduler = AsyncHyperBandScheduler


class HyperBandScheduler(TrialScheduler):
    """Ray's HyperBandScheduler, synchronous HyperBand (`scheduler: hyperband`; Li et al.,
    JMLR 2018)."""

    type = "hyperband"

    def __init__(
        self,
        time_attr="training_iteration",
        metric=None,
        mode=None,
        max_t=81,
        reduction_factor=3,
        stop_last_trials=True,
    ):
        super().__init__(
            metric,
            mode,
            time_attr=time_attr,
            max_t=max_t,
            reduction_factor=reduction_factor,
            stop_last_trials=stop_last_trials,
        )


class HyperBandForBOHB(HyperBandScheduler):
    """Ray's HyperBandForBOHB, paired with `tune.search.TuneBOHB` (`scheduler: hyperband_bohb`)."""

    type = "hyperband_bohb"


class MedianStoppingRule(TrialScheduler):
    """Ray's MedianStoppingRule (`scheduler: median_stopping`; Golovin et al., KDD 2017)."""

    type = "median_stopping"

    def __init__(
        self,
        time_attr="time_total_s",
        metric=None,
        mode=None,
        grace_period=60.0,
        min_samples_required=3,
        min_time_slice=0,
        hard_stop=True,
    ):
        super().__init__(
            metric,
            mode,
            time_attr=time_attr,
            grace_period=grace_period,
            min_samples_required=min_samples_required,
            min_time_slice=min_time_slice,
            hard_stop=hard_stop,
        )


class PopulationBasedTraining(TrialScheduler):
    """Ray's PopulationBasedTraining (`scheduler: pbt`; Jaderberg et al., 2017).

    `custom_explore_fn` and `synch=True` are not supported (TypeError); `log_config` and
    `require_attrs` are accepted and ignored (tunebus always logs the exploit in the trial's next
    result and always requires `time_attr`)."""

    type = "pbt"

    def __init__(
        self,
        time_attr="time_total_s",
        metric=None,
        mode=None,
        perturbation_interval=60.0,
        burn_in_period=0.0,
        hyperparam_mutations=None,
        quantile_fraction=0.25,
        resample_probability=0.25,
        perturbation_factors=(1.2, 0.8),
        custom_explore_fn=None,
        log_config=True,
        require_attrs=True,
        synch=False,
    ):
        if custom_explore_fn is not None:
            raise TypeError(
                "PopulationBasedTraining: custom_explore_fn is not supported by tunebus"
            )
        if synch:
            raise TypeError("PopulationBasedTraining: synch=True is not supported by tunebus")
        self.hyperparam_mutations = dict(hyperparam_mutations or {})
        super().__init__(
            metric,
            mode,
            time_attr=time_attr,
            perturbation_interval=perturbation_interval,
            burn_in_period=burn_in_period,
            quantile_fraction=quantile_fraction,
            resample_probability=resample_probability,
            perturbation_factors=list(perturbation_factors),
        )

    def driver_mutations(self):
        return _function_mutations(self.hyperparam_mutations, "")

    def to_spec(self):
        spec = super().to_spec()
        spec["hyperparam_mutations"] = _mutations_spec(
            self.hyperparam_mutations, "hyperparam_mutations"
        )
        return spec


def _function_mutations(mutations, prefix):
    out = {}
    for key, value in mutations.items():
        if isinstance(value, dict):
            out.update(_function_mutations(value, prefix + key + "."))
        elif callable(value) and not isinstance(value, _space.Domain):
            out[prefix + key] = value
    return out


def _mutations_spec(mutations, path):
    out = {}
    for key, value in mutations.items():
        where = "%s.%s" % (path, key)
        if isinstance(value, _space.Domain):
            if isinstance(value, _space.Function):
                raise ValueError("%s: use a plain function, not tune.sample_from" % where)
            out[key] = value.to_spec()
        elif isinstance(value, dict):
            out[key] = _mutations_spec(value, where)
        elif callable(value):
            out[key] = {"driver": {}}
        elif isinstance(value, (list, tuple)):
            out[key] = list(value)
        else:
            raise ValueError(
                "%s: a list, a search space function, a dict or a function, got %r" % (where, value)
            )
    return out


_BY_NAME = {
    "fifo": FIFOScheduler,
    "async_hyperband": AsyncHyperBandScheduler,
    "asynchyperband": AsyncHyperBandScheduler,
    "median_stopping_rule": MedianStoppingRule,
    "medianstopping": MedianStoppingRule,
    "hyperband": HyperBandScheduler,
    "hb_bohb": HyperBandForBOHB,
    "pbt": PopulationBasedTraining,
    "pbt_replay": PopulationBasedTrainingReplay,
    "pb2": PB2,
    "resource_changing": ResourceChangingScheduler,
}


def create_scheduler(scheduler, **kwargs):
    """Ray's `tune.schedulers.create_scheduler(name, **kwargs)`: the scheduler named `scheduler`
    (fifo, async_hyperband, asynchyperband, median_stopping_rule, medianstopping, hyperband,
    hb_bohb, pbt, pbt_replay, pb2, resource_changing) with `kwargs`."""
    name = scheduler.lower()
    if name not in _BY_NAME:
        raise ValueError(
            "The `scheduler` argument must be one of %s. Got: %s" % (list(_BY_NAME), scheduler)
        )
    return _BY_NAME[name](**kwargs)


__all__ = [
    "TrialScheduler",
    "FIFOScheduler",
    "ASHAScheduler",
    "AsyncHyperBandScheduler",
    "HyperBandScheduler",
    "HyperBandForBOHB",
    "MedianStoppingRule",
    "PopulationBasedTraining",
    "PB2",
    "ResourceChangingScheduler",
    "DistributeResources",
    "DistributeResourcesToTopJob",
    "PopulationBasedTrainingReplay",
    "create_scheduler",
]
