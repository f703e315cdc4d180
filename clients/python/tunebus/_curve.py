"""CurveZMQ for the package's tcp:// sockets when the environment names a keys folder.

With `TUNEBUS_KEYS_DIR` set (as for tunectl and the services, docs/explanation/security.md), the
package's
sockets to and from a connected suite use CURVE, like every tcp:// socket of the suite:

  <keys-dir>/<TUNEBUS_KEY_NAME, else the caller's default>.key_secret
        this process's keypair: the driver uses "tunectl" (the user's key, role operator),
        clients/python/tunebus/searcher.py "searcher"
  <keys-dir>/scheduler.key
        the scheduler's public key: the server key of the control socket and the event stream,
        and the only client key the package's servers (the driver link, the driver's searcher,
        tunebus.searcher) accept, checked by pyzmq's ThreadAuthenticator (ZAP, RFC 27)

The files are tunebus's key files (`tunectl keygen`), ZeroMQ's certificate format, read with
pyzmq's `zmq.auth.load_certificate`. A secret key file that group or others may read is refused,
as the services refuse it. Without `TUNEBUS_KEYS_DIR` nothing here applies, and ipc:// and
inproc:// sockets never use CURVE (the scheduler does the same).
"""

import atexit
import os
import shutil
import stat
import tempfile
import threading

from tunebus import _deps
from tunebus._errors import TuneError

KEYS_DIR_ENV = "TUNEBUS_KEYS_DIR"
KEY_NAME_ENV = "TUNEBUS_KEY_NAME"
# The variables `tunectl` reads for its keys (libs/service/security_flags.hpp).
KEY_ENV_VARS = (KEYS_DIR_ENV, KEY_NAME_ENV, "TUNEBUS_AUTHORIZED_KEYS", "TUNEBUS_INSECURE")
SCHEDULER_KEY_NAME = "scheduler"
# The ZAP domain of the package's CURVE servers (the one the authenticator is configured for).
ZAP_DOMAIN = "tunebus-driver"

_lock = threading.Lock()
_authenticator = None
_allowed_folder = None
_servers = 0  # CURVE server sockets open; the authenticator stops with the last one


def keys_dir():
    """The keys folder (TUNEBUS_KEYS_DIR), or None."""
    return os.environ.get(KEYS_DIR_ENV) or None


def applies(endpoint):
    """True when a socket on `endpoint` uses CURVE: keys are configured and it is tcp://."""
    return keys_dir() is not None and endpoint.startswith("tcp://")


def _load(path, secret):
    """(public, secret or None) of a key file, as bytes; TuneError naming the file otherwise."""
    _deps.load("zmq")
    import zmq.auth as zmq_auth

    try:
        if secret:
            mode = os.stat(path).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise TuneError(
                    "failed_precondition",
                    "%s has mode %04o; chmod 600 it" % (path, stat.S_IMODE(mode)),
                )
        public, secret_key = zmq_auth.load_certificate(path)
    except OSError as e:
        raise TuneError(
            "failed_precondition",
            "cannot read the CURVE key file %s (%s: %s); make "
            "keys with `tunectl keygen` (docs/explanation/security.md)"
            % (path, KEYS_DIR_ENV, e.strerror or e),
        ) from None
    except ValueError as e:
        raise TuneError("invalid_argument", "%s is not a CURVE key file: %s" % (path, e)) from None
    if secret and not secret_key:
        raise TuneError("invalid_argument", "%s holds no secret-key" % path)
    return public, secret_key


def key_name(default_name="tunectl"):
    """The name of this process's keypair: TUNEBUS_KEY_NAME, else `default_name`."""
    return os.environ.get(KEY_NAME_ENV) or default_name


def own_keypair(name):
    """(public, secret) Z85 bytes of <keys-dir>/<name>.key_secret."""
    return _load(os.path.join(keys_dir(), name + ".key_secret"), secret=True)


def public_key(name):
    """The Z85 public key of keypair `name` as text (what an experiment file's server_key
    holds)."""
    return own_keypair(name)[0].decode("ascii")


def _scheduler_key_file():
    return os.path.join(keys_dir(), SCHEDULER_KEY_NAME + ".key")


def _start_authenticator(zmq):
    """The process's ZAP handler while a CURVE server socket is open: a ThreadAuthenticator on
    the shared context that lets in only the scheduler's public key (copied into a private 0700
    folder for configure_curve). Its thread is not a daemon, so server_closed() stops it."""
    global _authenticator, _allowed_folder, _servers
    with _lock:
        _servers += 1
        if _authenticator is not None:
            return
        scheduler_key = _scheduler_key_file()
        try:
            _load(scheduler_key, secret=False)  # a clear error before the authenticator starts
        except TuneError:
            _servers -= 1
            raise
        folder = tempfile.mkdtemp(prefix="tunebus-curve-")
        shutil.copyfile(scheduler_key, os.path.join(folder, SCHEDULER_KEY_NAME + ".key"))
        from zmq.auth.thread import ThreadAuthenticator

        auth = ThreadAuthenticator(zmq.Context.instance())
        auth.start()
        auth.configure_curve(domain=ZAP_DOMAIN, location=folder)
        _authenticator, _allowed_folder = auth, folder
        atexit.register(_stop_authenticator)


def _stop_authenticator():
    global _authenticator, _allowed_folder, _servers
    with _lock:
        _servers = 0
        if _authenticator is not None:
            _authenticator.stop()
            shutil.rmtree(_allowed_folder, ignore_errors=True)
            _authenticator = _allowed_folder = None


def make_server(sock, endpoint, name):
    """Before `sock` binds `endpoint`: a CURVE server with keypair `name` that accepts only the
    scheduler's key, when `applies(endpoint)`; then True, and the caller calls server_closed()
    after closing it. TuneError when a key file is missing."""
    if not applies(endpoint):
        return False
    zmq = _deps.load("zmq")
    public, secret = own_keypair(name)
    _start_authenticator(zmq)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
    sock.setsockopt(zmq.CURVE_SERVER, 1)
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN.encode())
    return True


def server_closed():
    """A socket make_server secured was closed: the last one stops the authenticator."""
    global _servers
    with _lock:
        _servers = max(0, _servers - 1)
        last = _servers == 0
    if last:
        _stop_authenticator()


def make_client(sock, endpoint):
    """Before `sock` connects to the scheduler's `endpoint`: a CURVE client with keypair
    `key_name()` that expects <keys-dir>/scheduler.key, when `applies(endpoint)`."""
    if not applies(endpoint):
        return
    zmq = _deps.load("zmq")
    public, secret = own_keypair(key_name())
    server, _ = _load(_scheduler_key_file(), secret=False)
    sock.setsockopt(zmq.CURVE_SERVERKEY, server)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)


def without_keys(environ):
    """A copy of `environ` without the variables that give tunectl keys (for the embedded suite,
    which serves loopback without CURVE)."""
    return {k: v for k, v in environ.items() if k not in KEY_ENV_VARS}


__all__ = [
    "applies",
    "key_name",
    "keys_dir",
    "make_client",
    "make_server",
    "public_key",
    "server_closed",
    "without_keys",
]
