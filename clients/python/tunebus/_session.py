"""The trainable's side of a trial, for Ray's function and class trainables (worker side).

Speaks the command trainable protocol (proto/PROTOCOL.md §7) through tunebus._helper's pipes.
Checkpoints: a checkpoint handed to `report` is copied to a private folder of this process at
once (the script may delete its folder when `report` returns), then into TUNEBUS_CHECKPOINT_DIR
and the result line carries `"should_checkpoint": true`, which the scheduler answers with a
`checkpoint` decision. The worker takes the folder at the report that follows a `checkpoint`
decision (or at exit), so the folder is filled before the line is written unless it still holds
a checkpoint the worker has not taken yet; then it is filled after this line's decision. A
`checkpoint` decision (also what a `pause` is to the trainable) with nothing in the folder gets
the newest reported checkpoint again.
"""

import contextlib
import json
import os
import shutil
import sys
import tempfile

from tunebus import _helper
from tunebus._checkpoint import Checkpoint, copy_folder
from tunebus._resources import trial_resources


class TrainContext:
    """Ray Train's context (`train.get_context()`): who this trial is, where it writes."""

    def get_trial_id(self):
        return os.environ.get("TUNEBUS_TRIAL_ID")

    def get_trial_name(self):
        """The trial folder's name (Ray's `<trainable>_<id>_<n>_<tag>`: here `<id>_<n>_<tag>`)."""
        trial_dir = os.environ.get("TUNEBUS_TRIAL_DIR")
        return os.path.basename(trial_dir.rstrip("/")) if trial_dir else None

    def get_trial_dir(self):
        return os.environ.get("TUNEBUS_TRIAL_DIR") or os.getcwd()

    def get_experiment_name(self):
        return os.environ.get("TB_EXPERIMENT_NAME")

    def get_trial_resources(self):
        """What the trial was allocated, as Ray 2.x returns it: a PlacementGroupFactory of one
        bundle whose `required_resources` is `{"CPU": 1.0, "GPU": 1.0}` for one CPU and one GPU
        (zero amounts left out; memory in bytes), from the worker's TUNEBUS_RESOURCES."""
        return trial_resources()

    def get_world_size(self):
        return 1

    def get_world_rank(self):
        return 0

    def get_local_rank(self):
        return 0

    def get_local_world_size(self):
        return 1

    def get_node_rank(self):
        return 0

    def get_storage(self):
        return None


class Session:
    """One trial attempt's reporting state (one per process)."""

    def __init__(self):
        self.last_decision = None
        self._latest = None  # private copy of the newest reported checkpoint
        self.pending_checkpoint = None  # a Ray 1.x checkpoint_dir() folder for the next report
        self.iteration = _helper.start_iteration()

    @staticmethod
    def in_tunebus():
        return _helper._fd("TUNEBUS_REPORT_FD") is not None

    def _folder(self):
        return os.environ.get("TUNEBUS_CHECKPOINT_DIR")

    def _folder_has_files(self):
        folder = self._folder()
        return bool(folder) and os.path.isdir(folder) and bool(os.listdir(folder))

    def _fill(self):
        if self._latest is not None and self._folder():
            copy_folder(self._latest, self._folder())

    def keep(self, checkpoint):
        """Copies `checkpoint` (a Checkpoint or a folder path) into the private folder."""
        source = checkpoint.path if isinstance(checkpoint, Checkpoint) else os.fspath(checkpoint)
        if not os.path.isdir(source):
            raise ValueError("report: checkpoint folder %s does not exist" % source)
        if self._latest is None:
            self._latest = tempfile.mkdtemp(prefix="tunebus_latest_checkpoint_")
        copy_folder(source, self._latest)

    def exchange(self, metrics, checkpoint=None):
        """Writes one result line and returns the decision ("continue", "checkpoint", "stop").
        Never exits; outside tunebus it prints the result and returns "continue"."""
        metrics = dict(metrics)
        deferred = False
        if checkpoint is not None:
            self.keep(checkpoint)
            metrics["should_checkpoint"] = True
            deferred = self.last_decision == _helper.CHECKPOINT and self._folder_has_files()
            if not deferred:
                self._fill()
        line = json.dumps(
            _helper._jsonable(metrics),
            default=_helper._default,
            allow_nan=False,
            separators=(",", ":"),
        )
        report_fd, decision_fd = _helper._fd("TUNEBUS_REPORT_FD"), _helper._fd(
            "TUNEBUS_DECISION_FD"
        )
        self.iteration += 1
        if report_fd is None or decision_fd is None:
            print("tunebus.report: " + line, flush=True)
            return _helper.CONTINUE
        _helper._write_all(report_fd, (line + "\n").encode("utf-8"))
        decision = _helper._read_line(decision_fd)
        if decision is None:
            decision = _helper.STOP  # the worker is gone
        elif decision not in _helper._DECISIONS:
            print(
                "tunebus: unknown decision %r, continuing" % decision, file=sys.stderr, flush=True
            )
            decision = _helper.CONTINUE
        if decision == _helper.CHECKPOINT and (deferred or not self._folder_has_files()):
            self._fill()
        self.last_decision = decision
        return decision

    def discard(self):
        if self._latest is not None:
            shutil.rmtree(self._latest, ignore_errors=True)


