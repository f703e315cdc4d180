// Fault test (issue 21): a searcher's state survives SIGKILLs of the scheduler. An experiment
// with `search: {max_concurrent, points_to_evaluate}` over random search is killed a few times
// while it runs; the configs its journal holds, in order, are those the same searcher suggests
// without any kill (computed here with MakeSearcher): the points first, then the seeded samples,
// none repeated or skipped by a resume.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "libs/tune/make_searcher.hpp"
#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(SearcherResumeFaultTest, KilledSchedulerResumesTheSearcherWhereItWas) {
  Cluster cluster(ClusterOptions{});
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "search.yaml";
  WriteFile(file,
            "name: search\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: {uniform: [0.01, 0.1]}\n"
            "  mock_iterations: 20\n"
            "  sleep_s: 0.05\n"
            "num_samples: 12\n"
            "seed: 7\n"
            "metric: mean_accuracy\n"
            "mode: max\n"
            "search:\n"
            "  max_concurrent: 3\n"
            "  points_to_evaluate: [{lr: 0.05}, {lr: 0.07}]\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  auto submit = cluster.Ctl({"-o", "json", "run", "--detach", file.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  const std::string journal = "search-" + submit.Json().value("experiment_id", "");
  for (int kill = 0; kill < 3; ++kill) {
    std::this_thread::sleep_for(400ms);
    auto status = cluster.Ctl({"-o", "json", "status"}, 10s);
    if (status.exit_code == 0 && status.Json().value("finished", false)) break;
    ASSERT_TRUE(cluster.Restart("scheduler"));  // SIGKILL, then the same binary and flags
    ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"status"}, 2s).exit_code == 0; }, 20s, 100ms))
        << cluster.LogTails();
  }
  json summary;
  ASSERT_TRUE(WaitFor(
      [&] {
        summary = cluster.Ctl({"-o", "json", "status"}, 5s).Json();
        return summary.is_object() && summary.value("finished", false);
      },
      60s, 200ms))
      << summary.dump() << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
  EXPECT_EQ(summary["searcher"], (json{{"searcher", "random"},
                                       {"suggested", 12},
                                       {"total", 12},
                                       {"max_concurrent", 3},
                                       {"live_trials", 0},
                                       {"points_to_evaluate", 2},
                                       {"points_served", 2}}))
      << summary.dump();

  // The same searcher, never interrupted.
  SearchSetup setup;
  setup.param_space = {
      {"lr", {{"uniform", {0.01, 0.1}}}}, {"mock_iterations", 20}, {"sleep_s", 0.05}};
  setup.num_samples = 12;
  setup.metric = "mean_accuracy";
  setup.mode = "max";
  setup.seed = 7;
  auto searcher = MakeSearcher(
      "random", {{"max_concurrent", 3}, {"points_to_evaluate", {{{"lr", 0.05}}, {{"lr", 0.07}}}}},
      setup);
  ASSERT_TRUE(searcher.ok()) << searcher.status().ToString();
  std::vector<json> expected;
  for (int i = 0; i < 12; ++i) {
    Suggestion s = (*searcher)->Suggest("t" + std::to_string(i));
    ASSERT_EQ(s.kind, Suggestion::Kind::kConfig);
    expected.push_back(s.config);
    (*searcher)->OnTrialComplete("t" + std::to_string(i), nullptr, false);
  }
  std::vector<json> configs;
  int searcher_records = 0, resumed = 0;
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    if (r.value("kind", "") == "experiment_resumed") ++resumed;
    if (r.value("kind", "") == "trial_added") configs.push_back(r["config"]);
    if (r.value("kind", "") == "searcher") ++searcher_records;
  }
  EXPECT_EQ(configs, expected);
  EXPECT_GT(searcher_records, 0);
  EXPECT_GT(resumed, 0) << "the scheduler was never killed while the experiment ran";
}

}  // namespace
}  // namespace tunebus::testing
