// Fault test: SIGKILL the scheduler at seeded random moments while an experiment runs,
// restart it each time, and check from the journal that every trial finished with each of its
// results recorded exactly once (no gap, no duplicate), all from one attempt: running trials are
// reattached, and only a trial whose start had not reached its worker runs again.
// TUNEBUS_FAULT_KILLS sets the number of kills (default 20; a soak run uses 200).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
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

// An experiment `name` of `trials` mock trials of `iterations` iterations each (20 ms apart),
// a checkpoint every 10, with the fair-share `weight`.
std::string MockExperiment(const std::string& name, int trials, int iterations, int seed,
                           const fs::path& results, int weight = 1) {
  return "name: " + name + "\nweight: " + std::to_string(weight) +
         "\n"
         "trainable: {builtin: mock}\n"
         "param_space:\n"
         "  lr: {uniform: [0.01, 0.1]}\n"
         "  mock_iterations: " +
         std::to_string(iterations) +
         "\n"
         "  sleep_s: 0.02\n"
         "num_samples: " +
         std::to_string(trials) + "\nseed: " + std::to_string(seed) +
         "\n"
         "checkpoint_freq: 10\n"
         "results_dir: " +
         results.string() + "\n";
}

// What a journal says of its trials: each one's result iterations in order, its last status and
// the attempts its results came from; (attempt, seq) pairs seen twice; experiment_resumed records.
struct JournalTally {
  std::map<std::string, std::vector<int64_t>> iterations;
  std::map<std::string, std::string> status;
  std::map<std::string, std::set<int64_t>> attempts;
  int results = 0, duplicated = 0, resumed = 0;
};

JournalTally Tally(const std::vector<json>& records) {
  JournalTally t;
  std::map<std::string, std::set<std::pair<int64_t, int64_t>>> seen;
  for (const json& r : records) {
    const std::string kind = r.value("kind", "");
    if (kind == "experiment_resumed") ++t.resumed;
    if (kind == "trial_status") t.status[r.value("trial_id", "")] = r.value("status", "");
    if (kind != "result") continue;
    ++t.results;
    const std::string id = r.value("trial_id", "");
    if (!seen[id].insert({r.value("attempt", int64_t(0)), r.value("seq", int64_t(0))}).second)
      ++t.duplicated;
    t.iterations[id].push_back(r["result"].value("training_iteration", int64_t(-1)));
    t.attempts[id].insert(r.value("attempt", int64_t(0)));
  }
  return t;
}

// Every one of `trials` trials TERMINATED with results 1..iterations exactly once, all from one
// attempt. Returns how many of those iterations no result carries.
int ExpectEveryTrialWhole(const JournalTally& t, int trials, int iterations) {
  std::vector<int64_t> expected(iterations);
  for (int i = 0; i < iterations; ++i) expected[size_t(i)] = i + 1;
  EXPECT_EQ(t.iterations.size(), size_t(trials));
  int lost = 0;
  for (const auto& [id, its] : t.iterations) {
    EXPECT_EQ(its, expected) << id;
    const auto status = t.status.find(id);
    EXPECT_EQ(status == t.status.end() ? "" : status->second, "TERMINATED") << id;
    EXPECT_EQ(t.attempts.at(id).size(), 1u) << id << " reported results from more than one attempt";
    for (int64_t want : expected) lost += std::count(its.begin(), its.end(), want) == 0;
  }
  return lost;
}

