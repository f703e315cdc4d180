// tunectl whatif on real service processes: a small FIFO experiment of the built-in mock
// trainable runs to its end, then its journal is replayed in the scheduler (control request
// whatif) through ASHA, FIFO and an ASHA sweep, and the bad inputs are refused with their exit
// codes (docs/how-to/whatif.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(WhatIfCommandTest, ReplaysAFinishedExperimentThroughAshaAndASweep) {
  // Four trials of the mock curve acc(lr, t) = 1 - 1 / (1 + 10 lr t), 9 iterations each, one at
  // a time (max_concurrent_trials 1): the results arrive trial after trial, lr 0.01, 0.1, 0.001,
  // 0.2. ASHA grace_period 1, reduction_factor 3, max_t 9 (rungs 1, 3, 9; cutoff the 2/3
  // quantile of what a rung holds, numpy's linear interpolation):
  //   lr 0.01: every rung empty: runs to 9.       lr 0.1: above every rung's cutoff: 9.
  //   lr 0.001: rung 1 {.0909, .5}: cutoff .0909 + .4091 * 2/3 = .3636 > .0099: STOP at 1.
  //   lr 0.2: rung 1 cutoff .2273 < .6667; rung 3 {.2308, .75}: .5769 < .8571; rung 9
  //           {.4737, .9}: .7579 < .9474: runs to 9 (max_t).
  // Replay 9 + 9 + 1 + 9 = 28 iterations of 36; the actual best (lr 0.2) is kept: regret 0.
  // grace_period 3 (rungs 3, 9): lr 0.001 stops at 3 (rung 3 {.2308, .75}: .5769 > .0291):
  // 30 iterations; both keep the best, grace_period 1 is the cheaper.
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "whatif.yaml";
  WriteFile(file,
            "name: curves\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: {grid_search: [0.01, 0.1, 0.001, 0.2]}\n"
            "  mock_iterations: 9\n"
            "metric: mean_accuracy\n"
            "mode: max\n"
            "max_concurrent_trials: 1\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, "curves");
  ASSERT_FALSE(journal.empty());
  ASSERT_FALSE(WaitFinished(cluster, 60s, journal).empty()) << cluster.LogTails();

  const std::string asha = "{type: asha, grace_period: 1, reduction_factor: 3, max_t: 9}";
  auto replay = cluster.Ctl({"-o", "json", "whatif", "curves", "--scheduler", asha});
  ASSERT_EQ(replay.exit_code, 0) << replay.Describe();
  const json r = replay.Json();
  EXPECT_EQ(r["journal"], journal);
  EXPECT_EQ(r["trials"], 4);
  EXPECT_EQ(r["record"]["results"], 36);
  EXPECT_EQ(r["actual"]["training_iterations"], 36);
  EXPECT_EQ(r["replay"]["training_iterations"], 28);
  EXPECT_EQ(r["trials_stopped"], 1);
  EXPECT_EQ(r["trials_unknown_beyond"], 0);
  EXPECT_DOUBLE_EQ(r["regret"].get<double>(), 0);
  EXPECT_EQ(r["actual_best"]["fate"], "as_recorded");
  EXPECT_EQ(r["actual"]["best_trial_id"], r["replay"]["best_trial_id"]);
  int stopped_at_1 = 0;
  for (const json& t : r["per_trial"]) {
    stopped_at_1 += t["fate"] == "stopped" && t["last_training_iteration"] == 1 &&
                    t["stop_detail"]["rung"] == 1;
  }
  EXPECT_EQ(stopped_at_1, 1) << r["per_trial"].dump();

  // The table a user reads.
  auto text = cluster.Ctl({"whatif", "curves", "--scheduler", asha});
  ASSERT_EQ(text.exit_code, 0) << text.Describe();
  EXPECT_NE(text.out.find("training iterations"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("36              28"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("kept, as it ran"), std::string::npos) << text.out;

  // FIFO replays the run as it was.
  auto fifo = cluster.Ctl({"-o", "json", "whatif", "curves", "--scheduler", "{type: fifo}"});
  ASSERT_EQ(fifo.exit_code, 0) << fifo.Describe();
  EXPECT_EQ(fifo.Json()["replay"]["training_iterations"], 36);

  auto sweep = cluster.Ctl({"-o", "json", "whatif", "curves", "--scheduler",
                            "{type: asha, reduction_factor: 3, max_t: 9}", "--sweep",
                            "{grace_period: [1, 3]}"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.Describe();
  const json s = sweep.Json();
  ASSERT_EQ(s["rows"].size(), 2u) << s.dump();
  EXPECT_EQ(s["rows"][0]["training_iterations"], 28);
  EXPECT_EQ(s["rows"][1]["training_iterations"], 30);
  EXPECT_EQ(s["rows"][0]["keeps_actual_best"], true);
  EXPECT_EQ(s["rows"][1]["keeps_actual_best"], true);
  EXPECT_EQ(s["cheapest_keeping"], 0);
  auto sweep_text =
      cluster.Ctl({"whatif", "curves", "--scheduler", "{type: asha, reduction_factor: 3, max_t: 9}",
                   "--sweep", "{grace_period: [1, 3]}"});
  ASSERT_EQ(sweep_text.exit_code, 0) << sweep_text.Describe();
  EXPECT_NE(sweep_text.out.find("* the cheapest setting"), std::string::npos) << sweep_text.out;

  // Bad input: each a clear message and its exit code.
  auto unknown = cluster.Ctl({"whatif", "nosuch", "--scheduler", asha});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.Describe();
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  auto malformed = cluster.Ctl({"whatif", "curves", "--scheduler", "{type: asha"});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.Describe();
  EXPECT_NE(malformed.err.find("--scheduler: not YAML"), std::string::npos) << malformed.err;
  auto not_a_map = cluster.Ctl({"whatif", "curves", "--scheduler", "asha"});
  EXPECT_EQ(not_a_map.exit_code, 2) << not_a_map.Describe();
  auto bad_sweep = cluster.Ctl({"whatif", "curves", "--scheduler", asha, "--sweep", "[1, 2]"});
  EXPECT_EQ(bad_sweep.exit_code, 2) << bad_sweep.Describe();
  auto bad_grid =
      cluster.Ctl({"whatif", "curves", "--scheduler", asha, "--sweep", "{grace_period: 2}"});
  EXPECT_EQ(bad_grid.exit_code, 2) << bad_grid.Describe();
  EXPECT_NE(bad_grid.err.find("sweep: grace_period: expected a non-empty list"), std::string::npos)
      << bad_grid.err;
  auto bad_param =
      cluster.Ctl({"whatif", "curves", "--scheduler", "{type: asha, grace_period: -1}"});
  EXPECT_EQ(bad_param.exit_code, 2) << bad_param.Describe();
  EXPECT_NE(bad_param.err.find("grace_period"), std::string::npos) << bad_param.err;
  auto pbt = cluster.Ctl({"whatif", "curves", "--scheduler", "{type: pbt}"});
  EXPECT_EQ(pbt.exit_code, 2) << pbt.Describe();
  EXPECT_NE(pbt.err.find("pbt cannot be replayed"), std::string::npos) << pbt.err;

  // A running experiment: refused until it has finished.
  const fs::path slow = cluster.dir() / "slow.yaml";
  WriteFile(slow,
            "name: slow\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: 0.1\n"
            "  sleep_s: 0.2\n"
            "  mock_iterations: 1000\n"
            "metric: mean_accuracy\n"
            "mode: max\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  ASSERT_FALSE(SubmitDetached(cluster, slow, "slow").empty());
  auto running = cluster.Ctl({"whatif", "slow", "--scheduler", asha});
  EXPECT_EQ(running.exit_code, 1) << running.Describe();
  EXPECT_NE(running.err.find("is still running"), std::string::npos) << running.err;
  EXPECT_EQ(cluster.Ctl({"stop-experiment", "-e", "slow"}).exit_code, 0);
}

}  // namespace
}  // namespace tunebus::testing
