"""The search quality benchmark's aggregator (docs/reference/search.md, "Search quality benchmark"):
reads
the JSON lines of bench/search_quality.cpp (tunebus) and bench/search_optuna.py (Optuna), both
from the same run, and prints one JSON object per line:

  search_function_check  the two sides compute the same functions (max |difference| at 8 configs)
                         and, for a noisy function, the same noise
  search_quality         per function, method and concurrency: median and quartiles of the best
                         value so far after n trials, the regret at the end, the trials each seed
                         needs to reach random search's median best (median over seeds), ratios
                         to random and to Optuna's TPE from this run
  search_tpe_vs_optuna   per concurrency and function: the median final regret of tunebus' TPE
                         (method tpe, the defaults) beside each Optuna TPESampler variant, and
                         one-sided Mann-Whitney p for tunebus worse and better
  search_protocol_check  with c trials at once, both sides told results in the same order
  search_multi_fidelity  ASHA + random vs BOHB on the learning curves: best at max_t so far vs
                         training iterations
  search_latency         suggestion latency with 1,000 observations, tunebus and Optuna, ratio
  search_criterion       one per search-quality target, with "met": true | false

--markdown prints docs/reference/search.md's tables instead. Regret is best - optimum (mode min) or
optimum - best (mode max); digits has no known optimum and uses 1 - val_accuracy (the error).
On a noisy function (a run with "true_values") the best so far is the noise-free value of the
config with the best reported (noisy) value so far. Mann-Whitney: scipy.stats.mannwhitneyu on
the per-seed final regrets of the two methods (independent samples: the seeds' draws differ
between the sides), one-sided.

Usage: /usr/bin/python3 bench/search_report.py [--markdown] FILE...   (JSON lines; - for stdin)
"""
import argparse
import json
import math
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, __file__.rsplit("/", 1)[0] if "/" in __file__ else ".")
import search_optuna  # noqa: E402  (the Python functions, for search_function_check)

CHECKPOINTS = [1, 5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 70, 80, 90, 100]
# The search-quality targets.
REACH_TARGET_TRIALS = 35  # TPE reaches random's median best-of-100 within this many trials
BOHB_ITERATIONS_RATIO = 0.5  # BOHB reaches ASHA's final median best with <= this of its iterations
LATENCY_P99_MS = 1.0
PARALLEL_TOLERANCE = 0.10  # 16-parallel TPE's regret within 10% of the sequential one's
PARALLEL = 16  # the concurrency of the parallel rows
MIN_BETTER_SHARE = 6 / 8  # TPE's median better than an Optuna variant's on >= 6 of 8 functions
# Optuna's variants; at one trial at a time constant_liar changes nothing (no trial is running
# when a trial is asked), so a liar variant not run there is its liar-less twin.
OPTUNA_METHODS = ["optuna_tpe", "optuna_multivariate", "optuna_liar", "optuna_multivariate_liar"]
SEQUENTIAL_TWIN = {"optuna_liar": "optuna_tpe", "optuna_multivariate_liar": "optuna_multivariate"}


def quartiles(xs):
    q1, med, q3 = np.percentile(np.asarray(xs, dtype=float), [25, 50, 75])
    return {"q1": float(q1), "median": float(med), "q3": float(q3)}


def best_so_far(values, mode):
    acc = np.minimum.accumulate if mode == "min" else np.maximum.accumulate
    return acc(np.asarray(values, dtype=float))


def regret(best, mode, optimum):
    if optimum is None:  # digits: the error rate
        optimum = 1.0
    return best - optimum if mode == "min" else optimum - best


def incumbent(values, true_values, mode):
    """The best value so far; with true_values (a noisy function), the noise-free value of the
    config with the best reported value so far."""
    if true_values is None:
        return best_so_far(values, mode)
    v = np.asarray(values, dtype=float)
    t = np.asarray(true_values, dtype=float)
    out, best, best_true = np.empty(len(v)), None, math.nan
    for i in range(len(v)):
        if best is None or (v[i] < best if mode == "min" else v[i] > best):
            best, best_true = v[i], t[i]
        out[i] = best_true
    return out


