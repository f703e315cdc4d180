// What a user sees when trials fail, in an embedded `tunectl run`: each failure is logged once
// (trial, attempt, error with exit code, what follows, the last lines of the trainable's
// stderr), and a trainable that stops reporting fails after report_timeout_s.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A command trainable from `script` (Python, stdlib only), run embedded in `dir`.
CommandResult RunEmbedded(const TempDir& dir, const std::string& script,
                          const std::string& extra_yaml) {
  WriteFile(dir.path() / "trainable.py", script);
  const fs::path file = dir.path() / "exp.yaml";
  WriteFile(file, "name: failing\ntrainable: {command: [python3, trainable.py]}\n" + extra_yaml +
                      "results_dir: results\n");
  return RunTunectl({"run", "--cpus", "2", file.string()}, 60s, dir.path() / "tunectl", dir.path());
}

TEST(TrialErrorsTest, EachFailureIsLoggedOnceWithItsTracebackAndWhatFollows) {
  TempDir dir;
  const auto run = RunEmbedded(dir,
                               "import sys\n"
                               "def train(lr):\n"
                               "    raise ValueError('lr too large: %s' % lr)\n"
                               "train(0.5)\n",
                               "param_space: {lr: 0.5}\nmax_failures: 1\n");
  EXPECT_EQ(run.exit_code, 1) << run.Describe();
  const std::string all = run.out + run.err;
  // Two attempts, each logged once (not once by the worker and once by the scheduler).
  EXPECT_EQ(Count(all, "attempt 1 failed"), 1u) << run.Describe();
  EXPECT_EQ(Count(all, "attempt 2 failed"), 1u) << run.Describe();
  EXPECT_NE(all.find("attempt 1 failed on local-"), std::string::npos) << run.Describe();
  EXPECT_NE(all.find("exited with code 1; PENDING, requeued (failure 1 of max_failures 1)"),
            std::string::npos)
      << run.Describe();
  EXPECT_NE(all.find("exited with code 1; ERROR, see "), std::string::npos) << run.Describe();
  EXPECT_EQ(Count(all, "| ValueError: lr too large: 0.5"), 2u) << run.Describe();
  EXPECT_NE(all.find("|     raise ValueError"), std::string::npos) << run.Describe();
}

TEST(TrialErrorsTest, JsonOutputIsOnlyJsonWhileTheSuiteLogsWarningsAndErrors) {
  // `tunectl -o json run` of an experiment whose trial fails (the embedded scheduler logs a
  // warning and the traceback) and is then run again as a new run (a note for people): stdout is
  // one JSON document each time, every log line and note is on stderr.
  TempDir dir;
  WriteFile(dir.path() / "trainable.py", "raise ValueError('lr too large')\n");
  const fs::path file = dir.path() / "exp.yaml";
  WriteFile(file,
            "name: jsonout\ntrainable: {command: [python3, trainable.py]}\nresults_dir: "
            "results\n");
  for (int run_no = 1; run_no <= 2; ++run_no) {
    SCOPED_TRACE(run_no);
    const auto run = RunTunectl({"-o", "json", "run", "--cpus", "2", file.string()}, 60s,
                                dir.path() / ("tunectl" + std::to_string(run_no)), dir.path());
    EXPECT_EQ(run.exit_code, 1) << run.Describe();
    const json summary = run.Json();
    ASSERT_TRUE(summary.is_object()) << "stdout is not one JSON document:\n" << run.out;
    EXPECT_EQ(summary["counts"].value("ERROR", -1), 1) << run.out;
    EXPECT_NE(run.err.find("ValueError: lr too large"), std::string::npos) << run.Describe();
    EXPECT_NE(run.err.find("[warning]"), std::string::npos) << run.Describe();
  }
}

TEST(TrialErrorsTest, ATrainableThatStopsReportingFailsAfterReportTimeout) {
  // Three reports 0.1 s apart, then silence: with report_timeout_s 3 the attempt is killed
  // and the trial is ERROR naming the timeout; its results so far are kept. A trainable that
  // reports every 0.3 s under the same timeout finishes. The timeout counts from the start, so
  // it leaves room for a slow interpreter start (pyenv's python3 shim takes ~1 s on a loaded
  // 2-core machine).
  TempDir dir;
  const auto run = RunEmbedded(
      dir,
      "import json, os, time\n"
      "cfg = json.loads(os.environ['TUNEBUS_CONFIG'])\n"
      "report = os.fdopen(3, 'w'); decide = os.fdopen(4)\n"
      "for i in range(6):\n"
      "    if cfg['hang'] and i == 3: time.sleep(600)\n"
      "    time.sleep(cfg['every_s'])\n"
      "    report.write(json.dumps({'loss': 1.0 / (i + 1)}) + '\\n'); report.flush()\n"
      "    if decide.readline().strip() == 'stop': break\n",
      "param_space: {hang: {grid_search: [true, false]}, every_s: {grid_search: [0.1, 0.3]}}\n"
      "report_timeout_s: 3\n");
  EXPECT_EQ(run.exit_code, 1)
      << run.Describe();  // trials ended in ERROR (Ray: "Trials did not complete")
  int hung = 0, finished = 0;
  for (const auto& entry : fs::directory_iterator(dir.path() / "results" / "failing")) {
    if (!entry.is_directory()) continue;
    const json params = json::parse(ReadFile(entry.path() / "params.json"), nullptr, false);
    const size_t rows = ReadLines(entry.path() / "result.json").size();
    if (params.value("hang", false)) {
      ++hung;
      EXPECT_EQ(rows, 3u) << entry.path();
      EXPECT_NE(ReadFile(entry.path() / "error.txt").find("report_timeout_s 3"), std::string::npos)
          << entry.path();
    } else {
      ++finished;
      EXPECT_EQ(rows, 6u) << entry.path();  // its 6 reports, once each (then it returned)
      EXPECT_FALSE(fs::exists(entry.path() / "error.txt")) << entry.path();
    }
  }
  EXPECT_EQ(hung, 2);
  EXPECT_EQ(finished, 2);
  const std::string all = run.out + run.err;
  EXPECT_EQ(Count(all, "reported no result for 3 s (report_timeout_s 3); killed; ERROR"), 2u)
      << run.Describe();
  EXPECT_EQ(Count(all, "failed on"), 2u) << run.Describe();  // the two trials that hang, only
}

}  // namespace
}  // namespace tunebus::testing
