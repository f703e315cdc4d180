"""bench/check_floors.py on small hand-made runs and floors, and on lines of a real bench/run.

A run meeting every floor passes (exit 0); a higher-is-better figure halved, a lower-is-better
one doubled, or a floor's line missing fails naming it (exit 1); a malformed floors file exits 2
naming the file. Run by ctest as unit.check_floors with Debian's python3 (standard library only);
pytest runs it too: /usr/bin/python3 -m pytest tests/bench/check_floors_test.py
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CHECK = os.path.join(ROOT, "bench", "check_floors.py")
FLOORS = os.path.join(ROOT, "bench", "floors.json")

# Four lines of a full bench/run on the dev machine (perf30/before-full.jsonl), as printed.
REAL_LINES = r"""
{"benchmark": "result_throughput", "workers": 4, "worker_kind": "processes (trial-worker, --cpus 64)", "trials_in_flight": 256, "results_per_trial": 781, "results": 199936, "scheduler": "fifo", "figure": "median of 3 runs", "runs_results_per_s": [111664.49407283295, 123440.80551991107, 128955.09842372632], "journal": "synced group commit", "result_files": true, "status": "FINISHED", "elapsed_s": 1.61969131, "wall_s": 1.6254034042358398, "results_per_s": 123440.80551991107, "decision_latency_ms_p50": 1.632495, "decision_latency_ms_p99": 6.671318, "baseline": "raw_ingest", "baseline_results_per_s": 418480.29312586045, "ratio_to_baseline": 0.2949739988898008, "target_results_per_s": 100000, "target_ratio": 0.3, "meets_target": false, "machine": {"cores": 2, "cpu_model": "AMD EPYC"}}
{"benchmark": "bookkeeping", "trials": 10000, "results_per_trial": 1, "workers": 4, "cpus_per_worker": 4, "result_files": "disk", "status": "FINISHED", "elapsed_s": 1.930446798, "wall_s": 1.9350154399871826, "ideal_s": 0.0, "overhead_ms_per_trial": 0.1930446798, "baseline": "Ray Tune's published 9 ms/trial", "ratio_to_baseline": 0.02144940886666667, "target_ms_per_trial": 0.2, "meets_target": true, "machine": {"cores": 2, "cpu_model": "AMD EPYC"}}
{"benchmark": "memory", "trials": 100000, "status": "FINISHED", "last_result_keys": 23, "rss_before_bytes": 15130624, "rss_after_bytes": 155533312, "bytes_per_trial": 1404.02688, "last_result_bytes": 304.096, "bytes_per_trial_without_last_result": 1099.93088, "baseline": "2 KiB per trial + its last result (the target)", "ratio_to_baseline": 0.537075625, "target_bytes_per_trial": 2048, "meets_target": true, "note": "RSS growth of the scheduler over the experiment (allocator slack included); the last result (10 user metrics + auto-filled keys) measured by result_footprint", "machine": {"cores": 2, "cpu_model": "AMD EPYC"}}
{"benchmark": "peer_tunebus", "trials": 2000, "max_results_per_trial": 10, "results": 5183, "figure": "median of 3 runs", "runs_trials_per_s": [6380.406353979987, 8472.921502436573, 8568.053443815983], "trainable": "mock (unpaced), lr ~ loguniform(1e-4, 1)", "result_files": "tmpfs", "workers": 2, "cpus_per_worker": 64, "scheduler": "asha (max_t 10, grace_period 1, reduction_factor 3)", "status": "FINISHED", "elapsed_s": 0.236046091, "wall_s": 0.23882627487182617, "cpu_cores_busy": 1.5911147138393347, "trials_per_s": 8472.921502436573, "baseline": "peer_optuna (this run)", "baseline_trials_per_s": 139.9682046517669, "ratio_to_baseline": 60.53461586877341, "target_ratio": 50, "target_figure": true, "meets_target": true, "machine": {"cores": 2, "cpu_model": "AMD EPYC"}}
""".strip().splitlines()

# A hand-made run (figures as measured) and floors derived from it by the rule (half / twice,
# a hair inside).
RUN = [
    {"benchmark": "result_throughput", "workers": 1, "ratio_to_baseline": 0.32},
    {"benchmark": "result_throughput", "workers": 4, "ratio_to_baseline": 0.30},
    {"benchmark": "bookkeeping", "result_files": "disk", "overhead_ms_per_trial": 0.19},
    {"benchmark": "bookkeeping", "result_files": "tmpfs", "overhead_ms_per_trial": 0.15},
    {"benchmark": "memory", "bytes_per_trial_without_last_result": 1100.0},
]
FLOORS_DOC = {
    "about": "test floors",
    "measured": {"commit": "abc", "date": "2024-01-01"},
    "floors": [
        {
            "benchmark": "result_throughput",
            "match": {"workers": 1},
            "figure": "ratio_to_baseline",
            "better": "higher",
            "floor": 0.161,
        },
        {
            "benchmark": "result_throughput",
            "match": {"workers": 4},
            "figure": "ratio_to_baseline",
            "better": "higher",
            "floor": 0.151,
        },
        {
            "benchmark": "bookkeeping",
            "match": {"result_files": "disk"},
            "figure": "overhead_ms_per_trial",
            "better": "lower",
            "floor": 0.379,
        },
        {
            "benchmark": "bookkeeping",
            "match": {"result_files": "tmpfs"},
            "figure": "overhead_ms_per_trial",
            "better": "lower",
            "floor": 0.299,
        },
        {
            "benchmark": "memory",
            "match": {},
            "figure": "bytes_per_trial_without_last_result",
            "better": "lower",
            "floor": 2190,
        },
    ],
}


class CheckFloorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_lines(self, lines, name="run.jsonl"):
        # Non-JSON lines as bench/run's stdout could carry: skipped.
        text = (
            "install-deps: nothing to install\n"
            + "".join(
                (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines
            )
            + "[1, 2]\n"
        )
        return self.write(name, text)

    def check(self, floors, run, *options):
        p = subprocess.run(
            [sys.executable, CHECK] + list(options) + [floors, run], capture_output=True, text=True
        )
        return p.returncode, p.stdout, p.stderr

    def floors(self, doc=FLOORS_DOC):
        return self.write("floors.json", json.dumps(doc))

    def failed_lines(self, out):
        return [line for line in out.splitlines() if line.startswith("FAIL")]

    def expect_one_failure(self, run, *fragments):
        """Checks `run` (lines) against the test floors: exit 1, one FAIL line holding each
        fragment."""
        code, out, _ = self.check(self.floors(), self.run_lines(run))
        self.assertEqual(code, 1)
        failed = self.failed_lines(out)
        self.assertEqual(len(failed), 1, out)
        for fragment in fragments:
            self.assertIn(fragment, failed[0])

    def test_a_run_meeting_every_floor_passes(self):
        code, out, err = self.check(self.floors(), self.run_lines(RUN))
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.failed_lines(out), [])
        self.assertEqual(len([line for line in out.splitlines() if line.startswith("ok")]), 5)

    def test_a_halved_higher_is_better_ratio_fails_naming_it(self):
        run = copy.deepcopy(RUN)
        run[1]["ratio_to_baseline"] /= 2
        self.expect_one_failure(
            run, "result_throughput[workers=4]", "ratio_to_baseline", "measured 0.15"
        )

    def test_a_doubled_lower_is_better_figure_fails(self):
        run = copy.deepcopy(RUN)
        run[3]["overhead_ms_per_trial"] *= 2
        self.expect_one_failure(run, "bookkeeping[result_files=tmpfs]", "overhead_ms_per_trial")

    def test_a_missing_line_fails(self):
        self.expect_one_failure(
            [line for line in RUN if line["benchmark"] != "memory"], "memory", "missing"
        )

    def test_an_optional_floor_is_skipped_without_its_line_and_judged_with_it(self):
        doc = copy.deepcopy(FLOORS_DOC)
        doc["floors"].append(
            {
                "benchmark": "build",
                "match": {"fresh": True},
                "figure": "ratio_to_baseline",
                "better": "lower",
                "floor": 60,
                "optional": True,
            }
        )
        code, out, err = self.check(self.floors(doc), self.run_lines(RUN))
        self.assertEqual(code, 0, out + err)
        self.assertTrue(
            any(
                line.startswith("skip") and "build[fresh=true]" in line for line in out.splitlines()
            ),
            out,
        )
        slower = RUN + [{"benchmark": "build", "fresh": True, "ratio_to_baseline": 90}]
        code, out, _ = self.check(self.floors(doc), self.run_lines(slower))
        self.assertEqual(code, 1)
        self.assertIn("build[fresh=true]", self.failed_lines(out)[0])
        doc["floors"][-1]["optional"] = "yes"
        code, _, err = self.check(self.floors(doc), self.run_lines(RUN))
        self.assertEqual(code, 2)
        self.assertIn("optional", err)

    def test_a_figure_that_is_not_a_number_fails(self):
        # result_throughput's ratio is null when the run measured no raw baseline.
        run = copy.deepcopy(RUN)
        run[0]["ratio_to_baseline"] = None
        code, out, _ = self.check(self.floors(), self.run_lines(run))
        self.assertEqual(code, 1)
        self.assertIn("result_throughput[workers=1]", self.failed_lines(out)[0])

    def test_match_needs_every_field_equal_and_true_is_not_1(self):
        doc = copy.deepcopy(FLOORS_DOC)
        doc["floors"][0]["match"] = {"workers": 1, "result_files": True}
        run = copy.deepcopy(RUN)
        run[0]["result_files"] = 1
        code, out, _ = self.check(self.floors(doc), self.run_lines(run))
        self.assertEqual(code, 1)
        self.assertIn("missing", self.failed_lines(out)[0])
        run[0]["result_files"] = True
        self.assertEqual(self.check(self.floors(doc), self.run_lines(run))[0], 0)

    def test_a_malformed_floors_file_exits_2_naming_it(self):
        bad_entry = copy.deepcopy(FLOORS_DOC)
        bad_entry["floors"][2]["better"] = "smaller"
        no_floor = copy.deepcopy(FLOORS_DOC)
        del no_floor["floors"][0]["floor"]
        for text, what in (
            ('{"floors": [', "not JSON"),
            ("[]", "top level"),
            ("{}", "floors"),
            (json.dumps(bad_entry), "floors[2]: better"),
            (json.dumps(no_floor), "floors[0]: missing floor"),
        ):
            path = self.write("broken-floors.json", text)
            code, out, err = self.check(path, self.run_lines(RUN))
            self.assertEqual(code, 2, text)
            self.assertIn(path, err)
            self.assertIn(what, err)
            self.assertEqual(out, "")

    def test_update_sets_floors_a_2x_regression_fails(self):
        floors = self.floors()
        code, out, err = self.check(floors, self.run_lines(RUN), "--update")
        self.assertEqual(code, 0, out + err)
        with open(floors) as f:
            doc = json.load(f)
        self.assertEqual([e["floor"] for e in doc["floors"]], [0.161, 0.151, 0.379, 0.299, 2190])
        self.assertEqual(doc["about"], "test floors")
        self.assertEqual(self.check(floors, self.run_lines(RUN))[0], 0)
        for i, factor in ((0, 0.5), (2, 2.0), (4, 2.0)):
            run = copy.deepcopy(RUN)
            figure = doc["floors"][i]["figure"]
            run[i][figure] *= factor
            code, out, _ = self.check(floors, self.run_lines(run))
            self.assertEqual(code, 1, "floor %d, figure x %s:\n%s" % (i, factor, out))

    def test_update_changes_nothing_when_a_line_is_missing(self):
        floors = self.floors()
        code, _, _ = self.check(floors, self.run_lines(RUN[1:]), "--update")
        self.assertEqual(code, 1)
        with open(floors) as f:
            self.assertEqual(json.load(f), FLOORS_DOC)

    def test_real_lines_meet_bench_floors_json_and_the_rest_is_missing(self):
        with open(FLOORS) as f:
            real = json.load(f)
        run = self.run_lines(REAL_LINES)
        code, out, err = self.check(FLOORS, run)
        self.assertEqual(code, 1, err)
        # The floors naming three of the four lines find them and their figures (measured, ok;
        # bookkeeping on the disk is reported but not guarded); every other floor's line is
        # missing from these four.
        ok = [line for line in out.splitlines() if line.startswith("ok")]
        self.assertEqual(len(ok), 3, out)
        for name in ("result_throughput[workers=4]", "memory", "peer_tunebus[cpus_per_worker=64]"):
            self.assertTrue(any(line.split()[1] == name for line in ok), name + "\n" + out)
        failed = self.failed_lines(out)
        required = [e for e in real["floors"] if not e.get("optional")]
        self.assertEqual(len(failed), len(required) - 3, out)
        self.assertTrue(all("missing" in line for line in failed), out)


if __name__ == "__main__":
    unittest.main()