_session = None


def session():
    global _session
    if _session is None:
        _session = Session()
    return _session


def report(metrics=None, *, checkpoint=None, **kwargs):
    """Reports one result of the trial (one iteration) and returns the scheduler's decision,
    "continue" or "checkpoint" (then save into `tunebus.checkpoint_dir()` before the next
    report); on "stop" the process exits with code 0 (SystemExit), so endless loops end.

    The one `report` of the package, in every call style the APIs it copies have:
    Ray 2.x's `train.report(metrics, *, checkpoint=None)` (also `tune.report` and AIR's
    `session.report`): `metrics` a dict of JSON-able values, `checkpoint` a `train.Checkpoint`
    or a folder path, copied before this returns; Ray 1.x's `tune.report(**metrics)` and
    `tune.report(value)` (the key `_metric`, Ray's DEFAULT_METRIC); tunebus's helper
    `tunebus.report(**metrics)`. Keywords are merged into `metrics`. A checkpoint saved with
    Ray 1.x's `with tune.checkpoint_dir(step) as d:` since the last report goes with this one.
    Outside tunebus (no TUNEBUS_REPORT_FD) it prints the metrics and returns "continue"."""
    if metrics is not None and not isinstance(metrics, dict):
        metrics = {"_metric": metrics}
    merged = dict(metrics or {})
    merged.update(kwargs)
    s = session()
    pending, s.pending_checkpoint = s.pending_checkpoint, None
    decision = s.exchange(merged, checkpoint if checkpoint is not None else pending)
    if pending is not None:
        shutil.rmtree(os.path.dirname(pending), ignore_errors=True)
    if decision == _helper.STOP:
        s.discard()
        _helper._exit_now()
    return decision


@contextlib.contextmanager
def checkpoint_dir(step):
    """Ray 1.x's `with tune.checkpoint_dir(step=...) as d:`: a new empty folder to save a
    checkpoint into; on leaving the block it becomes the checkpoint of the next `tune.report`
    (Ray 1.x associated it with the following result too). `step` names the folder
    (`checkpoint_<step>`)."""
    parent = tempfile.mkdtemp(prefix="tunebus_v1_checkpoint_")
    folder = os.path.join(parent, "checkpoint_%s" % (step,))
    os.makedirs(folder)
    yield folder
    s = session()
    if s.pending_checkpoint is not None:
        shutil.rmtree(os.path.dirname(s.pending_checkpoint), ignore_errors=True)
    s.pending_checkpoint = folder


def get_checkpoint():
    """The checkpoint this attempt restores from (a Checkpoint of TUNEBUS_RESTORE_DIR), or None
    when the trial starts from scratch."""
    path = _helper.restore_dir()
    return Checkpoint.from_directory(path) if path else None


def get_context():
    """Ray's `train.get_context()`."""
    return TrainContext()