def mann_whitney(x, y):
    """One-sided Mann-Whitney p that x (regrets) is larger (worse) and smaller (better) than y."""
    if len(set(x) | set(y)) == 1 or (len(x) == len(y) and list(x) == list(y)):
        return 1.0, 1.0
    worse = float(stats.mannwhitneyu(x, y, alternative="greater").pvalue)
    better = float(stats.mannwhitneyu(x, y, alternative="less").pvalue)
    return worse, better


def tpe_versus_optuna(summary, functions, method="tpe"):
    """Per concurrency: per function and Optuna variant the median final regrets and one-sided
    Mann-Whitney p; then per variant a "_all" line counting the functions."""
    out = []
    concurrencies = sorted({c for (f, m, c) in summary if m == method})
    for c in concurrencies:
        tally = {o: {"better": [], "worse": [], "better_p": [], "n": 0} for o in OPTUNA_METHODS}
        for f in functions:
            mine = summary.get((f, method, c))
            if mine is None:
                continue
            row = {
                "benchmark": "search_tpe_vs_optuna",
                "function": f,
                "concurrency": c,
                "method": method,
                "seeds": mine["seeds"],
                "trials": mine["trials"],
                "tpe_median_regret": mine["regret_final"]["median"],
                "optuna": {},
            }
            for o in OPTUNA_METHODS:
                theirs = summary.get((f, o, c))
                if theirs is None and c == 1:
                    theirs = summary.get((f, SEQUENTIAL_TWIN.get(o, o), c))
                if theirs is None:
                    continue
                worse, better = mann_whitney(mine["_regrets"], theirs["_regrets"])
                med = theirs["regret_final"]["median"]
                row["optuna"][o] = {
                    "median_regret": med,
                    "p_tunebus_worse": worse,
                    "p_tunebus_better": better,
                    "as": theirs["method"],
                }
                t = tally[o]
                t["n"] += 1
                if mine["regret_final"]["median"] < med:
                    t["better"].append(f)
                if worse < 0.05:
                    t["worse"].append(f)
                if better < 0.05:
                    t["better_p"].append(f)
            out.append(row)
        for o, t in tally.items():
            if t["n"] == 0:
                continue
            out.append(
                {
                    "benchmark": "search_tpe_vs_optuna",
                    "function": "_all",
                    "concurrency": c,
                    "method": method,
                    "optuna_method": o,
                    "functions": t["n"],
                    "needed": math.ceil(MIN_BETTER_SHARE * t["n"]),
                    "better_median": t["better"],
                    "better_median_count": len(t["better"]),
                    "worse_p05": t["worse"],
                    "better_p05": t["better_p"],
                }
            )
    return out


def reaches(curve, target, mode):
    """1-based trials until the best so far is at least as good as target; None if never."""
    ok = curve <= target if mode == "min" else curve >= target
    idx = np.nonzero(ok)[0]
    return int(idx[0]) + 1 if len(idx) else None


def median_trials(ns):
    """Median of counts where None (never reached) counts as infinite; None if the median is.

    With an even number of seeds and exactly half reaching, the median is the mean of a count
    and infinity: never, not a count halfway to an arbitrary cap."""
    med = float(np.median([n if n is not None else math.inf for n in ns]))
    return med if math.isfinite(med) else None


