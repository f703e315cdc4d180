"""Ray Tune's classic entry point, `tune.run(...)` (Ray 2.x's signature, which also takes Ray
1.x scripts' arguments), and `tune.register_trainable`.

`run` is a `Tuner` (tunebus._tuner) built from its arguments: `config` is the param space;
`metric`, `mode`, `num_samples`, `scheduler`, `search_alg`, `max_concurrent_trials` and
`time_budget_s` its TuneConfig; `name`, `storage_path` / `local_dir`, `stop`, `verbose`,
`callbacks`, `progress_reporter`, the failure and checkpoint arguments its RunConfig;
`resources_per_trial` (a dict, or a `tune.PlacementGroupFactory` whose bundles are summed: a
trial is placed on one worker) wraps the trainable with `with_resources`. It returns an
`ExperimentAnalysis` (tunebus._analysis) with the metric and mode as its defaults.

`resume` (Ray 2.x's values): False / None / "NEVER" a new run; True / "LOCAL" / "REMOTE" /
"PROMPT" continue the experiment of the same name in `storage_path` (ValueError when there is
none, as Ray); "AUTO" continues it when there is one, else a new run; "ERRORED_ONLY" (also
"AUTO+ERRORED_ONLY", "LOCAL+ERRORED_ONLY") continues it and reruns its ERROR trials from their
newest checkpoint, "RESTART_ERRORED" (also with a "+" prefix) reruns them from scratch.
`restore`: a checkpoint folder every trial starts from (Ray 1.x: "only makes sense with one
trial"), shipped with the trainable. `raise_on_failed_trial` (default True) raises
`TuneError("Trials did not complete: [...]")` once the experiment ended with ERROR trials.

Arguments tunebus accepts without acting on them (`reuse_actors`, `sync_config`, `log_to_file`,
`trial_name_creator`, ...) are each named in one warning; an unknown keyword is a TypeError.
"""

import os
import warnings

from tunebus._analysis import ExperimentAnalysis
from tunebus._configs import CheckpointConfig, FailureConfig, RunConfig, TuneConfig
from tunebus._errors import TuneError
from tunebus._trainable import with_resources

_registry = {}

# Keywords of Ray's tune.run (2.x and 1.x) that tunebus accepts and does not act on, with why.
IGNORED = {
    "reuse_actors": "every trial attempt is a fresh process",
    "sync_config": "results are written on the scheduler's host, checkpoints kept in the "
    "checkpoint-store",
    "log_to_file": "a trial's stdout and stderr always go to its folder",
    "trial_name_creator": "trial folders are named <trial_id>_<tag>",
    "trial_dirname_creator": "trial folders are named <trial_id>_<tag>",
    "chdir_to_trial_dir": "a trainable runs in its shipped working folder",
    "export_formats": "checkpoints are folders in the checkpoint-store",
    "server_port": "tunebus's control socket is the suite's",
    "storage_filesystem": "results go to a local folder",
    "loggers": "the scheduler writes result.json, progress.csv and TensorBoard files",
    "queue_trials": "trials wait for resources in any case",
    "sync_to_driver": "results are written on the scheduler's host",
    "sync_on_checkpoint": "checkpoints are kept in the checkpoint-store",
    "keep_checkpoints_order": "use checkpoint_score_attr",
    "max_concurrent": "use max_concurrent_trials",
}

_RESUME_NEW = (None, False, "NEVER")
_RESUME_EXISTING = (True, "LOCAL", "REMOTE", "PROMPT", "AUTO")


def register_trainable(name, trainable, warn=True):
    """Ray's `tune.register_trainable(name, trainable)`: `tune.run(name)` then runs it.
    `trainable`: a function, a `tune.Trainable` subclass, or either wrapped by
    `with_parameters` / `with_resources`."""
    if not isinstance(name, str) or not name:
        raise TypeError("register_trainable: name must be a non-empty string, got %r" % (name,))
    if not callable(trainable):
        raise TypeError(
            "register_trainable: %r is not a function or Trainable class" % (trainable,)
        )
    _registry[name] = trainable


def _trainable_of(run_or_experiment):
    if isinstance(run_or_experiment, str):
        if run_or_experiment not in _registry:
            raise TuneError(
                "not_found",
                "unknown trainable %r: register it with "
                "tune.register_trainable(%r, fn) first (registered: %s)"
                % (run_or_experiment, run_or_experiment, ", ".join(sorted(_registry)) or "none"),
            )
        return _registry[run_or_experiment]
    if not callable(run_or_experiment):
        raise TypeError(
            "tune.run: run_or_experiment must be a function, a Trainable class or a "
            "registered name, got %r" % (run_or_experiment,)
        )
    return run_or_experiment


def _checkpoint_config(
    checkpoint_config,
    keep_checkpoints_num,
    checkpoint_score_attr,
    checkpoint_freq,
    checkpoint_at_end,
):
    if checkpoint_config is not None:
        return checkpoint_config
    attr, order = checkpoint_score_attr, "max"
    if attr and attr.startswith("min-"):
        attr, order = attr[len("min-") :], "min"
    return CheckpointConfig(
        num_to_keep=keep_checkpoints_num,
        checkpoint_score_attribute=attr,
        checkpoint_score_order=order,
        checkpoint_frequency=checkpoint_freq or 0,
        checkpoint_at_end=checkpoint_at_end,
    )


