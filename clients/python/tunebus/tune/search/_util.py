"""Helpers shared by the searchers: Ray's flatten_dict / unflatten_dict ("a/b" keys for nested
configs) and the import of an optional optimisation library."""

import importlib
import sys

from tunebus import _deps
from tunebus._errors import TuneError

ALTERNATIVES = (
    "tunebus has, without extra libraries: tune.search.optuna.OptunaSearch "
    "(Optuna, Debian's python3-optuna, in the driver), tune.search.TPESearch "
    "(TPE in the scheduler) and tune.search.TuneBOHB (BOHB in the scheduler, with "
    "tune.schedulers.HyperBandForBOHB)"
)

# Ray's messages (ray.tune.search) for a searcher asked before it has a space, metric and mode.
UNDEFINED_SEARCH_SPACE = (
    "Trying to sample a configuration from {cls}, but no search space has been defined. Either "
    "pass the `{space}` argument when instantiating the search algorithm, or pass a "
    "`param_space` to `tune.Tuner()`."
)
UNDEFINED_METRIC_MODE = (
    "Trying to sample a configuration from {cls}, but the `metric` ({metric}) or `mode` ({mode}) "
    "parameters have not been set. Either pass these arguments when instantiating the search "
    "algorithm, or pass them to `tune.TuneConfig()`."
)


def flatten(config, delimiter="/", prefix=""):
    """{"a": {"b": 1}} -> {"a/b": 1} (Ray's flatten_dict)."""
    out = {}
    for key, value in config.items():
        name = prefix + str(key)
        if isinstance(value, dict) and value:
            out.update(flatten(value, delimiter, name + delimiter))
        else:
            out[name] = value
    return out


def unflatten(flat, delimiter="/"):
    """{"a/b": 1} -> {"a": {"b": 1}} (Ray's unflatten_dict)."""
    out = {}
    for key, value in flat.items():
        parts = key.split(delimiter)
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def load_library(module, pip_name, searcher, debian=None):
    """Imports `module` (also from Debian's dist-packages under another interpreter of its
    version, as tunebus._deps does). Raises TuneError `failed_precondition` naming the library,
    its pip name (or `debian`, its Debian package) and tunebus's alternatives when it cannot be
    imported: Ray's searcher asserts the same at construction ("HyperOpt must be installed!
    ...")."""
    try:
        return importlib.import_module(module)
    except ImportError as first:
        e = first
    try:
        return _deps.load(module)  # Debian's dist-packages under another interpreter
    except ImportError:
        install = (
            "apt-get install %s (or `pip install %s`)" % (debian, pip_name)
            if debian
            else "`pip install %s`; Debian does not package it" % pip_name
        )
        raise TuneError(
            "failed_precondition",
            "%s needs the Python library %s, which %s cannot import (%s). Install it: "
            "%s. Or use another searcher: %s."
            % (searcher, module, sys.executable, e, install, ALTERNATIVES),
        ) from None
