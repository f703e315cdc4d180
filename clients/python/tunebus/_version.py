"""tunebus's version, which is not written here: the one version of tunebus is
`project(tunebus VERSION x.y.z ...)` in the root CMakeLists.txt (cmake/Version.cmake).

Found, in this order:
1. `_version_installed.py` beside this file: an install of the package from a build folder
   (its generated/python/_version_installed.py, installed by tunebus_install_python_version in
   cmake/Version.cmake) says the version of that build;
2. in the source tree (this file three folders below the root), that CMakeLists.txt line;
3. `pip install ./clients/python` (the metadata setuptools took from 2) when this file is the
   installed distribution's;
4. else (a copy of the package alone, e.g. the one a Tuner ships in a working_dir) "0+unknown".
"""

import os
import re

_PROJECT_LINE = re.compile(r"^\s*project\(\s*tunebus\s+VERSION\s+([0-9][0-9A-Za-z.+-]*)", re.M)
_HERE = os.path.dirname(os.path.abspath(__file__))


def _from_install():
    try:
        from tunebus._version_installed import version
    except ImportError:
        return None
    return version


def _from_source_tree():
    path = os.path.join(_HERE, os.pardir, os.pardir, os.pardir, "CMakeLists.txt")
    try:
        with open(path, encoding="utf-8") as f:
            match = _PROJECT_LINE.search(f.read())
    except OSError:
        return None
    return match.group(1) if match else None


def _from_pip():
    try:
        from importlib import metadata

        dist = metadata.distribution("tunebus")
        mine = os.path.realpath(str(dist.locate_file(os.path.join("tunebus", "_version.py"))))
    except Exception:  # noqa: BLE001 - no such distribution, or metadata that does not read
        return None
    return dist.version if mine == os.path.realpath(os.path.join(_HERE, "_version.py")) else None


__version__ = _from_install() or _from_source_tree() or _from_pip() or "0+unknown"
