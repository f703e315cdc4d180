"""The driver's sockets: Python callables Ray Tune runs in the driver, served to the scheduler.

*Driver link* (a ROUTER bound in this process; the experiment file's
`driver: {endpoint, on_result, server_key?}`, PROTOCOL.md §7b): the scheduler sends `hello
{session, experiment, metric, mode}` → `hello_ok {}` (a new session drops the old one's state),
then
- `driver_sample {session, trial_id, config, paths}` → `driver_samples {values}` before it adds a
  trial whose param space holds `tune.sample_from` (written `{sample_from: driver}`; the
  scheduler's variant generator draws the grid and the other domains): `paths` are the key paths
  (lists of str) of the trial's sample_from keys in param-space order, each function called in
  that order with Ray's `spec`, whose `spec.config` (a dict that also reads as attributes) is
  `config` with the values computed so far and without the keys still to compute (a function
  reading one gets KeyError / AttributeError); `values` holds one JSON value per path. A function
  that raises or returns what JSON cannot hold is answered `driver_samples {error: "<path>:
  <ExceptionType>: <message>"}`, logged with its traceback and kept in `DriverLink.error`: the
  scheduler ends the search (running trials finish, no new one starts) and `Tuner.fit()` raises it.
- `driver_result {session, trial_id, result}` → `driver_decision {stop_trial, stop_all,
  should_checkpoint, samples}` for every result when `on_result` is true (a stopper, callbacks
  or a progress reporter, PBT function mutations: `DriverNeeds.on_result`): `stop_trial` is the
  stopper's verdict on this result (a callable `fn(trial_id, result)`, or a `tune.Stopper`'s
  `__call__` followed by `stop_all()`), `samples` a fresh `fn()` for each PBT mutation key whose
  mutation is a function (written `{driver: {}}` in `hyperparam_mutations`).
A request of another session is refused with `failed_precondition`.

*Searcher* (PROTOCOL.md §7a, `search: {type: external, endpoint}`) when the driver serves the
search (`needs.search`, a tunebus._search_driver.DriverSearch, which answers the requests): a
searcher that runs in the driver (a user's `tune.search.Searcher`, OptunaSearch, Repeater, ...).

*Callbacks* (tunebus._callbacks): with driver callbacks or a progress reporter the driver link
is on (every result is asked, `on_trial_result` runs before the answer, whose
`should_checkpoint` says whether a callback asked a checkpoint), and a SUB socket on the
scheduler's event stream (PROTOCOL.md §6, this experiment's events) feeds the other hooks.

The sockets are polled by one daemon thread until `close()`. Against a connected suite with
TUNEBUS_KEYS_DIR set they are CURVE servers with the user's keypair (tunebus._curve:
TUNEBUS_KEY_NAME, else "tunectl") that accept only the scheduler's key, and the experiment names
that public key as `driver.server_key` / `search.server_key`: the scheduler connects only to a
driver whose key its allow-list holds with role operator.
"""

import copy
import logging
import socket
import threading

from tunebus import _curve, _deps, _router, _space
from tunebus._control import EventSubscription
from tunebus._errors import TuneError
from tunebus._router import ProtocolError

LOG = logging.getLogger("tunebus")


def local_address_for(endpoint):
    """This host's address as seen from `endpoint`'s host (for a remote suite to connect back)."""
    host = endpoint.split("://", 1)[-1].rsplit(":", 1)[0]
    if host in ("127.0.0.1", "localhost", "*"):
        return "127.0.0.1"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((host, 9))
        return probe.getsockname()[0]
    finally:
        probe.close()


class _AttrDict(dict):
    """Ray's spec.config: a dict that also reads as attributes."""

    def __getattr__(self, key):
        try:
            value = self[key]
        except KeyError:
            raise AttributeError(key) from None
        return _AttrDict(value) if isinstance(value, dict) else value


class _Spec:
    """Ray's `spec` argument of a sample_from function: `spec.config` is the trial's config."""

    def __init__(self, config):
        self.config = _AttrDict(config)