def _rerun_mode(resume):
    """(continue an existing run?, rerun_errored "" | "restore" | "restart") for Ray's `resume`."""
    if resume in _RESUME_NEW:
        return False, ""
    if resume in _RESUME_EXISTING:
        return True, ""
    if isinstance(resume, str):
        base, _, errored = resume.upper().rpartition("+")
        if errored in ("ERRORED_ONLY", "RESTART_ERRORED") and base in (
            "",
            "AUTO",
            "LOCAL",
            "REMOTE",
        ):
            return True, "restore" if errored == "ERRORED_ONLY" else "restart"
    raise ValueError(
        "resume=%r: use False, True, 'AUTO', 'LOCAL', 'REMOTE', 'PROMPT', "
        "'ERRORED_ONLY', 'RESTART_ERRORED' (optionally prefixed 'AUTO+')" % (resume,)
    )


def run(
    run_or_experiment,
    *,
    name=None,
    metric=None,
    mode=None,
    stop=None,
    time_budget_s=None,
    config=None,
    resources_per_trial=None,
    num_samples=1,
    storage_path=None,
    local_dir=None,
    search_alg=None,
    scheduler=None,
    checkpoint_config=None,
    keep_checkpoints_num=None,
    checkpoint_score_attr=None,
    checkpoint_freq=0,
    checkpoint_at_end=False,
    verbose=3,
    progress_reporter=None,
    max_failures=0,
    fail_fast=False,
    restore=None,
    resume=None,
    raise_on_failed_trial=True,
    callbacks=None,
    max_concurrent_trials=None,
    **ignored,
):
    """Runs an experiment and returns its ExperimentAnalysis (see the module doc). Errors: an
    invalid or refused experiment raises TuneError with the scheduler's code and message; ERROR
    trials raise TuneError when `raise_on_failed_trial`; Ctrl-C raises KeyboardInterrupt after
    printing how to resume (`resume=True`)."""
    from tunebus._tuner import STATE_FILE, Tuner, default_storage_path

    for key in sorted(ignored):
        if key not in IGNORED:
            raise TypeError("run() got an unexpected keyword argument %r" % key)
        warnings.warn(
            "tune.run(%s=...) is accepted and ignored by tunebus: %s" % (key, IGNORED[key]),
            stacklevel=2,
        )
    trainable = _trainable_of(run_or_experiment)
    if resources_per_trial is not None:
        trainable = with_resources(trainable, resources_per_trial)
    tune_config = TuneConfig(
        metric=metric,
        mode=mode,
        search_alg=search_alg,
        scheduler=scheduler,
        num_samples=num_samples,
        max_concurrent_trials=max_concurrent_trials,
        time_budget_s=time_budget_s,
    )
    run_config = RunConfig(
        name=name,
        storage_path=storage_path or local_dir,
        stop=stop,
        verbose=min(int(verbose), 2) if verbose is not None else 1,
        failure_config=FailureConfig(max_failures=max_failures, fail_fast=fail_fast),
        checkpoint_config=_checkpoint_config(
            checkpoint_config,
            keep_checkpoints_num,
            checkpoint_score_attr,
            checkpoint_freq,
            checkpoint_at_end,
        ),
        callbacks=callbacks,
        progress_reporter=progress_reporter,
    )
    existing, rerun_errored = _rerun_mode(resume)
    tuner = None
    if existing:
        storage = os.path.abspath(
            os.path.expanduser(storage_path or local_dir or default_storage_path())
        )
        folder = os.path.join(storage, name) if name else None
        if folder and os.path.exists(os.path.join(folder, STATE_FILE)):
            tuner = Tuner.restore(folder, trainable, param_space=config)
            tuner._run_config = run_config
            tuner._rerun_errored = rerun_errored
        elif resume != "AUTO" and not str(resume).startswith("AUTO+"):
            raise ValueError(
                "Called resume=%r when no checkpoint exists in local directory (%s)."
                ' If you want to start a new experiment, use `resume="AUTO"` or '
                "`resume=None`." % (resume, folder or storage)
            )
    if tuner is None:
        tuner = Tuner(trainable, param_space=config, tune_config=tune_config, run_config=run_config)
    tuner._resume_hint = "tune.run(..., name={name!r}, resume=True)"  # Tuner.fit formats it
    if restore is not None:
        if not os.path.isdir(restore):
            raise TuneError("not_found", "restore=%r: not a checkpoint folder" % (restore,))
        tuner._restore_from = os.path.abspath(restore)
    tuner.fit()
    analysis = ExperimentAnalysis(
        tuner._results_dir,
        trials=tuner._trial_views,
        default_metric=metric
        or getattr(search_alg, "metric", None)
        or getattr(scheduler, "metric", None),
        default_mode=mode or getattr(search_alg, "mode", None) or getattr(scheduler, "mode", None),
        exporter=tuner._exporter,
        trainable_name=tuner._trainable.__name__,
        history=tuner._results._history,
    )
    errored = [t for t in analysis.trials if t.status == "ERROR"]
    if errored and raise_on_failed_trial:
        raise TuneError("Trials did not complete: %s" % ", ".join(str(t) for t in errored))
    return analysis


__all__ = ["run", "register_trainable"]
