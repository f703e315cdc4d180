// Fault tests of what users read across a scheduler takeover (docs/recovery.md "The results
// folder" and "Checkpoints across a takeover"): the result files are written live and completed
// from the journal after a SIGKILL, and checkpoints the killed scheduler asked for are adopted
// by its successor, with nothing orphaned in the checkpoint-store.
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The data rows of a trial's files: result.json lines parsed, progress.csv rows (header cut).
std::vector<int64_t> JsonIterations(const fs::path& trial_dir) {
  std::vector<int64_t> out;
  for (const std::string& line : ReadLines(trial_dir / "result.json")) {
    const json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(row.is_object()) << "torn or invalid line in " << trial_dir << ": " << line;
    out.push_back(row.is_object() ? row.value("training_iteration", int64_t(-1)) : -1);
  }
  return out;
}

size_t CsvRows(const fs::path& trial_dir) {
  const auto lines = ReadLines(trial_dir / "progress.csv");
  return lines.empty() ? 0 : lines.size() - 1;
}

json ShowOnly(Cluster& cluster) {
  const json ls = cluster.Ctl({"-o", "json", "ls"}, 5s).Json();
  if (!ls.is_array() || ls.empty()) return json();
  return cluster.Ctl({"-o", "json", "show", ls[0].value("trial_id", "")}, 5s).Json();
}

std::vector<int64_t> OneTo(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

TEST(TakeoverTest, ResultFilesAreLiveAndCompleteAfterASchedulerKill) {
  // The reproduction: one mock trial reporting every 0.2 s to iteration 30. While it
  // runs, result.json follows `show` within the writer's flush delay; after a SIGKILL of the
  // scheduler half-way and a restart on the same store, the trial's files hold iterations 1..30
  // exactly once (the rows the killed scheduler had not written come from the journal).
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "live.yaml";
  WriteFile(file, "name: live\ntrainable: {builtin: mock}\n"
                  "param_space: {sleep_s: 0.2, mock_iterations: 100}\n"
                  "stop: {training_iteration: 30}\n"
                  "results_dir: " + (cluster.dir() / "results").string() + "\n");
  ASSERT_FALSE(SubmitDetached(cluster, file, "live").empty());

  json shown;
  ASSERT_TRUE(WaitFor([&] { return (shown = ShowOnly(cluster)).value("training_iteration", 0) >= 10; }, 20s, 50ms))
      << shown.dump() << cluster.LogTails();
  const fs::path dir = shown.value("dir", "");
  const int64_t acknowledged = shown.value("training_iteration", int64_t(0));
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return int64_t(JsonIterations(dir).size()) >= acknowledged; }, 3s, 10ms))
      << "result.json has " << JsonIterations(dir).size() << " rows while show says " << acknowledged;
  std::printf("live files: %lld rows visible %.0f ms after show said %lld\n", (long long)JsonIterations(dir).size(),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count(),
              (long long)acknowledged);

  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json summary = WaitFinished(cluster, 40s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  EXPECT_EQ(JsonIterations(dir), OneTo(30));
  EXPECT_EQ(CsvRows(dir), 30u) << ReadFile(dir / "progress.csv");
  const json state = json::parse(ReadFile(dir.parent_path() / "experiment_state.json"), nullptr, false);
  ASSERT_TRUE(state.is_object());
  EXPECT_EQ(state["trials"][0].value("training_iteration", 0), 30);
}

TEST(TakeoverTest, CheckpointsAskedByAKilledSchedulerAreAdoptedAndNoneIsOrphaned) {
  // checkpoint_freq 1 and five scheduler kills one second apart: every checkpoint the worker
  // stored is listed by `show` (none dropped as "never asked for"), and the store holds exactly
  // the listed ones (nothing orphaned). The decision at iteration 30 is stop (no checkpoint).
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "ckpt.yaml";
  WriteFile(file, "name: ckpt\ntrainable: {builtin: mock}\n"
                  "param_space: {sleep_s: 0.2, mock_iterations: 100}\n"
                  "stop: {training_iteration: 30}\ncheckpoint_freq: 1\n"
                  "results_dir: " + (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, "ckpt");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(WaitFor([&] { return ShowOnly(cluster).value("training_iteration", 0) >= 3; }, 20s, 50ms));
  for (int kill = 0; kill < 5; ++kill) {
    ASSERT_TRUE(cluster.Restart("scheduler"));
    std::this_thread::sleep_for(1s);
  }
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  const json shown = ShowOnly(cluster);
  std::vector<int64_t> listed;
  std::set<std::string> listed_ids;
  for (const json& c : shown["checkpoints"]) {
    listed.push_back(c.value("training_iteration", int64_t(-1)));
    listed_ids.insert(c.value("checkpoint_id", ""));
  }
  EXPECT_EQ(listed, OneTo(29)) << shown["checkpoints"].dump();
  std::set<std::string> stored;
  for (const std::string& id : ListCheckpoints(cluster.store(), journal + "/")) {
    if (id.find("/snapshot-") == std::string::npos) stored.insert(id);
  }
  EXPECT_EQ(stored, listed_ids);
}

}  // namespace
}  // namespace tunebus::testing
