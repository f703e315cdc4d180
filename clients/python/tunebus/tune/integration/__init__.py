"""Ray Tune's library integrations at Ray's module paths (`ray.tune.integration.<library>` →
`tunebus.tune.integration.<library>`). Each module imports its library when it is imported, as
Ray's do; this package imports none.

* `tunebus.tune.integration.xgboost`: `TuneReportCheckpointCallback`, `TuneReportCallback`.
"""
