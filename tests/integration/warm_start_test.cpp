// Warm start end to end (docs/reference/search.md "Warm start"): an experiment runs to the end, a
// second one names it in `search.warm_start` and its searcher is fed the first one's finished
// trials before its first suggestion, on `tunectl up` (found by name among the suite's experiments,
// also after a restart, when both live only in the store's journals) and on the embedded `tunectl
// run` (found in the same results folder's store); the submission errors name the entry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A shell trainable: one report, loss = (x - 0.3)^2.
constexpr const char* kTrainable =
    "x=$(echo \"$TUNEBUS_CONFIG\" | sed 's/.*\"x\":\\([0-9.e-]*\\).*/\\1/')\n"
    "echo \"{\\\"loss\\\": $(awk \"BEGIN{print ($x - 0.3) * ($x - 0.3)}\")}\" "
    ">&$TUNEBUS_REPORT_FD\n"
    "read -r decision <&$TUNEBUS_DECISION_FD\n"
    "exit 0\n";

fs::path WriteExperiment(const fs::path& dir, const std::string& name, int num_samples,
                         const std::string& search, const std::string& param_space = "x") {
  WriteFile(dir / "train.sh", kTrainable);
  const fs::path file = dir / (name + ".yaml");
  WriteFile(file, "name: " + name +
                      "\n"
                      "trainable: {command: [sh, train.sh]}\n"
                      "working_dir: false\n"
                      "param_space:\n"
                      "  " +
                      param_space +
                      ": {uniform: [0, 1]}\n"
                      "metric: loss\n"
                      "mode: min\n"
                      "num_samples: " +
                      std::to_string(num_samples) +
                      "\n"
                      "max_concurrent_trials: 1\n"
                      "search: " +
                      search +
                      "\n"
                      "stop: {training_iteration: 1}\n"
                      "results_dir: " +
                      (dir / "results").string() + "\n");
  return file;
}

// `tunectl up` on one data folder, started again by Restart() on the endpoints its first start
// bound.
class Suite {
 public:
  explicit Suite(const fs::path& dir)
      : dir_(dir),
        options_{"up",
                 BinDir() / "tunectl",
                 {"up", "--control", kAnyLoopback, "--events", kAnyLoopback, "--data-dir",
                  (dir_ / "store").string(), "--cpus", "2"},
                 {},
                 dir_ / "logs",
                 dir_} {}
  ::testing::AssertionResult Start() {
    options_.name = "up-" + std::to_string(++starts_);
    Ready ready;
    if (auto r = SpawnReady(options_, dir_ / "up.json", up_, ready); !r) return r;
    control_ = ready.endpoint("control");
    if (!WaitFor([&] { return Ctl({"lsx"}, 2s).exit_code == 0; }, 20s, 100ms)) {
      return ::testing::AssertionFailure() << "tunectl up did not answer: " << up_->Output();
    }
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult Restart() {
    const int code = up_->Stop();
    if (code != 0)
      return ::testing::AssertionFailure() << "tunectl up exited " << code << ": " << up_->Output();
    return Start();
  }
  CommandResult Ctl(std::vector<std::string> args, Millis timeout = 30s) {
    args.insert(args.begin(), {"--connect", control_});
    return RunTunectl(args, timeout);
  }
  std::string Output() const { return up_->Output(); }

 private:
  fs::path dir_;
  Process::Options options_;
  std::string control_;
  int starts_ = 0;
  std::unique_ptr<Process> up_;
};

TEST(WarmStartRunTest, ASecondExperimentLearnsFromAFinishedOneOnTheSuite) {
  TempDir dir;
  Suite suite(dir.path());
  ASSERT_TRUE(suite.Start());
  auto first = suite.Ctl({"run", WriteExperiment(dir.path(), "exp-a", 6, "tpe").string()}, 90s);
  ASSERT_EQ(first.exit_code, 0) << first.Describe() << suite.Output();
  auto second = suite.Ctl(
      {"run", WriteExperiment(dir.path(), "exp-b", 2, "{type: tpe, warm_start: [exp-a]}").string()},
      90s);
  ASSERT_EQ(second.exit_code, 0) << second.Describe() << suite.Output();
  auto status = suite.Ctl({"-o", "json", "status", "-e", "exp-b"});
  ASSERT_EQ(status.exit_code, 0) << status.Describe();
  const json searcher = status.Json()["searcher"];
  EXPECT_EQ(searcher["warm_start"],
            json({{"experiments", {"exp-a"}}, {"observations", 6}, {"skipped", 0}}))
      << status.out;
  EXPECT_EQ(searcher["observations"], 8) << status.out;  // 6 fed + its own 2
  EXPECT_EQ(status.Json()["counts"].value("TERMINATED", -1), 2) << status.out;
  auto text = suite.Ctl({"status", "-e", "exp-b"});
  EXPECT_NE(text.out.find("warm_start"), std::string::npos) << text.out;

  // Submission errors: an unknown name, other keys, another metric; nothing runs.
  auto unknown = suite.Ctl(
      {"run",
       WriteExperiment(dir.path(), "exp-c", 2, "{type: tpe, warm_start: [nosuch]}").string()});
  EXPECT_NE(unknown.exit_code, 0) << unknown.Describe();
  EXPECT_NE(unknown.err.find("search.warm_start[0]: no experiment named nosuch; known "
                             "experiments: exp-a, exp-b"),
            std::string::npos)
      << unknown.Describe();
  auto keys = suite.Ctl({"run", WriteExperiment(dir.path(), "exp-d", 2,
                                                "{type: bohb, warm_start: [exp-b, exp-a]}", "lr")
                                    .string()});
  EXPECT_NE(keys.exit_code, 0) << keys.Describe();
  EXPECT_NE(keys.err.find("search.warm_start[0]: experiment 'exp-b' has keys x; this param space "
                          "has lr"),
            std::string::npos)
      << keys.Describe();

  // After a restart both live only in the journals: exp-b's searcher state comes from its own
  // journal (fed once, the same counts), and a third experiment still finds exp-a there.
  ASSERT_TRUE(suite.Restart());
  auto again = suite.Ctl({"-o", "json", "status", "-e", "exp-b"});
  ASSERT_EQ(again.exit_code, 0) << again.Describe() << suite.Output();
  EXPECT_EQ(again.Json()["searcher"], searcher) << again.out;
  auto third = suite.Ctl(
      {"run", WriteExperiment(dir.path(), "exp-e", 1, "{type: bohb, warm_start: [exp-a, exp-b]}")
                  .string()},
      90s);
  ASSERT_EQ(third.exit_code, 0) << third.Describe() << suite.Output();
  auto e = suite.Ctl({"-o", "json", "status", "-e", "exp-e"});
  EXPECT_EQ(e.Json()["searcher"]["warm_start"]["observations"], 8) << e.out;
}

TEST(WarmStartRunTest, TheEmbeddedRunFindsAnEarlierRunInTheSameResultsFolder) {
  TempDir dir;
  auto first = RunTunectl(
      {"run", "--cpus", "2", WriteExperiment(dir.path(), "exp-a", 4, "tpe").string()}, 90s);
  ASSERT_EQ(first.exit_code, 0) << first.Describe();
  auto second = RunTunectl(
      {"run", "--cpus", "2",
       WriteExperiment(dir.path(), "exp-b", 1, "{type: tpe, warm_start: [exp-a]}").string()},
      90s);
  ASSERT_EQ(second.exit_code, 0) << second.Describe();
  EXPECT_NE(second.out.find("\"observations\":4"), std::string::npos) << second.out;
}

}  // namespace
}  // namespace tunebus::testing
