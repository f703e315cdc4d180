"""Optuna's side of the search quality benchmark (docs/reference/search.md, "Search quality
benchmark"):
Optuna's TPESampler on the same functions and param spaces as bench/search_quality.cpp
(bench/quality/test_functions.hpp; the digits model of bench/quality/digits_objective.py), with
the same n_startup_trials (10), budget (trials) and seeds, strictly sequential
(study.optimize, one trial at a time). Every other TPESampler argument is Optuna's default.

Prints JSON lines of the C++ side's shapes:
  {"benchmark": "search_quality_run", "side": "optuna", "method": "optuna_tpe", "function",
   "seeds", "trials", "values": [[value of trial 0, 1, ...] per seed], "optuna_version", ...}
  {"benchmark": "search_latency", "side": "optuna", "function", "observations", "p50_ms",
   "p99_ms", ...}: study.ask() plus the function's suggest calls (where TPESampler samples)
   with --latency-observations completed random trials in the study.

Usage: /usr/bin/python3 bench/search_optuna.py [--quick] [--seeds N] [--trials N]
         [--digits-seeds N] [--digits-trials N] [--latency-observations N]
         [--latency-suggestions N] [--no-digits] [--first-seed N] [--functions F,...]
         [--no-latency]
  --first-seed: seeds N .. N + seeds - 1 (default 1); --functions: only these (branin,
  hartmann6, mixed10, digits); as bench/search_quality.cpp's flags of the same names.
Run with Debian's /usr/bin/python3 (python3-optuna 3.1, numpy, scikit-learn).
"""
import argparse
import heapq
import json
import math
import os
import sys
import time
import warnings

import optuna

warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "quality"))
from machine import machine  # noqa: E402

STARTUP_TRIALS = 10  # as kStartupTrials in bench/search_quality.cpp


# ---- the functions: bench/quality/test_functions.hpp in Python --------------------------------


def branin(c):
    """Branin (Dixon & Szegő 1978; Surjanovic & Bingham): minimum 0.397887."""
    x1, x2 = c["x1"], c["x2"]
    b, cc, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + cc * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


_H_ALPHA = [1.0, 1.2, 3.0, 3.2]
_H_A = [
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
]
_H_P = [
    [1312, 1696, 5569, 124, 8283, 5886],
    [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650],
    [4047, 8828, 8732, 5743, 1091, 381],
]


def hartmann6(c):
    """Hartmann-6 (Dixon & Szegő 1978; Surjanovic & Bingham): minimum -3.32237."""
    x = [c["x%d" % (j + 1)] for j in range(6)]
    total = 0.0
    for i in range(4):
        inner = 0.0
        for j in range(6):
            d = x[j] - _H_P[i][j] * 1e-4
            inner += _H_A[i][j] * d * d
        total += _H_ALPHA[i] * math.exp(-inner)
    return -total


def mixed10(c):
    """The 10-d mixed space's function (test_functions.hpp Mixed10): minimum 0."""
    opt_penalty, lr_best = {
        "sgd": (0.3, -1),
        "momentum": (0.1, -1.5),
        "adam": (0, -3),
        "rmsprop": (0.05, -2.5),
    }[c["optimizer"]]
    act_penalty = {"gelu": 0, "relu": 0.05, "tanh": 0.2, "sigmoid": 0.5}[c["activation"]]
    dl = math.log10(c["lr"]) - lr_best
    dw = math.log10(c["weight_decay"]) + 4
    layers = float(c["layers"])
    du = math.log2(c["units"]) - 7
    db = math.log2(c["batch_size"] / 64)
    dd = c["dropout"] - (0.1 + 0.05 * layers)
    dm = c["momentum"] - 0.9
    dr = c["warmup_frac"] - 0.1
    return (
        opt_penalty
        + act_penalty
        + 0.1 * dl * dl
        + 0.05 * dw * dw
        + 0.05 * (layers - 3) * (layers - 3)
        + 0.08 * du * du
        + 0.1 * db * db
        + dd * dd
        + 0.5 * dm * dm
        + 2 * dr * dr
    )


def six_hump_camel(c):
    """Six-hump camel (Dixon & Szegő 1978; Surjanovic & Bingham): minimum -1.0316285."""
    x1, x2 = c["x1"], c["x2"]
    return (4 - 2.1 * x1 * x1 + x1**4 / 3) * x1 * x1 + x1 * x2 + (-4 + 4 * x2 * x2) * x2 * x2