def load(paths):
    lines = []
    for path in paths:
        f = sys.stdin if path == "-" else open(path)
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                lines.append(json.loads(line))
    return lines


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--detail", action="store_true", help="with --markdown: every run's row too")
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    lines = load(a.files)
    out = []
    machine = next((rec["machine"] for rec in lines if "machine" in rec), None)

    # ---- the two sides compute the same functions ---------------------------------------------
    for rec in lines:
        if rec["benchmark"] != "search_function_check":
            continue
        fn = search_optuna.FUNCTIONS[rec["function"]][0]
        diff = max(abs(fn(c) - v) for c, v in zip(rec["configs"], rec["values"]))
        for seed, index, v in rec.get("noise", []):
            diff = max(diff, abs(search_optuna.noise(seed, index, rec["noise_sd"]) - v))
        out.append(
            {
                "benchmark": "search_function_check",
                "function": rec["function"],
                "max_abs_diff": diff,
                "agree": diff < 1e-9,
            }
        )

    # ---- single-fidelity quality --------------------------------------------------------------
    # Runs keyed by (function, method, concurrency); the old "tpe_parallel" name is tpe at 16.
    runs = {}
    for rec in lines:
        if rec["benchmark"] == "search_quality_run" and rec["function"] != "curves":
            runs[(rec["function"], rec["method"], rec.get("max_concurrent_trials", 1))] = rec
    optimum = {f: rec.get("optimum") for (f, m, c), rec in runs.items() if rec["side"] == "tunebus"}
    order = list(search_optuna.FUNCTIONS)
    functions = [f for f in order if (f, "random", 1) in runs]
    summary = {}
    for (f, m, c), rec in runs.items():
        mode, trials = rec["mode"], rec["trials"]
        curves = [
            incumbent(v, rec["true_values"][i] if "true_values" in rec else None, mode)
            for i, v in enumerate(rec["values"])
        ]
        finals = [cv[-1] for cv in curves]
        s = {
            "benchmark": "search_quality",
            "side": rec["side"],
            "function": f,
            "method": m,
            "concurrency": c,
            "seeds": rec["seeds"],
            "trials": trials,
            "mode": mode,
            "optimum": optimum.get(f),
            "best_so_far": {
                str(n): quartiles([cv[n - 1] for cv in curves]) for n in CHECKPOINTS if n <= trials
            },
            "best_final": quartiles(finals),
            "regret_final": quartiles([regret(x, mode, optimum.get(f)) for x in finals]),
            "search_yaml": rec.get("search_yaml", rec.get("sampler")),
            "wall_s": rec["wall_s"],
        }
        s["_curves"], s["_finals"] = curves, finals
        s["_regrets"] = [regret(x, mode, optimum.get(f)) for x in finals]
        summary[(f, m, c)] = s
    for f in functions:
        rnd = summary[(f, "random", 1)]
        target = rnd["best_final"]["median"]
        for (g, m, c), s in summary.items():
            if g != f:
                continue
            ns = [reaches(cv, target, s["mode"]) for cv in s["_curves"]]
            s["random_median_best"] = target
            s["trials_to_random_median_best"] = {
                "median": median_trials(ns),
                "per_seed": ns,
                "seeds_reaching": sum(n is not None for n in ns),
            }
            r = s["regret_final"]["median"]
            s["regret_ratio_to_random"] = (
                r / rnd["regret_final"]["median"] if rnd["regret_final"]["median"] else None
            )
            if (f, "optuna_tpe", c) in summary:
                ro = summary[(f, "optuna_tpe", c)]["regret_final"]["median"]
                s["regret_ratio_to_optuna_tpe"] = r / ro if ro else None
    for key in sorted(
        summary, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[2], k[1])
    ):
        s = dict(summary[key])
        for k in ("_curves", "_finals", "_regrets"):
            s.pop(k)
        s["machine"] = machine
        out.append(s)

    # ---- the same protocol on both sides: results told in the same order ----------------------
    for (f, m, c), rec in runs.items():
        if rec["side"] != "optuna" or c == 1 or "completion_order" not in rec:
            continue
        mine = runs.get((f, "tpe", c))
        if mine is None or "completion_order" not in mine:
            continue
        same = sum(a == b for a, b in zip(rec["completion_order"], mine["completion_order"]))
        out.append(
            {
                "benchmark": "search_protocol_check",
                "function": f,
                "method": m,
                "concurrency": c,
                "seeds_in_the_same_order": same,
                "seeds": min(len(rec["completion_order"]), len(mine["completion_order"])),
            }
        )

    # ---- tunebus' TPE beside each Optuna TPESampler variant ----------------------------------
    # The synthetic functions (digits runs one Optuna variant, one at a time only).
    versus = tpe_versus_optuna(summary, [f for f in functions if f != "digits"])
    for v in versus:
        v["machine"] = machine
    out.extend(versus)

    # ---- multi-fidelity -----------------------------------------------------------------------
    mf = {
        rec["method"]: rec
        for rec in lines
        if rec["benchmark"] == "search_quality_run" and rec["function"] == "curves"
    }
    mf_result = None
    if "asha_random" in mf and "bohb" in mf:

        def finals_of(rec, col):
            return [max((r[col] for r in seed), default=float("nan")) for seed in rec["at_max_t"]]

        asha = mf["asha_random"]
        target = float(np.median(finals_of(asha, 1)))
        asha_iters = float(np.median(asha["iterations"]))

        def iterations_to(rec, target):
            ns = []
            for seed in rec["at_max_t"]:
                best, hit = -math.inf, None
                for k, v, _ in seed:
                    best = max(best, v)
                    if best >= target:
                        hit = k
                        break
                ns.append(hit)
            return ns

        for name in ["asha_random", "bohb"] + sorted(set(mf) - {"asha_random", "bohb"}):
            rec = mf[name]
            ns = iterations_to(rec, target)
            med = median_trials(ns)
            out.append(
                {
                    "benchmark": "search_multi_fidelity",
                    "method": name,
                    "search_yaml": rec["search_yaml"],
                    "scheduler_yaml": rec["scheduler_yaml"],
                    "seeds": rec["seeds"],
                    "trials": rec["trials"],
                    "max_t": rec["max_t"],
                    "best_final": quartiles(finals_of(rec, 1)),
                    "best_final_true": quartiles(finals_of(rec, 2)),
                    "iterations": quartiles(rec["iterations"]),
                    "asha_final_median_best": target,
                    "iterations_to_asha_median_best": {
                        "median": med,
                        "per_seed": ns,
                        "seeds_reaching": sum(n is not None for n in ns),
                    },
                    "ratio_to_asha_iterations": med / asha_iters if med is not None else None,
                    "iterations_ratio_to_asha": float(np.median(rec["iterations"])) / asha_iters,
                    "wall_s": rec["wall_s"],
                    "machine": machine,
                }
            )
            if name == "bohb":
                mf_result = out[-1]
                mf_result["_asha_iters"] = asha_iters

    # ---- latency ------------------------------------------------------------------------------
    lat = {
        (rec["side"], rec["function"]): rec for rec in lines if rec["benchmark"] == "search_latency"
    }
    latency_rows = []
    for f in ("branin", "hartmann6", "mixed10"):
        t, o = lat.get(("tunebus", f)), lat.get(("optuna", f))
        if t is None:
            continue
        row = {
            "benchmark": "search_latency",
            "function": f,
            "dims": t["dims"],
            "observations": t["observations"],
            "tunebus_p50_ms": t["p50_ms"],
            "tunebus_p99_ms": t["p99_ms"],
            "tunebus_cpu_p50_ms": t["cpu_p50_ms"],
            "tunebus_cpu_p99_ms": t["cpu_p99_ms"],
            "tunebus_suggestions": t["suggestions"],
        }
        if o is not None:
            row.update(
                {
                    "optuna_observations": o["observations"],
                    "optuna_p50_ms": o["p50_ms"],
                    "optuna_p99_ms": o["p99_ms"],
                    "optuna_asks": o["suggestions"],
                    "optuna_p50_over_tunebus_p50": o["p50_ms"] / t["p50_ms"],
                }
            )
        row["machine"] = machine
        latency_rows.append(row)
        out.append(row)

    # ---- criteria -----------------------------------------------------------------------------
    crit = []

    def reach(f, m):
        s = summary.get((f, m, 1))
        return s["trials_to_random_median_best"]["median"] if s else None

    figures = {
        f: {"tpe": reach(f, "tpe"), "optuna_tpe": reach(f, "optuna_tpe")}
        for f in ("branin", "hartmann6")
        if (f, "tpe", 1) in summary
    }
    crit.append(
        {
            "benchmark": "search_criterion",
            "target": "TPE reaches random search's median "
            "best-of-%d in <= %d trials on branin and hartmann6 (median over seeds)"
            % (
                (
                    summary[("branin", "random", 1)]["trials"]
                    if ("branin", "random", 1) in summary
                    else 0
                ),
                REACH_TARGET_TRIALS,
            ),
            "figures": figures,
            "met": bool(figures)
            and all(
                v["tpe"] is not None and v["tpe"] <= REACH_TARGET_TRIALS for v in figures.values()
            ),
        }
    )

    # TPE ahead of Optuna's: per concurrency and Optuna variant, better median regret on at
    # least MIN_BETTER_SHARE of the functions and worse at p < 0.05 on none.
    for v in versus:
        if v["function"] != "_all":
            continue
        crit.append(
            {
                "benchmark": "search_criterion",
                "target": "TPE (defaults) at %d trial(s) at once against Optuna's %s: better "
                "median regret on >= %d of %d functions, worse at p < 0.05 (one-sided "
                "Mann-Whitney) on none"
                % (v["concurrency"], v["optuna_method"], v["needed"], v["functions"]),
                "figures": {
                    "better_median": v["better_median"],
                    "worse_p05": v["worse_p05"],
                    "better_p05": v["better_p05"],
                },
                "met": v["better_median_count"] >= v["needed"] and not v["worse_p05"],
            }
        )

    if mf_result is not None:
        crit.append(
            {
                "benchmark": "search_criterion",
                "target": "BOHB reaches ASHA-random's final median best with <= 1/2 of its "
                "training iterations (learning curves)",
                "figures": {
                    "asha_final_median_best": mf_result["asha_final_median_best"],
                    "asha_median_iterations": mf_result["_asha_iters"],
                    "bohb_median_iterations_to_it": mf_result["iterations_to_asha_median_best"][
                        "median"
                    ],
                    "ratio": mf_result["ratio_to_asha_iterations"],
                },
                "met": mf_result["ratio_to_asha_iterations"] is not None
                and mf_result["ratio_to_asha_iterations"] <= BOHB_ITERATIONS_RATIO,
            }
        )
        mf_result.pop("_asha_iters")

    if latency_rows:
        crit.append(
            {
                "benchmark": "search_criterion",
                "target": "suggestion latency with %d observations: p99 <= %g ms (judged on "
                "the thread's CPU time; wall clock alongside), ratio to Optuna's "
                "TPE ask() in this run" % (latency_rows[0]["observations"], LATENCY_P99_MS),
                "figures": {
                    r["function"]: {
                        k: r.get(k)
                        for k in (
                            "tunebus_cpu_p99_ms",
                            "tunebus_p99_ms",
                            "tunebus_p50_ms",
                            "optuna_p50_ms",
                            "optuna_p50_over_tunebus_p50",
                        )
                    }
                    for r in latency_rows
                },
                "met": all(r["tunebus_cpu_p99_ms"] <= LATENCY_P99_MS for r in latency_rows),
            }
        )

    par = {}
    for f in functions:
        if (f, "tpe", 1) not in summary or (f, "tpe", PARALLEL) not in summary:
            continue
        seq_r = summary[(f, "tpe", 1)]["regret_final"]["median"]
        par_r = summary[(f, "tpe", PARALLEL)]["regret_final"]["median"]
        seq_b = summary[(f, "tpe", 1)]["best_final"]["median"]
        par_b = summary[(f, "tpe", PARALLEL)]["best_final"]["median"]
        par[f] = {
            "sequential_regret_median": seq_r,
            "parallel_regret_median": par_r,
            "regret_ratio": par_r / seq_r if seq_r else None,
            "value_relative_difference": abs(par_b - seq_b) / abs(seq_b) if seq_b else None,
            "within": par_r <= (1 + PARALLEL_TOLERANCE) * seq_r,
        }
    crit.append(
        {
            "benchmark": "search_criterion",
            "target": "TPE with 16 trials at once (constant liar) stays within 10% of its "
            "sequential result (median regret at the full budget <= 1.1 x)",
            "figures": par,
            "met": bool(par) and all(v["within"] for v in par.values()),
        }
    )
    for c in crit:
        c["machine"] = machine
    out.extend(crit)

    if a.markdown:
        print_markdown(out, a.detail)
    else:
        for o in out:
            print(json.dumps(o))


