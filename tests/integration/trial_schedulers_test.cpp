// Issue 5 on real processes: an ASHA experiment over the mock trainable's learning curves runs on
// two workers; the scheduler is SIGKILLed mid-run and resumes from the journal (the ASHA rungs
// come back from the journaled state deltas). Low-lr trials stop early at a rung, the best run to
// max_t, and every trial finishes.
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(TrialSchedulersTest, AshaStopsWeakTrialsAtRungsAcrossASchedulerRestart) {
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "asha.yaml";
  WriteFile(file, "name: asha\n"
                  "trainable: {builtin: mock}\n"
                  "param_space:\n"
                  "  lr: {grid_search: [0.001, 0.1, 0.002, 0.05, 0.003, 0.08, 0.0015, 0.06, 0.0025, 0.07]}\n"
                  "  mock_iterations: 27\n"
                  "  sleep_s: 0.03\n"
                  "metric: mean_accuracy\n"
                  "mode: max\n"
                  "scheduler: {type: asha, max_t: 27, grace_period: 1, reduction_factor: 3}\n"
                  "results_dir: " + (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, "asha");
  ASSERT_FALSE(journal.empty());
  std::this_thread::sleep_for(600ms);
  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_FALSE(summary.empty()) << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();

  int early = 0, full = 0;
  for (const json& t : cluster.Ctl({"-o", "json", "ls"}).Json()) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    const int64_t it = t.value("training_iteration", 0);
    (it < 27 ? early : full) += 1;
    // A trial stopped early stopped at a rung milestone (1, 3 or 9), never between.
    if (it < 27) {
      EXPECT_TRUE(it == 1 || it == 3 || it == 9) << t.dump();
    }
  }
  EXPECT_GE(early, 3) << "ASHA stopped too few trials early";
  EXPECT_GE(full, 1);
  int deltas = 0, resumed = 0;
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    deltas += r.value("kind", "") == "trial_scheduler";
    resumed += r.value("kind", "") == "experiment_resumed";
  }
  EXPECT_GT(deltas, 0) << "the ASHA state was not journaled";
  EXPECT_EQ(resumed, 1);
  const std::string log = cluster.process("scheduler")->Stdout();
  EXPECT_NE(log.find("Resumed experiment asha"), std::string::npos) << log;
}

}  // namespace
}  // namespace tunebus::testing
