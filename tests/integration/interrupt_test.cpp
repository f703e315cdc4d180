// Ctrl-C during an embedded `tunectl run` keeps the run (Ray Tune's SIGINT then resume="AUTO"):
// the experiment is recorded INTERRUPTED, tunectl prints the command that resumes it and exits
// 130, and running the same command again continues the same trials to the end.
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The trial ids named by the folders of results/<name>.
std::set<std::string> TrialIds(const fs::path& experiment_dir) {
  std::set<std::string> ids;
  for (const auto& entry : fs::directory_iterator(experiment_dir)) {
    if (entry.is_directory() && entry.path().filename().string()[0] != '.') {
      ids.insert(entry.path().filename().string().substr(0, 11));  // "<5 hex>_<5 digits>"
    }
  }
  return ids;
}

TEST(InterruptTest, CtrlCInterruptsAndRunningTheSameCommandAgainResumesTheSameTrials) {
  TempDir dir;
  const fs::path file = dir.path() / "exp.yaml";
  WriteFile(file,
            "name: ctrlc\ntrainable: {builtin: mock}\n"
            "param_space: {lr: {uniform: [0.01, 0.1]}, sleep_s: 0.1, mock_iterations: 15}\n"
            "num_samples: 4\nseed: 3\ncheckpoint_freq: 5\nmax_concurrent_trials: 2\n"
            "results_dir: results\n");
  Process::Options o;
  o.name = "tunectl-run";
  o.binary = BinDir() / "tunectl";
  o.args = {"run", "--cpus", "2", file.string()};
  o.log_dir = dir.path() / "logs";
  o.cwd = dir.path();
  auto run = Process::Spawn(o);
  const fs::path experiment_dir = dir.path() / "results" / "ctrlc";
  // Interrupt once the first trials have results (their checkpoint at 5 may exist).
  ASSERT_TRUE(WaitFor(
      [&] {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(experiment_dir, ec)) {
          if (ReadLines(e.path() / "result.json").size() >= 6) return true;
        }
        return false;
      },
      30s, 50ms))
      << run->Output();
  run->Signal(SIGINT);
  const auto code = run->Wait(20s);
  ASSERT_TRUE(code.has_value()) << run->Output();
  EXPECT_EQ(*code, 130) << run->Output();
  EXPECT_NE(run->Stderr().find("resume with: tunectl run " + file.string()), std::string::npos)
      << run->Output();
  const json state =
      json::parse(ReadFile(experiment_dir / "experiment_state.json"), nullptr, false);
  ASSERT_TRUE(state.is_object());
  EXPECT_EQ(state.value("status", ""), "INTERRUPTED") << state.dump();
  for (const json& t : state["trials"]) EXPECT_NE(t.value("status", ""), "TERMINATED") << t.dump();
  const std::set<std::string> before = TrialIds(experiment_dir);

  auto again =
      RunTunectl({"run", "--cpus", "2", file.string()}, 90s, dir.path() / "again", dir.path());
  ASSERT_EQ(again.exit_code, 0) << again.Describe();
  EXPECT_NE(again.err.find("Resuming experiment ctrlc"), std::string::npos) << again.Describe();
  EXPECT_NE(again.out.find("FINISHED"), std::string::npos) << again.Describe();
  EXPECT_EQ(TrialIds(experiment_dir), before);  // the same trials, no second run in the folder
  for (const auto& e : fs::directory_iterator(experiment_dir)) {
    if (!e.is_directory() || e.path().filename().string()[0] == '.') continue;
    const auto rows = ReadLines(e.path() / "result.json");
    ASSERT_FALSE(rows.empty()) << e.path();
    EXPECT_EQ(json::parse(rows.back()).value("training_iteration", 0), 15) << e.path();
  }
}

}  // namespace
}  // namespace tunebus::testing
