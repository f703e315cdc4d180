"""Worker-side entry: runs a cloudpickled function or class trainable over the command
trainable protocol (proto/PROTOCOL.md §7). `_tunebus/run_trainable.py` in the staging folder
calls `main(<folder>/trainable.pkl)`; the worker starts it in the unpacked working folder."""

import inspect
import os
import pickle
import sys
import traceback

from tunebus import _deps, _helper
from tunebus._session import session
from tunebus._trainable import Trainable

_DICT_FILE = "_dict_checkpoint.pkl"


def _load(pickle_path):
    _deps.load("cloudpickle")  # cloudpickle's reducers are needed to unpickle by-value code
    with open(pickle_path, "rb") as f:
        return pickle.load(f)


def _takes_checkpoint_dir(fn):
    try:
        return "checkpoint_dir" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def run_function(fn, kwargs, config):
    """Ray's function trainable: `fn(config, **kwargs)`; a Ray 1.x `fn(config,
    checkpoint_dir=None)` gets the folder this attempt restores from (None from scratch). Its
    return ends the trial (a returned dict is one last result, as Ray 2.x's function API took
    it)."""
    if _takes_checkpoint_dir(fn) and "checkpoint_dir" not in kwargs:
        kwargs = dict(kwargs, checkpoint_dir=_helper.restore_dir())
    out = fn(config, **kwargs)
    if isinstance(out, dict) and out:
        session().exchange(out)
    return 0


def _save(obj, folder):
    os.makedirs(folder, exist_ok=True)
    returned = obj.save_checkpoint(folder)
    if isinstance(returned, dict):
        with open(os.path.join(folder, _DICT_FILE), "wb") as f:
            pickle.dump(returned, f)
    elif returned is not None and os.path.abspath(str(returned)) != os.path.abspath(folder):
        raise TypeError(
            "save_checkpoint must save into %s and return None or a dict, returned %r"
            % (folder, returned)
        )


def _restore(obj, folder):
    file = os.path.join(folder, _DICT_FILE)
    if os.path.exists(file):
        with open(file, "rb") as f:
            obj.load_checkpoint(pickle.load(f))
    else:
        obj.load_checkpoint(folder)


def run_class(cls, kwargs, config):
    """Ray's class trainable: setup, restore, step() → result → decision, cleanup."""
    obj = cls(config, **kwargs)
    try:
        restore = _helper.restore_dir()
        if restore:
            _restore(obj, restore)
        while True:
            result = obj.step()
            if not isinstance(result, dict):
                raise TypeError(
                    "%s.step() must return a dict, returned %r" % (cls.__name__, result)
                )
            obj._iteration += 1
            decision = session().exchange(result)
            if decision == _helper.CHECKPOINT:
                _save(obj, _helper.checkpoint_dir())
            if decision == _helper.STOP or result.get("done"):
                return 0
    finally:
        obj.cleanup()


def main(pickle_path):
    """Runs the trainable of `pickle_path`; a `restore/` folder beside it (tune.run's `restore`)
    is the checkpoint an attempt without a stored one restores from."""
    bundled = os.path.join(os.path.dirname(pickle_path), "restore")
    if not _helper.restore_dir() and os.path.isdir(bundled):
        os.environ["TUNEBUS_RESTORE_DIR"] = bundled
    spec = _load(pickle_path)
    config = _helper.config()
    trainable = spec.trainable
    try:
        if isinstance(trainable, type) and issubclass(trainable, Trainable):
            return run_class(trainable, spec.kwargs, config)
        return run_function(trainable, spec.kwargs, config)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        return 1
