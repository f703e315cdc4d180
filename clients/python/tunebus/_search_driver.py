"""A Ray-style searcher served to the scheduler from the driver (proto/PROTOCOL.md §7a).

Ray Tune runs its searchers in the driver process; so does tunebus for every searcher it does not
implement in the scheduler: a user's `tune.search.Searcher` subclass, `OptunaSearch`, `Repeater`,
a `ConcurrencyLimiter` around one of them, the library searchers (tune.search.hyperopt, ...).
The experiment file then says `search: {type: external, endpoint}`, the endpoint being a ROUTER
of the driver (tunebus._driver.DriverLink), whose requests `DriverSearch.handle` answers:

    hello  -> a searcher with no state (see "Sessions"), set_search_properties as Ray calls it
    tell   -> suggested: adopted (`_tunebus_adopt`) unless this session suggested it
              completed: on_trial_complete(trial_id, result, error)
              evaluated: add_evaluated_point(config, value) (ignored when not implemented)
              result:    on_trial_result(trial_id, result), once per training_iteration
              (results as Ray's searchers get them: with the trial's `config`, flattened to
              "a/b" keys)
    ask    -> suggest(trial_id): a dict is the config (`config`), None `not_now`,
              Searcher.FINISHED `finished`; a trial asked again gets the same params

The param space the scheduler gets (`DriverSearch.exp_space`): the Tuner's param space (its
domains typed, so the scheduler snaps values to them and shows them), plus every key the searcher
suggests beyond it: as a typed dim when the searcher says its domain (OptunaSearch's own `space`)
and as `{sample_from: driver}` (any value, taken as is) otherwise. Those keys come from the
searcher's `_tunebus_space()`; a searcher that cannot tell (a user's subclass) is asked for one
suggestion on a copy before the experiment starts, and its keys are taken. A key a later
suggestion adds is dropped with a warning (the scheduler's dims are fixed at submission); a dim
the suggestion lacks is drawn from its domain in the driver, or sent as None (the trial's config
then holds None there).

Sessions: the scheduler starts a new session at each `hello` (after its own restart, or when the
link failed) and replays its journal: every suggestion and end, in order. The first session uses
the user's searcher object itself, so after `fit()` it holds what Ray's would (e.g. for `save`).
A later session rebuilds it from a copy made before the first suggestion (`_tunebus_copy`; the
user's objects, a wrapped searcher too, take the copy's state: `_tunebus_take`) and replays:
each `suggested` trial is adopted by `_tunebus_adopt` (OptunaSearch: `enqueue_trial` of the
journaled params; a user searcher: its `suggest` is asked again, which gives the same config
when it is deterministic; a warning says when it does not), each `completed` told. A searcher
that cannot be copied keeps its state across sessions and ignores the replay of trials it knows
(a warning says so).

Errors: an exception in `suggest` (or a config that is not a dict, or a value outside a typed
dim) is logged with its traceback and ends the search (`finished`: the running trials finish, no
new ones start) and `DriverSearch.error` holds it; an exception in on_trial_result /
on_trial_complete / add_evaluated_point is logged and the call skipped. Neither reaches the
scheduler as an error reply, which would make it reconnect and replay into the same exception.

`tune.sample_from` is not served here: the scheduler's variant generator draws such a param space
and asks the driver link for its values (tunebus._driver, PROTOCOL.md §7b); beside a searcher it
is refused (TuneError invalid_argument).
"""

import logging
import math
import random

from tunebus import _space
from tunebus._errors import TuneError
from tunebus._router import ProtocolError
from tunebus.tune.search._builtin import BuiltinSearcher
from tunebus.tune.search._util import flatten
from tunebus.tune.search._wrapper import set_search_properties
from tunebus.tune.search.concurrency_limiter import ConcurrencyLimiter
from tunebus.tune.search.repeater import Repeater
from tunebus.tune.search.searcher import DEFAULT_METRIC, Searcher

LOG = logging.getLogger("tunebus")
PROBE_TRIAL_ID = "tunebus_probe"
# §7a's timeout_s for the driver's answers: a model-based suggest (a GP's fit) or a long replay
# may take longer than the scheduler's default 10 s; it waits without blocking anything else.
TIMEOUT_S = 60


