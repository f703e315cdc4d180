// Retention (docs/how-to/retention.md): a scheduler given --retain-experiments N deletes the oldest
// finished experiments beyond the N newest (journal, checkpoints, results folder unless its
// `retention.keep_results`) through tunectl delete's path, logs each with its rule, and
// nothing else: a running experiment is neither deleted nor counted. The policy given at a
// restart is applied at start; SIGKILLs of the scheduler change nothing it decided. The real
// services on loopback.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// 2 mock trials of 3 iterations, a 4 KiB checkpoint at each (all kept).
std::string Small(const std::string& name, const fs::path& results, const std::string& extra) {
  return "name: " + name +
         "\n"
         "trainable: {builtin: mock}\n"
         "param_space:\n"
         "  x: {grid_search: [1, 2]}\n"
         "  mock_iterations: 3\n"
         "  mock_checkpoint_bytes: 4096\n"
         "  sleep_s: 0.01\n"
         "checkpoint_freq: 1\n"
         "results_dir: " +
         results.string() + "\n" + extra;
}

// name -> lsx row.
std::map<std::string, json> Lsx(Cluster& cluster) {
  std::map<std::string, json> rows;
  const CommandResult r = cluster.Ctl({"-o", "json", "lsx"});
  if (r.exit_code != 0) return rows;
  const json body = r.Json();
  if (!body.is_array()) return rows;
  for (const json& row : body) rows[row.value("name", "")] = row;
  return rows;
}

std::set<std::string> Names(const std::map<std::string, json>& rows) {
  std::set<std::string> names;
  for (const auto& [name, row] : rows) names.insert(name);
  return names;
}

TEST(RetentionTest, KeepsTheNewestFinishedAndDeletesTheOldestAcrossKills) {
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path results = cluster.dir() / "results";
  auto run = [&](const std::string& name, const std::string& extra = "") {
    WriteFile(cluster.dir() / (name + ".yaml"), Small(name, results, extra));
    auto r = cluster.Ctl({"run", (cluster.dir() / (name + ".yaml")).string()}, 120s);
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
  };
  run("e1");
  run("e2");
  run("e3", "retention: {keep_results: true}\n");
  run("e4");
  // e3's section makes retention active: the others wait for no rule (none deletes).
  std::map<std::string, json> rows = Lsx(cluster);
  ASSERT_EQ(Names(rows), (std::set<std::string>{"e1", "e2", "e3", "e4"}));
  for (const auto& [name, row] : rows) {
    EXPECT_TRUE(row.value("expires", "") == "never" || row.value("expires", "") == "-")
        << row.dump();
  }

  // A long experiment running across the restarts: never deleted, never counted.
  WriteFile(cluster.dir() / "busy.yaml",
            "name: busy\ntrainable: {builtin: mock}\nparam_space: {sleep_s: 0.05, "
            "mock_iterations: 100000}\nresults_dir: " +
                results.string() + "\n");
  ASSERT_EQ(cluster.Ctl({"run", "--detach", (cluster.dir() / "busy.yaml").string()}).exit_code, 0);

  // The policy given at a restart (after a SIGKILL) is applied at start: e1 and e2 go.
  ASSERT_TRUE(cluster.Restart("scheduler", {"--retain-experiments", "2"}));
  ASSERT_TRUE(WaitFor(
      [&] {
        rows = Lsx(cluster);
        return !rows.empty() && !rows.contains("e1") && !rows.contains("e2");
      },
      60s, 200ms))
      << json(Names(rows)).dump() << cluster.LogTails();
  EXPECT_EQ(Names(rows), (std::set<std::string>{"e3", "e4", "busy"}));
  EXPECT_FALSE(fs::exists(results / "e1"));
  EXPECT_FALSE(fs::exists(results / "e2"));
  EXPECT_TRUE(fs::exists(results / "e3"));
  EXPECT_TRUE(fs::exists(results / "e4"));
  EXPECT_TRUE(fs::exists(results / "busy"));
  EXPECT_EQ(cluster.Ctl({"status", "-e", "e1"}).exit_code, 1);
  EXPECT_EQ(cluster.Ctl({"status", "-e", "e2"}).exit_code, 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        rows = Lsx(cluster);
        return rows["e3"].value("expires", "") == "keep 2 newest: 2nd";
      },
      10s, 200ms))
      << rows["e3"].dump();
  EXPECT_EQ(rows["e4"].value("expires", ""), "keep 2 newest: 1st") << rows["e4"].dump();
  EXPECT_FALSE(rows["busy"].contains("expires")) << rows["busy"].dump();
  EXPECT_EQ(rows["busy"].value("status", ""), "RUNNING") << rows["busy"].dump();
  {
    // Each deletion is logged with its rule, and went through delete's path (its journal
    // records and checkpoints left the store).
    const std::string log = cluster.process("scheduler")->Output();
    for (const std::string rank : {"3rd", "4th"}) {
      EXPECT_NE(
          log.find("(--retain-experiments 2: it is the " + rank + " newest finished experiment)"),
          std::string::npos)
          << log;
    }
    for (const std::string name : {"e1-", "e2-"}) {
      const size_t at = log.find("Deleted experiment " + name);
      ASSERT_NE(at, std::string::npos) << log;
      const std::string line = log.substr(at, log.find('\n', at) - at);
      EXPECT_EQ(line.find(" 0 checkpoints"), std::string::npos) << line;
      EXPECT_NE(line.find("removed"), std::string::npos) << line;
    }
  }

  // One more finished: e3 is now the 3rd newest and goes, its results folder kept.
  run("e5");
  ASSERT_TRUE(WaitFor([&] { return !Lsx(cluster).contains("e3"); }, 30s, 200ms))
      << cluster.LogTails();
  EXPECT_TRUE(fs::exists(results / "e3"));  // retention.keep_results
  EXPECT_EQ(cluster.Ctl({"status", "-e", "e3"}).exit_code, 1);

  // Another SIGKILL and restart: nothing else goes (e4, e5 are the 2 newest; busy runs on).
  ASSERT_TRUE(cluster.Restart("scheduler"));
  ASSERT_TRUE(WaitFor(
      [&] {
        rows = Lsx(cluster);
        return rows["e5"].value("expires", "") == "keep 2 newest: 1st";
      },
      30s, 200ms))
      << json(Names(rows)).dump();
  EXPECT_EQ(Names(rows), (std::set<std::string>{"e4", "e5", "busy"}));
  EXPECT_TRUE(fs::exists(results / "e4"));
  EXPECT_TRUE(fs::exists(results / "e5"));
  EXPECT_EQ(cluster.process("scheduler")->Output().find("Retention: deleting"), std::string::npos);

  // busy ends: it is the newest finished now, and e4 becomes the 3rd.
  ASSERT_EQ(cluster.Ctl({"stop-experiment", "-e", "busy"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return !Lsx(cluster).contains("e4"); }, 30s, 200ms))
      << cluster.LogTails();
  rows = Lsx(cluster);
  EXPECT_EQ(Names(rows), (std::set<std::string>{"e5", "busy"}));
  EXPECT_FALSE(fs::exists(results / "e4"));
  EXPECT_TRUE(fs::exists(results / "e5"));
  EXPECT_TRUE(fs::exists(results / "busy"));
}

}  // namespace
}  // namespace tunebus::testing
