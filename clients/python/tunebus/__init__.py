"""tunebus's Python package.

Two faces:

* the trainable helper, stdlib only, for a script a tunebus worker runs (proto/PROTOCOL.md §7):
  `tunebus.config()`, `tunebus.report(**metrics)`, `tunebus.checkpoint_dir()`,
  `tunebus.restore_dir()`, `tunebus.trial_id()`, `tunebus.trial_dir()`,
  `tunebus.start_iteration()` (see `tunebus._helper`);
* the driver, Ray Tune 2.x's API (`from tunebus import tune`, `from tunebus import train`,
  `tunebus.air.session`), `tunebus.init(address=...)` and `tunebus.Experiment` for a running
  experiment. They need pyzmq, msgpack and cloudpickle (tunebus._deps), imported on first use,
  so `import tunebus` alone never needs them. docs/reference/python.md has the guide.

`tunebus.get_gpu_ids()` is Ray's `ray.get_gpu_ids()` for a trainable (tunebus._resources).
"""

from tunebus._errors import TuneError
from tunebus._helper import (  # noqa: F401 - the helper's API, re-exported
    CHECKPOINT,
    CONTINUE,
    STOP,
    checkpoint_dir,
    config,
    restore_dir,
    start_iteration,
    trial_dir,
    trial_id,
)
from tunebus._resources import get_gpu_ids
from tunebus._session import report  # Ray's train.report and the helper's, one function
from tunebus._version import __version__  # the root CMakeLists.txt's (tunebus._version)

__all__ = [
    "CHECKPOINT",
    "CONTINUE",
    "STOP",
    "config",
    "report",
    "checkpoint_dir",
    "restore_dir",
    "trial_id",
    "trial_dir",
    "start_iteration",
    "TuneError",
    "get_gpu_ids",
    "__version__",
    "Experiment",
    "init",
    "shutdown",
]


def init(address=None):
    """Ray's `ray.init(address=...)`: chooses the suite later `Tuner.fit()` calls submit to.

    `address` is a scheduler control endpoint (`tcp://host:5555`); None means the embedded suite
    (one `tunectl up` per driver process, started on first use) unless the environment variable
    TUNEBUS_ADDRESS names one. Returns the endpoint that will be used, or None for embedded.
    """
    from tunebus import _suite

    return _suite.set_address(address)


def shutdown():
    """Ray's `ray.shutdown()`: stops this process's embedded suite, if it started one."""
    from tunebus import _suite

    _suite.shutdown()


def __getattr__(name):
    # The driver's modules load lazily: a worker that only reports never imports zmq.
    if name == "Experiment":
        from tunebus._experiment import Experiment

        return Experiment
    if name in ("tune", "train", "air"):
        import importlib

        return importlib.import_module("tunebus." + name)
    raise AttributeError("module 'tunebus' has no attribute %r" % name)
