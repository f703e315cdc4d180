// Fault tests: `search: {type: external, command: [...]}` — the scheduler starts the searcher
// (clients/python/tunebus/searcher.py wrapping Optuna's TPE, run by /usr/bin/python3, the script
// named by its path relative to the experiment file's folder) on an ipc:// endpoint it picks.
// SIGKILLed mid-run, the searcher is restarted by the scheduler, `tunectl status` shows the restart
// and the run completes with exactly num_samples trials; when the experiment ends, the scheduler
// stops, or the scheduler is SIGKILLed, the searcher process is gone within 10 s. Skipped when
// /usr/bin/python3 cannot import zmq, msgpack and optuna (Debian's python3-zmq,
// python3-msgpack, python3-optuna).
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kPython = "/usr/bin/python3";
constexpr int kTrials = 10;

// Whether `pid` no longer runs (no such process, or a zombie nobody reaped yet).
bool Gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

class SpawnedSearcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonImports(cluster_.dir() / "logs", "zmq, msgpack, optuna")) {
      GTEST_SKIP() << kPython
                   << " cannot import zmq, msgpack and optuna (install python3-zmq, "
                      "python3-msgpack, python3-optuna)";
    }
    ASSERT_TRUE(cluster_.Start());
    // The searcher script is named relative to the experiment file's folder.
    const fs::path folder = cluster_.dir() / "exp";
    fs::create_directories(folder);
    const std::string script =
        fs::relative(SourceDir() / "clients/python/tunebus/searcher.py", folder).string();
    file_ = folder / "spawned.yaml";
    WriteFile(file_, ExternalSearchExperiment("spawned", kTrials,
                                              "  type: external\n"
                                              "  command: [" +
                                                  std::string(kPython) + ", " + script +
                                                  ", --sampler, tpe, --seed, '1']\n"
                                                  "  timeout_s: 2\n"
                                                  "  backoff_initial_s: 0.2\n"
                                                  "  backoff_max_s: 1\n",
                                              cluster_.dir() / "results"));
  }

  json Summary() { return cluster_.Ctl({"-o", "json", "status"}, 10s).Json(); }
  json Searcher() {
    const json s = Summary();
    return s.is_object() && s.contains("searcher") ? s["searcher"] : json::object();
  }
  pid_t SearcherPid() { return pid_t(Searcher().value("pid", int64_t{0})); }
  int64_t Added() { return TrialsAdded(Summary()); }
  // Waits until the searcher process runs, has answered (trials were added) and `trials` exist.
  pid_t WaitRunning(int64_t trials) {
    pid_t pid = 0;
    const bool ok = WaitFor(
        [&] {
          pid = SearcherPid();
          return pid > 0 && Added() >= trials;
        },
        90s, 100ms);
    EXPECT_TRUE(ok) << Summary().dump() << cluster_.LogTails() << SearcherLog();
    return ok ? pid : 0;
  }
  std::string SearcherLog() {
    return Tail(cluster_.dir() / "results" / "spawned" / "searcher.log", 40);
  }

  Cluster cluster_{ClusterOptions{}};
  fs::path file_;
};

