"""`ray.tune.progress_reporter`'s names (tunebus._reporters)."""

from tunebus._reporters import CLIReporter, JupyterNotebookReporter, ProgressReporter  # noqa: F401

__all__ = ["CLIReporter", "JupyterNotebookReporter", "ProgressReporter"]
