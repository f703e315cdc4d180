"""Ray Tune 2.x's `Trial` as the driver sees it (`ray.tune.experiment.Trial`): what callbacks,
progress reporters and `ExperimentAnalysis.trials` get.

Built from the scheduler's trial object (proto/PROTOCOL.md §2 `list_trials`, §6 event bodies,
the `trials` of `experiment_state.json`): `trial_id`, `config`, `last_result`, `status`,
`logdir` / `local_path` / `path` (the trial's results folder), `checkpoint` (the newest stored
one, exported lazily; None without one), `error_file` (`<logdir>/error.txt` when the trial
errored), `num_failures`, `experiment_tag`, `resources` and `worker`.
"""

import os

from tunebus._checkpoint import Checkpoint


class Trial:
    """One trial (Ray's `Trial`). `str(trial)` is Ray's trial name, `<trainable_name>_<trial_id>`
    (the trial id alone when the trainable's name is not known), which Ray's progress table
    shows. `update(view)` takes a newer trial object of the scheduler."""

    def __init__(self, view, exporter=None, trainable_name=None):
        self._exporter = exporter
        self.trainable_name = trainable_name
        self.trial_id = view.get("trial_id")
        self.config = {}
        self.last_result = {}
        self.status = "PENDING"
        self.update(view)

    def update(self, view):
        """Takes the fields a trial object carries (a partial one keeps what it lacks)."""
        for key in ("config", "last_result", "status"):
            if view.get(key) is not None:
                setattr(self, key, view[key])
        if self.last_result and "config" not in self.last_result:
            self.last_result = dict(self.last_result, config=self.config)  # as Ray's result
        self.view = dict(getattr(self, "view", {}), **view)
        return self

    @property
    def logdir(self):
        return self.view.get("dir") or self.view.get("logdir")

    local_path = path = logdir

    @property
    def experiment_tag(self):
        return self.view.get("experiment_tag", "")

    @property
    def num_failures(self):
        return int(self.view.get("num_failures") or 0)

    @property
    def attempt(self):
        return int(self.view.get("attempt") or 0)

    @property
    def resources(self):
        return dict(self.view.get("resources") or {})

    @property
    def worker(self):
        return self.view.get("worker")

    @property
    def error_file(self):
        """`<logdir>/error.txt` for an errored trial (Ray's `Trial.error_file`), else None."""
        if self.status != "ERROR" or not self.logdir:
            return None
        path = os.path.join(self.logdir, "error.txt")
        return path if os.path.exists(path) else None

    @property
    def error_msg(self):
        return self.view.get("error")

    @property
    def checkpoints(self):
        """The trial's stored checkpoints, oldest first: `[(Checkpoint, checkpoint ref)]`."""
        refs = self.view.get("checkpoints") or []
        return [(self.checkpoint_of(ref), ref) for ref in refs]

    def checkpoint_of(self, ref):
        """A lazily exported Checkpoint of one checkpoint ref of this trial."""
        cid = ref["checkpoint_id"]
        if self._exporter is None:
            return Checkpoint(_exporter=_unreachable(cid), _checkpoint_id=cid)
        return Checkpoint(
            _exporter=lambda target: self._exporter(self.trial_id, cid, target), _checkpoint_id=cid
        )

    @property
    def checkpoint(self):
        checkpoints = self.checkpoints
        return checkpoints[-1][0] if checkpoints else None

    def __str__(self):
        if self.trainable_name:
            return "%s_%s" % (self.trainable_name, self.trial_id)
        return str(self.trial_id)

    def __repr__(self):
        return "Trial(%s, %s)" % (self.trial_id, self.status)


def _unreachable(checkpoint_id):
    def export(target):
        from tunebus._errors import TuneError

        raise TuneError(
            "unavailable",
            "checkpoint %s is in the checkpoint-store of the suite that "
            "ran the experiment; no suite is known for this results folder" % checkpoint_id,
        )

    return export
