"""tunebus.__version__ is the one version, project(tunebus VERSION x.y.z) in the root
CMakeLists.txt: the same as the built binaries say (`tunectl --version`),
read from the source tree here, and from the build folder's generated _version_installed.py in
an installed copy of the package."""

import os
import re
import shutil
import subprocess
import sys

import tunebus

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _tunectl_version(tunectl):
    """The version `tunectl --version` prints: "tunectl 0.1.0 (commit abc1234)"."""
    out = subprocess.run(
        [tunectl, "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    match = re.fullmatch(r"tunectl (\S+) \(commit [A-Za-z0-9._+-]+\)\n", out)
    assert match, out
    return match.group(1)


def _version_of_copy(package_parent):
    """tunebus.__version__ as a fresh interpreter imports it from `package_parent`/tunebus."""
    code = "import tunebus; print(tunebus.__version__)"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=package_parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=dict(os.environ, PYTHONPATH=package_parent),
    ).stdout.strip()


def test_version_is_the_cmake_project_version(tunectl):
    # The package in the source tree says what the binaries built from the same tree say.
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt"), encoding="utf-8") as f:
        declared = re.search(r"^project\(tunebus VERSION (\S+)", f.read(), re.M).group(1)
    assert tunebus.__version__ == declared
    assert tunebus.__version__ == _tunectl_version(tunectl)
    assert tunebus.__file__.startswith(os.path.join(SOURCE_DIR, "clients", "python"))


def test_an_installed_copy_reads_the_generated_version_file(tunectl, tmp_path):
    # A copy of the package outside the source tree (as installed to dist-packages) has no
    # CMakeLists.txt above it: with the build folder's _version_installed.py beside it, it says
    # the build's version; with nothing, "0+unknown".
    build = os.path.dirname(os.path.dirname(os.path.realpath(tunectl)))
    generated = os.path.join(build, "generated", "python", "_version_installed.py")
    assert os.path.isfile(generated), generated
    bare = tmp_path / "bare"
    shutil.copytree(
        os.path.dirname(tunebus.__file__),
        bare / "tunebus",
        ignore=shutil.ignore_patterns("__pycache__", "_version_installed.py"),
    )
    assert _version_of_copy(str(bare)) == "0+unknown"
    installed = tmp_path / "installed"
    shutil.copytree(bare / "tunebus", installed / "tunebus")
    shutil.copy(generated, installed / "tunebus" / "_version_installed.py")
    assert _version_of_copy(str(installed)) == _tunectl_version(tunectl) == tunebus.__version__
