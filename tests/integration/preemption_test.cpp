// With `preemptible: true`, an experiment holding more than its fair share
// gives way to another's pending trials: its newest trial is PAUSED (checkpointed, freed), the
// other's trial runs, and once that experiment ends the paused trial continues from its
// checkpoint, also across a SIGKILL of the scheduler. The real services on loopback, one worker
// with 2 CPUs.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string MockExperiment(const std::string& name, int trials, int iterations,
                           const std::string& extra, const fs::path& results) {
  return "name: " + name +
         "\n"
         "trainable: {builtin: mock}\n"
         "param_space:\n"
         "  x: {grid_search: [" +
         [&] {
           std::string values;
           for (int i = 0; i < trials; ++i) values += (i ? ", " : "") + std::to_string(i);
           return values;
         }() +
         "]}\n"
         "  mock_iterations: " +
         std::to_string(iterations) +
         "\n"
         "  sleep_s: 0.02\n"
         "checkpoint_freq: 1\n"
         "results_dir: " +
         results.string() + "\n" + extra;
}

// `long` (2 trials, preemptible) fills the worker's 2 CPUs, then `short` (1 trial) comes: at
// equal weights each gets one CPU, so `long` pauses one trial. Returns that trial's `ls` row.
json RunLongThenShortUntilAPreemption(Cluster& cluster) {
  const fs::path results = cluster.dir() / "results";
  WriteFile(cluster.dir() / "long.yaml",
            MockExperiment("long", 2, 400, "preemptible: true\n", results));
  WriteFile(cluster.dir() / "short.yaml", MockExperiment("short", 1, 30, "", results));
  json paused;
  if (cluster.Ctl({"run", "--detach", (cluster.dir() / "long.yaml").string()}).exit_code != 0 ||
      !WaitFor(
          [&] {
            return cluster.Ctl({"-o", "json", "status", "-e", "long"})
                       .Json()["counts"]
                       .value("RUNNING", 0) == 2;
          },
          20s, 100ms) ||
      cluster.Ctl({"run", "--detach", (cluster.dir() / "short.yaml").string()}).exit_code != 0) {
    ADD_FAILURE() << "could not start both experiments" << cluster.LogTails();
    return paused;
  }
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const json& t : cluster.Ctl({"-o", "json", "ls", "-e", "long"}).Json()) {
          if (t.value("status", "") == "PAUSED") paused = t;
        }
        return paused.is_object();
      },
      30s, 100ms))
      << cluster.LogTails();
  return paused;
}

// `short` finishes, then the paused trial of `long` continues from its checkpoint to its last
// iteration and `long` finishes.
void ExpectShortThenTheResumedLongFinish(Cluster& cluster, const json& paused) {
  EXPECT_TRUE(WaitFor(
      [&] {
        return cluster.Ctl({"-o", "json", "status", "-e", "short"}).Json().value("status", "") ==
               "FINISHED";
      },
      60s, 200ms))
      << cluster.LogTails();
  json summary;
  ASSERT_TRUE(WaitFor(
      [&] {
        summary = cluster.Ctl({"-o", "json", "status", "-e", "long"}).Json();
        return summary.value("finished", false);
      },
      90s, 200ms))
      << summary.dump() << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED");
  EXPECT_EQ(summary["counts"].value("TERMINATED", 0), 2) << summary.dump();
  const json resumed =
      cluster.Ctl({"-o", "json", "show", "-e", "long", paused.value("trial_id", "")}).Json();
  EXPECT_EQ(resumed.value("training_iteration", int64_t(0)), 400) << resumed.dump();
  EXPECT_FALSE(resumed.value("restored_checkpoint_id", std::string()).empty())
      << "the preempted trial started again from scratch: " << resumed.dump();
  std::printf("preempted trial %s paused at iteration %lld, restored from %s\n",
              paused.value("trial_id", "").c_str(),
              static_cast<long long>(paused.value("training_iteration", int64_t(0))),
              resumed.value("restored_checkpoint_id", std::string()).c_str());
}

ClusterOptions OneWorkerWithTwoCpus() {
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 2;
  return o;
}

TEST(PreemptionTest, APreemptibleExperimentPausesItsNewestTrialForAnotherAndContinuesItLater) {
  Cluster cluster(OneWorkerWithTwoCpus());
  ASSERT_TRUE(cluster.Start());
  const json paused = RunLongThenShortUntilAPreemption(cluster);
  ASSERT_TRUE(paused.is_object());
  EXPECT_FALSE(paused["checkpoints"].empty()) << paused.dump();
  EXPECT_GT(paused.value("training_iteration", int64_t(0)), 0);
  ExpectShortThenTheResumedLongFinish(cluster, paused);
}

// The preempted list is journaled (trials_preempted): a scheduler SIGKILLed while a trial is
// paused by preemption resumes both experiments and still continues that trial once `short` ends
// (a PAUSED trial the user paused would stay PAUSED).
TEST(PreemptionTest, APreemptedTrialStillContinuesAfterTheSchedulerIsKilled) {
  Cluster cluster(OneWorkerWithTwoCpus());
  ASSERT_TRUE(cluster.Start());
  const json paused = RunLongThenShortUntilAPreemption(cluster);
  ASSERT_TRUE(paused.is_object());
  ASSERT_TRUE(cluster.Restart("scheduler"));
  ExpectShortThenTheResumedLongFinish(cluster, paused);
}

}  // namespace
}  // namespace tunebus::testing
