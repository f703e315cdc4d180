// Fault tests of what users read across a scheduler takeover (docs/recovery.md "The results
// folder" and "Checkpoints across a takeover"): the result files are written live and completed
// from the journal after a SIGKILL, and checkpoints the killed scheduler asked for are adopted
// by its successor, with nothing orphaned in the checkpoint-store.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

// Submits one mock trial reporting every `sleep_s` until iteration 30, with `extra` YAML lines;
// returns its journal name.
std::string SubmitOneTrial(Cluster& cluster, const std::string& name, double sleep_s,
                           const std::string& extra = "") {
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, "name: " + name +
                      "\ntrainable: {builtin: mock}\n"
                      "param_space: {sleep_s: " +
                      std::to_string(sleep_s) +
                      ", mock_iterations: 100}\n"
                      "stop: {training_iteration: 30}\n" +
                      extra + "results_dir: " + (cluster.dir() / "results").string() + "\n");
  return SubmitDetached(cluster, file, name);
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
  ASSERT_FALSE(SubmitOneTrial(cluster, "live", 0.2).empty());

  json shown;
  ASSERT_TRUE(WaitFor(
      [&] { return (shown = ShowOnly(cluster)).value("training_iteration", 0) >= 10; }, 20s, 50ms))
      << shown.dump() << cluster.LogTails();
  const fs::path dir = shown.value("dir", "");
  const int64_t acknowledged = shown.value("training_iteration", int64_t(0));
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      WaitFor([&] { return int64_t(JsonIterations(dir).size()) >= acknowledged; }, 3s, 10ms))
      << "result.json has " << JsonIterations(dir).size() << " rows while show says "
      << acknowledged;
  std::printf(
      "live files: %lld rows visible %.0f ms after show said %lld\n",
      (long long)JsonIterations(dir).size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count(),
      (long long)acknowledged);

  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json summary = WaitFinished(cluster, 40s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  EXPECT_EQ(JsonIterations(dir), OneTo(30));
  EXPECT_EQ(CsvRows(dir), 30u) << ReadFile(dir / "progress.csv");
  const json state =
      json::parse(ReadFile(dir.parent_path() / "experiment_state.json"), nullptr, false);
  ASSERT_TRUE(state.is_object());
  EXPECT_EQ(state["trials"][0].value("training_iteration", 0), 30);
}

TEST(TakeoverTest, ATrialThatFailsWhileNoSchedulerRunsIsRecordedAsFailedByTheNextOne) {
  // The scheduler handles what a worker of its predecessor sends before it registers again
  // (Scheduler::OnWorkerReadable). One mock trial reports iteration 1 and fails at iteration 2,
  // 2 s later; the scheduler is SIGKILLed right after iteration 1, so the failure happens while
  // no scheduler runs and its trial_exited reaches the restarted scheduler from an unregistered
  // worker. It must count as the trial's failure (ERROR with max_failures 0, its error.txt), not
  // vanish and leave the trial to be requeued as if its worker had lost it.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "failsalone.yaml";
  WriteFile(file,
            "name: failsalone\ntrainable: {builtin: mock}\n"
            "param_space: {sleep_s: 2.0, mock_iterations: 5, mock_error: true}\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  ASSERT_FALSE(SubmitDetached(cluster, file, "failsalone").empty());
  json shown;
  ASSERT_TRUE(WaitFor(
      [&] { return (shown = ShowOnly(cluster)).value("training_iteration", 0) >= 1; }, 20s, 20ms))
      << shown.dump() << cluster.LogTails();
  cluster.process("scheduler")->Kill();
  // The trainable fails at about 2 s, while no scheduler runs.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const std::string& w : cluster.worker_ids())
          if (cluster.process(w)->Output().find("attempt 1 failed: ") != std::string::npos)
            return true;
        return false;
      },
      20s, 50ms))
      << cluster.LogTails();
  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json status = WaitFinished(cluster, 30s);
  ASSERT_FALSE(status.empty()) << cluster.LogTails();
  shown = ShowOnly(cluster);
  EXPECT_EQ(shown.value("status", ""), "ERROR") << shown.dump();
  EXPECT_EQ(shown.value("num_failures", -1), 1) << shown.dump();
  EXPECT_EQ(shown.value("attempt", -1), 1) << shown.dump();
  const std::string error = ReadFile(fs::path(shown.value("dir", "")) / "error.txt");
  EXPECT_NE(error.find("mock_error: failing at iteration 2 (attempt 1)"), std::string::npos)
      << error;
}

