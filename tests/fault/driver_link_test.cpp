// Fault tests of the driver link (proto/PROTOCOL.md section 7b): a fake Python driver
// (tests/fault/fake_driver.py, run by /usr/bin/python3 with python3-zmq and python3-msgpack) whose
// stopper stops every trial at iteration 3. Each trial ends TERMINATED at exactly iteration 3 and
// never reports past it, also when the scheduler is SIGKILLed and restarted mid-run (the driver
// stays; the trial's history is unchanged and continues only where allowed), and when the driver
// is SIGKILLed and restarted (its held results wait, `tunectl status` says so, then resume).
// Skipped when /usr/bin/python3 cannot import zmq and msgpack.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
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
constexpr int kTrials = 3;
constexpr int kStopAt = 3;

class DriverLinkFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonImports(cluster_.dir() / "logs", "zmq, msgpack")) {
      GTEST_SKIP() << kPython << " cannot import zmq and msgpack";
    }
    ASSERT_TRUE(cluster_.Start());
    ASSERT_TRUE(StartDriver());
    file_ = cluster_.dir() / "driven.yaml";
    WriteFile(file_,
              "name: driven\n"
              "trainable: {builtin: mock}\n"
              "param_space:\n"
              "  lr: {grid_search: [0.1, 0.2, 0.3]}\n"
              "  sleep_s: 0.3\n"
              "  mock_iterations: 20\n"
              "metric: mean_accuracy\n"
              "mode: max\n"
              "driver:\n"
              "  endpoint: " +
                  endpoint_ +
                  "\n"
                  "  timeout_s: 1\n"
                  "results_dir: " +
                  (cluster_.dir() / "results").string() + "\n");
  }

  // Starts the fake driver (again on the endpoint the first one bound).
  ::testing::AssertionResult StartDriver() {
    driver_options_.name = "driver" + std::to_string(++drivers_);
    Ready ready;
    auto r =
        SpawnReady(driver_options_, cluster_.dir() / "ready" / "driver.json", driver_, ready, 60s);
    if (r) endpoint_ = ready.endpoint("endpoint");
    return r;
  }

  json Summary() { return cluster_.Ctl({"-o", "json", "status"}, 10s).Json(); }
  std::string DriverState() {
    const json s = Summary();
    return s.is_object() && s.contains("driver") ? s["driver"].value("state", "") : "";
  }
  // "result: trial T iteration I" lines the driver processes logged, by trial: the iterations.
  std::map<std::string, std::vector<int>> DriverSaw() const {
    std::map<std::string, std::vector<int>> seen;
    for (const auto& out : outputs_) Parse(out, seen);
    if (driver_) Parse(driver_->Output(), seen);
    return seen;
  }
  static void Parse(const std::string& out, std::map<std::string, std::vector<int>>& seen) {
    for (size_t at = out.find("result: trial "); at != std::string::npos;
         at = out.find("result: trial ", at + 1)) {
      const size_t id = at + 14, space = out.find(' ', id);
      const size_t it = out.find("iteration ", space) + 10;
      seen[out.substr(id, space - id)].push_back(std::stoi(out.substr(it)));
    }
  }
  void KillDriver() {
    outputs_.push_back(driver_->Output());
    driver_->Kill();
  }

  // Every trial TERMINATED at exactly iteration kStopAt: its last result, its result records
  // (seqs 1..kStopAt, one each), a driver_decision with stop_trial at kStopAt, and the driver
  // never saw a later iteration.
  void ExpectStoppedAtThree(const std::string& journal) {
    const json summary = WaitFinished(cluster_, 120s);
    ASSERT_TRUE(summary.is_object() && summary.value("finished", false))
        << summary.dump() << cluster_.LogTails() << Tail(driver_->stdout_path())
        << Tail(driver_->stderr_path());
    EXPECT_EQ(summary["counts"].value("TERMINATED", 0), kTrials) << summary.dump();
    const json trials = cluster_.Ctl({"-o", "json", "ls"}, 10s).Json();
    ASSERT_TRUE(trials.is_array() && trials.size() == size_t(kTrials)) << trials.dump();
    for (const json& t : trials) {
      EXPECT_EQ(t["last_result"].value("training_iteration", 0), kStopAt) << t.dump();
      EXPECT_EQ(t["last_result"].value("done", false), true) << t.dump();
    }
    std::map<std::string, std::vector<int64_t>> iterations;
    std::map<std::string, int> stops;
    for (const json& r : ReadJournal(cluster_.store(), journal)) {
      const std::string kind = r.value("kind", "");
      if (kind == "result") {
        iterations[r["trial_id"]].push_back(r["result"].value("training_iteration", int64_t{0}));
      }
      if (kind == "driver_decision" && r.value("stop_trial", false)) ++stops[r["trial_id"]];
    }
    ASSERT_EQ(iterations.size(), size_t(kTrials));
    for (const auto& [trial, its] : iterations) {
      EXPECT_EQ(its, (std::vector<int64_t>{1, 2, 3})) << trial;
      EXPECT_EQ(stops[trial], 1) << trial;
    }
    for (const auto& [trial, its] : DriverSaw()) {
      for (int i : its) EXPECT_LE(i, kStopAt) << trial;
    }
  }

  Cluster cluster_{ClusterOptions{}};
  Process::Options driver_options_{
      .binary = kPython,
      .args = {(SourceDir() / "tests/fault/fake_driver.py").string(), "--stop-at",
               std::to_string(kStopAt), "--endpoint", kAnyLoopback},
      .log_dir = cluster_.dir() / "logs"};
  std::string endpoint_;
  int drivers_ = 0;
  std::unique_ptr<Process> driver_;
  std::vector<std::string> outputs_;  // of killed drivers
  fs::path file_;
};

