"""Optuna's side of the multi-objective benchmark (docs/reference/search.md, "Many objectives"):
Optuna's
NSGAIISampler and TPESampler with several objectives (MOTPE: Ozaki et al. 2020, the sampler
Optuna 3.1 recommends in place of its deprecated MOTPESampler) on the functions of
bench/search_multiobjective.cpp (ZDT1, ZDT2, ZDT3: Zitzler, Deb, Thiele 2000; DTLZ2: Deb,
Thiele, Laumanns, Zitzler 2002), with the same budget (trials), seeds and reference points,
strictly sequential (study.optimize). Every sampler argument is Optuna's default but the seed.

Prints one JSON line per (method, function):
  {"benchmark": "multiobjective_run", "side": "optuna", "method": "optuna_nsga2" |
   "optuna_motpe", "function", "dims", "objectives", "seeds", "trials", "reference",
   "hypervolume": [final hypervolume per seed], "optuna_version", "seconds"}
The hypervolume is that of the non-dominated values of all the trials, bounded by the
function's reference point (optuna._hypervolume.WFG, exact).

Usage: /usr/bin/python3 bench/multiobjective_optuna.py [--quick] [--seeds N] [--trials N]
         [--first-seed N] [--functions zdt1,zdt2,zdt3,dtlz2] [--methods nsga2,motpe]
Run with Debian's /usr/bin/python3 (python3-optuna 3.1, numpy).
"""
import argparse
import json
import math
import time

import numpy as np
import optuna
from optuna._hypervolume import WFG

# ---- the functions: bench/search_multiobjective.cpp's, in Python --------------------------------

ZDT_DIMS = 10  # Zitzler, Deb, Thiele 2000 use n = 30; 10 keeps Optuna's TPE within the budget
DTLZ2_DIMS = 12  # Deb et al. 2002: M = 3 objectives, k = 10, n = M + k - 1


def _zdt_g(x):
    return 1.0 + 9.0 * sum(x[1:]) / (len(x) - 1)


def zdt1(x):
    g = _zdt_g(x)
    return [x[0], g * (1.0 - math.sqrt(x[0] / g))]


def zdt2(x):
    g = _zdt_g(x)
    return [x[0], g * (1.0 - (x[0] / g) ** 2)]


def zdt3(x):
    g = _zdt_g(x)
    h = 1.0 - math.sqrt(x[0] / g) - (x[0] / g) * math.sin(10.0 * math.pi * x[0])
    return [x[0], g * h]


def dtlz2(x, m=3):
    g = sum((xi - 0.5) ** 2 for xi in x[m - 1 :])
    f = []
    for i in range(m):
        v = 1.0 + g
        for xj in x[: m - 1 - i]:
            v *= math.cos(xj * math.pi / 2)
        if i > 0:
            v *= math.sin(x[m - 1 - i] * math.pi / 2)
        f.append(v)
    return f


# name: (function, dims, reference point); every param uniform in [0, 1].
FUNCTIONS = {
    "zdt1": (zdt1, ZDT_DIMS, [1.1, 11.0]),
    "zdt2": (zdt2, ZDT_DIMS, [1.1, 11.0]),
    "zdt3": (zdt3, ZDT_DIMS, [1.1, 11.0]),
    "dtlz2": (dtlz2, DTLZ2_DIMS, [2.5, 2.5, 2.5]),
}


def hypervolume(values, reference):
    ref = np.asarray(reference, dtype=float)
    pts = np.asarray([v for v in values if all(a < r for a, r in zip(v, reference))], dtype=float)
    if len(pts) == 0:
        return 0.0
    return float(WFG().compute(pts, ref))


def run(method, name, seed, trials):
    fn, dims, reference = FUNCTIONS[name]
    if method == "nsga2":
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=seed)
    n_obj = len(reference)
    study = optuna.create_study(directions=["minimize"] * n_obj, sampler=sampler)

    def objective(trial):
        x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(dims)]
        return fn(x)

    study.optimize(objective, n_trials=trials)
    return hypervolume([t.values for t in study.trials if t.values is not None], reference)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--trials", type=int, default=None)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--functions", default="zdt1,zdt2,zdt3,dtlz2")
    p.add_argument("--methods", default="nsga2,motpe")
    a = p.parse_args()
    seeds = a.seeds if a.seeds is not None else (2 if a.quick else 20)
    trials = a.trials if a.trials is not None else (60 if a.quick else 200)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    for method in a.methods.split(","):
        for name in a.functions.split(","):
            start = time.time()
            hv = [run(method, name, s, trials) for s in range(a.first_seed, a.first_seed + seeds)]
            print(
                json.dumps(
                    {
                        "benchmark": "multiobjective_run",
                        "side": "optuna",
                        "method": "optuna_" + method,
                        "function": name,
                        "dims": FUNCTIONS[name][1],
                        "objectives": len(FUNCTIONS[name][2]),
                        "first_seed": a.first_seed,
                        "seeds": seeds,
                        "trials": trials,
                        "reference": FUNCTIONS[name][2],
                        "hypervolume": hv,
                        "optuna_version": optuna.__version__,
                        "seconds": round(time.time() - start, 1),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
