"""A ROUTER socket answering msgpack requests (proto/PROTOCOL.md §1): the server side shared by
the driver link, the driver's searcher (tunebus._driver) and clients/python/tunebus/searcher.py.

With TUNEBUS_KEYS_DIR set, a tcp:// ROUTER is a CURVE server that accepts only the scheduler's
key (tunebus._curve); `key_name` is the keypair it serves with (default: TUNEBUS_KEY_NAME, else
"tunectl", the user's key).

A handler maps a decoded request (a dict with `type`) to a reply dict; `ProtocolError(code,
message)` becomes a typed `error` reply, any other exception an `internal` one; the server never
dies on a bad message.
"""

import logging

from tunebus import _curve, _deps

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 32 << 20
LOG = logging.getLogger("tunebus")
_curve_sockets = set()  # id() of the open sockets bind() made CURVE servers


class ProtocolError(Exception):
    """A request refused with a typed `error` reply (PROTOCOL.md §1)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def error_reply(request_id, request_type, code, message):
    return {
        "v": PROTOCOL_VERSION,
        "type": "error",
        "id": request_id,
        "code": code,
        "message": message,
        "request_type": request_type,
    }


def bind(endpoint, key_name=None, curve=True):
    """A ROUTER bound at `endpoint` (a CURVE server under keys with keypair `key_name`, see the
    module doc; `curve` False: never, for a peer without keys such as the embedded suite); returns
    (socket, bound endpoint with the port resolved). TuneError when a key file is missing."""
    zmq = _deps.load("zmq")
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    try:
        if curve and _curve.make_server(sock, endpoint, key_name or _curve.key_name()):
            _curve_sockets.add(id(sock))
        sock.bind(endpoint)
    except Exception:
        close(sock)
        raise
    return sock, sock.getsockopt_string(zmq.LAST_ENDPOINT)


def close(sock):
    """Closes a socket bind() made (and, after the last CURVE one, the authenticator)."""
    sock.close()
    if id(sock) in _curve_sockets:
        _curve_sockets.discard(id(sock))
        _curve.server_closed()


def answer(sock, handle):
    """Receives one request on `sock` and sends `handle`'s reply (echoing the routing frames)."""
    msgpack = _deps.load("msgpack")
    frames = sock.recv_multipart()
    route, payload = frames[:-1], frames[-1]
    request_id, request_type = 0, ""
    try:
        msg = msgpack.unpackb(
            payload,
            raw=False,
            max_str_len=16 << 20,
            max_bin_len=16 << 20,
            max_array_len=100000,
            max_map_len=100000,
        )
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            raise ProtocolError("invalid_argument", "not a msgpack map with a string type")
        request_id, request_type = msg.get("id", 0), msg["type"]
        if msg.get("v") != PROTOCOL_VERSION:
            raise ProtocolError(
                "failed_precondition",
                "protocol version %r; this peer speaks %d" % (msg.get("v"), PROTOCOL_VERSION),
            )
        reply = handle(msg)
        reply.update({"v": PROTOCOL_VERSION, "id": request_id})
    except ProtocolError as e:
        LOG.warning("refusing %s: %s", request_type or "a request", e.message)
        reply = error_reply(request_id, request_type, e.code, e.message)
    except Exception as e:  # noqa: BLE001 - a handler failed: answer, never die
        LOG.exception("%s failed", request_type)
        reply = error_reply(request_id, request_type, "internal", "%s: %s" % (type(e).__name__, e))
    sock.send_multipart(route + [msgpack.packb(reply, use_bin_type=True)])


def serve(handle, endpoint, stop, on_bound=None, key_name=None):
    """Answers requests on a ROUTER bound at `endpoint` (with keypair `key_name` under keys)
    until stop() is true; calls on_bound(bound endpoint) once bound."""
    zmq = _deps.load("zmq")
    sock, bound = bind(endpoint, key_name)
    if on_bound:
        on_bound(bound)
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    try:
        while not stop():
            if poller.poll(200):
                answer(sock, handle)
    finally:
        close(sock)
