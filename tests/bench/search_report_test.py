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


if __name__ == "__main__":
    unittest.main()
