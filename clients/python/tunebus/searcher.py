#!/usr/bin/env python3
"""A tunebus external searcher that wraps an Optuna sampler.

tunebus asks this process for configs and tells it how trials ended, over the ask/tell protocol
of proto/PROTOCOL.md section 7a (ZeroMQ request/reply, msgpack maps). It needs pyzmq, msgpack and
Optuna only (Debian: python3-zmq python3-msgpack python3-optuna), so run it with the Python that
has them, e.g. /usr/bin/python3:

    /usr/bin/python3 -m tunebus.searcher --sampler cmaes --seed 0 --endpoint tcp://127.0.0.1:5600

(from a source tree: PYTHONPATH=clients/python, or the path clients/python/tunebus/searcher.py)

and name the endpoint in the experiment file:

    search: {type: external, endpoint: "tcp://127.0.0.1:5600"}

or let the scheduler start (and restart, and stop) it, binding the endpoint it picks:

    search:
      type: external
      command: [/usr/bin/python3, -m, tunebus.searcher, --sampler, cmaes]

Without --endpoint it binds $TUNEBUS_SEARCHER_ENDPOINT (set by the scheduler that started it),
else tcp://127.0.0.1:5600. With $TUNEBUS_SEARCHER_PARENT_PID set (the scheduler that started it)
it exits once that process is no longer its parent: a scheduler that was SIGKILLed leaves no
searcher behind (the scheduler also asks the kernel for SIGTERM then, PR_SET_PDEATHSIG).

With $TUNEBUS_KEYS_DIR set, a tcp:// endpoint is a CURVE server (docs/explanation/security.md): it
serves
with the keypair <keys-dir>/<--key-name>.key_secret (default $TUNEBUS_KEY_NAME, else "searcher",
the key the scheduler expects at <keys-dir>/searcher.key unless the experiment's
`search.server_key` names another) and accepts only the scheduler's key <keys-dir>/scheduler.key.
Make the keypair with `tunectl keygen searcher --role searcher --authorize` (the scheduler talks
only to a searcher whose key its allow-list holds with role searcher).

Samplers (Optuna 3.1): tpe (TPESampler), cmaes (CmaEsSampler), qmc (QMCSampler), nsga2
(NSGAIISampler), random (RandomSampler). Keyword arguments for the sampler's constructor come
from --sampler-option KEY=JSON (repeatable) and from the experiment's `search.options` map (which
wins). The seed is --seed, or else the experiment's seed.

State: one Optuna study per session. `hello` starts a new one; the scheduler then tells every
journaled event again (a replay through the same ask/tell calls, the configs fixed by
enqueue_trial), so a restarted searcher holds the observations it had; its sampler is then seeded
with the seed and the number of replayed events, so it does not repeat its first draws. Nothing is
kept on disk.
"""

import argparse
import json
import logging
import math
import os
import signal
import sys
import warnings

if not __package__:  # run by its path: import the package it is in, not its files one by one
    _package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[0:1] = [_package_parent]
from tunebus import _router  # noqa: E402  (the ROUTER loop and typed errors, PROTOCOL.md section 1)
from tunebus._errors import TuneError  # noqa: E402
from tunebus._router import ProtocolError  # noqa: E402

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5600"

LOG = logging.getLogger("tunebus.searcher")

SAMPLERS = {
    "tpe": "TPESampler",
    "cmaes": "CmaEsSampler",
    "qmc": "QMCSampler",
    "nsga2": "NSGAIISampler",
    "random": "RandomSampler",
}


def _primitive(value):
    return value is None or isinstance(value, (bool, int, float, str))


class Dimension:
    """One parameter of the space `hello` sends: its Optuna distribution and value mapping."""

    def __init__(self, spec, optuna):
        self.name = spec["name"]
        kind = spec.get("type")
        self.choices = None
        if kind == "categorical":
            self.choices = list(spec["choices"])
            # Optuna's categorical choices must be None/bool/int/float/str: others by index.
            self.by_index = not all(_primitive(c) for c in self.choices)
            values = list(range(len(self.choices))) if self.by_index else self.choices
            self.distribution = optuna.distributions.CategoricalDistribution(values)
        elif kind == "int":
            log = bool(spec.get("log", False))
            step = max(1, int(spec.get("step", 1) or 1))
            # Optuna cannot step a log int: the scheduler snaps values to the step.
            self.distribution = optuna.distributions.IntDistribution(
                int(spec["low"]), int(spec["high"]), log=log, step=1 if log else step
            )
        elif kind == "float":
            log = bool(spec.get("log", False))
            step = float(spec.get("step", 0) or 0)
            self.distribution = optuna.distributions.FloatDistribution(
                float(spec["low"]),
                float(spec["high"]),
                log=log,
                step=step if step > 0 and not log else None,
            )
        else:
            raise ProtocolError(
                "invalid_argument", "space: %s has unknown type %r" % (self.name, kind)
            )

    def to_optuna(self, value):
        if self.choices is not None and self.by_index:
            for i, c in enumerate(self.choices):
                if c == value:
                    return i
            raise ProtocolError(
                "invalid_argument", "%s: %r is not one of its choices" % (self.name, value)
            )
        return value

    def to_wire(self, value):
        if self.choices is not None and self.by_index:
            return self.choices[value]
        return value


