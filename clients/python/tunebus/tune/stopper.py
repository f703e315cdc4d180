"""`ray.tune.stopper`'s names: `Stopper` and Ray's stoppers (tunebus._stoppers), run in the
driver over the driver link."""

from tunebus._stoppers import (  # noqa: F401
    CombinedStopper,
    ExperimentPlateauStopper,
    FunctionStopper,
    MaximumIterationStopper,
    NoopStopper,
    TimeoutStopper,
    TrialPlateauStopper,
)
from tunebus._trainable import Stopper  # noqa: F401

__all__ = [
    "Stopper",
    "CombinedStopper",
    "ExperimentPlateauStopper",
    "FunctionStopper",
    "MaximumIterationStopper",
    "NoopStopper",
    "TimeoutStopper",
    "TrialPlateauStopper",
]
