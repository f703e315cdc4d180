"""Ray's `ray.tune.schedulers.resource_changing_scheduler`: not implemented by tunebus (TuneError
at construction, naming what to use instead)."""

from tunebus.tune.schedulers._missing import (
    DistributeResources,
    DistributeResourcesToTopJob,
    ResourceChangingScheduler,
)

__all__ = ["ResourceChangingScheduler", "DistributeResources", "DistributeResourcesToTopJob"]
