// Fault tests: an experiment whose configs come from an external searcher
// process (clients/python/tunebus/searcher.py wrapping Optuna's CMA-ES, run by /usr/bin/python3)
// survives the searcher being SIGKILLed and restarted, being SIGSTOPped (hung) and resumed, and
// the scheduler being SIGKILLed: the run completes with exactly num_samples trials, each added
// once with the config the searcher's journaled suggestion holds, and `tunectl status` showed the
// searcher unavailable while it was. Skipped when /usr/bin/python3 cannot import zmq, msgpack and
// optuna (Debian's python3-zmq, python3-msgpack, python3-optuna).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <memory>
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

constexpr const char* kPython = "/usr/bin/python3";
constexpr int kTrials = 12;

class ExternalSearcherFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonImports(cluster_.dir() / "logs", "zmq, msgpack, optuna")) {
      GTEST_SKIP() << kPython << " cannot import zmq, msgpack and optuna";
    }
    ASSERT_TRUE(cluster_.Start());
    ASSERT_TRUE(StartSearcher());
    file_ = cluster_.dir() / "external.yaml";
    WriteFile(file_, ExternalSearchExperiment("external", kTrials,
                                              "  type: external\n"
                                              "  endpoint: " +
                                                  endpoint() +
                                                  "\n"
                                                  "  timeout_s: 1\n"
                                                  "  backoff_initial_s: 0.2\n"
                                                  "  backoff_max_s: 1\n",
                                              cluster_.dir() / "results"));
  }

  // The endpoint the first searcher bound; a restarted one binds it again (the experiment file
  // names it).
  std::string endpoint() const { return endpoint_; }

  ::testing::AssertionResult StartSearcher() {
    searcher_options_.name = "searcher" + std::to_string(++searchers_);
    Ready ready;
    auto r = SpawnReady(searcher_options_, cluster_.dir() / "ready" / "searcher.json", searcher_,
                        ready, 60s);
    if (r) endpoint_ = ready.endpoint("endpoint");
    return r;
  }

  json Summary() { return cluster_.Ctl({"-o", "json", "status"}, 10s).Json(); }
  std::string SearcherState() {
    const json s = Summary();
    return s.is_object() && s.contains("searcher") ? s["searcher"].value("state", "") : "";
  }
  int64_t Count(const char* status) {
    const json s = Summary();
    return s.is_object() && s.contains("counts") ? s["counts"].value(status, int64_t{0}) : -1;
  }
  int64_t Terminated() { return Count("TERMINATED"); }
  int64_t Running() { return Count("RUNNING"); }
  // Waits until `n` trials were added.
  bool WaitForTrials(int64_t n) {
    return WaitFor([&] { return TrialsAdded(Summary()) >= n; }, 60s, 100ms);
  }

  // The run ended FINISHED with kTrials trials, each added once and TERMINATED, each config the
  // one the searcher's journaled suggestion for that trial holds.
  void ExpectCompleteAndExact(const std::string& journal) {
    const json summary = WaitFinished(cluster_, 120s);
    ASSERT_TRUE(summary.is_object() && summary.value("finished", false))
        << summary.dump() << cluster_.LogTails() << Tail(searcher_->stdout_path())
        << Tail(searcher_->stderr_path());
    EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
    EXPECT_EQ(summary["counts"].value("TERMINATED", 0), kTrials) << summary.dump();
    EXPECT_EQ(summary["searcher"].value("suggested", 0), kTrials) << summary.dump();
    std::map<std::string, json> added, suggested;
    int duplicates = 0;
    for (const json& r : ReadJournal(cluster_.store(), journal)) {
      const std::string kind = r.value("kind", "");
      if (kind == "trial_added") {
        duplicates += added.count(r.value("trial_id", ""));
        added[r.value("trial_id", "")] = r["config"];
      }
      if (kind == "searcher") {
        for (const json& e : r["delta"]) {
          if (e.value("event", "") == "suggested") suggested[e["trial_id"]] = e["config"];
        }
      }
    }
    EXPECT_EQ(duplicates, 0);
    EXPECT_EQ(added.size(), size_t(kTrials));
    EXPECT_EQ(added, suggested);
    std::set<json> distinct;
    for (const auto& [id, config] : added) distinct.insert(config);
    EXPECT_EQ(distinct.size(), added.size()) << "a config was suggested twice";
    const json trials = cluster_.Ctl({"-o", "json", "ls"}, 10s).Json();
    ASSERT_TRUE(trials.is_array()) << trials.dump();
    EXPECT_EQ(trials.size(), size_t(kTrials));
  }

  Cluster cluster_{ClusterOptions{}};
  Process::Options searcher_options_{
      .binary = kPython,
      .args = {(SourceDir() / "clients/python/tunebus/searcher.py").string(), "--sampler", "cmaes",
               "--seed", "1", "--endpoint", kAnyLoopback},
      .log_dir = cluster_.dir() / "logs"};
  std::string endpoint_;
  int searchers_ = 0;
  std::unique_ptr<Process> searcher_;
  fs::path file_;
};

