"""Ray Tune 2.x's class trainable API, `with_resources`, `with_parameters` and `Stopper`."""

import os


class Trainable:
    """Ray's class API (`tune.Trainable`): subclass it and override `setup(config)`,
    `step() -> dict`, `save_checkpoint(checkpoint_dir) -> dict | None`,
    `load_checkpoint(checkpoint: dict | str)`, and optionally `reset_config(new_config)` and
    `cleanup()`.

    On a worker (tunebus._runner) one object lives per trial attempt: `setup`, then
    `load_checkpoint` when the attempt restores, then `step()` per iteration; each step's dict is
    one result; a `checkpoint` decision calls `save_checkpoint` with the folder to save into (a
    returned dict is pickled into it and given back to `load_checkpoint` as a dict, as Ray
    does); `done: True` in a result ends the trial; `cleanup()` runs at the end.
    `reset_config` is never called (every attempt is a fresh process: `reuse_actors` is
    ignored). Attributes: `config`, `iteration` (= `training_iteration`, iterations done, a
    restore's included), `trial_id`, `trial_name`, `logdir` (the trial's folder).
    """

    def __init__(self, config=None, **kwargs):
        self.config = dict(config or {})
        self._iteration = int(os.environ.get("TUNEBUS_START_ITERATION", "0") or 0)
        self.setup(dict(self.config), **kwargs)

    @property
    def iteration(self):
        """Training iterations done (int), a restored checkpoint's included; `step()` calls
        so far in this attempt plus the iteration it restored at."""
        return self._iteration

    @property
    def training_iteration(self):
        """The same as `iteration` (Ray's alias)."""
        return self._iteration

    @property
    def trial_id(self):
        """The trial's id (str, "<experiment id>_<index>"); "default" outside tunebus."""
        return os.environ.get("TUNEBUS_TRIAL_ID", "default")

    @property
    def trial_name(self):
        """The trial folder's name (str)."""
        return os.path.basename(self.logdir.rstrip("/"))

    @property
    def logdir(self):
        """The trial's results folder (absolute path); the current folder outside tunebus."""
        return os.environ.get("TUNEBUS_TRIAL_DIR") or os.getcwd()

    def setup(self, config, **kwargs):
        """Override: called once per attempt with a copy of the trial's config (dict) and the
        keyword arguments of `tune.with_parameters`, before any `step()`."""

    def step(self):
        """Override: one training iteration; returns its result (a dict of metrics). A
        result with `done: True` ends the trial. Raises NotImplementedError when not
        overridden."""
        raise NotImplementedError("a Trainable subclass must implement step()")

    def save_checkpoint(self, checkpoint_dir):
        """Override: save the state into `checkpoint_dir` (an existing, empty folder, str),
        or return a dict, which is pickled into it and given back to `load_checkpoint`.
        Returns None (files only) or a dict, as Ray 2.x."""
        return None

    def load_checkpoint(self, checkpoint):
        """Override: restore the state `save_checkpoint` saved. `checkpoint` is the dict it
        returned, else the folder (str) its files were restored into. Called after `setup`
        when an attempt restores (a retry, a resume, PBT's exploit, `restore_from`)."""

    def reset_config(self, new_config):
        """Ray's hook for reusing an actor with a new config; never called by tunebus (each
        attempt is a new process, `reuse_actors` is ignored). Returns False."""
        return False

    def cleanup(self):
        """Override: called once when the attempt ends (finished or stopped), after the last
        `step()` or checkpoint."""


class TrainableSpec:
    """A trainable (function or Trainable subclass) with the keyword arguments of
    `with_parameters` and the resources of `with_resources`; cloudpickled with them."""

    def __init__(self, trainable, kwargs=None, resources=None):
        self.trainable = trainable
        self.kwargs = dict(kwargs or {})
        self.resources = dict(resources) if resources else None

    @property
    def __name__(self):
        return getattr(self.trainable, "__name__", "trainable")

    def __call__(self, config):
        return self.trainable(config, **self.kwargs)


def unwrap(trainable):
    """A TrainableSpec for any trainable form."""
    if isinstance(trainable, TrainableSpec):
        return trainable
    return TrainableSpec(trainable)


def with_parameters(trainable, **kwargs):
    """Ray's `tune.with_parameters`: `trainable(config, **kwargs)` (a class: `setup(config,
    **kwargs)`). The objects are cloudpickled with the trainable into the staging folder, so
    they reach every worker with the code (Ray puts them in its object store)."""
    spec = unwrap(trainable)
    merged = dict(spec.kwargs)
    merged.update(kwargs)
    return TrainableSpec(spec.trainable, merged, spec.resources)


def with_resources(trainable, resources):
    """Ray's `tune.with_resources`: what each trial asks for, e.g. `{"cpu": 1, "gpu": 0.5}`
    (→ `resources_per_trial`; keys lower-cased: Ray's "CPU"/"GPU" also work; custom names
    pass through), or a `tune.PlacementGroupFactory`, whose bundles are summed
    (`required_resources`): tunebus places a trial on one worker. A callable
    `resources(config)` is not supported (TypeError)."""
    required = getattr(resources, "required_resources", None)
    if isinstance(required, dict):
        resources = required
    if callable(resources) or not isinstance(resources, dict):
        raise TypeError(
            "with_resources: tunebus takes a dict such as {'cpu': 1, 'gpu': 0.5} or "
            "a tune.PlacementGroupFactory, got %r" % (resources,)
        )
    spec = unwrap(trainable)
    mapped = {}
    for key, value in resources.items():
        name = key.lower() if key.lower() in ("cpu", "gpu", "memory") else key
        mapped[name] = value
    return TrainableSpec(spec.trainable, spec.kwargs, mapped)


class Stopper:
    """Ray's `tune.Stopper`: `__call__(trial_id, result) -> bool` stops that trial;
    `stop_all() -> bool` (asked after each result) ends the experiment. Runs in the driver:
    the scheduler sends every result over the driver link (docs/reference/python.md)."""

    def __call__(self, trial_id, result):
        raise NotImplementedError

    def stop_all(self):
        """Override: asked after each result, in the driver; True ends the whole experiment
        (every unfinished trial stops, TERMINATED), as Ray's `Stopper.stop_all`. Returns
        False unless overridden."""
        return False
