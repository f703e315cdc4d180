"""Ray Train 2.x's `Checkpoint`: a folder of files, local or still in the checkpoint-store."""

import contextlib
import os
import pickle
import shutil
import tempfile

_DICT_FILE = "_dict_checkpoint.pkl"


class Checkpoint:
    """A checkpoint: the files a trainable saved.

    Local checkpoints wrap a folder (`Checkpoint.from_directory`). Checkpoints of a finished
    experiment (`Result.checkpoint`, `Result.best_checkpoints`) live in the checkpoint-store and
    are exported lazily, on first use of `path`, `as_directory()`, `to_directory()` or
    `to_dict()`, with `tunectl checkpoint export` against the suite that ran them; when that suite
    is no longer reachable (the embedded suite of a driver that exited) that use raises
    `TuneError` `unavailable`. Once exported the folder is kept for the life of the object.
    """

    def __init__(self, path=None, _exporter=None, _checkpoint_id=None):
        self._path = os.fspath(path) if path is not None else None
        self._exporter = _exporter
        self.checkpoint_id = _checkpoint_id

    @classmethod
    def from_directory(cls, path):
        """A checkpoint of the folder `path` (not copied: `tune.report` copies it)."""
        return cls(os.path.abspath(os.fspath(path)))

    @classmethod
    def from_dict(cls, data):
        """A checkpoint holding `data` pickled in a new temporary folder (Ray 2.0-2.6's
        `Checkpoint.from_dict`); `to_dict()` gives it back."""
        path = tempfile.mkdtemp(prefix="tunebus_dict_checkpoint_")
        with open(os.path.join(path, _DICT_FILE), "wb") as f:
            pickle.dump(dict(data), f)
        return cls(path)

    @property
    def path(self):
        """The checkpoint's local folder (exported from the checkpoint-store on first use)."""
        if self._path is None:
            target = tempfile.mkdtemp(prefix="tunebus_checkpoint_")
            os.rmdir(target)
            self._exporter(target)
            self._path = target
        return self._path

    def to_dict(self):
        """The dict of `from_dict` (or of a class trainable's `save_checkpoint` that returned
        one). Raises ValueError for a checkpoint of plain files."""
        file = os.path.join(self.path, _DICT_FILE)
        if not os.path.exists(file):
            raise ValueError("checkpoint %s holds files, not a dict" % self.path)
        with open(file, "rb") as f:
            return pickle.load(f)

    @contextlib.contextmanager
    def as_directory(self):
        """A context manager giving the checkpoint's folder (read it; do not change it)."""
        yield self.path

    def to_directory(self, path=None):
        """Copies the checkpoint's files into `path` (created; default a new temporary folder)
        and returns it."""
        if path is None:
            path = tempfile.mkdtemp(prefix="tunebus_checkpoint_")
        if self._path is None and not os.path.exists(path):
            self._exporter(os.fspath(path))
            return os.fspath(path)
        shutil.copytree(self.path, path, dirs_exist_ok=True)
        return os.fspath(path)

    def __repr__(self):
        if self._path is None:
            return "Checkpoint(checkpoint_id=%r, not exported)" % (self.checkpoint_id,)
        return "Checkpoint(path=%r)" % (self._path,)


def copy_folder(source, target):
    """Replaces the content of folder `target` (created) with a copy of folder `source`."""
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(target):
        full = os.path.join(target, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
    shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
