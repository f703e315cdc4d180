// The fault harness in one run: a 50-trial experiment with failing trials and
// checkpoints while the scheduler is SIGKILLed at >= 20 seeded random moments (a soak run sets
// TUNEBUS_FAULT_KILLS=200) and the checkpoint-store, the resource-manager and the workers are
// SIGKILLed in between, each restarted at once. The mock trainable writes its own ground truth
// (every result it produced, every decision it received) next to the results; at the end the
// journal is compared with it. Then an errored-only rerun must touch only the ERROR trials.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
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

using Iterations = std::vector<int64_t>;
struct TrialTruth {
  std::map<int64_t, Iterations> reported;       // attempt -> iterations the trainable produced
  std::set<std::pair<int64_t, int64_t>> acked;  // (attempt, iteration) it got a decision for
};

// <trial_dir>/mock_truth.jsonl; a line torn by a SIGKILL (the last one) is skipped.
TrialTruth ReadTruth(const fs::path& trial_dir) {
  TrialTruth truth;
  for (const std::string& line : ReadLines(trial_dir / "mock_truth.jsonl")) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    const int64_t attempt = j.value("attempt", int64_t(0)), it = j.value("iteration", int64_t(0));
    if (j.value("event", "") == "report") truth.reported[attempt].push_back(it);
    if (j.value("event", "") == "acked") truth.acked.insert({attempt, it});
  }
  return truth;
}

