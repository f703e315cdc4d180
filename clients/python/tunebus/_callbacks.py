"""Ray Tune 2.x's driver callbacks (`ray.tune.Callback`, ray/tune/callback.py) and logger
callbacks (`ray.tune.logger`), called in the driver from what the suite tells it.

`CallbackDispatcher` turns two inputs into hook calls, on the one thread of the driver link
(tunebus._driver.DriverLink), so hooks never run concurrently and come in arrival order:

* every result, over the driver link (PROTOCOL.md §7b `driver_result`, named by `trial_id`,
  `attempt`, `seq`): `on_trial_result` with a copy of the result each callback may change; a
  callback that sets `result["should_checkpoint"]` (Ray's `SHOULD_CHECKPOINT`) makes the answer
  carry `should_checkpoint: true`, and the trial checkpoints at that result, as in Ray;
* the scheduler's event stream (PROTOCOL.md §6): `trial_started` → `on_trial_start` (then
  `on_trial_restore` when the attempt restored a checkpoint), `checkpoint_saved` →
  `on_checkpoint` then `on_trial_save`, `trial_status` TERMINATED → `on_trial_complete`, ERROR
  → `on_trial_error`, PENDING after a failure → `on_trial_recover`.

Each hook is called once per event: an event is known by its identity (a start by trial and
attempt, a result by trial, attempt and seq (kept as the newest seq per attempt), a checkpoint
by its id, an end by trial, attempt and status), so a result the scheduler asks again after a
reconnect or a scheduler restart (§7b), or an event a restarted scheduler publishes again, calls
nothing twice. A result of an attempt whose start event has not arrived (the stream and the link
are two sockets) calls `on_trial_start` first. PUB drops what a slow subscriber cannot take, so
`finish()` completes the ends from the scheduler's final trial list before `on_experiment_end`.
`on_step_begin` / `on_step_end` bracket each pass of the driver loop that handled a message
(`iteration` counts them, Ray's controller iteration).

A hook that raises ends the experiment: the next answer carries `stop_all`, no further hook is
called, and `fit()` / `tune.run` raise the exception once the suite has stopped, as Ray raises a
callback's error from `tune.run`.
"""

import sys
import traceback

from tunebus._trial import Trial


class Callback:
    """Ray Tune 2.x's `tune.Callback`: override any hook. `iteration` is the driver loop's step
    count, `trials` every trial known so far (tunebus._trial.Trial), `trial` the one the event is
    about; `**info` is empty. Called in the driver process (docs/reference/python.md
    "Callbacks")."""

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        """Called once before the experiment starts, as Ray Tune 2.x's `Callback.setup`.

        Args:
            stop: the run's stop criteria as given (RunConfig.stop: a dict, a Stopper or a
                callable), or None.
            num_samples: TuneConfig.num_samples (-1: until a stop).
            total_num_samples: num_samples times the grid's size (the trials the experiment
                will have), -1 when unbounded.
        """

    def on_step_begin(self, iteration, trials, **info):
        """Called before the driver loop handles a message (Ray's controller step).

        Args:
            iteration (int): the driver loop's step count, from 0.
            trials (list[Trial]): every trial known so far.
        """

    def on_step_end(self, iteration, trials, **info):
        """Called after the driver loop handled a message; arguments as `on_step_begin`."""

    def on_trial_start(self, iteration, trials, trial, **info):
        """Called once per attempt when a trial starts running on a worker (the scheduler's
        `trial_started` event), before its first result.

        Args:
            iteration (int): the driver loop's step count.
            trials (list[Trial]): every trial known so far.
            trial (Trial): the trial that started.
        """

    def on_trial_restore(self, iteration, trials, trial, **info):
        """Called after `on_trial_start` when the attempt restored a checkpoint (a retry, a
        resume, a PBT exploit or `restore_from`); arguments as `on_trial_start`."""

    def on_trial_save(self, iteration, trials, trial, **info):
        """Called after `on_checkpoint` when the checkpoint-store stored one of the trial's
        checkpoints; arguments as `on_trial_start`."""

    def on_trial_result(self, iteration, trials, trial, result, **info):
        """Called with every result, before the scheduler decides on it (over the driver link).

        Args:
            iteration (int): the driver loop's step count.
            trials (list[Trial]): every trial known so far.
            trial (Trial): the trial that reported.
            result (dict): a copy of the result (metrics plus training_iteration,
                time_total_s and the other auto-filled keys). Setting
                `result["should_checkpoint"] = True` makes the trial checkpoint at this result,
                as Ray's `SHOULD_CHECKPOINT`.
        """

    def on_trial_complete(self, iteration, trials, trial, **info):
        """Called once when a trial ends TERMINATED; arguments as `on_trial_start`."""

    def on_trial_recover(self, iteration, trials, trial, **info):
        """Called when a failed trial goes back to PENDING to be retried (max_failures);
        arguments as `on_trial_start`."""

    def on_trial_error(self, iteration, trials, trial, **info):
        """Called once when a trial ends ERROR (its retries spent); arguments as
        `on_trial_start`."""

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        """Called once per stored checkpoint (the scheduler's `checkpoint_saved` event).

        Args:
            iteration (int): the driver loop's step count.
            trials (list[Trial]): every trial known so far.
            trial (Trial): the trial the checkpoint belongs to.
            checkpoint (Checkpoint): the stored checkpoint (its id names it in the
                checkpoint-store; `to_directory()` fetches its files).
        """

    def on_experiment_end(self, trials, **info):
        """Called once after every trial ended, with the final trial list (list[Trial])."""

    def get_state(self):
        """Ray's hook for a callback's state to save with the experiment; tunebus saves none
        (a resumed driver builds its callbacks anew). Returns None."""
        return None

    def set_state(self, state):
        """Ray's counterpart of `get_state`; never called by tunebus."""