TEST(TakeoverTest, CheckpointsAskedByAKilledSchedulerAreAdoptedAndNoneIsOrphaned) {
  // checkpoint_freq 1 and five scheduler kills one second apart: every checkpoint the worker
  // stored is listed by `show` (none dropped as "never asked for"), and the store holds exactly
  // the listed ones (nothing orphaned). The stop at iteration 30, a multiple of checkpoint_freq,
  // keeps its checkpoint too (as Ray Tune).
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const std::string journal = SubmitOneTrial(cluster, "ckpt", 0.2, "checkpoint_freq: 1\n");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(
      WaitFor([&] { return ShowOnly(cluster).value("training_iteration", 0) >= 3; }, 20s, 50ms));
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
  EXPECT_EQ(listed, OneTo(30)) << shown["checkpoints"].dump();
  std::set<std::string> stored;
  for (const std::string& id : ListCheckpoints(cluster.store(), journal + "/")) {
    if (id.find("/snapshot-") == std::string::npos) stored.insert(id);
  }
  EXPECT_EQ(stored, listed_ids);
}

TEST(TakeoverTest, ResultsAcknowledgedAcrossAStoreOutageReachTheFilesOnce) {
  // SIGKILL the checkpoint-store mid-run and start it again 2 s later: results wait for their
  // journal records (the trainable waits for its decisions), then the files hold 1..30 once.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  ASSERT_FALSE(SubmitOneTrial(cluster, "outage", 0.05).empty());
  json shown;
  ASSERT_TRUE(WaitFor(
      [&] { return (shown = ShowOnly(cluster)).value("training_iteration", 0) >= 5; }, 20s, 20ms));
  cluster.process("checkpoint-store")->Kill();
  std::this_thread::sleep_for(2s);
  ASSERT_TRUE(cluster.Restart("checkpoint-store"));
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  const fs::path dir = shown.value("dir", "");
  EXPECT_EQ(JsonIterations(dir), OneTo(30));
  EXPECT_EQ(CsvRows(dir), 30u);
}

TEST(TakeoverTest, RowsRerunAfterAWorkerLossFollowTheLostOnesMarkedByIterationsSinceRestore) {
  // The trial's worker is SIGKILLed past its checkpoint at 10; the trial restores on the other
  // worker and reruns from 11. The files hold every journaled result once, in journal order:
  // the lost attempt's rows, then the rerun's, whose first row has iterations_since_restore 1
  // and training_iteration 11 (Ray Tune's marking of a restore).
  ClusterOptions o;
  o.rm_liveness = 5;  // 5 x 200 ms: the killed worker is declared lost after 1 s
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const std::string journal = SubmitOneTrial(cluster, "lost", 0.1, "checkpoint_freq: 10\n");
  ASSERT_FALSE(journal.empty());
  json shown;
  ASSERT_TRUE(WaitFor(
      [&] {
        shown = ShowOnly(cluster);
        return shown.value("training_iteration", 0) >= 13 && shown["checkpoints"].size() == 1;
      },
      20s, 20ms))
      << shown.dump();
  cluster.process(shown.value("worker", ""))->Kill();
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();

  std::vector<std::pair<int64_t, int64_t>>
      journaled;  // (training_iteration, iterations_since_restore)
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    if (r.value("kind", "") != "result") continue;
    journaled.emplace_back(r["result"].value("training_iteration", int64_t(-1)),
                           r["result"].value("iterations_since_restore", int64_t(-1)));
  }
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (const std::string& line : ReadLines(fs::path(shown.value("dir", "")) / "result.json")) {
    const json row = json::parse(line);
    rows.emplace_back(row.value("training_iteration", int64_t(-1)),
                      row.value("iterations_since_restore", int64_t(-1)));
  }
  EXPECT_EQ(rows, journaled);
  const auto rerun = std::find(rows.begin() + 1, rows.end(), std::pair<int64_t, int64_t>{11, 1});
  ASSERT_NE(rerun, rows.end()) << "no row restarts at 11 after the restore";
  EXPECT_GE(rerun - rows.begin(), 13);  // after the lost attempt's rows
  EXPECT_EQ(rows.back().first, 30);
  EXPECT_EQ(CsvRows(shown.value("dir", "")), rows.size());
}

}  // namespace
}  // namespace tunebus::testing