def _function_at(space, path):
    """The `tune.sample_from` Function at key path `path` of a Ray param space, or None."""
    node = space
    for key in path:
        if not isinstance(node, dict) or _space.is_grid(node) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, _space.Function) else None


def _drop(config, path):
    """Removes key path `path` from `config` (nothing when it is not there)."""
    for key in path[:-1]:
        config = config.get(key)
        if not isinstance(config, dict):
            return
    config.pop(path[-1], None)


def _put(config, path, value):
    for key in path[:-1]:
        config = config.setdefault(key, {})
    config[path[-1]] = value


def _paths(msg):
    """`driver_sample`'s `paths` (ProtocolError invalid_argument when it is not a list of
    non-empty lists of str)."""
    paths = msg.get("paths")
    if not isinstance(paths, list) or not all(
        isinstance(p, list) and p and all(isinstance(k, str) for k in p) for p in paths
    ):
        raise ProtocolError(
            "invalid_argument", "driver_sample: paths must be a list of key paths (lists of str)"
        )
    return paths


class DriverLink:
    """The driver's ROUTER sockets for one experiment (see the module doc)."""

    def __init__(self, exp, needs, host="127.0.0.1", curve=True, events_endpoint=None):
        """`needs`: a tunebus._tuner.DriverNeeds (its `param_space` holds the sample_from
        functions). `curve`: serve CURVE when TUNEBUS_KEYS_DIR is set (False for the embedded
        suite, which runs without keys). `events_endpoint`: the scheduler's event stream,
        subscribed to when `needs.callbacks` is set. TuneError when a key file is missing."""
        self.zmq = _deps.load("zmq")
        self.experiment = exp.get("name")
        self.needs = needs
        self.param_space = needs.param_space or {}
        self.session = None
        self.error = None  # the first exception a sample_from function raised (or its bad value)
        self._sockets = []
        self.link_endpoint = self.search_endpoint = None
        endpoint = "tcp://%s:*" % host
        self.server_key = None
        if curve and _curve.applies(endpoint):
            self.server_key = _curve.public_key(_curve.key_name())
        try:
            if needs.link:
                sock, self.link_endpoint = self._bind(
                    needs.endpoints.get("driver") or endpoint, curve
                )
                self._sockets.append((sock, self.handle_link))
            if needs.search is not None:
                sock, self.search_endpoint = self._bind(
                    needs.endpoints.get("search") or endpoint, curve
                )
                self._sockets.append((sock, needs.search.handle))
            if needs.callbacks is not None and events_endpoint:
                self._sockets.append((self._subscribe(events_endpoint, curve), self.handle_events))
        except Exception:
            for sock, _ in self._sockets:
                _router.close(sock)
            raise
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="tunebus-driver", daemon=True)
        self._thread.start()

    def _bind(self, endpoint, curve):
        """A ROUTER at `endpoint`: a wildcard port, or a resumed experiment's journaled endpoint
        (TuneError failed_precondition when another process holds it)."""
        try:
            return _router.bind(endpoint, curve=curve)
        except self.zmq.ZMQError as e:
            raise TuneError(
                "failed_precondition",
                "cannot serve the resumed experiment's driver "
                "socket at %s (%s): the scheduler reconnects only there; stop what "
                "holds that port" % (endpoint, e),
            ) from None

    def amend(self, exp):
        """The experiment map with the `driver:` section (`on_result`: `needs.on_result`) and the
        driver's searcher."""
        exp = dict(exp)
        if self.link_endpoint:
            exp["driver"] = {"endpoint": self.link_endpoint, "on_result": self.needs.on_result}
            if self.server_key:
                exp["driver"]["server_key"] = self.server_key
        if self.search_endpoint:
            exp = self.needs.search.amend(exp, self.search_endpoint, self.server_key)
        return exp

    def _subscribe(self, events_endpoint, curve):
        self._events = EventSubscription(
            events_endpoint,
            (b"trial", b"experiment"),
            secure=curve and _curve.applies(events_endpoint),
        )
        return self._events.socket

    def _loop(self):
        poller = self.zmq.Poller()
        for sock, _ in self._sockets:
            poller.register(sock, self.zmq.POLLIN)
        handlers = dict(self._sockets)
        callbacks = self.needs.callbacks
        while not self._stopping:
            ready = poller.poll(200)
            if ready and callbacks is not None:
                callbacks.begin_step()
            for sock, _ in ready:
                if handlers[sock] == self.handle_events:
                    self.handle_events(sock)
                else:
                    _router.answer(sock, handlers[sock])
            if ready and callbacks is not None:
                callbacks.end_step()
        for sock, _ in self._sockets:
            _router.close(sock)

    def handle_events(self, sock):
        """Every event waiting on the SUB socket, this experiment's to the callbacks."""
        while True:
            event = self._events.receive()
            if event is None:
                return
            if event.get("experiment") == self.experiment:
                self.needs.callbacks.on_event(event)

    def close(self):
        self._stopping = True
        self._thread.join(5)

    # ---- driver link ------------------------------------------------------------------------
    def handle_link(self, msg):
        kind = msg["type"]
        if kind == "hello":
            self.session = msg.get("session")
            return {"type": "hello_ok"}
        if msg.get("session") != self.session or self.session is None:
            raise ProtocolError(
                "failed_precondition", "unknown session %r; send hello" % (msg.get("session"),)
            )
        if kind == "driver_result":
            return self.decide(
                msg.get("trial_id", ""),
                msg.get("result") or {},
                msg.get("attempt", 0),
                msg.get("seq", 0),
            )
        if kind == "driver_sample":
            config = msg.get("config")
            if not isinstance(config, dict):
                raise ProtocolError("invalid_argument", "driver_sample: config must be a map")
            return self.sample(msg.get("trial_id", ""), config, _paths(msg))
        raise ProtocolError("invalid_argument", "unknown request type %r" % kind)

    def sample(self, trial_id, config, paths):
        """The driver_samples for one trial (see the module doc): `config` the trial's config
        with `{sample_from: driver}` at each of `paths` (lists of keys), in the order to call."""
        config = copy.deepcopy(config)
        for path in paths:
            _drop(config, path)
        values = []
        for path in paths:
            where = "param_space." + ".".join(path)
            try:
                fn = _function_at(self.param_space, path)
                if fn is None:
                    raise TuneError(
                        "failed_precondition",
                        "the driver's param_space has no tune.sample_from there (Tuner.restore "
                        "needs the experiment's param_space)",
                    )
                value = _space.constant(fn.sample(None, _Spec(config)), "the returned value")
            except Exception as e:  # noqa: BLE001 - Ray would end the run with it
                LOG.exception(
                    "tunebus: tune.sample_from at %s failed for trial %s; no new trial starts",
                    where,
                    trial_id,
                )
                if self.error is None:
                    self.error = e
                message = e.message if isinstance(e, TuneError) else str(e)
                return {
                    "type": "driver_samples",
                    "error": "%s: %s: %s" % (where, type(e).__name__, message),
                }
            _put(config, path, value)
            values.append(value)
        return {"type": "driver_samples", "values": values}

    def decide(self, trial_id, result, attempt=0, seq=0):
        """The driver_decision for one result (`attempt`, `seq`: its identity, PROTOCOL.md §7b)."""
        stop_trial = stop_all = should_checkpoint = False
        stopper = self.needs.stopper
        if stopper is not None:
            stop_trial = bool(stopper(trial_id, result))
            if hasattr(stopper, "stop_all"):
                stop_all = bool(stopper.stop_all())
        callbacks = self.needs.callbacks
        if callbacks is not None:
            should_checkpoint = callbacks.on_result(trial_id, attempt, seq, result)
            stop_all = stop_all or callbacks.error is not None
        samples = {key: fn() for key, fn in self.needs.mutations.items()}
        return {
            "type": "driver_decision",
            "stop_trial": stop_trial,
            "stop_all": stop_all,
            "should_checkpoint": should_checkpoint,
            "samples": samples,
        }


__all__ = ["DriverLink", "local_address_for"]
