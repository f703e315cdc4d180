// Fault tests of what users read across a scheduler takeover (docs/explanation/recovery.md "The
// results folder" and "Checkpoints across a takeover"): the result files are written live and
// completed from the journal after a SIGKILL, and checkpoints the killed scheduler asked for are
// adopted by its successor, with nothing orphaned in the checkpoint-store.
//
// Beside the kills, the single messages a kill loses or makes a peer send again, made exactly by
// a MessageFilter (tests/integration/message_filter.hpp) between two services: a lost
// journal_append_many_ack (the scheduler's retry is not written twice), duplicated
// report_results (each result journaled once) and duplicated checkpoint_saved (each checkpoint
// listed once). Their ground truth is the mock trainable's own log (mock_truth_log) and the
// iterations the test asked for.
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
#include "tests/integration/message_filter.hpp"

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

// The one trial's training_iteration as `show` gives it (0 while the scheduler does not answer).
int64_t ShownIteration(Cluster& cluster) {
  const json shown = ShowOnly(cluster);
  return shown.is_object() ? shown.value("training_iteration", int64_t(0)) : 0;
}

// Submits one mock trial reporting every `sleep_s` until iteration 30, with `extra` YAML lines
// and `config` entries added to its param_space ("mock_truth_log: true"); returns its journal
// name.
std::string SubmitOneTrial(Cluster& cluster, const std::string& name, double sleep_s,
                           const std::string& extra = "", const std::string& config = "") {
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, "name: " + name +
                      "\ntrainable: {builtin: mock}\n"
                      "param_space: {sleep_s: " +
                      std::to_string(sleep_s) + ", mock_iterations: 100" +
                      (config.empty() ? "" : ", " + config) +
                      "}\n"
                      "stop: {training_iteration: 30}\n" +
                      extra + "results_dir: " + (cluster.dir() / "results").string() + "\n");
  return SubmitDetached(cluster, file, name);
}

std::vector<int64_t> OneTo(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

// The one trial's checkpoints as `show` lists them are those of iterations 1..30, each once, and
// the checkpoint-store holds exactly the listed ones under the journal's prefix (nothing
// orphaned; the scheduler's own snapshots aside).
void ExpectCheckpointsListedOnceAndStored(Cluster& cluster, const std::string& journal) {
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

// Against the mock trainable's own log (<trial_dir>/mock_truth.jsonl, config mock_truth_log) of
// the trial that ran once (one attempt): it reported iterations 1..30 once each; the journal
// holds one result record per (attempt, seq), iterations 1..30 in order, among them every
// iteration the trainable got a decision for; result.json and progress.csv hold 1..30 once.
void ExpectEachResultOnce(Cluster& cluster, const std::string& journal, const fs::path& trial_dir) {
  std::vector<int64_t> reported;
  std::set<int64_t> acked;
  for (const std::string& line : ReadLines(trial_dir / "mock_truth.jsonl")) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << line;
    EXPECT_EQ(j.value("attempt", int64_t(0)), 1) << line;
    const int64_t it = j.value("iteration", int64_t(0));
    if (j.value("event", "") == "report") reported.push_back(it);
    if (j.value("event", "") == "acked") acked.insert(it);
  }
  EXPECT_EQ(reported, OneTo(30));
  std::vector<int64_t> journaled;
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    if (r.value("kind", "") != "result") continue;
    EXPECT_TRUE(seen.insert({r.value("attempt", int64_t(0)), r.value("seq", int64_t(0))}).second)
        << "journaled twice: " << r.dump();
    journaled.push_back(r["result"].value("training_iteration", int64_t(-1)));
  }
  EXPECT_EQ(journaled, OneTo(30));
  for (const int64_t it : acked) {
    EXPECT_EQ(std::count(journaled.begin(), journaled.end(), it), 1) << "acknowledged " << it;
  }
  EXPECT_EQ(JsonIterations(trial_dir), OneTo(30));
  EXPECT_EQ(CsvRows(trial_dir), 30u);
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
  // (WorkerService::OnReadable). One mock trial reports iteration 1 and fails at iteration 2,
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
  // checkpoint_freq 1 and five scheduler kills, each once the trial has gone three iterations
  // past the last one `show` gave before it: every checkpoint the worker stored is listed by
  // `show` (none dropped as "never asked for"), and the store holds exactly the listed ones
  // (nothing orphaned). The stop at iteration 30, a multiple of checkpoint_freq, keeps its
  // checkpoint too (as Ray Tune).
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const std::string journal = SubmitOneTrial(cluster, "ckpt", 0.2, "checkpoint_freq: 1\n");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(
      WaitFor([&] { return ShowOnly(cluster).value("training_iteration", 0) >= 3; }, 20s, 50ms));
  for (int kill = 0; kill < 5; ++kill) {
    const int64_t before = ShownIteration(cluster);
    ASSERT_TRUE(cluster.Restart("scheduler"));
    ASSERT_TRUE(WaitUntil(
        "the trial goes 3 iterations past " + std::to_string(before) + " after kill " +
            std::to_string(kill + 1),
        [&] { return ShownIteration(cluster) >= before + 3; }, 20s, 50ms))
        << cluster.LogTails();
  }
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  ExpectCheckpointsListedOnceAndStored(cluster, journal);
}

