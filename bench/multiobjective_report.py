"""The multi-objective benchmark's report (docs/reference/search.md, "Many objectives"): reads the
JSON
lines of bench/search_multiobjective (tunebus) and bench/multiobjective_optuna.py (Optuna) and
prints, per function, each method's final hypervolume as median (q1-q3) over the seeds, and for
each tunebus method beside its Optuna peer (nsga2* beside optuna_nsga2, motpe* beside
optuna_motpe) the one-sided Mann-Whitney U p-values (scipy.stats.mannwhitneyu) that tunebus' is
lower ("worse") and higher ("better"), and the targets: not worse at p < 0.05 on any function,
better median on >= 2 functions per searcher. Lines of the same method and function (one per
seed, say) are pooled. Reports, never fails (exit 0) unless the input is unusable (exit 2).

Usage: /usr/bin/python3 bench/multiobjective_report.py FILE.jsonl [FILE.jsonl ...] [--markdown]
"""
import argparse
import json
import sys

import numpy as np
from scipy.stats import mannwhitneyu

FUNCTIONS = ["zdt1", "zdt2", "zdt3", "dtlz2"]


def peer(method):
    for base in ("nsga2", "motpe"):
        if method.startswith(base):
            return "optuna_" + base
    return None


def summary(values):
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return med, q1, q3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    runs = {}  # (method, function) -> line
    for path in a.files:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("benchmark") != "multiobjective_run":
                    continue
                key = (r["method"], r["function"])
                if key in runs:  # more seeds of the same run (e.g. one line per seed)
                    runs[key]["hypervolume"] = runs[key]["hypervolume"] + r["hypervolume"]
                else:
                    runs[key] = r
    if not runs:
        print("multiobjective_report: no multiobjective_run lines", file=sys.stderr)
        return 2
    methods = sorted({m for m, _ in runs if not m.startswith("optuna_")})
    functions = [f for f in FUNCTIONS if any(fn == f for _, fn in runs)]
    rows = []
    verdicts = {}
    for method in methods:
        other = peer(method)
        better = worse = compared = 0
        for fn in functions:
            mine, theirs = runs.get((method, fn)), runs.get((other, fn))
            if mine is None or theirs is None:
                continue
            x, y = mine["hypervolume"], theirs["hypervolume"]
            p_worse = float(mannwhitneyu(x, y, alternative="less").pvalue)
            p_better = float(mannwhitneyu(x, y, alternative="greater").pvalue)
            mx, my = summary(x), summary(y)
            compared += 1
            better += int(mx[0] > my[0])
            worse += int(p_worse < 0.05)
            rows.append(
                {
                    "method": method,
                    "peer": other,
                    "function": fn,
                    "trials": mine["trials"],
                    "seeds": len(x),
                    "peer_seeds": len(y),
                    "reference": mine["reference"],
                    "tunebus": mx,
                    "optuna": my,
                    "p_worse": p_worse,
                    "p_better": p_better,
                }
            )
        verdicts[method] = {
            "compared": compared,
            "better_median": better,
            "worse_p05": worse,
            "target_met": compared > 0 and worse == 0 and better >= 2,
        }
    if a.markdown:
        print(
            "| function (reference) | searcher | seeds | tunebus hypervolume |"
            " Optuna 3.1 hypervolume | p worse | p better |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            t, o = r["tunebus"], r["optuna"]
            ref = ", ".join(f"{v:g}" for v in r["reference"])
            print(
                f"| {r['function']} ({ref}) | {r['method']} vs {r['peer']} |"
                f" {r['seeds']} / {r['peer_seeds']} |"
                f" {t[0]:.4f} ({t[1]:.4f}-{t[2]:.4f}) | {o[0]:.4f} ({o[1]:.4f}-{o[2]:.4f}) |"
                f" {r['p_worse']:.3g} | {r['p_better']:.3g} |"
            )
        print()
        for m, v in verdicts.items():
            print(
                f"- {m}: better median on {v['better_median']} of {v['compared']}, worse at"
                f" p < 0.05 on {v['worse_p05']}: target {'met' if v['target_met'] else 'missed'}"
            )
    else:
        for r in rows:
            print(json.dumps({"benchmark": "multiobjective_compare", **r}))
        for m, v in verdicts.items():
            print(json.dumps({"benchmark": "multiobjective_verdict", "method": m, **v}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
