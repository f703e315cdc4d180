"""Ray AIR 2.x's names (`ray.air` → `tunebus.air`): an alias of tunebus.train, with
`from tunebus.air import session` working as `from ray.air import session` does."""

from tunebus.train import (  # noqa: F401
    Checkpoint,
    CheckpointConfig,
    FailureConfig,
    Result,
    RunConfig,
    get_checkpoint,
    get_context,
    report,
    session,
)
from tunebus._configs import TuneConfig  # noqa: F401  (not in ray.air, harmless)

__all__ = [
    "Checkpoint",
    "CheckpointConfig",
    "FailureConfig",
    "Result",
    "RunConfig",
    "TuneConfig",
    "get_checkpoint",
    "get_context",
    "report",
    "session",
]
