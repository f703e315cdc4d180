// Fault tests: a searcher's state survives SIGKILLs of the scheduler.
// - Random search with `search: {max_concurrent, points_to_evaluate}` is killed a few times while
//   it runs; the configs its journal holds, in order, are those the same searcher suggests
//   without any kill (computed here with MakeSearcher): the points first, then the seeded
//   samples, none repeated or skipped by a resume.
// - The model-based searchers, TPE and BOHB with hyperband_bohb (pauses, halvings), whose
//   suggestions depend on the results: the same experiment (same seed) is run once without a
//   kill, the ground truth, then again with the scheduler killed three times; the trials'
//   configs, by trial index, are the same. One trial runs at a time (max_concurrent_trials: 1),
//   so the uninterrupted run is itself reproducible: each suggestion sees the results of the
//   trials before it and no other (TrialRunner::Step suggests the next trial in the step that
//   places one, so it is journaled before that trial starts).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
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
  ASSERT_GE(KillSchedulerWhileRunning(cluster, {400ms, 400ms, 400ms}), 0);
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

// The experiment file of a model-based searcher's run: the mock trainable (mean_accuracy grows
// with lr and the iteration), nine iterations of 30 ms, one trial at a time, seed 11.
std::string ModelSearchYaml(const std::string& name, const std::string& search,
                            const std::string& scheduler, int num_samples, const fs::path& dir) {
  return "name: " + name +
         "\n"
         "trainable: {builtin: mock}\n"
         "param_space:\n"
         "  lr: {loguniform: [0.001, 0.1]}\n"
         "  momentum: {uniform: [0.0, 0.9]}\n"
         "  mock_iterations: 9\n"
         "  sleep_s: 0.03\n"
         "num_samples: " +
         std::to_string(num_samples) +
         "\n"
         "seed: 11\n"
         "metric: mean_accuracy\n"
         "mode: max\n"
         "max_concurrent_trials: 1\n"
         "search: " +
         search + "\nscheduler: " + scheduler + "\nresults_dir: " + (dir / "results").string() +
         "\n";
}

struct SearchRun {
  std::map<int64_t, json> configs;  // by trial index
  int resumed = 0;                  // experiment_resumed records
  json summary;                     // `tunectl status -o json` at the end
};

// Runs `yaml` to its end on `cluster`, SIGKILLing the scheduler after each of `kill_after`.
SearchRun RunSearch(Cluster& cluster, const std::string& name, const std::string& yaml,
                    const std::vector<Millis>& kill_after) {
  SearchRun run;
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, yaml);
  const std::string journal = SubmitDetached(cluster, file, name);
  if (journal.empty()) return run;
  EXPECT_GE(KillSchedulerWhileRunning(cluster, kill_after), 0);
  run.summary = WaitFinished(cluster, 120s);
  EXPECT_EQ(run.summary.value("status", ""), "FINISHED")
      << run.summary.dump() << cluster.LogTails();
  const std::vector<json> records = ReadJournal(cluster.store(), journal);
  run.configs = TrialConfigs(records);
  for (const json& r : records) run.resumed += r.value("kind", "") == "experiment_resumed";
  return run;
}

// Runs the experiment without a kill, then with three, and compares the suggested configs.
void ExpectKilledRunSuggestsAsTheUninterruptedOne(const std::string& search,
                                                  const std::string& scheduler, int num_samples,
                                                  const json& searcher_at_end) {
  Cluster cluster(ClusterOptions{});
  ASSERT_TRUE(cluster.Start());
  const SearchRun truth =
      RunSearch(cluster, "truth",
                ModelSearchYaml("truth", search, scheduler, num_samples, cluster.dir()), {});
  ASSERT_EQ(truth.configs.size(), size_t(num_samples)) << truth.summary.dump();
  const SearchRun killed = RunSearch(
      cluster, "killed", ModelSearchYaml("killed", search, scheduler, num_samples, cluster.dir()),
      {700ms, 900ms, 900ms});
  EXPECT_GT(killed.resumed, 0) << "the scheduler was never killed while the experiment ran";
  EXPECT_EQ(killed.configs, truth.configs);
  for (const char* key : {"searcher", "phase", "observations", "running"}) {
    EXPECT_EQ(killed.summary["searcher"][key], truth.summary["searcher"][key]) << key;
  }
  for (const auto& [key, value] : searcher_at_end.items()) {
    EXPECT_EQ(truth.summary["searcher"][key], value) << key << " " << truth.summary.dump();
  }
  std::printf("%s: %zu trials, %d resumes, configs equal: %s\n", search.c_str(),
              killed.configs.size(), killed.resumed,
              killed.configs == truth.configs ? "yes" : "no");
}

TEST(SearcherResumeFaultTest, KilledTpeExperimentSuggestsWhatAnUninterruptedOneDoes) {
  // Three random configs, then seven from the model of every finished trial.
  ExpectKilledRunSuggestsAsTheUninterruptedOne("{type: tpe, n_startup_trials: 3}", "fifo", 10,
                                               {{"searcher", "tpe"}, {"phase", "model"}});
}

TEST(SearcherResumeFaultTest, KilledBohbExperimentSuggestsWhatAnUninterruptedOneDoes) {
  // One band of hyperband_bohb with max_t 9, eta 3: brackets of 9, 5 and 3 trials; the first
  // pauses nine trials at iteration 1 and continues three, then one. BOHB's model (d = 2: 6
  // observations at a budget, 3 good and 3 bad) is fitted from the first rung's results on.
  ExpectKilledRunSuggestsAsTheUninterruptedOne(
      "{type: bohb}", "{type: hyperband_bohb, max_t: 9, reduction_factor: 3}", 17,
      {{"searcher", "bohb"}, {"phase", "model"}});
}

}  // namespace
}  // namespace tunebus::testing