class LoggerCallback(Callback):
    """Ray's `ray.tune.logger.LoggerCallback`: override `log_trial_start(trial)`,
    `log_trial_result(iteration, trial, result)`, `log_trial_save(trial)` and
    `log_trial_end(trial, failed=False)`."""

    def log_trial_start(self, trial):
        pass

    def log_trial_restore(self, trial):
        pass

    def log_trial_save(self, trial):
        pass

    def log_trial_result(self, iteration, trial, result):
        pass

    def log_trial_end(self, trial, failed=False):
        pass

    def on_trial_start(self, iteration, trials, trial, **info):
        self.log_trial_start(trial)

    def on_trial_restore(self, iteration, trials, trial, **info):
        self.log_trial_restore(trial)

    def on_trial_save(self, iteration, trials, trial, **info):
        self.log_trial_save(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.log_trial_result(iteration, trial, result)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.log_trial_end(trial, failed=False)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.log_trial_end(trial, failed=True)


class _FilesWrittenByTheScheduler(LoggerCallback):
    """A Ray logger whose files the scheduler already writes in every trial folder
    (docs/reference/results-folder.md): accepted, and it writes nothing more."""

    def __init__(self, *args, **kwargs):
        pass


class JsonLoggerCallback(_FilesWrittenByTheScheduler):
    """Ray's JsonLoggerCallback: `result.json` and `params.json` (written by the scheduler)."""


class CSVLoggerCallback(_FilesWrittenByTheScheduler):
    """Ray's CSVLoggerCallback: `progress.csv` (written by the scheduler)."""


class TBXLoggerCallback(_FilesWrittenByTheScheduler):
    """Ray's TBXLoggerCallback: `events.out.tfevents.*` (written by the scheduler)."""


class CallbackDispatcher:
    """Calls the hooks of `callbacks` (and the progress `reporters`, tunebus._reporters) once per
    event; see the module doc. `exporter(trial_id, checkpoint_id, target)` exports a stored
    checkpoint (for `Trial.checkpoint` and `on_checkpoint`'s checkpoint)."""

    def __init__(self, callbacks=(), reporters=(), exporter=None, trainable_name=None):
        self.callbacks = list(callbacks) + list(reporters)
        self.exporter = exporter
        self.trainable_name = trainable_name  # for the trials' names (Trial.__str__)
        self.trials = {}  # trial_id -> Trial, in the order the driver learnt of them
        self.iteration = 0
        self.error = None  # (exception, traceback text) of the first hook that raised
        self._seen = set()  # identities of the non-result events whose hooks were called
        self._newest_seq = {}  # (trial_id, attempt) -> the newest result seq given to the hooks
        self._in_step = False
        self._ended = False

    # ---- inputs -----------------------------------------------------------------------------
    def setup(self, stop=None, num_samples=None, total_num_samples=None):
        self._call("setup", stop=stop, num_samples=num_samples, total_num_samples=total_num_samples)

    def begin_step(self):
        if not self._in_step:
            self._in_step = True
            self._call("on_step_begin", self.iteration, self._trial_list())

    def end_step(self):
        if self._in_step:
            self._in_step = False
            self._call("on_step_end", self.iteration, self._trial_list())
            self.iteration += 1

    def on_result(self, trial_id, attempt, seq, result):
        """One result over the driver link. Returns True when a callback asked a checkpoint
        (set `should_checkpoint` on a result that did not carry it)."""
        # An attempt's results come in seq order and one at a time (its trainable waits for the
        # answer), so a seq not above the newest one seen is a result asked again.
        if seq <= self._newest_seq.get((trial_id, attempt), 0):
            return False
        self._newest_seq[(trial_id, attempt)] = seq
        trial = self._trial(
            {
                "trial_id": trial_id,
                "config": result.get("config") or {},
                "attempt": attempt,
                "status": "RUNNING",
            }
        )
        self._started(trial, attempt)
        shown = dict(result)
        asked_before = bool(shown.get("should_checkpoint"))
        trial.last_result = dict(result)
        self._call("on_trial_result", self.iteration, self._trial_list(), trial, shown)
        return bool(shown.get("should_checkpoint")) and not asked_before

    def on_event(self, event):
        """One event of the scheduler's stream (PROTOCOL.md §6), already decoded:
        `{event, experiment, trial_id, body}` with `body` the parsed `body_json`."""
        kind, body, trial_id = event.get("event"), event.get("body") or {}, event.get("trial_id")
        if kind == "checkpoint_saved":
            self._checkpoint_saved(trial_id, body)
            return
        if kind == "experiment_ended" or not trial_id or not isinstance(body, dict):
            return
        trial = self._trial(body)
        if kind == "trial_started":
            self._started(trial, trial.attempt)
        elif kind == "trial_status":
            self._status(trial)

    def finish(self, trial_views):
        """The experiment ended: the final trial list (list_trials) completes the ends the
        stream may have dropped, then `on_experiment_end`, once."""
        if self._ended:
            return
        self.begin_step()
        for view in trial_views or []:
            trial = self._trial(view)
            if trial.status in ("TERMINATED", "ERROR"):
                if trial.attempt > 0:
                    self._started(trial, trial.attempt)
                self._status(trial)
        self.end_step()
        self._ended = True
        self._call("on_experiment_end", self._trial_list())

    # ---- hooks --------------------------------------------------------------------------------
    def _trial(self, view):
        trial = self.trials.get(view.get("trial_id"))
        if trial is None:
            trial = self.trials[view["trial_id"]] = Trial(view, self.exporter, self.trainable_name)
        else:
            trial.update(view)
        return trial

    def _trial_list(self):
        return list(self.trials.values())

    def _once(self, *key):
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _started(self, trial, attempt):
        if attempt and self._once("start", trial.trial_id, attempt):
            self._call("on_trial_start", self.iteration, self._trial_list(), trial)
            if trial.view.get("restored_checkpoint_id"):
                self._call("on_trial_restore", self.iteration, self._trial_list(), trial)

    def _status(self, trial):
        status = trial.status
        if status == "TERMINATED" and self._once("end", trial.trial_id, trial.attempt, status):
            self._call("on_trial_complete", self.iteration, self._trial_list(), trial)
        elif status == "ERROR" and self._once("end", trial.trial_id, trial.attempt, status):
            self._call("on_trial_error", self.iteration, self._trial_list(), trial)
        elif (
            status == "PENDING"
            and trial.num_failures
            and self._once("recover", trial.trial_id, trial.num_failures)
        ):
            self._call("on_trial_recover", self.iteration, self._trial_list(), trial)

    def _checkpoint_saved(self, trial_id, ref):
        if not isinstance(ref, dict) or not ref.get("checkpoint_id"):
            return
        if not self._once("checkpoint", trial_id, ref["checkpoint_id"]):
            return
        trial = self._trial({"trial_id": trial_id})
        refs = [
            r
            for r in trial.view.get("checkpoints") or []
            if r.get("checkpoint_id") != ref["checkpoint_id"]
        ]
        trial.update({"checkpoints": refs + [ref]})
        self._call(
            "on_checkpoint",
            self.iteration,
            self._trial_list(),
            trial,
            checkpoint=trial.checkpoint_of(ref),
        )
        self._call("on_trial_save", self.iteration, self._trial_list(), trial)

    def _call(self, hook, *args, **kwargs):
        if self.error is not None:
            return
        for callback in self.callbacks:
            method = getattr(callback, hook, None)
            if method is None:
                continue
            try:
                method(*args, **kwargs)
            except Exception as e:  # a user's hook: ends the experiment, raised by fit()
                self.error = (e, traceback.format_exc())
                print(
                    "tunebus: callback %s.%s raised; stopping the experiment:\n%s"
                    % (type(callback).__name__, hook, self.error[1]),
                    file=sys.stderr,
                    flush=True,
                )
                return


__all__ = [
    "Callback",
    "CallbackDispatcher",
    "CSVLoggerCallback",
    "JsonLoggerCallback",
    "LoggerCallback",
    "TBXLoggerCallback",
]