TEST_F(DriverLinkFaultTest, StopperEndsTrialsAtIterationThreeAcrossASchedulerKill) {
  // SIGKILL the scheduler once the driver has answered results: the new scheduler replays the
  // journaled decisions (no trial runs past iteration 3) and asks the same driver process, in a
  // new session, only about results it has not journaled an answer for.
  const std::string journal = SubmitDetached(cluster_, file_, "driven");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(WaitFor(
      [&] {
        size_t n = 0;
        for (const auto& [trial, its] : DriverSaw()) n += its.size();
        return n >= 2;
      },
      60s, 50ms))
      << driver_->Output() << cluster_.LogTails();
  ASSERT_TRUE(cluster_.Restart("scheduler"));
  ExpectStoppedAtThree(journal);
  const std::string out = driver_->Output();
  size_t hellos = 0;
  for (size_t at = out.find("hello: session"); at != std::string::npos;
       at = out.find("hello: session", at + 1)) {
    ++hellos;
  }
  EXPECT_GE(hellos, 2u) << out;  // one per scheduler process
  // A result whose answer was journaled is not asked again: each (trial, iteration) at most
  // twice (once per scheduler process, only when the first answer was not durable yet).
  for (const auto& [trial, its] : DriverSaw()) {
    for (int i = 1; i <= kStopAt; ++i) EXPECT_LE(std::count(its.begin(), its.end(), i), 2) << trial;
  }
}

TEST_F(DriverLinkFaultTest, KilledDriverHoldsResultsUntilItIsBack) {
  // SIGKILL the driver mid-run: results wait (no trial moves on), status shows the driver
  // unavailable with its error; a new driver on the same endpoint gets a new hello and the held
  // results, and every trial still ends at exactly iteration 3.
  const std::string journal = SubmitDetached(cluster_, file_, "driven");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(WaitFor([&] { return !DriverSaw().empty(); }, 60s, 50ms))
      << driver_->Output() << cluster_.LogTails();
  KillDriver();
  ASSERT_TRUE(WaitFor([&] { return DriverState() == "unavailable"; }, 30s, 100ms))
      << Summary().dump();
  const json down = Summary();
  EXPECT_FALSE(down["driver"].value("last_error", "").empty()) << down.dump();
  const auto iterations = [&] {
    int64_t sum = 0;
    const json trials = cluster_.Ctl({"-o", "json", "ls"}, 10s).Json();
    for (const json& t : trials) sum += t.value("training_iteration", int64_t{0});
    return sum;
  };
  // While the scheduler tries the dead driver once more (a hello that gets no answer within
  // timeout_s), no trial moves on.
  const int64_t before = iterations();
  const int64_t retries = down["driver"].value("retries", int64_t{0});
  json tried;
  ASSERT_TRUE(WaitUntil("the scheduler tries the killed driver again", [&] {
    tried = Summary();
    return tried.is_object() && tried.contains("driver") &&
           tried["driver"].value("retries", int64_t{0}) > retries;
  })) << tried.dump();
  EXPECT_EQ(iterations(), before) << "a trial moved on without the driver's answer";
  const CommandResult status = cluster_.Ctl({"status"}, 10s);
  EXPECT_NE(status.out.find("driver: " + endpoint_), std::string::npos) << status.Describe();
  EXPECT_NE(status.out.find("state unavailable"), std::string::npos) << status.Describe();
  ASSERT_TRUE(StartDriver());
  ExpectStoppedAtThree(journal);
  EXPECT_GE(Summary()["driver"].value("sessions", 0), 2);
  EXPECT_NE(driver_->Output().find("hello: session"), std::string::npos) << driver_->Output();
}

}  // namespace
}  // namespace tunebus::testing
