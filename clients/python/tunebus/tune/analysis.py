"""`ray.tune.analysis`'s name: `ExperimentAnalysis` (tunebus._analysis)."""

from tunebus._analysis import ExperimentAnalysis  # noqa: F401

__all__ = ["ExperimentAnalysis"]
