"""Ray Tune 2.x's search space functions (ray/tune/search/sample.py) and their experiment-file form.

Each function returns a `Domain` whose `to_spec()` is the param_space entry of the experiment
file (docs/reference/schedulers.md "Search spaces"): `tune.loguniform(1e-4, 1e-1)` is
`{"loguniform": [0.0001, 0.1]}`. The scheduler draws the values (its variant generator, or the
searcher named in `search:`); `Domain.sample(rng)` draws one in the driver only for a suggestion
of a searcher the driver serves that lacks the key (tunebus._search_driver). A `sample_from`
function is called in the driver when the scheduler asks for its value (tunebus._driver,
PROTOCOL.md §7b `driver_sample`). Argument names and defaults are Ray's: `lower`, `upper`,
`q`, `base` (10), `mean` (0.0), `sd` (1.0), `categories`; upper bounds are exclusive for
`randint`/`lograndint` and inclusive for `qrandint`/`qlograndint`, as in Ray.
"""

import abc
import inspect
import math


class Domain(abc.ABC):
    """One sampled dimension: a sampler name of the experiment file and its argument list."""

    sampler = ""

    def __init__(self, *args):
        self.args = list(args)

    def to_spec(self):
        """The experiment file's form: {sampler: [args...]}."""
        return {self.sampler: list(self.args)}

    @abc.abstractmethod
    def sample(self, rng):
        """One value drawn with `rng` (a random.Random); each sampler class defines it."""

    def __repr__(self):
        return "%s(%s)" % (self.sampler, ", ".join(repr(a) for a in self.args))

    def __eq__(self, other):
        return type(self) is type(other) and self.args == other.args


class Float(Domain):
    """A float dimension (Ray's `Float`). `lower`/`upper` are its bounds as Ray's Float has them
    (None for `randn`/`qrandn`), for searchers that read the param space."""

    @property
    def lower(self):
        return None if self.sampler in ("randn", "qrandn") else self.args[0]

    @property
    def upper(self):
        return None if self.sampler in ("randn", "qrandn") else self.args[1]


class Integer(Domain):
    """An integer dimension (Ray's `Integer`). `lower` and `upper` are Ray's: `upper` exclusive
    for every integer sampler (Ray builds `qrandint(a, b)` as Integer(a, b + 1))."""

    @property
    def lower(self):
        return self.args[0]

    @property
    def upper(self):
        return self.args[1] + (1 if self.sampler in ("qrandint", "qlograndint") else 0)


class Categorical(Domain):
    """`choice`: one of `categories` (Ray's `Categorical`). A category that is a dict holding
    domains is a conditional branch: its domains are sampled only when it is picked (the
    experiment file's conditional branches, docs/reference/experiment-file.md)."""

    sampler = "choice"

    def __init__(self, categories):
        super().__init__(*list(categories))
        self.categories = list(categories)

    def to_spec(self, path="param_space"):
        return {
            "choice": [
                to_spec(c, "%s.choice[%d]" % (path, i))
                if isinstance(c, dict)
                else constant(c, "%s.choice[%d]" % (path, i))
                for i, c in enumerate(self.categories)
            ]
        }

    def sample(self, rng):
        return _resolve(rng.choice(self.categories), rng)


def _resolve(value, rng):
    """`value` with every domain inside its dicts sampled."""
    if isinstance(value, Domain):
        return value.sample(rng)
    if isinstance(value, dict):
        return {k: _resolve(v, rng) for k, v in value.items()}
    return value


def _round_to(value, q):
    # Ray's Quantized: np.round(value / q) * q, half away from zero as the scheduler rounds.
    return math.copysign(math.floor(abs(value) / q + 0.5), value) * q


def _log_uniform(rng, lower, upper, base):
    lo, hi = math.log(lower) / math.log(base), math.log(upper) / math.log(base)
    return base ** rng.uniform(lo, hi)


