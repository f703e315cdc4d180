"""The search quality benchmark's aggregator (docs/search.md, "Search quality benchmark"): reads
the JSON lines of bench/search_quality.cpp (tunebus) and bench/search_optuna.py (Optuna), both
from the same run, and prints one JSON object per line:

  search_function_check  the two sides compute the same functions (max |difference| at 8 configs)
  search_quality         per function and method: median and quartiles of the best value so far
                         after n trials, the regret at the end, the trials each seed needs to
                         reach random search's median best (median over seeds), ratios to random
                         and to Optuna's TPE from this run
  search_multi_fidelity  ASHA + random vs BOHB on the learning curves: best at max_t so far vs
                         training iterations
  search_latency         suggestion latency with 1,000 observations, tunebus and Optuna, ratio
  search_criterion       one per search-quality target, with "met": true | false

--markdown prints docs/search.md's tables instead. Regret is best - optimum (mode min) or
optimum - best (mode max); digits has no known optimum and uses 1 - val_accuracy (the error).
Wilcoxon: scipy.stats.wilcoxon on the per-seed final bests of tunebus' TPE and Optuna's TPE
paired by seed (the same seed number on both sides; the draws differ), one-sided.

Usage: /usr/bin/python3 bench/search_report.py [--markdown] FILE...   (JSON lines; - for stdin)
"""
import argparse
import json
import math
import sys
import warnings

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
        out.append(
            {
                "benchmark": "search_function_check",
                "function": rec["function"],
                "max_abs_diff": diff,
                "agree": diff < 1e-9,
            }
        )

    # ---- single-fidelity quality --------------------------------------------------------------
    runs = {}
    for rec in lines:
        if rec["benchmark"] == "search_quality_run" and rec["function"] != "curves":
            runs[(rec["function"], rec["method"])] = rec
    optimum = {f: rec.get("optimum") for (f, m), rec in runs.items() if rec["side"] == "tunebus"}
    functions = [f for f in ("branin", "hartmann6", "mixed10", "digits") if (f, "random") in runs]
    summary = {}
    for (f, m), rec in runs.items():
        mode, trials = rec["mode"], rec["trials"]
        curves = [best_so_far(v, mode) for v in rec["values"]]
        finals = [c[-1] for c in curves]
        s = {
            "benchmark": "search_quality",
            "side": rec["side"],
            "function": f,
            "method": m,
            "seeds": rec["seeds"],
            "trials": trials,
            "mode": mode,
            "optimum": optimum.get(f),
            "best_so_far": {
                str(n): quartiles([c[n - 1] for c in curves]) for n in CHECKPOINTS if n <= trials
            },
            "best_final": quartiles(finals),
            "regret_final": quartiles([regret(x, mode, optimum.get(f)) for x in finals]),
            "search_yaml": rec.get("search_yaml", rec.get("sampler")),
            "wall_s": rec["wall_s"],
        }
        s["_curves"], s["_finals"] = curves, finals
        summary[(f, m)] = s
    for f in functions:
        rnd = summary[(f, "random")]
        target = rnd["best_final"]["median"]
        for (g, m), s in summary.items():
            if g != f:
                continue
            ns = [reaches(c, target, s["mode"]) for c in s["_curves"]]
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
            if (f, "optuna_tpe") in summary:
                ro = summary[(f, "optuna_tpe")]["regret_final"]["median"]
                s["regret_ratio_to_optuna_tpe"] = r / ro if ro else None
    for key in sorted(
        summary, key=lambda k: (functions.index(k[0]) if k[0] in functions else 9, k[1])
    ):
        s = dict(summary[key])
        s.pop("_curves")
        s.pop("_finals")
        s["machine"] = machine
        out.append(s)

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
        s = summary.get((f, m))
        return s["trials_to_random_median_best"]["median"] if s else None

    figures = {
        f: {"tpe": reach(f, "tpe"), "optuna_tpe": reach(f, "optuna_tpe")}
        for f in ("branin", "hartmann6")
        if (f, "tpe") in summary
    }
    crit.append(
        {
            "benchmark": "search_criterion",
            "target": "TPE reaches random search's median "
            "best-of-%d in <= %d trials on branin and hartmann6 (median over seeds)"
            % (
                summary[("branin", "random")]["trials"] if ("branin", "random") in summary else 0,
                REACH_TARGET_TRIALS,
            ),
            "figures": figures,
            "met": bool(figures)
            and all(
                v["tpe"] is not None and v["tpe"] <= REACH_TARGET_TRIALS for v in figures.values()
            ),
        }
    )

    def against_optuna(method):
        """One-sided Wilcoxon tests of `method`'s final bests against Optuna's TPE, paired by
        seed number, per function."""
        tests = {}
        for f in functions:
            if (f, method) in summary and (f, "optuna_tpe") in summary:
                tests[f] = wilcoxon_against_optuna(f, method)
        return tests

    def wilcoxon_against_optuna(f, method):
        mode = summary[(f, method)]["mode"]
        sign = 1 if mode == "min" else -1
        x = sign * np.asarray(summary[(f, method)]["_finals"])  # losses
        y = sign * np.asarray(summary[(f, "optuna_tpe")]["_finals"])
        n = min(len(x), len(y))
        x, y = x[:n], y[:n]
        if np.all(x == y):
            p_worse = p_better = 1.0
        else:
            with warnings.catch_warnings():  # ties at 0 (digits): scipy's normal approximation
                warnings.simplefilter("ignore", UserWarning)
                p_worse = float(stats.wilcoxon(x, y, alternative="greater").pvalue)
                p_better = float(stats.wilcoxon(x, y, alternative="less").pvalue)
        return {
            "seeds": n,
            "tunebus_median": summary[(f, method)]["best_final"]["median"],
            "optuna_median": summary[(f, "optuna_tpe")]["best_final"]["median"],
            "p_tunebus_worse": p_worse,
            "p_tunebus_better": p_better,
            "worse": p_worse < 0.05,
            "better": p_better < 0.05,
        }

    # The default TPE, and the multivariate one with hyperopt's bandwidths (docs/search.md).
    for method in ("tpe", "tpe_multivariate"):
        tests = against_optuna(method)
        if method != "tpe" and not tests:
            continue
        crit.append(
            {
                "benchmark": "search_criterion",
                "method": method,
                "target": "TPE's best at the full budget is no worse than Optuna's TPE on "
                "every function (one-sided Wilcoxon over seeds, p >= 0.05 for "
                "worse) and better on at least one (p < 0.05)",
                "figures": tests,
                "met": bool(tests)
                and not any(t["worse"] for t in tests.values())
                and any(t["better"] for t in tests.values()),
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
        if (f, "tpe") not in summary or (f, "tpe_parallel") not in summary:
            continue
        seq_r = summary[(f, "tpe")]["regret_final"]["median"]
        par_r = summary[(f, "tpe_parallel")]["regret_final"]["median"]
        seq_b = summary[(f, "tpe")]["best_final"]["median"]
        par_b = summary[(f, "tpe_parallel")]["best_final"]["median"]
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
        print_markdown(out)
    else:
        for o in out:
            print(json.dumps(o))


def fmt(x, digits=4):
    if x is None:
        return "—"
    if isinstance(x, float):
        return "%.*g" % (digits, x)
    return str(x)


def print_markdown(out):
    q = [o for o in out if o["benchmark"] == "search_quality"]
    print(
        "| function | method | seeds × trials | best after 10: median (q1–q3) | 20 | 35 | 50 | "
        "best at end (q1 / median / q3) | median regret | trials to random's median best "
        "(median; seeds reaching) | regret / random | regret / Optuna TPE |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
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
            "| %s | %s | %d × %d | %s | %s | %s | %s | %s / %s / %s | %s | %s (%d/%d) | %s | %s |"
            % (
                s["function"],
                s["method"],
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


if __name__ == "__main__":
    main()
