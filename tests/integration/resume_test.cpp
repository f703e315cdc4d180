// The resume modes on real processes: an experiment that finished with an ERROR trial is
// resumed by name after a scheduler restart; --rerun-errored=restore continues the errored trial
// from its checkpoint, =restart from scratch, and nothing else is touched. tunectl lsx lists it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Three mock trials; the one with mock_error fails at iteration 2 of its first attempt only
// (checkpoint at 1), so a rerun succeeds.
fs::path WriteFlaky(Cluster& cluster, const std::string& name) {
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, "name: " + name +
                      "\n"
                      "trainable: {builtin: mock}\n"
                      "param_space:\n"
                      "  mock_error: {grid_search: [false, true, false]}\n"
                      "  mock_error_iteration: 2\n"
                      "  mock_iterations: 4\n"
                      "checkpoint_freq: 1\n"
                      "results_dir: " +
                      (cluster.dir() / "results").string() + "\n");
  return file;
}

json ByIndex(Cluster& cluster, size_t i) { return cluster.Ctl({"-o", "json", "ls"}).Json()[i]; }

// Waits until trial `i` is TERMINATED and returns it.
json WaitTerminated(Cluster& cluster, size_t i) {
  json t;
  EXPECT_TRUE(WaitFor(
      [&] {
        t = ByIndex(cluster, i);
        return t.value("status", "") == "TERMINATED";
      },
      20s, 100ms))
      << t.dump();
  return t;
}

void RunAndRestart(Cluster& cluster, const std::string& name) {
  auto run = cluster.Ctl({"run", WriteFlaky(cluster, name).string()}, 60s);
  ASSERT_EQ(run.exit_code, 1) << run.Describe();  // one trial ERROR
  ASSERT_TRUE(cluster.Restart("scheduler"));      // the experiment now lives only in the journal
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"status"}, 2s).exit_code != 3; }, 20s, 100ms));
}

TEST(ResumeTest, RerunErroredRestoreContinuesOnlyTheErroredTrialFromItsCheckpoint) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  RunAndRestart(cluster, "flaky");

  auto lsx = cluster.Ctl({"-o", "json", "lsx"});
  ASSERT_EQ(lsx.exit_code, 0) << lsx.Describe();
  ASSERT_EQ(lsx.Json().size(), 1u) << lsx.out;
  EXPECT_EQ(lsx.Json()[0].value("status", ""), "FINISHED");
  EXPECT_EQ(lsx.Json()[0]["counts"].value("ERROR", -1), 1) << lsx.out;
  EXPECT_EQ(lsx.Json()[0]["counts"].value("TERMINATED", -1), 2) << lsx.out;
  EXPECT_GT(lsx.Json()[0].value("submitted_at", 0.0), 1.7e9) << lsx.out;  // the start time
  auto lsx_table = cluster.Ctl({"lsx"});
  EXPECT_NE(lsx_table.out.find("started (UTC)"), std::string::npos) << lsx_table.out;

  auto plain = cluster.Ctl({"resume", "flaky"});
  EXPECT_EQ(plain.exit_code, 1) << plain.Describe();
  EXPECT_NE(plain.err.find("is finished"), std::string::npos) << plain.Describe();
  EXPECT_NE(plain.err.find("--rerun-errored"), std::string::npos) << plain.Describe();

  const json before0 = ByIndex(cluster, 0), before2 = ByIndex(cluster, 2);
  auto rerun = cluster.Ctl({"-o", "json", "resume", "flaky", "--rerun-errored=restore"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.Describe();
  EXPECT_EQ(rerun.Json().value("rerun", -1), 1) << rerun.out;
  const json t = WaitTerminated(cluster, 1);
  EXPECT_EQ(t.value("attempt", -1), 2);
  EXPECT_NE(t.value("restored_checkpoint_id", "").find("00000001-a1"), std::string::npos)
      << t.dump();
  EXPECT_EQ(t.value("training_iteration", -1), 4);
  // Nothing else was touched.
  EXPECT_EQ(ByIndex(cluster, 0), before0);
  EXPECT_EQ(ByIndex(cluster, 2), before2);
}

TEST(ResumeTest, RerunErroredRestartRunsTheErroredTrialFromScratch) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  RunAndRestart(cluster, "flaky2");
  auto rerun = cluster.Ctl({"resume", "flaky2", "--rerun-errored=restart"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.Describe();
  const json t = WaitTerminated(cluster, 1);
  EXPECT_EQ(t.value("num_failures", -1), 0);
  EXPECT_TRUE(t["restored_checkpoint_id"].is_null()) << t.dump();
  EXPECT_EQ(t["last_result"].value("iterations_since_restore", -1), 4) << t.dump();
  auto unknown = cluster.Ctl({"resume", "nosuch"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.Describe();
  EXPECT_NE(unknown.err.find("not_found"), std::string::npos) << unknown.Describe();
}

}  // namespace
}  // namespace tunebus::testing
