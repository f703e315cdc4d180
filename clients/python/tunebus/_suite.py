"""Where the driver's suite is: finding `tunectl`, the embedded suite, its control endpoint.

`tunectl` runs here only as the embedded suite (`tunectl up`); every request to a suite goes
through tunebus._control.ControlClient.

Embedded (default): one `tunectl up` per driver process on loopback ports the kernel picks, started
on first use and reused by later `fit()` calls. Its checkpoint-store (journals and checkpoints)
lives in TUNEBUS_DATA_DIR, else in `<storage_path>/_tunebus_store` of the first `fit()`, so a later
driver restores an interrupted experiment (`Tuner.restore`) from it, as Ray Tune restores from its
storage path; while another driver's suite holds that store (RocksDB's lock), this one uses a
private temporary store and says so on stderr. It dies with the driver: atexit stops it (SIGTERM,
then SIGKILL after 10 s), and the child asks the kernel for SIGTERM when the driver dies (prctl
PR_SET_PDEATHSIG), so a SIGKILLed driver leaves nothing running. Connected:
`tunebus.init(address=EP)` or the environment variable TUNEBUS_ADDRESS names a running scheduler's
control endpoint; with TUNEBUS_KEYS_DIR set, its tcp:// sockets use CURVE (tunebus._curve). The
embedded suite runs without keys: its `tunectl up` gets an environment without TUNEBUS_KEYS_DIR and
the like.
"""

import atexit
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from tunebus import _curve
from tunebus._control import ControlClient
from tunebus._errors import TuneError

_PR_SET_PDEATHSIG = 1

_lock = threading.Lock()
_address = None
_embedded = None


def find_tunectl():
    """The tunectl binary: $TUNEBUS_TUNECTL, then PATH, then $TUNEBUS_HOME/bin or
    $TUNEBUS_HOME/build/bin, then the source tree's build/bin. Raises TuneError not_found."""
    tried = []
    env = os.environ.get("TUNEBUS_TUNECTL")
    if env:
        if os.access(env, os.X_OK):
            return env
        tried.append(env)
    found = shutil.which("tunectl")
    if found:
        return found
    tried.append("tunectl on PATH")
    candidates = []
    home = os.environ.get("TUNEBUS_HOME")
    if home:
        candidates += [
            os.path.join(home, "bin", "tunectl"),
            os.path.join(home, "build", "bin", "tunectl"),
        ]
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(
        os.path.normpath(os.path.join(here, "..", "..", "..", "build", "bin", "tunectl"))
    )
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
        tried.append(path)
    raise TuneError(
        "not_found",
        "cannot find tunectl (tried %s); set TUNEBUS_TUNECTL to its path "
        "or build it (cmake --build build --target tunectl)" % ", ".join(tried),
    )


def set_address(address):
    global _address
    _address = address
    return address or os.environ.get("TUNEBUS_ADDRESS") or None


def die_with_parent():
    """preexec_fn: the child gets SIGTERM when the driver dies (Linux's PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: atexit still stops the suite


def _set_pdeathsig():
    die_with_parent()
    os.setpgid(0, 0)  # its own group: a Ctrl-C of the driver's terminal is the driver's to handle


class EmbeddedSuite:
    """A `tunectl up` child process: the whole suite on loopback, owned by this driver."""

    def __init__(self, tunectl, data_dir=None):
        self.folder = tempfile.mkdtemp(prefix="tunebus-suite-")
        self.data_dir = data_dir or os.path.join(self.folder, "store")
        ready = os.path.join(self.folder, "ready.json")
        self.log_path = os.path.join(self.folder, "suite.log")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    tunectl,
                    "up",
                    "--control",
                    "tcp://127.0.0.1:*",
                    "--events",
                    "tcp://127.0.0.1:*",
                    "--ready-file",
                    ready,
                    "--data-dir",
                    self.data_dir,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_curve.without_keys(os.environ),
                preexec_fn=_set_pdeathsig,
            )
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(self.log_path, errors="replace") as f:
                    tail = f.read()[-2000:]
                raise TuneError(
                    "unavailable",
                    "the embedded suite (tunectl up) did not start: %s" % tail.strip(),
                )
            time.sleep(0.05)
        with open(ready) as f:
            self.endpoints = json.load(f)["endpoints"]
        self.control = self.endpoints["control"]

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def is_embedded(endpoint):
    """True when `endpoint` is one of this process's embedded suite's."""
    return _embedded is not None and endpoint in _embedded.endpoints.values()


def secured(endpoint):
    """True when a socket to `endpoint` uses CURVE: TUNEBUS_KEYS_DIR is set, it is tcp://, and
    it is not the embedded suite's."""
    return _curve.applies(endpoint) and not is_embedded(endpoint)


