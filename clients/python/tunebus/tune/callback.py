"""`ray.tune.callback`'s name: `from tunebus.tune.callback import Callback`."""

from tunebus._callbacks import Callback  # noqa: F401

__all__ = ["Callback"]
