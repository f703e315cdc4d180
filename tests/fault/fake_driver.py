"""A fake Python driver for the driver-link process tests (tests/fault/driver_link_test.cpp): binds
a ROUTER and answers proto/PROTOCOL.md section 7b (hello -> hello_ok, driver_result ->
driver_decision) with a stopper that stops a trial at --stop-at iterations, as Ray Tune's
`stop={"training_iteration": N}` function stopper would. Logs one line per request on stdout:
"hello: session S" and "result: trial T iteration I". Needs pyzmq and msgpack (Debian's
python3-zmq, python3-msgpack; run by /usr/bin/python3)."""

import argparse
import json
import os
import signal
import sys

import msgpack
import zmq

PROTOCOL_VERSION = 1


def write_ready_file(path, endpoint):
    """The bound endpoint in the services' ready-file format (libs/service/ready_file.hpp)."""
    ready = {
        "service": "fake_driver",
        "pid": os.getpid(),
        "endpoints": {"endpoint": endpoint},
        "metrics_port": 0,
    }
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(json.dumps(ready) + "\n")
    os.replace(tmp, path)


def answer(msg, state, stop_at):
    """The reply map for one request map; `state` holds the current session."""
    kind = msg.get("type")
    if msg.get("v") != PROTOCOL_VERSION:
        return {
            "type": "error",
            "code": "invalid_argument",
            "message": "version",
            "request_type": kind or "",
        }
    if kind == "hello":
        state["session"] = msg.get("session")
        print("hello: session %s" % state["session"], flush=True)
        return {"type": "hello_ok"}
    if kind == "driver_result":
        if msg.get("session") != state.get("session"):
            return {
                "type": "error",
                "code": "failed_precondition",
                "message": "unknown session %r" % msg.get("session"),
                "request_type": kind,
            }
        result = msg.get("result") or {}
        iteration = int(result.get("training_iteration", 0))
        print("result: trial %s iteration %d" % (msg.get("trial_id"), iteration), flush=True)
        return {
            "type": "driver_decision",
            "stop_trial": iteration >= stop_at,
            "stop_all": False,
            "samples": {},
        }
    return {
        "type": "error",
        "code": "invalid_argument",
        "message": "unknown type %r" % kind,
        "request_type": kind or "",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:*")
    parser.add_argument("--ready-file")
    parser.add_argument("--stop-at", type=int, default=3)
    args = parser.parse_args()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(args.endpoint)
    bound = sock.getsockopt_string(zmq.LAST_ENDPOINT)
    if args.ready_file:
        write_ready_file(args.ready_file, bound)
    state = {}
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    while not stopping:
        if not poller.poll(200):
            continue
        frames = sock.recv_multipart()
        msg = msgpack.unpackb(frames[-1], raw=False)
        reply = answer(msg, state, args.stop_at)
        reply.update({"v": PROTOCOL_VERSION, "id": msg.get("id", 0)})
        sock.send_multipart(frames[:-1] + [msgpack.packb(reply, use_bin_type=True)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