TEST_F(SpawnedSearcherTest, KilledSearcherIsRestartedByTheSchedulerAndTheRunCompletes) {
  // SIGKILL the searcher the scheduler started: the scheduler starts it again (status: restarts
  // 1, last_exit signal 9), the new process is told the journaled events, and the run completes
  // with exactly kTrials distinct trials; once the experiment ended the searcher is stopped.
  const std::string journal = SubmitDetached(cluster_, file_, "spawned");
  ASSERT_FALSE(journal.empty());
  const pid_t first = WaitRunning(3);
  ASSERT_GT(first, 0);
  const json running = Searcher();
  EXPECT_EQ(running.value("restarts", -1), 0) << running.dump();
  EXPECT_EQ(running.value("endpoint", "").rfind("ipc://", 0), 0u) << running.dump();
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        const json s = Searcher();
        return s.value("restarts", 0) >= 1 && s.value("pid", int64_t{0}) > 0 &&
               s.value("pid", int64_t{0}) != first;
      },
      30s, 100ms))
      << Summary().dump() << SearcherLog();
  const json restarted = Searcher();
  RecordProperty(
      "kill_to_restarted_ms",
      int(std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - killed_at)
              .count()));
  EXPECT_EQ(restarted.value("last_exit", ""), "signal 9") << restarted.dump();
  const std::string line = cluster_.Ctl({"status"}, 10s).out;
  EXPECT_NE(line.find("restarts 1"), std::string::npos) << line;
  EXPECT_NE(line.find("last_exit signal 9"), std::string::npos) << line;
  const pid_t second = pid_t(restarted.value("pid", int64_t{0}));

  const json summary = WaitFinished(cluster_, 180s);
  ASSERT_TRUE(summary.is_object() && summary.value("finished", false))
      << summary.dump() << cluster_.LogTails() << SearcherLog();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
  EXPECT_EQ(summary["counts"].value("TERMINATED", 0), kTrials) << summary.dump();
  EXPECT_EQ(summary["searcher"].value("suggested", 0), kTrials) << summary.dump();
  EXPECT_GE(summary["searcher"].value("sessions", 0), 2) << summary.dump();
  std::set<std::string> added;
  std::set<json> configs;
  for (const json& r : ReadJournal(cluster_.store(), journal)) {
    if (r.value("kind", "") != "trial_added") continue;
    EXPECT_TRUE(added.insert(r.value("trial_id", "")).second) << "added twice: " << r.dump();
    configs.insert(r["config"]);
  }
  EXPECT_EQ(added.size(), size_t(kTrials));
  EXPECT_EQ(configs.size(), size_t(kTrials)) << "a config was suggested twice";
  // The experiment ended: its searcher is stopped (SIGTERM) and not started again.
  EXPECT_TRUE(WaitFor([&] { return Gone(second); }, 10s, 100ms)) << SearcherLog();
  EXPECT_TRUE(WaitFor([&] { return Searcher().value("process", "") == "stopped"; }, 10s, 100ms))
      << Summary().dump();
  const std::string log = SearcherLog();
  EXPECT_NE(log.find("ended: signal 9; starting it again"), std::string::npos) << log;
  EXPECT_NE(log.find("serving tpe on ipc://"), std::string::npos) << log;
}

TEST_F(SpawnedSearcherTest, StoppedSchedulerStopsItsSearcher) {
  // The scheduler stops (SIGTERM) mid-run: the searcher it started is gone within 10 s.
  ASSERT_FALSE(SubmitDetached(cluster_, file_, "spawned").empty());
  const pid_t pid = WaitRunning(2);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(Gone(pid));
  Process* scheduler = cluster_.process("scheduler");
  ASSERT_NE(scheduler, nullptr);
  const auto stopped_at = std::chrono::steady_clock::now();
  scheduler->Stop(10s);
  EXPECT_TRUE(WaitFor([&] { return Gone(pid); }, 10s, 10ms))
      << "the searcher " << pid << " outlived its scheduler\n"
      << SearcherLog();
  RecordProperty(
      "scheduler_stop_to_searcher_gone_ms",
      int(std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - stopped_at)
              .count()));
}

TEST_F(SpawnedSearcherTest, KilledSchedulerLeavesNoSearcherBehind) {
  // The scheduler is SIGKILLed: the searcher gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and
  // also sees that its parent is gone; it is gone within 10 s. A new scheduler resumes the
  // experiment with a searcher of its own.
  ASSERT_FALSE(SubmitDetached(cluster_, file_, "spawned").empty());
  const pid_t pid = WaitRunning(2);
  ASSERT_GT(pid, 0);
  Process* scheduler = cluster_.process("scheduler");
  ASSERT_NE(scheduler, nullptr);
  const auto killed_at = std::chrono::steady_clock::now();
  scheduler->Kill();
  EXPECT_TRUE(WaitFor([&] { return Gone(pid); }, 10s, 10ms))
      << "the searcher " << pid << " outlived its SIGKILLed scheduler\n"
      << SearcherLog();
  RecordProperty(
      "scheduler_kill_to_searcher_gone_ms",
      int(std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - killed_at)
              .count()));
  ASSERT_TRUE(cluster_.Restart("scheduler"));  // a new scheduler process on the same ports
  const json summary = WaitFinished(cluster_, 180s);
  ASSERT_TRUE(summary.is_object() && summary.value("finished", false))
      << summary.dump() << cluster_.LogTails() << SearcherLog();
  EXPECT_EQ(summary["counts"].value("TERMINATED", 0), kTrials) << summary.dump();
}

}  // namespace
}  // namespace tunebus::testing
