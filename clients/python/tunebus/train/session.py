"""Ray AIR 2.x's `session` module: `session.report(metrics, checkpoint=None)`,
`session.get_checkpoint()`, and the context getters (`get_trial_id()`, `get_trial_name()`,
`get_trial_dir()`, `get_experiment_name()`, ...)."""

from tunebus._session import get_checkpoint, get_context, report  # noqa: F401


def get_trial_id():
    return get_context().get_trial_id()


def get_trial_name():
    return get_context().get_trial_name()


def get_trial_dir():
    return get_context().get_trial_dir()


def get_experiment_name():
    return get_context().get_experiment_name()


def get_trial_resources():
    return get_context().get_trial_resources()


def get_world_size():
    return 1


def get_world_rank():
    return 0


def get_local_rank():
    return 0


__all__ = [
    "report",
    "get_checkpoint",
    "get_context",
    "get_trial_id",
    "get_trial_name",
    "get_trial_dir",
    "get_experiment_name",
    "get_trial_resources",
    "get_world_size",
    "get_world_rank",
    "get_local_rank",
]