class _Uniform(Float):
    sampler = "uniform"

    def sample(self, rng):
        return rng.uniform(self.args[0], self.args[1])


class _QUniform(Float):
    sampler = "quniform"

    def sample(self, rng):
        lower, upper, q = self.args
        return min(max(_round_to(rng.uniform(lower, upper), q), lower), upper)


class _LogUniform(Float):
    sampler = "loguniform"

    def sample(self, rng):
        return _log_uniform(rng, self.args[0], self.args[1], self.args[2])


class _QLogUniform(Float):
    sampler = "qloguniform"

    def sample(self, rng):
        lower, upper, q, base = self.args
        return min(max(_round_to(_log_uniform(rng, lower, upper, base), q), lower), upper)


class _Randn(Float):
    sampler = "randn"

    def sample(self, rng):
        return rng.gauss(self.args[0], self.args[1])


class _QRandn(Float):
    sampler = "qrandn"

    def sample(self, rng):
        return _round_to(rng.gauss(self.args[0], self.args[1]), self.args[2])


class _Randint(Integer):
    sampler = "randint"

    def sample(self, rng):
        return rng.randrange(self.args[0], self.args[1])


class _QRandint(Integer):
    sampler = "qrandint"

    def sample(self, rng):
        lower, upper, q = self.args
        first = -(-lower // q) * q
        return rng.randrange(first, upper + 1, q)


class _LogRandint(Integer):
    sampler = "lograndint"

    def sample(self, rng):
        lower, upper, base = self.args
        return min(int(_log_uniform(rng, lower, upper, base)), upper - 1)


class _QLogRandint(Integer):
    sampler = "qlograndint"

    def sample(self, rng):
        lower, upper, q, base = self.args
        value = int(_round_to(_log_uniform(rng, lower, upper, base), q))
        return min(max(value, -(-lower // q) * q), upper // q * q)


class Function(Domain):
    """`sample_from(func)` (Ray Tune's `Function`): `func(spec)`, or `func()` when it takes no
    argument, computes the value in the driver, with `spec.config` the trial's config drawn so
    far. The experiment file says `{sample_from: driver}`; the scheduler's variant generator
    draws the rest of the config and asks the driver for this value (tunebus._driver,
    PROTOCOL.md §7b `driver_sample`). ValueError for a `func` that is not callable with zero or
    one argument (Ray's message)."""

    sampler = "sample_from"

    def __init__(self, func):
        super().__init__()
        if not callable(func):
            raise ValueError("sample_from needs a callable, got %r" % (func,))
        self.func = func
        self.pass_spec = _takes_arguments(func, 1)
        if not self.pass_spec and not _takes_arguments(func, 0):
            raise ValueError(
                "The function passed to a `Function` parameter must be callable with either 0 or "
                "1 parameters."
            )

    def to_spec(self):
        return {"sample_from": "driver"}

    def sample(self, rng, spec=None):
        """`func(spec)`, or `func()` for a function without argument; `rng` is not used (the
        function draws as it likes). Raises what `func` raises."""
        return self.func(spec) if self.pass_spec else self.func()


def _takes_arguments(func, count):
    """Whether `func` can be called with `count` positional arguments (True when Python cannot
    tell, e.g. some builtins)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def uniform(lower, upper):
    """A float uniformly in [lower, upper] (Ray's `tune.uniform`)."""
    return _Uniform(lower, upper)


def quniform(lower, upper, q):
    """A float uniformly in [lower, upper], rounded to a multiple of q (Ray's `tune.quniform`)."""
    return _QUniform(lower, upper, q)


def loguniform(lower, upper, base=10):
    """A float log-uniformly in [lower, upper]; lower > 0 (Ray's `tune.loguniform`)."""
    return _LogUniform(lower, upper, base)


def qloguniform(lower, upper, q, base=10):
    """`loguniform` rounded to a multiple of q (Ray's `tune.qloguniform`)."""
    return _QLogUniform(lower, upper, q, base)


def randn(mean=0.0, sd=1.0):
    """A normal float (Ray's `tune.randn`)."""
    return _Randn(mean, sd)


def qrandn(mean, sd, q):
    """A normal float rounded to a multiple of q (Ray's `tune.qrandn`)."""
    return _QRandn(mean, sd, q)


def randint(lower, upper):
    """An integer in [lower, upper): upper exclusive (Ray's `tune.randint`)."""
    return _Randint(lower, upper)


def qrandint(lower, upper, q=1):
    """A multiple of q in [lower, upper]: upper inclusive (Ray's `tune.qrandint`)."""
    return _QRandint(lower, upper, q)


def lograndint(lower, upper, base=10):
    """An integer log-uniformly in [lower, upper): upper exclusive (Ray's `tune.lograndint`)."""
    return _LogRandint(lower, upper, base)


def qlograndint(lower, upper, q, base=10):
    """A multiple of q log-uniformly in [lower, upper]: upper inclusive (Ray's
    `tune.qlograndint`)."""
    return _QLogRandint(lower, upper, q, base)


def choice(categories):
    """One of `categories`, uniformly (Ray's `tune.choice`)."""
    return Categorical(categories)


def grid_search(values):
    """Every value of `values`, each × num_samples. As in Ray, the plain dict
    {"grid_search": values}, which a param space may also spell out itself."""
    return {"grid_search": list(values)}


def sample_from(func):
    """A value computed in the driver by `func(spec)` (Ray's `tune.sample_from`)."""
    return Function(func)


def is_grid(value):
    """True for Ray's grid form {"grid_search": [...]}."""
    return isinstance(value, dict) and len(value) == 1 and "grid_search" in value


def has_function(space):
    """True when the param space holds a `sample_from` anywhere."""
    if isinstance(space, Function):
        return True
    if isinstance(space, dict) and not is_grid(space):
        return any(has_function(v) for v in space.values())
    return False


def to_spec(space, path="param_space"):
    """The experiment file's param_space for a Ray param space (nested dicts of domains, grids
    and constants). Raises ValueError naming the path of a value JSON cannot hold or of a domain
    inside a list (the scheduler samples only map entries)."""
    if isinstance(space, Categorical):
        return space.to_spec(path)
    if isinstance(space, Domain):
        return space.to_spec()
    if is_grid(space):
        values = space["grid_search"]
        if not isinstance(values, (list, tuple)):
            raise ValueError("%s.grid_search: needs a list, got %r" % (path, values))
        return {
            "grid_search": [
                constant(v, "%s.grid_search[%d]" % (path, i)) for i, v in enumerate(values)
            ]
        }
    if isinstance(space, dict):
        out = {}
        for key, value in space.items():
            if not isinstance(key, str):
                raise ValueError("%s: keys must be strings, got %r" % (path, key))
            out[key] = to_spec(value, "%s.%s" % (path, key))
        return out
    return constant(space, path)


def constant(value, path):
    """`value` as the experiment file and the wire carry it (a tuple becomes a list, a numpy
    scalar its Python value). Raises ValueError naming `path` for a value JSON and msgpack cannot
    hold (a non-finite float, an arbitrary object, a search space function)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("%s: %r has no JSON spelling" % (path, value))
        return value
    if isinstance(value, (list, tuple)):
        return [constant(v, "%s[%d]" % (path, i)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): constant(v, "%s.%s" % (path, k)) for k, v in value.items()}
    if isinstance(value, Domain):
        raise ValueError(
            "%s: a search space function inside a list is not supported; "
            "use tune.choice over the values" % path
        )
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return constant(value.item(), path)
    raise ValueError(
        "%s: %s is not a JSON value; a trial's config travels as JSON. Pass large or arbitrary "
        "objects with tune.with_parameters(trainable, name=object) instead"
        % (path, type(value).__name__)
    )
