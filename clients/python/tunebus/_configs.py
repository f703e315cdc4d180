"""Ray Tune 2.x's configuration objects (TuneConfig, RunConfig, FailureConfig, CheckpointConfig).

Plain records with Ray's field names and defaults; tunebus._tuner turns them into the experiment
file (docs/reference/experiment-file.md). Fields tunebus does not act on are accepted and documented
as
ignored in docs/reference/python.md ("Porting from Ray Tune").
"""

import dataclasses
from typing import Any, Callable, Dict, Optional, Union


@dataclasses.dataclass
class FailureConfig:
    """Ray's FailureConfig: `max_failures` retries of a failed trial from its newest checkpoint
    (-1 = forever) → `max_failures`; `fail_fast` (True or "raise") → `fail_fast`."""

    max_failures: int = 0
    fail_fast: Union[bool, str] = False


@dataclasses.dataclass
class CheckpointConfig:
    """Ray's CheckpointConfig: `num_to_keep` → `keep_checkpoints_num` (None = all),
    `checkpoint_score_attribute` (+ `checkpoint_score_order` "min" → "min-<attr>") →
    `checkpoint_score_attr`, `checkpoint_frequency` → `checkpoint_freq` (iterations; class
    trainables), `checkpoint_at_end` → `checkpoint_at_end`."""

    num_to_keep: Optional[int] = None
    checkpoint_score_attribute: Optional[str] = None
    checkpoint_score_order: str = "max"
    checkpoint_frequency: int = 0
    checkpoint_at_end: Optional[bool] = None


@dataclasses.dataclass
class RunConfig:
    """Ray's RunConfig (also `tune.RunConfig`, `train.RunConfig`).

    `name`: the experiment's name (default `<trainable>_<date>`, as Ray); `storage_path`: the
    folder results go to (default `~/tunebus_results`, Ray's `~/ray_results`); `stop`: a dict of
    result key → threshold (the experiment file's `stop:`), a callable `(trial_id, result) ->
    bool` or a `tune.Stopper` (both run in the driver over the driver link); `verbose`: 0 silent,
    1 the progress table (default), 2 also each trial's results as they come; `failure_config`,
    `checkpoint_config`; `callbacks` (tune.Callback objects, run in the driver:
    tunebus._callbacks) and `progress_reporter` (a tune.ProgressReporter, which then replaces
    tunectl's progress table: tunebus._reporters). `sync_config` and `log_to_file` are accepted
    and ignored."""

    name: Optional[str] = None
    storage_path: Optional[str] = None
    stop: Union[None, Dict[str, Any], Callable, Any] = None
    verbose: int = 1
    failure_config: Optional[FailureConfig] = None
    checkpoint_config: Optional[CheckpointConfig] = None
    callbacks: Any = None
    sync_config: Any = None
    progress_reporter: Any = None
    log_to_file: Any = False
    storage_filesystem: Any = None
    local_dir: Optional[str] = None


@dataclasses.dataclass
class TuneConfig:
    """Ray's TuneConfig: `metric`, `mode` (also given to the scheduler and searcher when they set
    none), `num_samples` (-1 = until a stop), `scheduler` (tune.schedulers), `search_alg`
    (tune.search), `max_concurrent_trials` (0/None = as many as fit), `time_budget_s` (→
    `stop.time_budget_s`), `reuse_actors` (accepted and ignored: every trial attempt is a fresh
    process), `trial_name_creator`/`trial_dirname_creator` (accepted and ignored)."""

    metric: Optional[str] = None
    mode: Optional[str] = None
    search_alg: Any = None
    scheduler: Any = None
    num_samples: int = 1
    max_concurrent_trials: Optional[int] = None
    time_budget_s: Optional[float] = None
    reuse_actors: Optional[bool] = None
    trial_name_creator: Any = None
    trial_dirname_creator: Any = None
    chdir_to_trial_dir: Any = None