TEST(TakeoverTest, DuplicatedCheckpointSavedMessagesListEachCheckpointOnce) {
  // What a takeover makes a worker do (send checkpoint_saved again), made by a filter between
  // the worker and the scheduler that forwards ten checkpoint_saved messages twice: each
  // checkpoint is listed once, and the store holds exactly the listed ones.
  MessageFilter worker_link("w1-scheduler");
  ClusterOptions o;
  o.workers = 1;
  o.filters = {{"w1", "--scheduler", &worker_link}};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int twice = worker_link.Add({.direction = FilterDirection::kToService,
                                     .type = "checkpoint_saved",
                                     .action = FilterAction::kDuplicate,
                                     .count = 10,
                                     .skip = 2});
  const std::string journal = SubmitOneTrial(cluster, "ckpt2", 0.05, "checkpoint_freq: 1\n");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(worker_link.WaitFired(twice, 30s)) << cluster.LogTails();
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  ExpectCheckpointsListedOnceAndStored(cluster, journal);
}

TEST(TakeoverTest, ResultsAcknowledgedAcrossAStoreOutageReachTheFilesOnce) {
  // SIGKILL the checkpoint-store mid-run and start it again once the scheduler saw it gone
  // (`status` says the store is unreachable): results wait for their journal records (the
  // trainable waits for its decisions), then the files hold 1..30 once.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  ASSERT_FALSE(SubmitOneTrial(cluster, "outage", 0.05).empty());
  json shown;
  ASSERT_TRUE(WaitFor(
      [&] { return (shown = ShowOnly(cluster)).value("training_iteration", 0) >= 5; }, 20s, 20ms));
  cluster.process("checkpoint-store")->Kill();
  json status;
  ASSERT_TRUE(WaitUntil("the scheduler sees the checkpoint-store unreachable", [&] {
    status = cluster.Ctl({"-o", "json", "status"}, 5s).Json();
    return status.is_object() && status["store"].value("state", "") == "unreachable";
  })) << status.dump();
  ASSERT_TRUE(cluster.Restart("checkpoint-store"));
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  const fs::path dir = shown.value("dir", "");
  EXPECT_EQ(JsonIterations(dir), OneTo(30));
  EXPECT_EQ(CsvRows(dir), 30u);
}

TEST(TakeoverTest, ALostJournalAppendAckIsRetriedAndWrittenOnce) {
  // The store's answer that a SIGKILL of the store loses, lost alone: a filter between the
  // scheduler and the store drops one journal_append_many_ack once the trial is under way. The
  // scheduler's append times out (3 s), is sent again with the same expected_first_seq, and the
  // store acknowledges it without writing it twice: every result is journaled and in the files
  // once, and the trial ran once.
  MessageFilter store_link("scheduler-store");
  ClusterOptions o;
  o.workers = 1;
  o.filters = {{"scheduler", "--store", &store_link}};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const std::string journal = SubmitOneTrial(cluster, "lostack", 0.05, "", "mock_truth_log: true");
  ASSERT_FALSE(journal.empty());
  json shown;
  ASSERT_TRUE(WaitFor(
      [&] { return (shown = ShowOnly(cluster)).value("training_iteration", 0) >= 5; }, 20s, 20ms))
      << shown.dump() << cluster.LogTails();
  const int lost = store_link.Add({.direction = FilterDirection::kToClient,
                                   .type = "journal_append_many_ack",
                                   .action = FilterAction::kDrop});
  ASSERT_TRUE(store_link.WaitFired(lost, 20s)) << cluster.LogTails();
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  ExpectEachResultOnce(cluster, journal, shown.value("dir", ""));
  const std::string log = cluster.process("scheduler")->Output();
  EXPECT_NE(log.find("Journal append of"), std::string::npos) << "no retry logged:\n" << log;
}

TEST(TakeoverTest, DuplicatedResultReportsAreJournaledAndWrittenOnce) {
  // What a takeover makes a worker do (send its unacknowledged results again), made by a filter
  // between the worker and the scheduler that forwards ten report_results messages twice: the
  // scheduler drops the seqs it has processed, so each result is journaled and written once.
  MessageFilter worker_link("w1-scheduler");
  ClusterOptions o;
  o.workers = 1;
  o.filters = {{"w1", "--scheduler", &worker_link}};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int twice = worker_link.Add({.direction = FilterDirection::kToService,
                                     .type = "report_results",
                                     .action = FilterAction::kDuplicate,
                                     .count = 10,
                                     .skip = 2});
  const std::string journal = SubmitOneTrial(cluster, "twice", 0.05, "", "mock_truth_log: true");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(worker_link.WaitFired(twice, 30s)) << cluster.LogTails();
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
  ExpectEachResultOnce(cluster, journal, ShowOnly(cluster).value("dir", ""));
  EXPECT_GE(worker_link.Count(FilterDirection::kToService, "report_results"), 12);
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
