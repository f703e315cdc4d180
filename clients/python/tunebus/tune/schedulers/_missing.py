"""Ray Tune 2.x's trial schedulers tunebus does not implement: importable at Ray's names and
paths, failing at construction (where Ray's fail when their libraries are missing) with a
TuneError that names what to use instead."""

from tunebus._errors import TuneError


class _NotImplemented:
    """A Ray scheduler tunebus lacks: constructing it raises TuneError (code
    `invalid_argument`) naming `INSTEAD`."""

    INSTEAD = ""

    def __init__(self, *args, **kwargs):
        raise TuneError(
            "invalid_argument",
            "tune.schedulers.%s is not implemented by tunebus. %s"
            % (type(self).__name__, self.INSTEAD),
        )


class PB2(_NotImplemented):
    """Ray's PB2 (Population Based Bandits, Parker-Holder et al. 2020)."""

    INSTEAD = (
        "Use tune.schedulers.PopulationBasedTraining (scheduler: pbt) with the same "
        "hyperparam_bounds written as hyperparam_mutations, e.g. "
        '{"lr": tune.uniform(1e-4, 1e-1)}; PBT resamples and perturbs them instead of '
        "fitting PB2's GP bandit."
    )


class ResourceChangingScheduler(_NotImplemented):
    """Ray's ResourceChangingScheduler (a trial's resources changed while it runs)."""

    INSTEAD = (
        "A tunebus trial keeps the resources it was placed with: pass the wrapped "
        "scheduler (base_scheduler) itself as TuneConfig(scheduler=...) and give each "
        "trial its resources with tune.with_resources(trainable, {...})."
    )


class DistributeResources(_NotImplemented):
    """Ray's resources_allocation_function for ResourceChangingScheduler."""

    INSTEAD = ResourceChangingScheduler.INSTEAD


class DistributeResourcesToTopJob(DistributeResources):
    """Ray's resources_allocation_function for ResourceChangingScheduler."""


class PopulationBasedTrainingReplay(_NotImplemented):
    """Ray's replay of a PBT run's config schedule."""

    INSTEAD = (
        "Each trial's configs over time are in its result.json (the `config` of each "
        "result); run tune.schedulers.PopulationBasedTraining again to search anew."
    )


__all__ = [
    "PB2",
    "ResourceChangingScheduler",
    "DistributeResources",
    "DistributeResourcesToTopJob",
    "PopulationBasedTrainingReplay",
]