TEST(SchedulerKillTest, KilledSchedulerResumesAndLosesOrDuplicatesNoResult) {
  const char* env = std::getenv("TUNEBUS_FAULT_KILLS");
  const int kills = env ? std::atoi(env) : 20;
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int kTrials = 50;
  const int kIterations = std::max(20, kills / 2);  // long enough to be killed `kills` times
  const fs::path file = cluster.dir() / "faults.yaml";
  WriteFile(file, MockExperiment("faults", kTrials, kIterations, 7, cluster.dir() / "results"));
  auto submit = cluster.Ctl({"-o", "json", "run", "--detach", file.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  const std::string journal = "faults-" + submit.Json().value("experiment_id", "");

  std::mt19937 rng(20261122);
  std::uniform_int_distribution<int> pause_ms(20, 300);
  std::vector<Millis> pauses;
  for (int i = 0; i < kills; ++i) pauses.push_back(Millis(pause_ms(rng)));
  const int done_kills = KillSchedulerWhileRunning(cluster, pauses);
  ASSERT_GE(done_kills, 0);
  json summary;
  ASSERT_TRUE(WaitFor(
      [&] {
        summary = cluster.Ctl({"-o", "json", "status"}, 5s).Json();
        return summary.is_object() && summary.value("finished", false);
      },
      60s, 200ms))
      << summary.dump() << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();

  // The journal is the truth: per trial, results 1..kIterations exactly once, from one attempt.
  const JournalTally t = Tally(ReadJournal(cluster.store(), journal));
  const int lost = ExpectEveryTrialWhole(t, kTrials, kIterations);
  const int results = t.results, duplicated = t.duplicated;
  EXPECT_EQ(t.resumed, done_kills);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(duplicated, 0);
  std::printf("fault summary: kills scheduler=%d, results checked=%d, lost=%d, duplicated=%d\n",
              done_kills, results, lost, duplicated);
}

// Three experiments run at once, weighted 2:1:1 and sized 2:1:1 (their
// fair shares of the 4 CPUs are 2, 1 and 1); each SIGKILL of the scheduler resumes all three,
// each reattaching its own running trials. gamma, submitted first, holds all 4 CPUs until the
// others come, so it ends first, about 2 s after the last kill (2 cores). Each journal shows
// every trial TERMINATED with its results 1..N exactly once, all from one attempt, and one
// experiment_resumed per kill.
TEST(SchedulerKillTest, EveryUnfinishedExperimentResumesAfterAKill) {
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  constexpr int kIterations = 30;
  struct Run {
    std::string name;
    int weight, trials, seed;
    std::string journal;
  };
  std::vector<Run> runs = {{"gamma", 2, 12, 7, ""}, {"alpha", 1, 6, 5, ""}, {"beta", 1, 6, 6, ""}};
  std::vector<std::string> names;
  for (Run& run : runs) {
    const fs::path file = cluster.dir() / (run.name + ".yaml");
    WriteFile(file, MockExperiment(run.name, run.trials, kIterations, run.seed,
                                   cluster.dir() / "results", run.weight));
    run.journal = SubmitDetached(cluster, file, run.name);
    ASSERT_FALSE(run.journal.empty());
    names.push_back(run.name);
  }
  const std::vector<Millis> pauses(4, Millis(400));
  const int kills = KillSchedulerWhileRunning(cluster, pauses, names);
  ASSERT_GE(kills, 0);
  EXPECT_EQ(kills, int(pauses.size())) << "an experiment ended before the last kill";
  for (const Run& run : runs) {
    const json summary = WaitFinished(cluster, 90s, run.name);
    ASSERT_FALSE(summary.empty()) << run.name << " did not finish\n" << cluster.LogTails();
    EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
    const JournalTally t = Tally(ReadJournal(cluster.store(), run.journal));
    EXPECT_EQ(ExpectEveryTrialWhole(t, run.trials, kIterations), 0) << run.journal;
    EXPECT_EQ(t.duplicated, 0) << run.journal;
    EXPECT_EQ(t.resumed, kills) << run.journal;
    std::printf("%s (weight %d): %d kills, %d resumes, %zu trials checked, %d results\n",
                run.journal.c_str(), run.weight, kills, t.resumed, t.iterations.size(), t.results);
  }
}

}  // namespace
}  // namespace tunebus::testing

namespace tunebus::testing {
namespace {

TEST(ServiceKillTest, StoreResourceManagerAndWorkerKillsLoseNoAcknowledgedResult) {
  // SIGKILL the checkpoint-store (3 times), the resource-manager and one worker at random
  // moments, restarting each. The experiment finishes; the journal holds no (attempt, seq)
  // twice; every trial's results end with its last attempt reaching the final iteration, with
  // no gap inside an attempt.
  ClusterOptions o;
  o.cpus_per_worker = 2;
  o.rm_liveness = 5;  // 5 x 200 ms: a killed worker is declared lost after 1 s
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  constexpr int kIterations = 30;
  const fs::path file = cluster.dir() / "services.yaml";
  WriteFile(file,
            "name: services\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: {uniform: [0.01, 0.1]}\n"
            "  mock_iterations: " +
                std::to_string(kIterations) +
                "\n"
                "  sleep_s: 0.02\n"
                "num_samples: 16\n"
                "seed: 11\n"
                "checkpoint_freq: 5\n"
                "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  auto submit = cluster.Ctl({"-o", "json", "run", "--detach", file.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  const std::string journal = "services-" + submit.Json().value("experiment_id", "");

  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pause_ms(100, 400);
  std::vector<Kill> plan;
  for (const std::string victim :
       {"checkpoint-store", "w1", "checkpoint-store", "resource-manager", "checkpoint-store"}) {
    plan.push_back({victim, Millis(pause_ms(rng))});
  }
  const auto killed = RunKillPlan(cluster, plan);
  ASSERT_TRUE(killed.has_value()) << cluster.LogTails();
  std::map<std::string, int> kills = *killed;
  json summary;
  ASSERT_TRUE(WaitFor(
      [&] {
        summary = cluster.Ctl({"-o", "json", "status"}, 5s).Json();
        return summary.is_object() && summary.value("finished", false);
      },
      90s, 200ms))
      << summary.dump() << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();

  std::map<std::string, std::set<std::pair<int64_t, int64_t>>> seen;
  std::map<std::string, std::map<int64_t, std::vector<int64_t>>> by_attempt;
  int duplicated = 0, results = 0, gaps = 0;
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    if (r.value("kind", "") != "result") continue;
    ++results;
    const std::string id = r.value("trial_id", "");
    const int64_t attempt = r.value("attempt", int64_t(0));
    if (!seen[id].insert({attempt, r.value("seq", int64_t(0))}).second) ++duplicated;
    by_attempt[id][attempt].push_back(r["result"].value("training_iteration", int64_t(-1)));
  }
  EXPECT_EQ(by_attempt.size(), 16u);
  for (const auto& [id, attempts] : by_attempt) {
    for (const auto& [attempt, its] : attempts) {
      for (size_t i = 1; i < its.size(); ++i) gaps += its[i] != its[i - 1] + 1;
    }
    EXPECT_EQ(attempts.rbegin()->second.back(), kIterations) << id;
  }
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(gaps, 0);
  std::printf(
      "fault summary: kills checkpoint-store=%d resource-manager=%d trial-worker=%d, results "
      "checked=%d, "
      "lost=%d, duplicated=%d\n",
      kills["checkpoint-store"], kills["resource-manager"], kills["w1"], results, gaps, duplicated);
}

}  // namespace
}  // namespace tunebus::testing

