"""bench/search_report.py's medians over seeds, on small hand-made search_quality lines.

A seed that never reaches a target counts as infinite: with half the seeds or more never
reaching it the median is never (null), not a count halfway to a cap. Run by ctest as
unit.search_report with Debian's python3; exits 77 (SKIPPED) when it cannot import what
search_report.py imports (numpy, scipy, optuna).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy  # noqa: F401
    import optuna  # noqa: F401
    import scipy  # noqa: F401
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

REPORT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "search_report.py")
SEEDS = 20


def curves_line(method, at_max_t, iterations):
    return {
        "benchmark": "search_quality_run",
        "side": "tunebus",
        "function": "curves",
        "method": method,
        "search_yaml": "random",
        "scheduler_yaml": "asha",
        "max_concurrent_trials": 8,
        "mode": "max",
        "optimum": 0.95,
        "seeds": SEEDS,
        "first_seed": 1,
        "trials": 64,
        "max_t": 100,
        "at_max_t": at_max_t,
        "iterations": iterations,
        "wall_s": 0.0,
    }


def run_report(lines):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
        path = f.name
    try:
        out = subprocess.run(
            [sys.executable, REPORT, path], check=True, capture_output=True, text=True
        ).stdout
    finally:
        os.unlink(path)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def multi_fidelity(out, method):
    return next(
        o for o in out if o["benchmark"] == "search_multi_fidelity" and o["method"] == method
    )


class SearchReportTest(unittest.TestCase):
    def setUp(self):
        # ASHA: seed i ends at 0.90 + i / 1000 after 1,000 iterations (final median 0.9095).
        self.asha = curves_line(
            "asha_random",
            [[[500 + i, 0.90 + i / 1000, 0.90]] for i in range(SEEDS)],
            [1000] * SEEDS,
        )

    def test_half_the_seeds_never_reaching_is_never(self):
        # BOHB reaches 0.95 after 100 iterations on 10 seeds and stays at 0.80 on the other 10.
        bohb = curves_line(
            "bohb", [[[100, 0.95 if i < 10 else 0.80, 0.9]] for i in range(SEEDS)], [3000] * SEEDS
        )
        out = run_report([self.asha, bohb])
        to = multi_fidelity(out, "bohb")["iterations_to_asha_median_best"]
        self.assertEqual(to["seeds_reaching"], 10)
        self.assertIsNone(to["median"])
        criterion = next(
            o
            for o in out
            if o["benchmark"] == "search_criterion" and o["target"].startswith("BOHB")
        )
        self.assertIsNone(criterion["figures"]["ratio"])
        self.assertFalse(criterion["met"])

    def test_more_than_half_reaching_early_meets_the_bohb_target(self):
        # 11 seeds reach 0.95 after 400 iterations (<= 1/2 of ASHA's 1,000), 9 never.
        bohb = curves_line(
            "bohb", [[[400, 0.95 if i < 11 else 0.80, 0.9]] for i in range(SEEDS)], [3000] * SEEDS
        )
        out = run_report([self.asha, bohb])
        to = multi_fidelity(out, "bohb")["iterations_to_asha_median_best"]
        self.assertEqual(to["median"], 400)
        criterion = next(
            o
            for o in out
            if o["benchmark"] == "search_criterion" and o["target"].startswith("BOHB")
        )
        self.assertEqual(criterion["figures"]["ratio"], 0.4)
        self.assertTrue(criterion["met"])

    def test_asha_reaching_its_own_median_on_half_the_seeds_is_never(self):
        out = run_report([self.asha, curves_line("bohb", self.asha["at_max_t"], [1000] * SEEDS)])
        self.assertIsNone(
            multi_fidelity(out, "asha_random")["iterations_to_asha_median_best"]["median"]
        )


def single_line(side, method, values, concurrency=1, true_values=None, function="hartmann6"):
    line = {
        "benchmark": "search_quality_run",
        "side": side,
        "function": function,
        "method": method,
        "max_concurrent_trials": concurrency,
        "mode": "min",
        "optimum": 0.0,
        "seeds": len(values),
        "first_seed": 1,
        "trials": len(values[0]),
        "values": values,
        "wall_s": 0.0,
    }
    if true_values is not None:
        line["true_values"] = true_values
        line["noise_sd"] = 0.1
    return line


class SingleFidelityTest(unittest.TestCase):
    def test_noisy_regret_is_the_true_value_of_the_best_reported(self):
        # Reported 0.5 then 0.2 (true 0.9): the incumbent is the second, regret 0.9, not 0.2.
        rnd = single_line("tunebus", "random", [[0.5, 0.2]], true_values=[[0.4, 0.9]])
        out = run_report([rnd])
        s = next(o for o in out if o["benchmark"] == "search_quality")
        self.assertAlmostEqual(s["regret_final"]["median"], 0.9)

    def test_tpe_against_an_optuna_variant_by_mann_whitney(self):
        # 20 seeds: tunebus ends at regrets 0.0 .. 0.19, Optuna at 1.0 .. 1.19: better median and
        # better at p < 0.05; at 16 at once the reverse is worse at p < 0.05.
        low = [[1.0, 0.01 * i] for i in range(SEEDS)]
        high = [[2.0, 1.0 + 0.01 * i] for i in range(SEEDS)]
        lines = [
            single_line("tunebus", "random", high),
            single_line("tunebus", "tpe", low),
            single_line("optuna", "optuna_tpe", high),
            single_line("tunebus", "tpe", high, concurrency=16),
            single_line("optuna", "optuna_liar", low, concurrency=16),
        ]
        out = run_report(lines)
        alls = {
            (o["concurrency"], o["optuna_method"]): o
            for o in out
            if o["benchmark"] == "search_tpe_vs_optuna" and o["function"] == "_all"
        }
        self.assertEqual(alls[(1, "optuna_tpe")]["better_median"], ["hartmann6"])
        self.assertEqual(alls[(1, "optuna_tpe")]["better_p05"], ["hartmann6"])
        # One at a time, the liar variant not run is its liar-less twin.
        self.assertEqual(alls[(1, "optuna_liar")]["better_p05"], ["hartmann6"])
        self.assertEqual(alls[(16, "optuna_liar")]["worse_p05"], ["hartmann6"])
        met = [
            o["met"]
            for o in out
            if o["benchmark"] == "search_criterion" and "Optuna's optuna_liar" in o["target"]
        ]
        self.assertEqual(met, [True, False])  # one at a time met; 16 at once worse


if __name__ == "__main__":
    unittest.main()
