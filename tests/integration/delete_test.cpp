// `tunectl delete NAME` removes a finished experiment's journal and
// checkpoints from the checkpoint-store, which compacts the space away (measured by the store's
// live SST and blob bytes), and its results folder unless --keep-results; an unfinished one is
// refused; another experiment is untouched. The real services on loopback.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// An experiment of 4 mock trials, 10 iterations each, a 1 MiB checkpoint at every one (all kept).
std::string CheckpointHeavy(const std::string& name, const fs::path& results, int iterations) {
  return "name: " + name +
         "\n"
         "trainable: {builtin: mock}\n"
         "param_space:\n"
         "  x: {grid_search: [1, 2, 3, 4]}\n"
         "  mock_iterations: " +
         std::to_string(iterations) +
         "\n"
         "  mock_checkpoint_bytes: 1048576\n"
         "  sleep_s: 0.01\n"
         "checkpoint_freq: 1\n"
         "keep_checkpoints_num: 0\n"
         "results_dir: " +
         results.string() + "\n";
}

TEST(DeleteTest, DeleteRemovesAFinishedExperimentAndTheStoreReclaimsItsSpace) {
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path results = cluster.dir() / "results";
  for (const std::string name : {"gone", "kept"}) {
    WriteFile(cluster.dir() / (name + ".yaml"), CheckpointHeavy(name, results, 10));
    auto run = cluster.Ctl({"run", (cluster.dir() / (name + ".yaml")).string()}, 120s);
    ASSERT_EQ(run.exit_code, 0) << run.Describe();
  }
  ASSERT_TRUE(fs::exists(results / "gone"));

  // Unfinished: refused, and it runs on.
  WriteFile(cluster.dir() / "busy.yaml",
            "name: busy\ntrainable: {builtin: mock}\nparam_space: {sleep_s: 0.05}\nresults_dir: " +
                results.string() + "\n");
  ASSERT_EQ(cluster.Ctl({"run", "--detach", (cluster.dir() / "busy.yaml").string()}).exit_code, 0);
  auto refused = cluster.Ctl({"delete", "busy"});
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  EXPECT_NE(refused.err.find("is not finished"), std::string::npos) << refused.err;
  ASSERT_EQ(cluster.Ctl({"stop-experiment", "-e", "busy"}).exit_code, 0);

  auto deleted = cluster.Ctl({"-o", "json", "delete", "gone"}, 60s);
  ASSERT_EQ(deleted.exit_code, 0) << deleted.Describe();
  const json d = deleted.Json();
  EXPECT_GT(d.value("records", 0), 40) << d.dump();
  EXPECT_GE(d.value("checkpoints", 0), 40) << d.dump();  // 4 trials x 10 iterations, snapshots
  const int64_t before = d.value("store_bytes_before", int64_t(0));
  const int64_t after = d.value("store_bytes_after", int64_t(0));
  // 40 checkpoints of 1 MiB left the disk (the other experiments' 40+ stay).
  EXPECT_GE(before - after, int64_t(38) << 20) << d.dump();
  EXPECT_TRUE(d.value("results_removed", false));
  EXPECT_FALSE(fs::exists(results / "gone"));
  std::printf(
      "delete gone: %lld records, %lld checkpoints, store %lld -> %lld bytes, "
      "compaction %.3f s\n",
      static_cast<long long>(d.value("records", 0)),
      static_cast<long long>(d.value("checkpoints", 0)), static_cast<long long>(before),
      static_cast<long long>(after), d.value("compaction_s", 0.0));

  // Gone from lsx and reads; `kept` is untouched.
  const json lsx = cluster.Ctl({"-o", "json", "lsx"}).Json();
  ASSERT_TRUE(lsx.is_array()) << lsx.dump();
  for (const json& row : lsx) EXPECT_NE(row.value("name", ""), "gone") << lsx.dump();
  EXPECT_EQ(cluster.Ctl({"status", "-e", "gone"}).exit_code, 1);
  const json kept = cluster.Ctl({"-o", "json", "ls", "-e", "kept"}).Json();
  ASSERT_EQ(kept.size(), 4u) << kept.dump();
  const fs::path out = cluster.dir() / "exported";
  auto exported = cluster.Ctl(
      {"checkpoint", "export", kept[0].value("trial_id", ""), "-e", "kept", "--to", out.string()});
  EXPECT_EQ(exported.exit_code, 0) << exported.Describe();

  // --keep-results keeps the folder.
  auto keep = cluster.Ctl({"-o", "json", "delete", "kept", "--keep-results"}, 60s);
  ASSERT_EQ(keep.exit_code, 0) << keep.Describe();
  EXPECT_FALSE(keep.Json().value("results_removed", true));
  EXPECT_TRUE(fs::exists(results / "kept"));
}

}  // namespace
}  // namespace tunebus::testing
