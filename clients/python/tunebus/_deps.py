"""Imports the driver's third-party modules (pyzmq, msgpack, cloudpickle).

The trainable helper needs none of them; the driver (`tunebus.tune`, `tunebus.Experiment`) needs
all three. They come from Debian's python3-zmq, python3-msgpack and python3-cloudpickle, installed
for /usr/bin/python3 in /usr/lib/python3/dist-packages. Another interpreter of the same
major.minor version (e.g. a pyenv 3.11 beside Debian 12's 3.11) can use them: `load()` adds that
folder to the end of sys.path when an import fails and the versions match, else raises an
ImportError naming the Debian packages.
"""

import importlib
import os
import sys

DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"
_PACKAGES = {
    "zmq": "python3-zmq",
    "msgpack": "python3-msgpack",
    "cloudpickle": "python3-cloudpickle",
}
# Modules only some features need: the progress reporters' tables (tunebus._reporters).
_OPTIONAL = {"tabulate": "python3-tabulate"}


def _debian_python_version():
    """The major.minor of Debian's python3 (from /usr/lib/python3.X), or None."""
    try:
        names = os.listdir("/usr/lib")
    except OSError:
        return None
    versions = [
        n[len("python") :]
        for n in names
        if n.startswith("python3.") and os.path.isdir(os.path.join("/usr/lib", n, "lib-dynload"))
    ]
    return versions[0] if len(versions) == 1 else None


def load(name):
    """Returns module `name` (one of zmq, msgpack, cloudpickle, tabulate), importing it from
    Debian's dist-packages when the running interpreter does not have it and its version matches.
    Raises ImportError naming the Debian package otherwise."""
    try:
        return importlib.import_module(name)
    except ImportError as first:
        mine = "%d.%d" % sys.version_info[:2]
        if (
            os.path.isdir(DEBIAN_DIST_PACKAGES)
            and DEBIAN_DIST_PACKAGES not in sys.path
            and _debian_python_version() == mine
        ):
            sys.path.append(DEBIAN_DIST_PACKAGES)
            try:
                return importlib.import_module(name)
            except ImportError:
                pass
        if name in _OPTIONAL:
            raise ImportError(
                "%s needs the Python module %s (Debian: apt-get install %s)"
                % (sys.executable, name, _OPTIONAL[name])
            ) from first
        raise ImportError(
            "tunebus's driver needs the Python modules zmq, msgpack and cloudpickle (Debian: "
            "apt-get install %s); %s cannot import %s (%s). Run it with /usr/bin/python3, or an "
            "interpreter of Debian's python3 version so tunebus can use %s"
            % (" ".join(_PACKAGES.values()), sys.executable, name, first, DEBIAN_DIST_PACKAGES)
        ) from first
