"""`ray.tune.logger`'s callbacks. `LoggerCallback` subclasses get `log_trial_start`,
`log_trial_result`, `log_trial_save` and `log_trial_end` in the driver; Ray's
`JsonLoggerCallback`, `CSVLoggerCallback` and `TBXLoggerCallback` are accepted and write
nothing: the scheduler writes result.json, progress.csv and the TensorBoard file of every trial
(docs/reference/results-folder.md)."""

from tunebus._callbacks import (  # noqa: F401
    CSVLoggerCallback,
    JsonLoggerCallback,
    LoggerCallback,
    TBXLoggerCallback,
)

__all__ = ["LoggerCallback", "JsonLoggerCallback", "CSVLoggerCallback", "TBXLoggerCallback"]
