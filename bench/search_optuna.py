"""Optuna's side of the search quality benchmark (docs/search.md, "Search quality benchmark"):
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
import json
import math
import os
import sys
import time

import optuna

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


def digits(c):
    import digits_objective

    return digits_objective.objective(c)


# The param spaces as Optuna distributions (the experiment file's samplers: uniform -> float,
# loguniform -> float log, randint [a, b) -> int [a, b - 1], lograndint -> int log, qrandint
# [a, b, q] -> int step q, choice -> categorical).
def _branin_space(t):
    return {"x1": t.suggest_float("x1", -5, 10), "x2": t.suggest_float("x2", 0, 15)}


def _hartmann_space(t):
    return {"x%d" % j: t.suggest_float("x%d" % j, 0, 1) for j in range(1, 7)}


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


# name -> (value function, space, direction)
FUNCTIONS = {
    "branin": (branin, _branin_space, "minimize"),
    "hartmann6": (hartmann6, _hartmann_space, "minimize"),
    "mixed10": (mixed10, _mixed_space, "minimize"),
    "digits": (digits, _digits_space, "maximize"),
}


def run_quality(name, seeds, trials, first_seed=1):
    value, space, direction = FUNCTIONS[name]
    values = []
    t0 = time.time()
    for seed in range(first_seed, first_seed + seeds):
        sampler = optuna.samplers.TPESampler(n_startup_trials=STARTUP_TRIALS, seed=seed)
        study = optuna.create_study(direction=direction, sampler=sampler)
        study.optimize(lambda t: value(space(t)), n_trials=trials)
        values.append([t.value for t in study.trials])
    return {
        "benchmark": "search_quality_run",
        "side": "optuna",
        "function": name,
        "method": "optuna_tpe",
        "sampler": "TPESampler(n_startup_trials=%d, seed=seed)" % STARTUP_TRIALS,
        "mode": "min" if direction == "minimize" else "max",
        "seeds": seeds,
        "first_seed": first_seed,
        "trials": trials,
        "values": values,
        "wall_s": time.time() - t0,
        "optuna_version": optuna.__version__,
        "machine": machine(),
    }


def run_latency(name, observations, suggestions):
    """ask() + the space's suggest calls with `observations` completed random trials."""
    value, space, direction = FUNCTIONS[name]
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
    p.add_argument("--functions", default="branin,hartmann6,mixed10,digits")
    p.add_argument("--no-latency", action="store_true")
    a = p.parse_args()
    functions = a.functions.split(",")
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
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name in ("branin", "hartmann6", "mixed10"):
        if name in functions:
            print(json.dumps(run_quality(name, a.seeds, a.trials, a.first_seed)), flush=True)
    if not a.no_digits and "digits" in functions:
        print(
            json.dumps(run_quality("digits", a.digits_seeds, a.digits_trials, a.first_seed)),
            flush=True,
        )
    for name in ("branin", "hartmann6", "mixed10"):
        if name in functions and not a.no_latency:
            print(
                json.dumps(run_latency(name, a.latency_observations, a.latency_suggestions)),
                flush=True,
            )


if __name__ == "__main__":
    main()
