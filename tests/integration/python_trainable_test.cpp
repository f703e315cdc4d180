// Python trainables run embedded through clients/python/tunebus/, and the results folder they
// leave read with the tools a Ray Tune user's notebook uses (pandas, TensorBoard's protobufs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Writes <dir>/<name>/train.py (`loop`: its body after `cfg = tunebus.config()`, which imports
// clients/python/tunebus/) and <dir>/<name>/exp.yaml running it with `python` over
// x in {1, 2}, metric score (max), results in <dir>/<name>/results. Returns exp.yaml's path.
// (The source folder travels as TRAINER_SOURCE_DIR: trainable.env rejects names starting with
// TUNEBUS_.)
fs::path WritePythonExperiment(const fs::path& dir, const std::string& name,
                               const std::string& python, const std::string& loop) {
  WriteFile(
      dir / name / "train.py",
      "import os, sys\n"
      "sys.path.insert(0, os.path.join(os.environ['TRAINER_SOURCE_DIR'], 'clients', 'python'))\n"
      "import tunebus\n"
      "cfg = tunebus.config()\n" +
          loop);
  const fs::path file = dir / name / "exp.yaml";
  WriteFile(file, "name: " + name +
                      "\n"
                      "trainable:\n"
                      "  command: [" +
                      python +
                      ", train.py]\n"
                      "  env:\n"
                      "    TRAINER_SOURCE_DIR: " +
                      SourceDir().string() +
                      "\n"
                      "param_space:\n"
                      "  x: {grid_search: [1, 2]}\n"
                      "metric: score\n"
                      "mode: max\n"
                      "results_dir: results\n");
  return file;
}

TEST(ClusterTest, CommandTrainableWithPythonHelper) {
  // An embedded run of a Python trainable that uses clients/python/tunebus/: 3 results per trial,
  // its stdout saved in the trial folder.
  if (std::system("command -v python3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 is not on PATH";
  TempDir dir;
  const fs::path file =
      WritePythonExperiment(dir.path(), "py", "python3",
                            "print('hello from', tunebus.trial_id(), flush=True)\n"
                            "for i in range(3):\n"
                            "    tunebus.report(score=cfg['x'] * (i + 1))\n");
  auto run = RunTunectl({"-o", "json", "run", "--cpus", "2", file.string()}, 60s,
                        dir.path() / "tunectl", dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  const json summary = run.Json();
  ASSERT_TRUE(summary.is_object()) << run.Describe();
  EXPECT_EQ(summary.value("status", ""), "FINISHED");
  EXPECT_EQ(summary["counts"].value("TERMINATED", -1), 2) << run.out;
  const fs::path experiment_dir = dir.path() / "py" / "results" / "py";
  EXPECT_EQ(fs::path(summary.value("results_dir", "")), experiment_dir);

  const json state =
      json::parse(ReadFile(experiment_dir / "experiment_state.json"), nullptr, false);
  ASSERT_TRUE(state.is_object());
  ASSERT_EQ(state["trials"].size(), 2u) << state.dump(1);
  for (const json& t : state["trials"]) {
    SCOPED_TRACE(t.dump());
    const fs::path trial_dir = t.value("dir", "");
    const int x = t["config"].value("x", 0);
    // The 3 reports, once each and as reported (done: false); the trainable returned, so the
    // trial's last result says done: true in the state (Ray Tune's RESULT_DUPLICATE), not as a
    // fourth row.
    const auto results = ReadLines(trial_dir / "result.json");
    ASSERT_EQ(results.size(), 3u) << ReadFile(trial_dir / "result.json");
    for (size_t i = 0; i < 3; ++i) {
      const json r = json::parse(results[i], nullptr, false);
      EXPECT_EQ(r.value("score", -1), x * int(i + 1)) << results[i];
      EXPECT_EQ(r.value("training_iteration", -1), int(i + 1)) << results[i];
      EXPECT_EQ(r.value("done", true), false) << results[i];
    }
    EXPECT_EQ(ReadLines(trial_dir / "progress.csv").size(), 4u);  // header and 3 rows
    EXPECT_EQ(t["last_result"].value("done", false), true);
    EXPECT_EQ(t["last_result"].value("training_iteration", -1), 3);
    ASSERT_TRUE(fs::exists(trial_dir / "stdout"));
    EXPECT_NE(ReadFile(trial_dir / "stdout").find("hello from " + t.value("trial_id", "")),
              std::string::npos)
        << ReadFile(trial_dir / "stdout") << ReadFile(trial_dir / "stderr");
  }
}

// A Python interpreter that can import pandas and google.protobuf ($TUNEBUS_PYTHON,
// /usr/bin/python3 — Debian's modules — or python3), or "".
std::string PythonWithPandasAndProtobuf() {
  for (const std::string& py :
       {std::string(std::getenv("TUNEBUS_PYTHON") ? std::getenv("TUNEBUS_PYTHON") : ""),
        std::string("/usr/bin/python3"), std::string("python3")}) {
    if (py.empty()) continue;
    if (std::system((py + " -c 'import pandas, google.protobuf' >/dev/null 2>&1").c_str()) == 0)
      return py;
  }
  return "";
}

TEST(ClusterTest, ResultsFolderReadsAsARayTuneUsersNotebookReadsIt) {
  // An embedded run of a Python trainable that reports a nested metric three times and returns.
  // tests/integration/read_results.py then reads the folder with tools that are not ours, as a
  // Ray Tune notebook does: pd.read_csv(progress.csv) has config/x, info/a, date, pid, hostname,
  // node_ip and done (false: the trainable returned, reporting no done); pd.read_json(result.json,
  // lines=True) has the config object; the TensorBoard event file parses with protoc's Python
  // module of tensorboard/event.proto, every TFRecord's masked CRC-32C checked by the crc32c
  // module, one Event per row with ray/tune/score and ray/tune/info/a.
  const std::string python = PythonWithPandasAndProtobuf();
  if (python.empty())
    GTEST_SKIP() << "no Python with pandas and protobuf (Debian python3-pandas python3-protobuf)";
  if (std::system("command -v protoc >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "protoc is not on PATH";
  TempDir dir;
  const fs::path file =
      WritePythonExperiment(dir.path(), "nb", python,
                            "for i in range(3):\n"
                            "    score = cfg['x'] * (i + 1)\n"
                            "    tunebus.report(score=score, info={'a': score * 10})\n");
  auto run = RunTunectl({"-o", "json", "run", "--cpus", "2", file.string()}, 60s,
                        dir.path() / "tunectl", dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  const fs::path experiment_dir = dir.path() / "nb" / "results" / "nb";
  const fs::path out = dir.path() / "read_results.out";
  const std::string cmd =
      python + " " + (SourceDir() / "tests" / "integration" / "read_results.py").string() + " " +
      experiment_dir.string() + " " +
      (SourceDir() / "services" / "scheduler" / "results" / "tensorboard" / "event.proto")
          .string() +
      " >" + out.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << cmd << "\n" << ReadFile(out);
  const json summary = json::parse(ReadLines(out).back(), nullptr, false);
  // 3 reported rows per trial; events: the file version and one per row.
  EXPECT_EQ(summary, (json{{"trials", 2}, {"rows", 6}, {"events", 8}})) << ReadFile(out);
}

}  // namespace
}  // namespace tunebus::testing