TEST_F(ExternalSearcherFaultTest, KilledSearcherIsRestartedAndTheRunCompletes) {
  // SIGKILL the searcher after a few trials: status says unavailable while trials already
  // placed go on; a new searcher process on the same endpoint is told the journaled events and
  // the run completes.
  const std::string journal = SubmitDetached(cluster_, file_, "external");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(WaitForTrials(4)) << Summary().dump() << cluster_.LogTails();
  ASSERT_TRUE(WaitFor([&] { return Running() > 0; }, 30s, 20ms)) << Summary().dump();
  const int64_t before = Terminated();
  searcher_->Kill();
  ASSERT_TRUE(WaitFor([&] { return SearcherState() == "unavailable"; }, 30s, 100ms))
      << Summary().dump();
  const json down = Summary();
  EXPECT_FALSE(down["searcher"].value("last_error", "").empty()) << down.dump();
  // Trials placed before the kill finish while the searcher is away.
  EXPECT_TRUE(WaitFor([&] { return Terminated() > before; }, 30s, 100ms)) << Summary().dump();
  EXPECT_EQ(SearcherState(), "unavailable");
  ASSERT_TRUE(StartSearcher());  // on the same endpoint
  ExpectCompleteAndExact(journal);
  EXPECT_GE(Summary()["searcher"].value("sessions", 0), 2);
  // The new process was told the earlier suggestions before it suggested again.
  EXPECT_NE(searcher_->Output().find("suggested"), std::string::npos) << searcher_->Output();
}

TEST_F(ExternalSearcherFaultTest, HungSearcherLeavesRunningTrialsAloneAndResumes) {
  // SIGSTOP the searcher (it hangs: requests time out): the scheduler keeps finishing the trials
  // it has and says the searcher is unavailable; SIGCONT and the run completes.
  const std::string journal = SubmitDetached(cluster_, file_, "external");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(WaitForTrials(3)) << Summary().dump() << cluster_.LogTails();
  ASSERT_TRUE(WaitFor([&] { return Running() > 0; }, 30s, 20ms)) << Summary().dump();
  const int64_t before = Terminated();
  searcher_->Signal(SIGSTOP);
  ASSERT_TRUE(WaitFor([&] { return SearcherState() == "unavailable"; }, 30s, 100ms))
      << Summary().dump();
  EXPECT_TRUE(WaitFor([&] { return Terminated() > before; }, 30s, 100ms)) << Summary().dump();
  EXPECT_EQ(cluster_.Ctl({"status"}, 5s).exit_code, 0);  // the control socket answers
  searcher_->Signal(SIGCONT);
  ExpectCompleteAndExact(journal);
}

TEST_F(ExternalSearcherFaultTest, KilledSchedulerResumesAndTheSearcherIsReplayed) {
  // SIGKILL the scheduler twice mid-run: each new scheduler process starts a new session with
  // the same searcher process and replays the journal to it; the run completes exactly.
  const std::string journal = SubmitDetached(cluster_, file_, "external");
  ASSERT_FALSE(journal.empty());
  // Sessions the searcher process has started (its log's hello lines).
  auto hellos = [&] {
    size_t n = 0;
    const std::string out = searcher_->Output();
    for (size_t at = out.find("hello: session"); at != std::string::npos;
         at = out.find("hello: session", at + 1)) {
      ++n;
    }
    return n;
  };
  size_t restarts = 0;
  for (int64_t trials : {3, 7}) {
    ASSERT_TRUE(WaitForTrials(trials)) << Summary().dump() << cluster_.LogTails();
    // The scheduler about to be killed has started its session (one killed within its first
    // second may not have reached the searcher yet, and then there is no session to replay).
    ASSERT_TRUE(WaitFor([&] { return hellos() > restarts; }, 30s, 50ms)) << searcher_->Output();
    ASSERT_TRUE(cluster_.Restart("scheduler"));
    ++restarts;
    ASSERT_TRUE(WaitFor([&] { return cluster_.Ctl({"status"}, 2s).exit_code == 0; }, 20s, 100ms))
        << cluster_.LogTails();
  }
  ExpectCompleteAndExact(journal);
  int resumed = 0;
  for (const json& r : ReadJournal(cluster_.store(), journal))
    resumed += r.value("kind", "") == "experiment_resumed";
  EXPECT_EQ(resumed, 2);
  // Three scheduler processes, three sessions (at least) with the one searcher process.
  EXPECT_TRUE(WaitFor([&] { return hellos() >= 3; }, 30s, 50ms)) << searcher_->Output();
}

}  // namespace
}  // namespace tunebus::testing