def fmt(x, digits=4):
    if x is None:
        return "—"
    if isinstance(x, float):
        return "%.*g" % (digits, x)
    return str(x)


def print_versus(out):
    """Per concurrency: median final regret of every method per function, then tunebus' TPE
    against each Optuna variant (one-sided Mann-Whitney p, worse / better)."""
    q = [o for o in out if o["benchmark"] == "search_quality"]
    vs = [o for o in out if o["benchmark"] == "search_tpe_vs_optuna"]
    for c in sorted({o["concurrency"] for o in q}):
        rows = [o for o in q if o["concurrency"] in (c, 1)]
        functions = list(dict.fromkeys(o["function"] for o in rows if o["function"] != "digits"))
        tunebus = sorted(
            {o["method"] for o in rows if o["side"] == "tunebus" and o["concurrency"] == c}
            | ({"random"} if any(o["method"] == "random" for o in rows) else set()),
            key=lambda m: (m != "random", m != "tpe", m),
        )
        # One at a time a liar variant not run shows its liar-less twin (SEQUENTIAL_TWIN).
        optuna = [
            m
            for m in OPTUNA_METHODS
            if any(o["method"] in (m, SEQUENTIAL_TWIN.get(m, m) if c == 1 else m) for o in rows)
        ]
        cols = tunebus + optuna
        print(
            "%d trial(s) at once: median regret at the end (seeds × trials: %s)"
            % (
                c,
                ", ".join(
                    sorted(
                        {
                            "%d × %d" % (o["seeds"], o["trials"])
                            for o in rows
                            if o["concurrency"] == c
                        }
                    )
                ),
            )
        )
        print()
        print("| function | " + " | ".join(cols) + " |")
        print("| --- |" + " --- |" * len(cols))
        for f in functions:
            cells = []
            for m in cols:
                s = next(
                    (
                        o
                        for o in rows
                        if o["function"] == f and o["method"] == m and o["concurrency"] == c
                    ),
                    None,
                )
                if s is None and (m == "random" or c == 1):
                    s = next(
                        (
                            o
                            for o in rows
                            if o["function"] == f
                            and o["method"] in (m, SEQUENTIAL_TWIN.get(m, m))
                            and o["concurrency"] == 1
                        ),
                        None,
                    )
                cells.append(fmt(s["regret_final"]["median"], 3) if s else "—")
            print("| %s | %s |" % (f, " | ".join(cells)))
        print()
        lines = [v for v in vs if v["concurrency"] == c and v["function"] != "_all"]
        if lines:
            print(
                "tpe against Optuna's variants, %d at once: one-sided Mann-Whitney p (tunebus "
                "worse / better) of the final regrets" % c
            )
            print()
            print("| function | " + " | ".join(optuna) + " |")
            print("| --- |" + " --- |" * len(optuna))
            for v in lines:
                cells = []
                for m in optuna:
                    o = v["optuna"].get(m)
                    cells.append(
                        "%s / %s" % (fmt(o["p_tunebus_worse"], 2), fmt(o["p_tunebus_better"], 2))
                        if o
                        else "—"
                    )
                print("| %s | %s |" % (v["function"], " | ".join(cells)))
            for v in vs:
                if v["concurrency"] == c and v["function"] == "_all":
                    print(
                        "\n- against %s: better median on %d of %d (%s); worse at p < 0.05 on %s;"
                        " better at p < 0.05 on %s"
                        % (
                            v["optuna_method"],
                            v["better_median_count"],
                            v["functions"],
                            ", ".join(v["better_median"]) or "none",
                            ", ".join(v["worse_p05"]) or "none",
                            ", ".join(v["better_p05"]) or "none",
                        ),
                        end="",
                    )
            print("\n")