def styblinski_tang8(c):
    """Styblinski-Tang, 8-d (Styblinski & Tang 1990; Surjanovic & Bingham): minimum
    -39.16616570377142 * 8."""
    return 0.5 * sum(x**4 - 16 * x * x + 5 * x for x in (c["x%d" % j] for j in range(1, 9)))


def levy20(c):
    """Levy, 20-d (Laguna & Martí 2005; Surjanovic & Bingham): minimum 0 at (1, ..., 1)."""
    w = [1 + (c["x%d" % j] - 1) / 4 for j in range(1, 21)]
    total = math.sin(math.pi * w[0]) ** 2
    for wi in w[:-1]:
        total += (wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2)
    return total + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


def conditional(c):
    """The conditional space's function (test_functions.hpp Conditional): minimum 0. `c` is
    Optuna's flat params (sgd_lr, momentum_m, ...) or tunebus' config, whose `optimizer` is the
    picked branch ({"name": "adam", "lr": ..., "beta1": ..., "beta2": ...})."""
    if isinstance(c["optimizer"], dict):
        branch = c["optimizer"]
        name = branch["name"]
        c = {"optimizer": name, "weight_decay": c["weight_decay"]}
        c.update({"%s_%s" % (name, k): v for k, v in branch.items() if k != "name"})
    dw = math.log10(c["weight_decay"]) + 4
    shared = 0.05 * dw * dw
    if c["optimizer"] == "sgd":
        dl = math.log10(c["sgd_lr"]) + 1
        return 0.4 + 0.25 * dl * dl + shared
    if c["optimizer"] == "momentum":
        m = c["momentum_m"]
        dl = math.log10(c["momentum_lr"]) - math.log10(0.1 * (1 - m))
        dm = m - 0.9
        return 0.15 + 0.2 * dl * dl + 2 * dm * dm + shared
    dl = math.log10(c["adam_lr"]) + 3
    d1, d2 = c["adam_beta1"] - 0.9, c["adam_beta2"] - 0.999
    return 0.2 * dl * dl + 3 * d1 * d1 + 50 * d2 * d2 + shared


def digits(c):
    import digits_objective

    return digits_objective.objective(c)


# ---- the simulation's hashes: bench/quality/synthetic_curve.hpp's Mix, in Python -------------

_M64 = (1 << 64) - 1


def mix(x):
    """splitmix64's step (synthetic_curve.hpp Mix)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def trial_seconds(seed, index):
    """Simulated seconds trial `index` takes (search_quality.cpp SingleFidelity): 0.5-1.5."""
    return 0.5 + (mix(mix(seed) ^ index) >> 11) * 2.0**-53


def noise(seed, index, sd):
    """N(0, sd) on trial `index`'s report (test_functions.hpp TrialNoise, Box-Muller)."""
    h = mix(mix(mix(seed) ^ index) ^ 1)
    u1 = ((h >> 11) + 0.5) * 2.0**-53
    u2 = (mix(h) >> 11) * 2.0**-53
    return sd * math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


# The param spaces as Optuna distributions (the experiment file's samplers: uniform -> float,
# loguniform -> float log, randint [a, b) -> int [a, b - 1], lograndint -> int log, qrandint
# [a, b, q] -> int step q, choice -> categorical).
def _branin_space(t):
    return {"x1": t.suggest_float("x1", -5, 10), "x2": t.suggest_float("x2", 0, 15)}


def _camel_space(t):
    return {"x1": t.suggest_float("x1", -3, 3), "x2": t.suggest_float("x2", -2, 2)}


def _hartmann_space(t):
    return {"x%d" % j: t.suggest_float("x%d" % j, 0, 1) for j in range(1, 7)}


def _styblinski_space(t):
    return {"x%d" % j: t.suggest_float("x%d" % j, -5, 5) for j in range(1, 9)}


def _levy_space(t):
    return {"x%d" % j: t.suggest_float("x%d" % j, -10, 10) for j in range(1, 21)}


def _conditional_space(t):
    """Define-by-run: only the chosen optimizer's parameters are suggested (Optuna's way of
    writing a conditional space; tunebus' is a choice over conditional branches)."""
    c = {"optimizer": t.suggest_categorical("optimizer", ["sgd", "momentum", "adam"])}
    if c["optimizer"] == "sgd":
        c["sgd_lr"] = t.suggest_float("sgd_lr", 1e-4, 1.0, log=True)
    elif c["optimizer"] == "momentum":
        c["momentum_lr"] = t.suggest_float("momentum_lr", 1e-5, 1.0, log=True)
        c["momentum_m"] = t.suggest_float("momentum_m", 0.0, 0.99)
    else:
        c["adam_lr"] = t.suggest_float("adam_lr", 1e-5, 1e-1, log=True)
        c["adam_beta1"] = t.suggest_float("adam_beta1", 0.5, 0.999)
        c["adam_beta2"] = t.suggest_float("adam_beta2", 0.9, 0.9999)
    c["weight_decay"] = t.suggest_float("weight_decay", 1e-6, 1e-1, log=True)
    return c


