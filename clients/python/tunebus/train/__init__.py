"""Ray Train 2.x's names a Tune script uses (`from ray import train` → `from tunebus import
train`): report, get_checkpoint, get_context, Checkpoint, the configs, Result, and the older
`session` module (`session.report(...)`)."""

from tunebus._checkpoint import Checkpoint
from tunebus._configs import CheckpointConfig, FailureConfig, RunConfig
from tunebus._results import Result
from tunebus._session import get_checkpoint, get_context, report
from tunebus.train import session

__all__ = [
    "report",
    "get_checkpoint",
    "get_context",
    "Checkpoint",
    "RunConfig",
    "FailureConfig",
    "CheckpointConfig",
    "Result",
    "session",
]