class OptunaSearcher:
    """The protocol's state machine over one Optuna study per session."""

    def __init__(self, sampler, seed, sampler_options):
        import optuna  # imported here so --help works without it

        self.optuna = optuna
        self.sampler_name = sampler
        self.seed = seed
        self.sampler_options = dict(sampler_options)
        self.session = None
        self.study = None
        self.metric = ""
        self.dims = []
        self.distributions = {}
        self.trials = {}  # trial_id -> [optuna Trial, params on the wire, done]

    # ---- requests ---------------------------------------------------------------------------
    def handle(self, msg):
        kind = msg.get("type")
        if kind == "hello":
            return self.hello(msg)
        if kind not in ("tell", "ask"):
            raise ProtocolError("invalid_argument", "unknown message type %r" % (kind,))
        if self.session is None or msg.get("session") != self.session:
            raise ProtocolError(
                "failed_precondition",
                "unknown session %r (this searcher's is %r): send hello"
                % (msg.get("session"), self.session),
            )
        if kind == "tell":
            return self.tell(msg)
        return self.ask(msg)

    def hello(self, msg):
        optuna = self.optuna
        metric, mode = msg.get("metric", ""), msg.get("mode", "")
        if not metric or mode not in ("max", "min"):
            raise ProtocolError(
                "invalid_argument", "hello: metric and mode (max or min) are required"
            )
        dims = [Dimension(d, optuna) for d in msg.get("space", [])]
        options = dict(self.sampler_options)
        options.update(msg.get("options") or {})
        seed = self.seed if self.seed is not None else msg.get("seed")
        replay = int(msg.get("replay", 0) or 0)
        if seed is not None and replay > 0:
            # A session that replays: the replayed trials' params are fixed, so a sampler seeded
            # as at the start would draw its first draws again. Vary the seed with the replay.
            seed = (int(seed) * 1000003 + replay) % (2**32)
        cls = getattr(optuna.samplers, SAMPLERS[self.sampler_name])
        try:
            sampler = cls(seed=seed, **options)
        except TypeError as e:
            raise ProtocolError(
                "invalid_argument", "options: %s(%s): %s" % (cls.__name__, options, e)
            )
        self.study = optuna.create_study(
            direction="maximize" if mode == "max" else "minimize", sampler=sampler
        )
        self.session = msg.get("session")
        self.metric = metric
        self.dims = dims
        self.distributions = {d.name: d.distribution for d in dims}
        self.trials = {}
        LOG.info(
            "hello: session %s, experiment %s, %d parameters, %s %s of %s, seed %s",
            self.session,
            msg.get("experiment", ""),
            len(dims),
            cls.__name__,
            "maximising" if mode == "max" else "minimising",
            metric,
            seed,
        )
        return {
            "type": "hello_ok",
            "searcher": "optuna." + cls.__name__,
            "version": optuna.__version__,
        }

    def tell(self, msg):
        counts = {}
        for event in msg.get("events", []):
            kind = event.get("event")
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "suggested":
                self._suggested(event["trial_id"], event.get("params") or {})
            elif kind == "completed":
                self._completed(event["trial_id"], event.get("result"), event.get("error", False))
            elif kind == "evaluated":
                self._evaluated(event.get("params") or {}, event.get("value"))
            elif kind == "result":
                self._result(event["trial_id"], event.get("result"))
            else:
                raise ProtocolError("invalid_argument", "tell: unknown event %r" % (kind,))
        if set(counts) - {"result"}:
            LOG.info(
                "tell: %s; %d observations",
                ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())),
                self._observations(),
            )
        return {"type": "tell_ok", "observations": self._observations()}

    def ask(self, msg):
        trial_id = msg.get("trial_id", "")
        if trial_id not in self.trials:
            trial = self.study.ask(fixed_distributions=self.distributions)
            params = {d.name: d.to_wire(trial.params[d.name]) for d in self.dims}
            self.trials[trial_id] = [trial, params, False]
            LOG.info("ask %s: %s", trial_id, json.dumps(params, default=str))
        return {
            "type": "suggestion",
            "trial_id": trial_id,
            "status": "config",
            "params": self.trials[trial_id][1],
        }

    # ---- events -----------------------------------------------------------------------------
    def _suggested(self, trial_id, params):
        if trial_id in self.trials:
            return  # its own suggestion, or told twice
        fixed = {d.name: d.to_optuna(params[d.name]) for d in self.dims if d.name in params}
        self.study.enqueue_trial(fixed)
        trial = self.study.ask(fixed_distributions=self.distributions)
        self.trials[trial_id] = [trial, params, False]

    def _value(self, result, error):
        if error or not isinstance(result, dict):
            return None
        value = result.get(self.metric)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value) if math.isfinite(value) else None

    def _completed(self, trial_id, result, error):
        entry = self.trials.get(trial_id)
        if entry is None or entry[2]:
            return  # not ours, or ended already
        entry[2] = True
        value = self._value(result, error)
        if value is None:
            self.study.tell(entry[0], state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(entry[0], value)

    def _evaluated(self, params, value):
        fixed = {d.name: d.to_optuna(params[d.name]) for d in self.dims if d.name in params}
        dists = {k: self.distributions[k] for k in fixed}
        self.study.add_trial(
            self.optuna.trial.create_trial(params=fixed, distributions=dists, value=float(value))
        )

    def _result(self, trial_id, result):
        entry = self.trials.get(trial_id)
        value = self._value(result, False)
        step = result.get("training_iteration") if isinstance(result, dict) else None
        if entry is None or entry[2] or value is None or not isinstance(step, int):
            return
        try:
            entry[0].report(value, step)  # intermediate values, for inspection or pruners
        except Exception:  # noqa: BLE001 - a report Optuna refuses is not an error here
            pass

    def _observations(self):
        states = (self.optuna.trial.TrialState.COMPLETE,)
        return len(self.study.get_trials(deepcopy=False, states=states)) if self.study else 0


def write_ready_file(path, endpoint):
    """Writes the bound endpoint to `path` atomically, in the services' ready-file format
    (libs/service/ready_file.hpp): {service, pid, endpoints: {endpoint}, metrics_port}."""
    ready = {
        "service": "tunebus.searcher",
        "pid": os.getpid(),
        "endpoints": {"endpoint": endpoint},
        "metrics_port": 0,
    }
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(json.dumps(ready) + "\n")
    os.replace(tmp, path)


def parent_gone(parent_pid):
    """A stop() condition: true once `parent_pid` (an int, or None: never) is not our parent."""
    if parent_pid is None:
        return lambda: False
    return lambda: os.getppid() != parent_pid


def serve(searcher, endpoint, stop, ready_file=None, key_name="searcher"):
    """Answers requests on a ROUTER bound at `endpoint` until stop() is true (checked at least
    every 200 ms); once bound, writes the bound endpoint (a wildcard port resolved) to
    `ready_file` if given. Under $TUNEBUS_KEYS_DIR a tcp:// endpoint serves CURVE with keypair
    `key_name`."""

    def on_bound(bound):
        LOG.info("serving %s on %s", searcher.sampler_name, bound)
        if ready_file:
            write_ready_file(ready_file, bound)

    _router.serve(searcher.handle, endpoint, stop, on_bound, key_name)


def parse_option(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError("expected KEY=VALUE, got %r" % text)
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--endpoint",
        default=None,
        help="ZeroMQ endpoint to bind (tcp://127.0.0.1:* picks a free port: see --ready-file); "
        "default: $TUNEBUS_SEARCHER_ENDPOINT, else " + DEFAULT_ENDPOINT,
    )
    parser.add_argument("--sampler", choices=sorted(SAMPLERS), default="tpe")
    parser.add_argument("--seed", type=int, default=None, help="default: the experiment's seed")
    parser.add_argument(
        "--sampler-option",
        type=parse_option,
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a keyword argument of the sampler, e.g. n_startup_trials=5 (repeatable)",
    )
    parser.add_argument(
        "--key-name",
        default=os.environ.get("TUNEBUS_KEY_NAME") or "searcher",
        help="with $TUNEBUS_KEYS_DIR: serve a tcp:// endpoint with CURVE keypair "
        "<keys-dir>/NAME.key_secret (default: $TUNEBUS_KEY_NAME, else searcher)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--ready-file",
        default=None,
        metavar="PATH",
        help="once bound, write the bound endpoint to PATH as JSON "
        '({"service", "pid", "endpoints": {"endpoint": ...}, "metrics_port": 0}), atomically',
    )
    args = parser.parse_args(argv)
    endpoint = args.endpoint or os.environ.get("TUNEBUS_SEARCHER_ENDPOINT") or DEFAULT_ENDPOINT
    parent_pid = os.environ.get("TUNEBUS_SEARCHER_PARENT_PID")
    parent_pid = int(parent_pid) if parent_pid and parent_pid.isdigit() else None
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    import optuna

    # Optuna's own warnings (e.g. CMA-ES sampling a categorical independently) at debug only.
    optuna.logging.set_verbosity(
        optuna.logging.WARNING if args.log_level == "debug" else optuna.logging.ERROR
    )
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="optuna")
    searcher = OptunaSearcher(args.sampler, args.seed, dict(args.sampler_option))
    stopping = []
    for signo in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signo, lambda *_: stopping.append(True))
    orphaned = parent_gone(parent_pid)
    if orphaned():
        LOG.warning("the scheduler (pid %d) that started this searcher is gone", parent_pid)
        return 0
    try:
        serve(
            searcher, endpoint, lambda: bool(stopping) or orphaned(), args.ready_file, args.key_name
        )
    except TuneError as e:
        LOG.error("cannot serve %s: %s", endpoint, e.message)
        return 2
    if orphaned():
        LOG.warning(
            "the scheduler (pid %d) that started this searcher is gone: exiting", parent_pid
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
