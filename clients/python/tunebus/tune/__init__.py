"""Ray Tune 2.x's driver API on tunebus: `from tunebus import tune` in place of
`from ray import tune`. docs/python.md ("Porting from Ray Tune") lists every name and how it
differs."""

from tunebus._checkpoint import Checkpoint
from tunebus._configs import CheckpointConfig, FailureConfig, RunConfig, TuneConfig
from tunebus._errors import TuneError
from tunebus._results import Result, ResultGrid
from tunebus._session import get_checkpoint, get_context, report
from tunebus._space import (
    choice,
    grid_search,
    lograndint,
    loguniform,
    qlograndint,
    qloguniform,
    qrandint,
    qrandn,
    quniform,
    randint,
    randn,
    sample_from,
    uniform,
)
from tunebus._trainable import Stopper, Trainable, with_parameters, with_resources
from tunebus._tuner import Tuner
from tunebus.tune import schedulers, search

__all__ = [
    "Tuner", "TuneConfig", "RunConfig", "FailureConfig", "CheckpointConfig", "Checkpoint",
    "TuneError", "Result", "ResultGrid", "report", "get_checkpoint", "get_context", "Trainable",
    "Stopper", "with_parameters", "with_resources", "schedulers", "search", "uniform",
    "quniform", "loguniform", "qloguniform", "randn", "qrandn", "randint", "qrandint",
    "lograndint", "qlograndint", "choice", "grid_search", "sample_from",
]
