// On real processes: an ASHA experiment over the mock trainable's learning curves runs on
// two workers; the scheduler is SIGKILLed mid-run and resumes from the journal (the ASHA rungs
// come back from the journaled state deltas). Low-lr trials stop early at a rung, the best run to
// max_t, and every trial finishes.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

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
  WriteFile(
      file,
      "name: asha\n"
      "trainable: {builtin: mock}\n"
      "param_space:\n"
      "  lr: {grid_search: [0.001, 0.1, 0.002, 0.05, 0.003, 0.08, 0.0015, 0.06, 0.0025, 0.07]}\n"
      "  mock_iterations: 27\n"
      "  sleep_s: 0.03\n"
      "metric: mean_accuracy\n"
      "mode: max\n"
      "scheduler: {type: asha, max_t: 27, grace_period: 1, reduction_factor: 3}\n"
      "results_dir: " +
          (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, "asha");
  ASSERT_FALSE(journal.empty());
  // The restart comes once ASHA's state is in the journal (its first rung decisions made).
  ASSERT_TRUE(WaitUntil(
      "a trial_scheduler record in " + journal,
      [&] {
        for (const json& r : ReadJournal(cluster.store(), journal)) {
          if (r.value("kind", "") == "trial_scheduler") return true;
        }
        return false;
      },
      30s, 50ms))
      << cluster.LogTails();
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

// Every sampling function of the variant generator in one experiment file, run on two worker
// processes under each remaining trial scheduler: the configs arrive in the trials within their
// bounds, and the scheduler stops the weak (low-lr) trials before max_t.
struct SchedulerCase {
  const char* name;
  const char* scheduler_yaml;
  bool pauses;  // HyperBand pauses a trial at a rung and unpauses the best from its checkpoint
};

class EverySamplerTest : public ::testing::TestWithParam<SchedulerCase> {};

TEST_P(EverySamplerTest, ExperimentFileWithEverySamplerRunsOnWorkersAndWeakTrialsStopEarly) {
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "samplers.yaml";
  WriteFile(
      file,
      std::string("name: samplers\n"
                  "trainable: {builtin: mock}\n"
                  "param_space:\n"
                  "  lr: {grid_search: [0.0005, 0.1, 0.001, 0.08, 0.0008, 0.06, 0.0006, 0.09]}\n"
                  "  mock_iterations: 27\n"
                  "  sleep_s: 0.01\n"
                  "  s:\n"
                  "    choice: {choice: [a, b, 3]}\n"
                  "    uniform: {uniform: [1, 2]}\n"
                  "    quniform: {quniform: [0, 10, 2.5]}\n"
                  "    loguniform: {loguniform: [1.0, 1000.0, 10]}\n"
                  "    qloguniform: {qloguniform: [1.0, 1000.0, 5]}\n"
                  "    randn: {randn: [0, 1]}\n"
                  "    qrandn: {qrandn: [0, 1, 0.5]}\n"
                  "    randint: {randint: [0, 10]}\n"
                  "    qrandint: {qrandint: [0, 20, 5]}\n"
                  "    lograndint: {lograndint: [1, 100]}\n"
                  "    qlograndint: {qlograndint: [1, 100, 5]}\n"
                  "metric: mean_accuracy\n"
                  "mode: max\n"
                  "seed: 5\n"
                  "checkpoint_freq: 1\n"
                  "scheduler: ") +
          GetParam().scheduler_yaml + "\nresults_dir: " + (cluster.dir() / "results").string() +
          "\n");
  const CommandResult run = cluster.Ctl({"run", file.string()}, 120s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe() << cluster.LogTails();
  const json trials = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_EQ(trials.size(), 8u) << trials.dump();
  int unpaused = 0, weak_stopped = 0;
  int64_t longest = 0, strongest = 0;
  for (const json& t : trials) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    const json& s = t["config"]["s"];
    EXPECT_TRUE(s["choice"] == "a" || s["choice"] == "b" || s["choice"] == 3) << s.dump();
    EXPECT_GE(s["uniform"].get<double>(), 1.0);
    EXPECT_LT(s["uniform"].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(std::fmod(s["quniform"].get<double>(), 2.5), 0.0) << s.dump();
    EXPECT_GE(s["loguniform"].get<double>(), 1.0);
    EXPECT_LE(s["loguniform"].get<double>(), 1000.0);
    EXPECT_DOUBLE_EQ(std::fmod(s["qloguniform"].get<double>(), 5.0), 0.0) << s.dump();
    EXPECT_TRUE(s["randn"].is_number_float()) << s.dump();
    EXPECT_DOUBLE_EQ(std::fmod(s["qrandn"].get<double>(), 0.5), 0.0) << s.dump();
    for (const char* k : {"randint", "qrandint", "lograndint", "qlograndint"}) {
      EXPECT_TRUE(s[k].is_number_integer()) << k << " " << s.dump();
    }
    EXPECT_GE(s["randint"].get<int64_t>(), 0);
    EXPECT_LT(s["randint"].get<int64_t>(), 10);
    EXPECT_EQ(s["qrandint"].get<int64_t>() % 5, 0) << s.dump();
    EXPECT_GE(s["lograndint"].get<int64_t>(), 1);
    EXPECT_LT(s["lograndint"].get<int64_t>(), 100);
    EXPECT_EQ(s["qlograndint"].get<int64_t>() % 5, 0) << s.dump();
    const int64_t it = t.value("training_iteration", 0);
    longest = std::max(longest, it);
    if (t["config"].value("lr", 0.0) == 0.1) strongest = it;
    unpaused += !t["restored_checkpoint_id"].is_null();
    weak_stopped += t["config"].value("lr", 0.0) <= 0.001 && it < 27;
  }
  EXPECT_EQ(strongest, longest) << "the strongest trial (lr 0.1) did not train longest";
  EXPECT_EQ(strongest, 27) << "the strongest trial (lr 0.1) was stopped";
  // Of the 4 weak trials (lr <= 0.001) at least 2 stop early (HyperBand's s = 0 bracket, plain
  // random search, may run one to max_t).
  EXPECT_GE(weak_stopped, 2) << GetParam().name << " stopped too few weak trials early";
  if (GetParam().pauses) {
    EXPECT_GE(unpaused, 1) << "no trial was paused at a rung and continued from its checkpoint";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schedulers, EverySamplerTest,
    ::testing::Values(
        SchedulerCase{
            "hyperband",
            "{type: hyperband, time_attr: training_iteration, max_t: 27, reduction_factor: 3}",
            true},
        SchedulerCase{"median_stopping",
                      "{type: median_stopping, time_attr: training_iteration, grace_period: 3, "
                      "min_samples_required: 3}",
                      false}),
    [](const ::testing::TestParamInfo<SchedulerCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace tunebus::testing
