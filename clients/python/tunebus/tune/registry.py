"""`ray.tune.registry`'s `register_trainable` (tunebus._run)."""

from tunebus._run import register_trainable  # noqa: F401

__all__ = ["register_trainable"]