TEST(ChaosTest, EveryServiceKilledAtRandomLosesAndDuplicatesNoResult) {
  const char* env = std::getenv("TUNEBUS_FAULT_KILLS");
  const int scheduler_kills = std::max(20, env ? std::atoi(env) : 20);
  ClusterOptions o;
  o.cpus_per_worker = 2;
  o.rm_liveness = 5;  // x 200 ms: a killed worker that does not come back is lost after 1 s
  o.scheduler_args = {"--snapshot-every", "200"};  // resumes start from snapshots + tails
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());

  // 50 trials of 20 iterations, a checkpoint every 5. One in five fails at iteration 7:
  // persistent_error ones on every attempt (-> ERROR after max_failures 2 retries), the others
  // only on their first attempt (-> retried from the iteration-5 checkpoint, TERMINATED).
  constexpr int kTrials = 50, kIterations = 20;
  const double sleep_s = 0.04 * std::max(1, scheduler_kills / 20);
  const fs::path file = cluster.dir() / "chaos.yaml";
  WriteFile(file,
            "name: chaos\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  lr: {uniform: [0.01, 0.1]}\n"
            "  mock_error: {grid_search: [false, false, false, false, true]}\n"
            "  persistent_error: {choice: [false, true]}\n"
            "  mock_error_iteration: 7\n"
            "  mock_iterations: " +
                std::to_string(kIterations) +
                "\n"
                "  mock_truth_log: true\n"
                "  sleep_s: " +
                std::to_string(sleep_s) +
                "\n"
                "num_samples: 10\n"
                "seed: 5\n"
                "checkpoint_freq: 5\n"
                "max_failures: 2\n"
                "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, "chaos");
  ASSERT_FALSE(journal.empty());

  // The kill plan: the scheduler `scheduler_kills` times, the store 3, the resource-manager 2,
  // each worker once, in a seeded random order with 50..300 ms between kills.
  std::vector<std::string> victims(size_t(scheduler_kills), "scheduler");
  for (const char* v : {"checkpoint-store", "checkpoint-store", "checkpoint-store",
                        "resource-manager", "resource-manager", "w1", "w2"}) {
    victims.push_back(v);
  }
  int from_snapshot = 0;  // resumes that started from a snapshot
  const auto killed = RunKillPlan(
      cluster, RandomKillPlan(victims, 20261122, 50ms, 300ms), {""},
      [&](const std::string& victim) {
        if (victim != "scheduler") return;
        std::smatch m;
        const std::string log = cluster.process("scheduler")->Stdout();
        if (std::regex_search(log, m, std::regex(R"(records \((\d+) from a snapshot\))")) &&
            std::stoll(m[1]) > 0) {
          ++from_snapshot;
        }
      });
  ASSERT_TRUE(killed.has_value()) << cluster.LogTails();
  std::map<std::string, int> kills = *killed;
  kills["trial-worker"] = kills["w1"] + kills["w2"];
  const json summary = WaitFinished(cluster, 120s);
  ASSERT_FALSE(summary.empty()) << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
  EXPECT_GE(kills["scheduler"], 20) << "the experiment ended before the kill plan did";
  EXPECT_GE(from_snapshot, 1) << "no resume used a snapshot";

  // Each trial ends as the trial scheduler (FIFO) and max_failures dictate.
  const json trials = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_EQ(trials.size(), size_t(kTrials));
  std::map<std::string, json> by_id;
  int errored = 0;
  for (const json& t : trials) {
    by_id[t.value("trial_id", "")] = t;
    const bool persistent =
        t["config"].value("mock_error", false) && t["config"].value("persistent_error", false);
    EXPECT_EQ(t.value("status", ""), persistent ? "ERROR" : "TERMINATED") << t.dump();
    errored += persistent;
  }

  // The journal against the ground truth, per trial and attempt.
  std::map<std::string, std::map<int64_t, Iterations>> journaled;
  std::map<std::string, std::set<std::pair<int64_t, int64_t>>> seqs;
  int results = 0, acked = 0, duplicated = 0, lost = 0, wrong = 0;
  for (const json& r : ReadJournal(cluster.store(), journal)) {
    if (r.value("kind", "") != "result") continue;
    ++results;
    const std::string id = r.value("trial_id", "");
    const int64_t attempt = r.value("attempt", int64_t(0));
    duplicated += !seqs[id].insert({attempt, r.value("seq", int64_t(0))}).second;
    journaled[id][attempt].push_back(r["result"].value("training_iteration", int64_t(-1)));
  }
  for (const auto& [id, t] : by_id) {
    const TrialTruth truth = ReadTruth(t.value("dir", ""));
    EXPECT_FALSE(truth.reported.empty()) << id << ": no ground truth in " << t.value("dir", "");
    acked += int(truth.acked.size());
    for (const auto& [attempt, its] : journaled[id]) {
      // What the journal holds of an attempt is what its trainable produced, in order, from
      // the start: the truth may go on past it only where the attempt was cut off.
      const Iterations& produced =
          truth.reported.count(attempt) ? truth.reported.at(attempt) : Iterations{};
      const bool prefix =
          its.size() <= produced.size() && std::equal(its.begin(), its.end(), produced.begin());
      wrong += !prefix;
      EXPECT_TRUE(prefix) << id << " attempt " << attempt << ": journal " << json(its).dump()
                          << " vs produced " << json(produced).dump();
    }
    for (const auto& [attempt, it] : truth.acked) {
      const Iterations& its = journaled[id][attempt];
      const bool kept = std::find(its.begin(), its.end(), it) != its.end();
      lost += !kept;
      EXPECT_TRUE(kept) << id << " attempt " << attempt << " iteration " << it
                        << " was acked but is not journaled";
    }
    if (t.value("status", "") == "TERMINATED") {
      ASSERT_FALSE(journaled[id].empty()) << id;
      EXPECT_EQ(journaled[id].rbegin()->second.back(), kIterations) << id;
    }
  }
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(wrong, 0);
  std::printf(
      "fault summary: kills scheduler=%d checkpoint-store=%d resource-manager=%d trial-worker=%d, "
      "resumes from a snapshot=%d, trials=%d (ERROR %d), results checked=%d (acked %d), lost=%d, "
      "duplicated=%d\n",
      kills["scheduler"], kills["checkpoint-store"], kills["resource-manager"],
      kills["trial-worker"], from_snapshot, kTrials, errored, results, acked, lost, duplicated);

  // Errored-only rerun from scratch: the ERROR trials run again (and fail again: their error is
  // persistent); every other trial is left exactly as it was.
  auto rerun = cluster.Ctl({"-o", "json", "resume", "chaos", "--rerun-errored=restart"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.Describe();
  EXPECT_EQ(rerun.Json().value("rerun", -1), errored) << rerun.out;
  ASSERT_FALSE(WaitFinished(cluster, 60s).empty()) << cluster.LogTails();
  for (const json& t : cluster.Ctl({"-o", "json", "ls"}).Json()) {
    const json& before = by_id[t.value("trial_id", "")];
    if (before.value("status", "") == "ERROR") {
      EXPECT_EQ(t.value("status", ""), "ERROR") << t.dump();
      EXPECT_GT(t.value("attempt", 0), before.value("attempt", 0)) << t.dump();
    } else {
      EXPECT_EQ(t, before) << "the errored-only rerun touched " << t.value("trial_id", "");
    }
  }
}

}  // namespace
}  // namespace tunebus::testing