def _mixed_space(t):
    return {
        "activation": t.suggest_categorical("activation", ["relu", "tanh", "sigmoid", "gelu"]),
        "batch_size": t.suggest_int("batch_size", 16, 512, step=16),
        "dropout": t.suggest_float("dropout", 0.0, 0.8),
        "layers": t.suggest_int("layers", 1, 8),
        "lr": t.suggest_float("lr", 1e-5, 1.0, log=True),
        "momentum": t.suggest_float("momentum", 0.0, 0.99),
        "optimizer": t.suggest_categorical("optimizer", ["sgd", "momentum", "adam", "rmsprop"]),
        "units": t.suggest_int("units", 8, 1024, log=True),
        "warmup_frac": t.suggest_float("warmup_frac", 0.0, 0.5),
        "weight_decay": t.suggest_float("weight_decay", 1e-7, 1e-1, log=True),
    }


def _digits_space(t):
    return {
        "alpha": t.suggest_float("alpha", 1e-6, 1e-2, log=True),
        "eta0": t.suggest_float("eta0", 1e-4, 1e-1, log=True),
        "learning_rate": t.suggest_categorical("learning_rate", ["constant", "invscaling"]),
        "loss": t.suggest_categorical("loss", ["hinge", "log_loss", "modified_huber"]),
    }


# name -> (value function, space, direction, noise sd), in test_functions.hpp's order.
FUNCTIONS = {
    "branin": (branin, _branin_space, "minimize", 0.0),
    "six_hump_camel": (six_hump_camel, _camel_space, "minimize", 0.0),
    "hartmann6": (hartmann6, _hartmann_space, "minimize", 0.0),
    "hartmann6_noisy": (hartmann6, _hartmann_space, "minimize", 0.1),
    "styblinski_tang8": (styblinski_tang8, _styblinski_space, "minimize", 0.0),
    "mixed10": (mixed10, _mixed_space, "minimize", 0.0),
    "conditional": (conditional, _conditional_space, "minimize", 0.0),
    "levy20": (levy20, _levy_space, "minimize", 0.0),
    "digits": (digits, _digits_space, "maximize", 0.0),
}
SYNTHETIC = [f for f in FUNCTIONS if f != "digits"]

# Optuna's TPESampler variants: method name -> TPESampler arguments (besides n_startup_trials
# and seed). "group" is passed only on the conditional space (it needs multivariate).
METHODS = {
    "optuna_tpe": {},
    "optuna_multivariate": {"multivariate": True},
    "optuna_liar": {"constant_liar": True},
    "optuna_multivariate_liar": {"multivariate": True, "constant_liar": True, "group": True},
}


def sampler_args(method, function):
    args = dict(METHODS[method])
    if args.get("group") and function != "conditional":
        del args["group"]
    return args


def run_study(name, method, seed, trials, concurrency):
    """One study of `trials` trials: (values, noise-free values, completion order).

    concurrency 1: ask, evaluate, tell, one trial at a time (study.optimize's order).
    concurrency c > 1: the simulation of bench/search_quality.cpp's runner: c trials are asked
    before any result, trial i takes trial_seconds(seed, i) simulated seconds, results are told
    in the order the trials end, and each result is followed by one new ask."""
    value, space, direction, sd = FUNCTIONS[name]
    args = sampler_args(method, name)
    sampler = optuna.samplers.TPESampler(n_startup_trials=STARTUP_TRIALS, seed=seed, **args)
    study = optuna.create_study(direction=direction, sampler=sampler)
    values, true_values, order = [None] * trials, [None] * trials, []
    running = []  # heap of (end time, index, trial)
    asked = 0

    def ask(now):
        nonlocal asked
        trial = study.ask()
        index = asked
        asked += 1
        v = value(space(trial))
        true_values[index] = v
        values[index] = v + (noise(seed, index, sd) if sd > 0 else 0.0)
        heapq.heappush(running, (now + trial_seconds(seed, index), index, trial))

    while asked < min(concurrency, trials):
        ask(0.0)
    while running:
        now, index, trial = heapq.heappop(running)
        study.tell(trial, values[index])
        order.append(index)
        if asked < trials:
            ask(now)
    return values, true_values, order


