"""Stand-ins for the optimisation libraries Debian does not package (hyperopt, bayes_opt, skopt,
nevergrad, ax, hebo, zoopt), for test_search_integrations.py: each has the few calls tunebus's
adapter makes (tune/search/<library>.py), draws deterministic points inside the space it is given
(the low end plus a step per ask, so points differ) and records what it is told.

`install(monkeypatch, name)` puts the stand-in's modules into sys.modules and returns its
recorder: {"space": what the adapter built, "told": [(params, loss or target), ...]}.
"""

import math
import types


def _frac(i):
    return ((i * 7) % 10) / 10.0  # 0.0, 0.7, 0.4, 0.1, 0.8, ...


def _module(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def _pick(kind, args, i):
    """A value of a stand-in dimension: (kind, low, high) or ("cat", choices)."""
    if kind == "cat":
        return args[0][i % len(args[0])]
    low, high = args
    value = low + (high - low) * _frac(i)
    return int(round(value)) if kind == "int" else value


def skopt(rec):
    class Dim:
        def __init__(self, kind, *args, **kwargs):
            self.kind, self.args = kind, args

    space = _module(
        "skopt.space",
        Real=lambda lo, hi, prior="uniform": Dim("real", lo, hi),
        Integer=lambda lo, hi, prior="uniform": Dim("int", lo, hi),
        Categorical=lambda choices: Dim("cat", choices),
    )

    class Optimizer:
        def __init__(self, dimensions):
            rec["space"] = dimensions
            self.dims, self.n = dimensions, 0

        def ask(self):
            self.n += 1
            return [_pick(d.kind, d.args, self.n) for d in self.dims]

        def tell(self, x, y):
            rec["told"].append((list(x), y))

    return {"skopt": _module("skopt", Optimizer=Optimizer, space=space), "skopt.space": space}


def bayes_opt(rec):
    class BayesianOptimization:
        def __init__(self, f, pbounds, verbose=0, random_state=None):
            rec["space"] = pbounds
            self.n = 0

        def suggest(self, utility):
            self.n += 1
            return {k: _pick("real", b, self.n) for k, b in rec["space"].items()}

        def register(self, params, target):
            rec["told"].append((dict(params), target))

    return {
        "bayes_opt": _module(
            "bayes_opt", BayesianOptimization=BayesianOptimization, UtilityFunction=lambda **kw: kw
        )
    }


def nevergrad(rec):
    class Param:
        def __init__(self, kind, *args):
            self.kind, self.args = kind, args

        def set_integer_casting(self):
            self.kind = "int"
            return self

    class Candidate:
        def __init__(self, value):
            self.value = value

    class Dict:
        def __init__(self, **params):
            self.params = params

        def spawn_child(self, new_value):
            return Candidate(dict(new_value))

    p = _module(
        "nevergrad.p",
        Scalar=lambda lower, upper: Param("real", lower, upper),
        Log=lambda lower, upper: Param("real", lower, upper),
        Choice=lambda choices: Param("cat", choices),
        Dict=Dict,
    )

    class Optimizer:
        def __init__(self, parametrization, budget=None):
            rec["space"] = parametrization.params
            self.parametrization, self.n = parametrization, 0

        def ask(self):
            self.n += 1
            return Candidate(
                {k: _pick(v.kind, v.args, self.n) for k, v in self.parametrization.params.items()}
            )

        def tell(self, candidate, loss):
            rec["told"].append((dict(candidate.value), loss))

    optimizers = _module(
        "nevergrad.optimizers", registry={"NGOpt": Optimizer}, OnePlusOne=Optimizer
    )
    return {"nevergrad": _module("nevergrad", p=p, optimizers=optimizers)}


def ax(rec):
    class AxClient:
        def __init__(self, **kwargs):
            self.trials = {}

        def create_experiment(self, parameters, objectives, **kwargs):
            rec["space"] = (parameters, objectives)

        def _params(self, i):
            out = {}
            for p in rec["space"][0]:
                if p["type"] == "choice":
                    out[p["name"]] = _pick("cat", (p["values"],), i)
                else:
                    out[p["name"]] = _pick(
                        p["value_type"] if p["value_type"] == "int" else "real", p["bounds"], i
                    )
            return out

        def get_next_trial(self):
            index = len(self.trials)
            self.trials[index] = self._params(index + 1)
            return dict(self.trials[index]), index

        def attach_trial(self, parameters):
            index = len(self.trials)
            self.trials[index] = dict(parameters)
            return dict(parameters), index

        def complete_trial(self, trial_index, raw_data):
            rec["told"].append((self.trials[trial_index], raw_data))

        def log_trial_failure(self, trial_index):
            rec["told"].append((self.trials[trial_index], None))

    client = _module(
        "ax.service.ax_client",
        AxClient=AxClient,
        ObjectiveProperties=lambda minimize: {"minimize": minimize},
    )
    service = _module("ax.service", ax_client=client)
    return {
        "ax": _module("ax", service=service),
        "ax.service": service,
        "ax.service.ax_client": client,
    }


def hebo(rec):
    import pandas

    class DesignSpace:
        def parse(self, params):
            rec["space"] = params
            return params

    class HEBO:
        def __init__(self, space):
            self.space, self.n = space, 0

        def suggest(self, n_suggestions=1):
            self.n += 1
            row = {}
            for p in self.space:
                if p["type"] == "cat":
                    row[p["name"]] = _pick("cat", (p["categories"],), self.n)
                else:
                    row[p["name"]] = _pick(
                        "int" if "int" in p["type"] else "real", (p["lb"], p["ub"]), self.n
                    )
            return pandas.DataFrame([row])

        def observe(self, frame, y):
            rec["told"].append((frame.iloc[0].to_dict(), float(y[0][0])))

    ds = _module("hebo.design_space.design_space", DesignSpace=DesignSpace)
    opt = _module("hebo.optimizers.hebo", HEBO=HEBO)
    return {
        "hebo": _module("hebo"),
        "hebo.design_space": _module("hebo.design_space"),
        "hebo.design_space.design_space": ds,
        "hebo.optimizers": _module("hebo.optimizers"),
        "hebo.optimizers.hebo": opt,
    }


def zoopt(rec):
    class ValueType:
        CONTINUOUS, DISCRETE, GRID = "real", "int", "cat"

    class Solution:
        def __init__(self, x):
            self.x = x

        def get_x(self):
            return self.x

    class SRacosTune:
        def __init__(self, dimension, parameter, parallel_num=1):
            rec["space"] = dimension
            self.n = 0

        def suggest(self):
            self.n += 1
            if self.n > rec["budget"]:
                return "FINISHED"
            return Solution(
                [_pick(d[0], (d[1],) if d[0] == "cat" else d[1], self.n) for d in rec["space"]]
            )

        def complete(self, solution, value):
            rec["told"].append((list(solution.get_x()), value))

    sracos = _module("zoopt.algos.opt_algorithms.racos.sracos", SRacosTune=SRacosTune)
    return {
        "zoopt": _module(
            "zoopt",
            ValueType=ValueType,
            Dimension2=lambda dims: dims,
            Parameter=lambda budget, **kw: budget,
        ),
        "zoopt.algos": _module("zoopt.algos"),
        "zoopt.algos.opt_algorithms": _module("zoopt.algos.opt_algorithms"),
        "zoopt.algos.opt_algorithms.racos": _module("zoopt.algos.opt_algorithms.racos"),
        "zoopt.algos.opt_algorithms.racos.sracos": sracos,
    }


def hyperopt(rec):
    DONE, ERROR = 2, 3

    class Trials:
        def __init__(self):
            self._dynamic_trials = []
            self.trials = []

        def refresh(self):
            self.trials = [d for d in self._dynamic_trials if d["state"] != ERROR]

        def new_trial_ids(self, n):
            start = len(self._dynamic_trials)
            return list(range(start, start + n))

        def insert_trial_docs(self, docs):
            self._dynamic_trials.extend(docs)

    def fmin(
        fn,
        space,
        algo,
        max_evals,
        trials,
        rstate,
        catch_eval_exceptions,
        show_progressbar,
        allow_trials_fmin,
    ):
        rec["space"] = space
        i = len(trials._dynamic_trials) + 1
        params = {}
        for name, expr in space.items():
            kind = expr[0]
            if kind == "int":
                kind, expr = "int", expr[1]
            params[name] = _pick("cat" if expr[0] == "choice" else kind, expr[1:], i)
        doc = {"state": 0, "tid": i - 1, "misc": {"vals": params}, "result": {"status": "new"}}
        trials._dynamic_trials.append(doc)
        try:
            fn(params)
        except Exception:
            doc["state"] = ERROR
            trials.refresh()
            raise

    def told():
        return [
            (d["misc"]["vals"], d["result"]["loss"])
            for d in rec["trials"]._dynamic_trials
            if d["state"] == DONE
        ]

    class RecordingTrials(Trials):
        def __init__(self):
            super().__init__()
            rec["trials"] = self

    rec["told_fn"] = told
    hp = _module(
        "hyperopt.hp",
        uniform=lambda n, lo, hi: ("real", lo, hi),
        quniform=lambda n, lo, hi, q: ("real", lo, hi),
        loguniform=lambda n, lo, hi: ("real", math.exp(lo), math.exp(hi)),
        qloguniform=lambda n, lo, hi, q: ("real", math.exp(lo), math.exp(hi)),
        normal=lambda n, m, s: ("real", m - s, m + s),
        qnormal=lambda n, m, s, q: ("real", m - s, m + s),
        randint=lambda n, lo, hi: ("int", ("real", lo, hi - 1)),
        choice=lambda n, choices: ("choice", choices),
    )
    pyll = _module("hyperopt.pyll", scope=types.SimpleNamespace(int=lambda e: ("int", e)))
    base = _module("hyperopt.base", JOB_STATE_DONE=DONE, JOB_STATE_ERROR=ERROR)
    utils = _module("hyperopt.utils", coarse_utcnow=lambda: None)
    tpe = _module("hyperopt.tpe", suggest=lambda *a, **kw: None)
    return {
        "hyperopt": _module(
            "hyperopt",
            hp=hp,
            pyll=pyll,
            base=base,
            tpe=tpe,
            fmin=fmin,
            utils=utils,
            Trials=RecordingTrials,
        )
    }


LIBRARIES = {
    "skopt": skopt,
    "bayes_opt": bayes_opt,
    "nevergrad": nevergrad,
    "ax": ax,
    "hebo": hebo,
    "zoopt": zoopt,
    "hyperopt": hyperopt,
}


def install(monkeypatch, name, **extra):
    rec = {"space": None, "told": []}
    rec.update(extra)
    for module_name, module in LIBRARIES[name](rec).items():
        monkeypatch.setitem(__import__("sys").modules, module_name, module)
    return rec