namespace tunebus::testing {
namespace {

TEST(WorkerFreezeTest, AFrozenWorkerIsLostItsTrialsRunElsewhereAndItsLateResultsAreRejected) {
  // SIGSTOP w1 past the heartbeat limit (5 x 200 ms), then SIGCONT: its trials were requeued
  // (attempt 2); what its stale trainables report afterwards is rejected by attempt number and
  // they are stopped, so the journal never holds a result of attempt 1 after attempt 2 began.
  ClusterOptions o;
  o.rm_liveness = 5;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "freeze.yaml";
  WriteFile(file,
            "name: freeze\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: {grid_search: [0.01, 0.02, 0.03, 0.04]}\n"
            "  mock_iterations: 60\n"
            "  sleep_s: 0.03\n"
            "checkpoint_freq: 10\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  auto submit = cluster.Ctl({"-o", "json", "run", "--detach", file.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  const std::string journal = "freeze-" + submit.Json().value("experiment_id", "");
  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls", "--status", "RUNNING"}).Json();
        return ls.is_array() && ls.size() == 2;
      },
      10s, 50ms));
  ASSERT_TRUE(WaitFor(  // a few results of every trial first
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls", "--status", "RUNNING"}).Json();
        if (!ls.is_array() || ls.size() != 2) return false;
        for (const json& t : ls)
          if (t.value("training_iteration", 0) < 3) return false;
        return true;
      },
      10s, 50ms));
  cluster.process("w1")->Signal(SIGSTOP);
  // Lost after 5 x 200 ms: its trial restarts (attempt 2) on w2.
  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls"}).Json();
        if (!ls.is_array()) return false;
        for (const json& t : ls)
          if (t.value("attempt", 0) >= 2) return true;
        return false;
      },
      20s, 50ms))
      << cluster.LogTails();
  cluster.process("w1")->Signal(SIGCONT);
  json summary;
  ASSERT_TRUE(WaitFor(
      [&] {
        summary = cluster.Ctl({"-o", "json", "status"}, 5s).Json();
        return summary.is_object() && summary.value("finished", false);
      },
      60s, 200ms))
      << summary.dump() << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED");

  std::map<std::string, int64_t> current_attempt;
  std::set<std::pair<std::string, std::pair<int64_t, int64_t>>> seen;
  int stale = 0, duplicated = 0, requeued = 0;
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    const std::string kind = r.value("kind", ""), id = r.value("trial_id", "");
    const int64_t attempt = r.value("attempt", int64_t(0));
    if (kind == "trial_started") {
      requeued += attempt > 1;
      current_attempt[id] = attempt;
    }
    if (kind != "result") continue;
    stale += attempt != current_attempt[id];
    duplicated += !seen.insert({id, {attempt, r.value("seq", int64_t(0))}}).second;
  }
  EXPECT_GE(requeued, 1) << "the frozen worker's trial was not requeued";
  EXPECT_EQ(stale, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_TRUE(cluster.process("w1")->Running());  // it survived and rejoined
}

}  // namespace
}  // namespace tunebus::testing