def exit_note(endpoint):
    """For a request to `endpoint` that got no answer: when `endpoint` is the embedded suite's
    and its `tunectl up` has exited, "; the embedded suite (tunectl up) exited with code N: " and
    the last lines of its log (a negative N is the signal that ended it); else ""."""
    suite = _embedded
    if suite is None or endpoint not in suite.endpoints.values() or suite.alive():
        return ""
    try:
        with open(suite.log_path, errors="replace") as f:
            tail = f.read()[-1500:].strip()
    except OSError:
        tail = "(its log %s is gone)" % suite.log_path
    return "; the embedded suite (tunectl up) exited with code %d: %s" % (
        suite.process.returncode,
        tail,
    )


def events_endpoint(control):
    """The scheduler's event stream endpoint: the embedded suite's, else `get_experiment`'s
    `events_endpoint` (its 0.0.0.0 meaning the control endpoint's host); None when unknown."""
    if _embedded is not None and _embedded.control == control:
        return _embedded.endpoints.get("events")
    try:
        found = ControlClient(control, timeout_s=2).get_experiment().get("events_endpoint")
    except TuneError:
        return None
    if found and "://0.0.0.0:" in found:
        host = control.split("://", 1)[-1].rsplit(":", 1)[0]
        found = found.replace("0.0.0.0", host)
    return found if found and not found.startswith("inproc://") else None


def shutdown():
    global _embedded
    with _lock:
        if _embedded is not None:
            _embedded.stop()
            _embedded = None


atexit.register(shutdown)


STORE_FOLDER = "_tunebus_store"


def _start_embedded(storage_path):
    """An EmbeddedSuite on TUNEBUS_DATA_DIR or `<storage_path>/_tunebus_store`; a private
    temporary store when another process holds that one."""
    tunectl = find_tunectl()
    data_dir = os.environ.get("TUNEBUS_DATA_DIR")
    if data_dir is None and storage_path:
        data_dir = os.path.join(storage_path, STORE_FOLDER)
        os.makedirs(storage_path, exist_ok=True)
    try:
        return EmbeddedSuite(tunectl, data_dir)
    except TuneError as e:
        if data_dir is None or "lock" not in e.message.lower():
            raise
        print(
            "tunebus: the store %s is in use by another driver's suite; this driver uses a "
            "private temporary store, which Tuner.restore cannot read after it exits" % data_dir,
            file=sys.stderr,
        )
        return EmbeddedSuite(tunectl, None)


def endpoint(storage_path=None):
    """The control endpoint fit() uses: tunebus.init's, TUNEBUS_ADDRESS, or the embedded suite
    (started now if needed, its store under `storage_path`). Returns (endpoint, embedded: bool)."""
    global _embedded
    chosen = _address or os.environ.get("TUNEBUS_ADDRESS")
    if chosen:
        return chosen, False
    with _lock:
        if _embedded is None or not _embedded.alive():
            if _embedded is not None:
                _embedded.stop()  # exited: its folder (log, ready file) goes
            _embedded = _start_embedded(storage_path)
        return _embedded.control, True