def print_markdown(out, detail=False):
    print_versus(out)
    if detail:
        print_detail(out)


def print_detail(out):
    q = [o for o in out if o["benchmark"] == "search_quality"]
    print(
        "| function | method | at once | seeds × trials | best after 10: median (q1–q3) | 20 | 35 |"
        " 50 | best at end (q1 / median / q3) | median regret | trials to random's median best "
        "(median; seeds reaching) | regret / random | regret / Optuna TPE |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in q:
        b = s["best_so_far"]

        def med(n):
            if str(n) not in b:
                return "—"
            q = b[str(n)]
            return "%s (%s–%s)" % (fmt(q["median"]), fmt(q["q1"], 3), fmt(q["q3"], 3))

        bf = s["best_final"]
        t = s.get("trials_to_random_median_best", {})
        print(
            "| %s | %s | %d | %d × %d | %s | %s | %s | %s | %s / %s / %s | %s | %s (%d/%d) | %s "
            "| %s |"
            % (
                s["function"],
                s["method"],
                s["concurrency"],
                s["seeds"],
                s["trials"],
                med(10),
                med(20),
                med(35),
                med(50),
                fmt(bf["q1"], 6),
                fmt(bf["median"], 6),
                fmt(bf["q3"], 6),
                fmt(s["regret_final"]["median"], 3),
                fmt(t.get("median")) if t.get("median") is not None else ">%d" % s["trials"],
                t.get("seeds_reaching", 0),
                s["seeds"],
                fmt(s.get("regret_ratio_to_random"), 3),
                fmt(s.get("regret_ratio_to_optuna_tpe"), 3),
            )
        )
    print()
    for o in out:
        if o["benchmark"] == "search_multi_fidelity":
            print(
                "- %s: best at max_t %s / %s / %s (q1/median/q3; noise-free %s), iterations "
                "median %s, iterations to ASHA's final median best %s: median %s (%d/%d "
                "seeds), ratio to ASHA's iterations %s"
                % (
                    o["method"],
                    fmt(o["best_final"]["q1"], 5),
                    fmt(o["best_final"]["median"], 5),
                    fmt(o["best_final"]["q3"], 5),
                    fmt(o["best_final_true"]["median"], 5),
                    fmt(o["iterations"]["median"]),
                    fmt(o["asha_final_median_best"], 5),
                    fmt(o["iterations_to_asha_median_best"]["median"]),
                    o["iterations_to_asha_median_best"]["seeds_reaching"],
                    o["seeds"],
                    fmt(o["ratio_to_asha_iterations"], 3),
                )
            )
    print()
    for o in out:
        if o["benchmark"] == "search_latency":
            print(
                "- %s (%d-d, %d observations): tunebus p50 %s ms, p99 %s ms (CPU p50 %s, p99 %s);"
                " Optuna p50 %s ms, p99 %s ms; Optuna / tunebus p50 %s"
                % (
                    o["function"],
                    o["dims"],
                    o["observations"],
                    fmt(o["tunebus_p50_ms"], 3),
                    fmt(o["tunebus_p99_ms"], 3),
                    fmt(o["tunebus_cpu_p50_ms"], 3),
                    fmt(o["tunebus_cpu_p99_ms"], 3),
                    fmt(o.get("optuna_p50_ms"), 3),
                    fmt(o.get("optuna_p99_ms"), 3),
                    fmt(o.get("optuna_p50_over_tunebus_p50"), 3),
                )
            )
    print()
    for o in out:
        if o["benchmark"] == "search_criterion":
            method = " (%s)" % o["method"] if "method" in o else ""
            print(
                "- **%s** — %s%s: `%s`"
                % ("met" if o["met"] else "not met", o["target"], method, json.dumps(o["figures"]))
            )
    for o in out:
        if o["benchmark"] == "search_function_check":
            print("- function check %s: max |diff| %s" % (o["function"], fmt(o["max_abs_diff"])))
    for o in out:
        if o["benchmark"] == "search_protocol_check":
            print(
                "- protocol check %s %s at %d: %d of %d seeds told in the same order"
                % (
                    o["function"],
                    o["method"],
                    o["concurrency"],
                    o["seeds_in_the_same_order"],
                    o["seeds"],
                )
            )


if __name__ == "__main__":
    main()