def runs_in_driver(searcher):
    """True for a searcher the driver serves (see the module doc); False for the scheduler's
    built-ins and a ConcurrencyLimiter around one."""
    if isinstance(searcher, ConcurrencyLimiter):
        return runs_in_driver(searcher.searcher)
    return not isinstance(searcher, BuiltinSearcher)


def _first(value):
    return value[0] if isinstance(value, (list, tuple)) else value


def _get(config, path):
    for key in path:
        if not isinstance(config, dict) or key not in config:
            raise KeyError(key)
        config = config[key]
    return config


def _leaf_paths(config, prefix=()):
    for key, value in config.items():
        if isinstance(value, dict) and value:
            yield from _leaf_paths(value, prefix + (key,))
        else:
            yield prefix + (key,)


def _domains(space, prefix=()):
    """{path: Domain} of a Ray param space."""
    out = {}
    for key, value in (space or {}).items():
        if isinstance(value, _space.Domain):
            out[prefix + (key,)] = value
        elif isinstance(value, dict) and not _space.is_grid(value):
            out.update(_domains(value, prefix + (key,)))
    return out


def _fits(dim, value):
    """Whether the scheduler takes `value` for a typed dim of `hello`'s space (§7a)."""
    kind = dim.get("type")
    if kind == "categorical":
        return any(
            value == c and isinstance(value, bool) == isinstance(c, bool)
            for c in dim.get("choices") or []
        )
    if kind in ("float", "int"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return math.isfinite(value) and (not dim.get("log") or value > 0)
    return True


def _plain(value):
    """`value` with numpy scalars and arrays made Python values (msgpack packs no numpy type;
    a user's `np.random.randint` gives numpy.int64)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return value.tolist()  # a numpy scalar (its Python value) or array (a list)
    return value


def _constants(space):
    """A copy of a Ray param space without its domains (and grids)."""
    out = {}
    for key, value in space.items():
        if isinstance(value, _space.Domain) or _space.is_grid(value):
            continue
        out[key] = _constants(value) if isinstance(value, dict) else value
    return out


class DriverSearch:
    """One experiment's driver-side searcher: the experiment file's part of it (`amend`) and the
    §7a server (`handle`, called by tunebus._driver.DriverLink's thread)."""

    def __init__(self, searcher, param_space=None, metric=None, mode=None, spec=None):
        """`searcher`: a tune.search.Searcher that `runs_in_driver`; `param_space`: the Tuner's;
        `metric`/`mode`: the TuneConfig's; `spec`: Ray's `set_search_properties` keywords
        (stop, num_samples, time_budget_s). Raises what Ray raises for the combination (ValueError
        for a param space with domains that the searcher does not take; the searcher's own
        errors, e.g. OptunaSearch's RuntimeError without metric and mode) and TuneError
        invalid_argument for what tunebus cannot serve (grid_search, sample_from)."""
        if not isinstance(searcher, Searcher):
            raise TuneError(
                "invalid_argument",
                "search_alg must be a tune.search.Searcher, got %r" % (searcher,),
            )
        self.param_space = param_space or {}
        self._check_space(self.param_space, type(searcher).__name__, "param_space")
        self.metric, self.mode = metric, mode
        self.spec = dict(spec or {})
        self.name = type(searcher).__name__
        self._user = searcher
        try:
            self._pristine = searcher._tunebus_copy()
        except Exception as e:  # noqa: BLE001 - a searcher holding what cannot be copied
            LOG.warning(
                "tunebus: %s cannot be copied (%s: %s): after a scheduler restart it "
                "keeps its state instead of being rebuilt from the scheduler's journal",
                self.name,
                type(e).__name__,
                e,
            )
            self._pristine = None
        probe = self._pristine._tunebus_copy() if self._pristine is not None else None
        self._configure(probe if probe is not None else searcher)
        configured = probe if probe is not None else searcher
        self._configured_user = probe is None
        space = configured._tunebus_space()
        if space is None:
            space = self._probe(probe)
        self._searcher_metric = configured.metric
        self._searcher_mode = configured.mode
        self.exp_space = self._experiment_space(space)
        self.domains = _domains(self.param_space)
        for path, domain in space.items():
            if path not in self.domains and isinstance(domain, _space.Domain):
                self.domains[path] = domain
        samples = self.spec.get("num_samples")
        if (
            isinstance(searcher, Repeater)
            and isinstance(samples, int)
            and samples > 0
            and samples % searcher.repeat
        ):
            LOG.warning(
                "`num_samples` is now expected to be the total number of trials, "
                "including the repeat trials. For example, set num_samples=15 if you "
                "intend to obtain 3 search algorithm suggestions and repeat each "
                "suggestion 5 times. Any leftover trials (num_samples mod repeat) will "
                "be ignored."
            )  # Ray's warning (repeater.py)
        self.search_spec = {"type": "external", "timeout_s": TIMEOUT_S}
        if isinstance(searcher, ConcurrencyLimiter) and searcher._limit_concurrency:
            self.search_spec["max_concurrent"] = searcher.max_concurrent
        self._start(searcher)

    def _start(self, searcher):
        """The §7a state before the first hello."""
        self.live = searcher
        self.session, self.sessions, self.dims = None, 0, []
        self.finished = False
        self.error = None  # the exception that ended the search
        self._warned = set()
        self.rng = random.Random()
        self._forget()

    def _forget(self):
        """Drops what a session knew of its trials."""
        self.suggested = {}  # trial id -> params answered or adopted this session
        self.configs = {}  # trial id -> its config (for the results' `config`, as Ray's)
        self.completed = set()
        self.iterations = {}  # trial id -> last training_iteration told to on_trial_result

    # ---- the experiment file ----------------------------------------------------------------
    def apply(self, exp):
        """`exp` with this searcher's param space, metric/mode (the TuneConfig's, else the
        searcher's first, else Ray's anonymous `_metric`/max: §7a needs both) and
        `search: {type: external, timeout_s: 60}` (and `max_concurrent` for an outer
        ConcurrencyLimiter); `amend` adds the endpoint."""
        exp = dict(exp)
        exp["param_space"] = self.exp_space
        exp["search"] = dict(self.search_spec)
        if exp.get("metric") is None:
            exp["metric"] = _first(self._searcher_metric) or DEFAULT_METRIC
        if exp.get("mode") is None:
            exp["mode"] = _first(self._searcher_mode) or "max"
        if exp["mode"] not in ("min", "max"):
            exp["mode"] = "max"  # Ray's "obs" objective: observed, not optimised
        return exp

    def amend(self, exp, endpoint, server_key=None):
        """`apply`, with the searcher's endpoint (a ROUTER of the driver) and, under CURVE, its
        public key."""
        exp = self.apply(exp)
        exp["search"]["endpoint"] = endpoint
        if server_key:
            exp["search"]["server_key"] = server_key
        return exp

    @staticmethod
    def _check_space(space, name, where, path=""):
        for key, value in space.items():
            here = "%s.%s" % (where, key) if not path else "%s.%s" % (path, key)
            if _space.is_grid(value):
                raise TuneError(
                    "invalid_argument",
                    "%s: grid_search cannot be combined with "
                    "search_alg %s (Ray's searchers do not expand grids); use "
                    "tune.choice" % (here, name),
                )
            if isinstance(value, _space.Function):
                raise TuneError(
                    "invalid_argument",
                    "%s: tune.sample_from is drawn by the scheduler's variant generator "
                    "(no search_alg); it cannot be combined with search_alg %s" % (here, name),
                )
            if isinstance(value, dict):
                DriverSearch._check_space(value, name, where, here)

    def _configure(self, searcher):
        """Ray's Tuner: set_search_properties(metric, mode, param_space, **spec) when there is
        a param space; False with domains in it is Ray's ValueError."""
        if not self.param_space:
            return
        took = set_search_properties(
            searcher, self.metric, self.mode, self.param_space, **self.spec
        )
        if not took and _domains(self.param_space):
            raise ValueError(
                "You passed a `param_space` parameter to `Tuner()` with unresolved parameters, "
                "but the search algorithm was already instantiated with a search space. Make "
                "sure that `param_space` does not contain any more parameter definitions - "
                "include them in the search algorithm's search space if necessary."
            )

    def _probe(self, probe):
        """The keys of one suggestion of a copy (a searcher that does not list them)."""
        if probe is None:
            LOG.warning(
                "tunebus: %s cannot be copied, so the keys it suggests beyond the "
                "param space are unknown: only the param space's keys reach the trials",
                self.name,
            )
            return {}
        config = probe.suggest(PROBE_TRIAL_ID)
        if not isinstance(config, dict):
            LOG.warning(
                "tunebus: %s's first suggestion was %r, not a config: only the param "
                "space's keys reach the trials",
                self.name,
                config,
            )
            return {}
        return {path: None for path in _leaf_paths(config)}

    def _experiment_space(self, space):
        exp_space = _space.to_spec(self.param_space)
        domains = _domains(self.param_space)
        for path, domain in sorted(space.items()):
            if path in domains:
                continue
            node = exp_space
            for i, key in enumerate(path[:-1]):
                child = node.get(key)
                if child is None:
                    child = node[key] = {}
                if (
                    not isinstance(child, dict)
                    or len(child) == 1
                    and next(iter(child)) in _SAMPLERS
                ):
                    raise TuneError(
                        "invalid_argument",
                        "%s suggests %s, but param_space.%s is "
                        "not a dict" % (self.name, "/".join(path), ".".join(path[: i + 1])),
                    )
                node = child
            node[path[-1]] = (
                domain.to_spec() if isinstance(domain, _space.Domain) else {"sample_from": "driver"}
            )
        return exp_space

    # ---- the §7a server ---------------------------------------------------------------------
    def handle(self, msg):
        """The reply to one §7a request (ProtocolError for a refused one)."""
        kind = msg["type"]
        if kind == "hello":
            return self._hello(msg)
        if self.session is None or msg.get("session") != self.session:
            raise ProtocolError(
                "failed_precondition",
                "unknown session %r (this searcher's is "
                "%r): send hello" % (msg.get("session"), self.session),
            )
        if kind == "tell":
            for event in msg.get("events") or []:
                self._event(event)
            return {"type": "tell_ok", "observations": len(self.completed)}
        if kind == "ask":
            return self._ask(msg.get("trial_id", ""))
        raise ProtocolError("invalid_argument", "unknown request type %r" % kind)

    def _hello(self, msg):
        self.sessions += 1
        if self.sessions == 1:
            if not self._configured_user:
                self._configure(self.live)
        elif self._pristine is not None:
            fresh = self._pristine._tunebus_copy()
            self._configure(fresh)
            self._user._tunebus_take(fresh)
            self.live = self._user
        if self.sessions == 1 or self._pristine is not None:
            self._forget()
            self.finished = self.error is not None
        else:
            self._warn(
                "keeps",
                "tunebus: %s could not be copied: session %d keeps its state and "
                "ignores the replay of the trials it knows" % (self.name, self.sessions),
            )
        self.session = msg.get("session")
        self.dims = list(msg.get("space") or [])
        self.rng = random.Random(hash((msg.get("seed"), msg.get("replay"), self.sessions)))
        return {"type": "hello_ok", "searcher": "tunebus.driver." + self.name, "version": "1"}

    def _event(self, event):
        kind = event.get("event")
        trial_id = event.get("trial_id")
        if kind == "suggested":
            if trial_id in self.suggested:
                return
            params = event.get("params") or {}
            self.suggested[trial_id] = params
            config = event.get("config") or self._config_of(params)
            self.configs[trial_id] = config
            got = self._call("adopt", self.live._tunebus_adopt, trial_id, config)
            if isinstance(got, dict) and self._params(got, check=False) != params:
                self._warn(
                    "replay",
                    "tunebus: %s suggested another config for the replayed "
                    "trial %s than the journal holds (not deterministic?): it learns "
                    "from that trial's result as if it ran the config it suggested now"
                    % (self.name, trial_id),
                )
        elif kind == "completed":
            if trial_id not in self.suggested or trial_id in self.completed:
                return
            self.completed.add(trial_id)
            result = event.get("result")
            self._call(
                "on_trial_complete",
                self.live.on_trial_complete,
                trial_id,
                result=self._flat(trial_id, result) if isinstance(result, dict) else None,
                error=bool(event.get("error")),
            )
        elif kind == "evaluated":
            try:
                self.live.add_evaluated_point(event.get("config") or {}, event.get("value"))
            except NotImplementedError:
                pass
            except Exception:  # noqa: BLE001 - the searcher's own failure: logged
                LOG.exception("tunebus: %s.add_evaluated_point failed", self.name)
        elif kind == "result":
            result = event.get("result")
            if (
                trial_id not in self.suggested
                or trial_id in self.completed
                or not isinstance(result, dict)
            ):
                return
            iteration = result.get("training_iteration")
            if isinstance(iteration, int):
                if iteration <= self.iterations.get(trial_id, -1):
                    return  # told again (a restored trial reports its iteration again)
                self.iterations[trial_id] = iteration
            self._call(
                "on_trial_result", self.live.on_trial_result, trial_id, self._flat(trial_id, result)
            )
        else:
            raise ProtocolError("invalid_argument", "tell: unknown event %r" % (kind,))

    def _ask(self, trial_id):
        if trial_id in self.suggested:
            return self._answer(trial_id, "config", self.suggested[trial_id])
        if self.finished:
            return self._answer(trial_id, "finished")
        try:
            config = self.live.suggest(trial_id)
            if config is None:
                return self._answer(trial_id, "not_now")
            if isinstance(config, str) and config == Searcher.FINISHED:
                self.finished = True
                return self._answer(trial_id, "finished")
            if not isinstance(config, dict):
                raise TypeError(
                    "%s.suggest(%r) returned %r: a config dict, None or "
                    "Searcher.FINISHED" % (self.name, trial_id, config)
                )
            params = self._params(config, check=True)
        except Exception as e:  # noqa: BLE001 - Ray would end tune.run with it
            LOG.exception("tunebus: %s.suggest failed; no new trial starts", self.name)
            self.error = e
            self.finished = True
            return self._answer(trial_id, "finished")
        self.suggested[trial_id] = params
        self.configs[trial_id] = self._config_of(params)
        return self._answer(trial_id, "config", params)

    @staticmethod
    def _answer(trial_id, status, params=None):
        return {
            "type": "suggestion",
            "trial_id": trial_id,
            "status": status,
            "params": params or {},
        }

    def _params(self, config, check):
        """{dim name: value} for a suggested config (see the module doc)."""
        params, known = {}, set()
        for dim in self.dims:
            path = tuple(dim.get("path") or dim["name"].split("."))
            known.add(path)
            try:
                value = _plain(_get(config, path))
            except KeyError:
                domain = self.domains.get(path)
                value = domain.sample(self.rng) if domain is not None else None
            if check and not _fits(dim, value):
                raise ValueError(
                    "%s suggested %s=%r, which the param space's %s does not hold"
                    % (self.name, dim["name"], value, dim.get("sampler"))
                )
            params[dim["name"]] = value
        if check:
            extra = [p for p in _leaf_paths(config) if p not in known]
            if extra:
                self._warn(
                    ("extra",) + tuple(sorted(extra)),
                    "tunebus: %s suggested keys the experiment's param space does not "
                    "have, dropped: %s (the keys are fixed when the experiment starts)"
                    % (self.name, ", ".join("/".join(map(str, p)) for p in extra)),
                )
        return params

    def _config_of(self, params):
        """The config the scheduler builds for `params`: the param space's constants with each
        dim's value at its path."""
        config = _constants(self.param_space)
        for dim in self.dims:
            node = config
            path = dim.get("path") or dim["name"].split(".")
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = params.get(dim["name"])
        return config

    def _flat(self, trial_id, result):
        """A result as Ray's searchers get it: with the trial's `config`, flattened."""
        if "config" not in result and trial_id in self.configs:
            result = dict(result, config=self.configs[trial_id])
        return flatten(result)

    def _call(self, what, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the searcher's own failure: logged, skipped
            if what not in self._warned:
                self._warned.add(what)
                LOG.exception(
                    "tunebus: %s.%s failed (logged once; later failures are skipped " "quietly)",
                    self.name,
                    what,
                )
            return None

    def _warn(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            LOG.warning("%s", message)


_SAMPLERS = {
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "randn",
    "qrandn",
    "randint",
    "qrandint",
    "lograndint",
    "qlograndint",
    "choice",
    "grid_search",
    "sample_from",
}

__all__ = ["DriverSearch", "runs_in_driver"]
