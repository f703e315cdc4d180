// Fault test: the resource-manager is SIGKILLed and restarted while trials run. Its
// allocations are soft state: the workers re-register and report what they run, so the new
// process commits exactly the running trials' resources, nothing is placed on top of them, and
// no trial runs twice.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(ResourceManagerRestartTest, AllocationsAreRebuiltFromWorkerReportsAndNothingRunsTwice) {
  // Two workers with 2 CPUs each; six trials asking 1 CPU for ~3 s each: four run at a time.
  // After the restart `tunectl resources` shows 4 CPUs committed (one per RUNNING trial) as
  // soon as the workers are back, never more RUNNING trials than CPUs, and every trial
  // finishes on its first attempt.
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "rm.yaml";
  WriteFile(file,
            "name: rmrestart\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: {grid_search: [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]}\n"
            "  mock_iterations: 30\n"
            "  sleep_s: 0.1\n"
            "resources_per_trial: {cpu: 1}\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  auto submit = cluster.Ctl({"-o", "json", "run", "--detach", file.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls", "--status", "RUNNING"}).Json();
        return ls.is_array() && ls.size() == 4;
      },
      10s, 50ms));

  ASSERT_TRUE(cluster.Restart("resource-manager"));
  json resources;
  ASSERT_TRUE(WaitFor(
      [&] {
        resources = cluster.Ctl({"-o", "json", "resources"}, 2s).Json();
        return resources.is_object() && resources["total"]["capacity"].value("cpu", -1.0) == 4.0 &&
               resources["total"]["committed"].value("cpu", -1.0) == 4.0;
      },
      10s, 50ms))
      << resources.dump() << cluster.LogTails();

  int most_running = 0;
  json summary;
  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls", "--status", "RUNNING"}, 2s).Json();
        if (ls.is_array()) most_running = std::max(most_running, int(ls.size()));
        summary = cluster.Ctl({"-o", "json", "status"}, 2s).Json();
        return summary.is_object() && summary.value("finished", false);
      },
      60s, 100ms))
      << summary.dump() << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED");
  EXPECT_LE(most_running, 4);
  for (const json& t : cluster.Ctl({"-o", "json", "ls"}).Json()) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    EXPECT_EQ(t.value("attempt", -1), 1) << t.value("trial_id", "") << " ran twice";
  }
  // Everything was given back at the end.
  resources = cluster.Ctl({"-o", "json", "resources"}).Json();
  EXPECT_EQ(resources["total"]["committed"].value("cpu", 0.0), 0.0) << resources.dump();
}

}  // namespace
}  // namespace tunebus::testing