def run_quality(name, method, seeds, trials, first_seed=1, concurrency=1):
    _, _, direction, sd = FUNCTIONS[name]
    values, true_values, orders = [], [], []
    t0 = time.time()
    for seed in range(first_seed, first_seed + seeds):
        v, tv, order = run_study(name, method, seed, trials, concurrency)
        values.append(v)
        true_values.append(tv)
        orders.append(order)
    args = ", ".join("%s=%r" % kv for kv in sampler_args(method, name).items())
    line = {
        "benchmark": "search_quality_run",
        "side": "optuna",
        "function": name,
        "method": method,
        "sampler": "TPESampler(n_startup_trials=%d, seed=seed%s)"
        % (STARTUP_TRIALS, ", " + args if args else ""),
        "max_concurrent_trials": concurrency,
        "mode": "min" if direction == "minimize" else "max",
        "seeds": seeds,
        "first_seed": first_seed,
        "trials": trials,
        "values": values,
        "wall_s": time.time() - t0,
        "optuna_version": optuna.__version__,
        "machine": machine(),
    }
    if sd > 0:
        line["noise_sd"] = sd
        line["true_values"] = true_values
    if concurrency > 1:
        line["completion_order"] = orders
    return line


def run_latency(name, observations, suggestions):
    """ask() + the space's suggest calls with `observations` completed random trials."""
    value, space, direction, _ = FUNCTIONS[name]
    study = optuna.create_study(direction=direction, sampler=optuna.samplers.RandomSampler(seed=1))
    study.optimize(lambda t: value(space(t)), n_trials=observations)
    study.sampler = optuna.samplers.TPESampler(n_startup_trials=STARTUP_TRIALS, seed=42)
    ms = []
    for _ in range(suggestions):
        start = time.perf_counter()
        trial = study.ask()
        config = space(trial)
        ms.append((time.perf_counter() - start) * 1e3)
        study.tell(trial, value(config))
    ms.sort()

    def at(q):
        return ms[min(len(ms) - 1, int(q * len(ms)))]

    return {
        "benchmark": "search_latency",
        "side": "optuna",
        "function": name,
        "observations": observations,
        "suggestions": suggestions,
        "what": "study.ask() + the space's suggest_* calls (TPESampler, univariate)",
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "max_ms": ms[-1],
        "optuna_version": optuna.__version__,
        "machine": machine(),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int)
    p.add_argument("--trials", type=int)
    p.add_argument("--digits-seeds", type=int)
    p.add_argument("--digits-trials", type=int)
    p.add_argument("--latency-observations", type=int)
    p.add_argument("--latency-suggestions", type=int)
    p.add_argument("--no-digits", action="store_true")
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--functions", default=",".join(FUNCTIONS))
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--concurrency", default="1,16")
    p.add_argument("--no-latency", action="store_true")
    a = p.parse_args()
    functions = a.functions.split(",")
    methods = a.methods.split(",")
    concurrency = [int(c) for c in a.concurrency.split(",")]
    for name in functions:
        if name not in FUNCTIONS:
            p.error("unknown function %s (known: %s)" % (name, ", ".join(FUNCTIONS)))
    for method in methods:
        if method not in METHODS:
            p.error("unknown method %s (known: %s)" % (method, ", ".join(METHODS)))
    # The same defaults as bench/search_quality.cpp.
    quick = dict(
        seeds=3,
        trials=30,
        digits_seeds=1,
        digits_trials=12,
        latency_observations=200,
        latency_suggestions=5,
    )
    full = dict(
        seeds=20,
        trials=100,
        digits_seeds=20,
        digits_trials=50,
        latency_observations=1000,
        latency_suggestions=30,
    )
    for key, default in (quick if a.quick else full).items():
        if getattr(a, key) is None:
            setattr(a, key, default)
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # not multivariate's experimental warning
    for c in concurrency:
        for name in SYNTHETIC:
            if name not in functions:
                continue
            for method in methods:
                line = run_quality(name, method, a.seeds, a.trials, a.first_seed, c)
                print(json.dumps(line), flush=True)
    # digits: Optuna's default TPE, one trial at a time (each fit costs tens of milliseconds).
    if not a.no_digits and "digits" in functions:
        line = run_quality("digits", "optuna_tpe", a.digits_seeds, a.digits_trials, a.first_seed)
        print(json.dumps(line), flush=True)
    for name in ("branin", "hartmann6", "mixed10"):
        if name in functions and not a.no_latency:
            print(
                json.dumps(run_latency(name, a.latency_observations, a.latency_suggestions)),
                flush=True,
            )


if __name__ == "__main__":
    main()
