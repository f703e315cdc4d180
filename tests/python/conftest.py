"""pytest setup for tunebus's Python package: the package on sys.path, a skip when the driver's
modules (zmq, msgpack, cloudpickle) cannot be imported, and where tunectl is."""

import os
import sys

import pytest

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))

try:
    from tunebus import _deps

    for _name in ("zmq", "msgpack", "cloudpickle"):
        _deps.load(_name)
    DRIVER_MISSING = None
except ImportError as e:
    DRIVER_MISSING = str(e)


def pytest_collection_modifyitems(config, items):
    if DRIVER_MISSING:
        skip = pytest.mark.skip(reason=DRIVER_MISSING)
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tunectl():
    """The tunectl binary (TUNEBUS_TUNECTL, PATH, TUNEBUS_HOME, the source tree's build/bin)."""
    from tunebus import _suite
    from tunebus._errors import TuneError

    try:
        return _suite.find_tunectl()
    except TuneError as e:
        pytest.skip(e.message)
