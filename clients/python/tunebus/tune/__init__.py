"""Ray Tune 2.x's driver API on tunebus: `from tunebus import tune` in place of
`from ray import tune`. docs/reference/python.md ("Porting from Ray Tune") lists every name and how
it
differs."""

from tunebus._analysis import ExperimentAnalysis
from tunebus._callbacks import Callback
from tunebus._checkpoint import Checkpoint
from tunebus._configs import CheckpointConfig, FailureConfig, RunConfig, TuneConfig
from tunebus._errors import TuneError
from tunebus._reporters import CLIReporter, JupyterNotebookReporter, ProgressReporter
from tunebus._resources import PlacementGroupFactory
from tunebus._results import Result, ResultGrid
from tunebus._run import register_trainable, run
from tunebus._session import checkpoint_dir, get_checkpoint, get_context, report
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


def get_trial_dir():
    """Ray 1.x's `tune.get_trial_dir()`: the trial's results folder (the current folder
    outside tunebus)."""
    return get_context().get_trial_dir()


def get_trial_id():
    """Ray 1.x's `tune.get_trial_id()`: the trial id (None outside tunebus)."""
    return get_context().get_trial_id()


def get_trial_name():
    """Ray 1.x's `tune.get_trial_name()`: the trial folder's name."""
    return get_context().get_trial_name()


__all__ = [
    "Tuner",
    "TuneConfig",
    "RunConfig",
    "FailureConfig",
    "CheckpointConfig",
    "Checkpoint",
    "TuneError",
    "Result",
    "ResultGrid",
    "report",
    "get_checkpoint",
    "get_context",
    "Trainable",
    "Stopper",
    "with_parameters",
    "with_resources",
    "schedulers",
    "search",
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "randn",
    "qrandn",
    "randint",
    "qrandint",
    "lograndint",
    "qlograndint",
    "choice",
    "grid_search",
    "sample_from",
    "run",
    "register_trainable",
    "ExperimentAnalysis",
    "Callback",
    "CLIReporter",
    "JupyterNotebookReporter",
    "ProgressReporter",
    "checkpoint_dir",
    "get_trial_dir",
    "get_trial_id",
    "get_trial_name",
    "PlacementGroupFactory",
]
