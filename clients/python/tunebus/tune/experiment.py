"""`ray.tune.experiment`'s `Trial`: what callbacks and reporters get (tunebus._trial)."""

from tunebus._trial import Trial  # noqa: F401

__all__ = ["Trial"]
