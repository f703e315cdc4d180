// TrialRunnerTest: the fixture of the TrialRunner unit tests. It builds a runner over a grid
// (Grid) or a given searcher with a FakeExecutor (fake_executor.hpp), a RecordingObserver
// (recording_observer.hpp) that share one log, and a ManualClock; and it drives the runner as
// the scheduler service would (Step, grants, results, exits) with helpers named after what they
// do. Shared by the trial_runner_*_test.cpp files and the trial schedulers' tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/clock.hpp"
#include "libs/tune/make_trial_scheduler.hpp"
#include "libs/tune/runner_queries.hpp"
#include "libs/tune/trial_control.hpp"
#include "libs/tune/trial_runner.hpp"
#include "libs/tune/variant_generator.hpp"
#include "tests/unit/fake_executor.hpp"
#include "tests/unit/recording_observer.hpp"

namespace tunebus {
namespace {  // each test file gets its own copy (the fakes are test-local)

using json = nlohmann::json;

// {"x": grid_search over 0..n-1}: n trials of one sample each.
inline json Grid(int n) {
  json values = json::array();
  for (int i = 0; i < n; ++i) values.push_back(i);
  return {{"x", {{"grid_search", values}}}};
}

class TrialRunnerTest : public ::testing::Test {
 protected:
  // Starts a runner over {"x": grid 0..n-1}, one sample: trials exp_00000 ... exp_<n-1>.
  void Start(RunnerOptions options, int n, std::unique_ptr<TrialScheduler> scheduler = nullptr) {
    StartWith(std::move(options), Grid(n), 1, std::move(scheduler));
  }
  void StartWith(RunnerOptions options, const json& space, int64_t num_samples,
                 std::unique_ptr<TrialScheduler> scheduler = nullptr) {
    if (options.experiment_id.empty()) options.experiment_id = "exp";
    if (options.param_space.is_null()) options.param_space = space;
    if (!scheduler) scheduler = std::make_unique<FifoScheduler>();
    runner_ = std::make_unique<TrialRunner>(
        std::move(options), std::make_unique<VariantGenerator>(space, num_samples, 42),
        std::move(scheduler), exec_, obs_, clock_);
  }

  // Starts a runner over `searcher` (its SetSearchProperties already called).
  void StartWithSearcher(RunnerOptions options, std::unique_ptr<Searcher> searcher,
                         std::unique_ptr<TrialScheduler> scheduler = nullptr) {
    if (options.experiment_id.empty()) options.experiment_id = "exp";
    if (!scheduler) scheduler = std::make_unique<FifoScheduler>();
    runner_ = std::make_unique<TrialRunner>(std::move(options), std::move(searcher),
                                            std::move(scheduler), exec_, obs_, clock_);
  }

  // The user's commands (tunectl's) on the runner.
  TrialControl Control() { return TrialControl(*runner_); }
  // The runner as its trial scheduler sees it (a stop noted as the scheduler's decision).
  TrialSchedulerContext& Context() { return runner_->scheduler_context(); }
  // Results held for the driver's answer, over every trial's slot.
  size_t HeldResults() const {
    size_t held = 0;
    for (const Trial& t : runner_->trials()) held += runner_->slot(t.index).held.has_value();
    return held;
  }

  static std::string Id(int index) {
    std::string digits = std::to_string(index);
    std::string id = "exp_";
    id.append(5 - digits.size(), '0').append(digits);
    return id;
  }
  const Trial& T(int index) const {
    const Trial* t = runner_->FindTrial(Id(index));
    EXPECT_NE(t, nullptr) << Id(index);
    return *t;
  }

  // The worker GrantAll uses for a trial: "w00003" for "exp_00003".
  static std::string WorkerFor(const std::string& trial_id) {
    return std::string("w").append(trial_id.substr(4));
  }

  // Answers the oldest open placement request with a grant on `worker`.
  PlacementCall Grant(const std::string& worker = "w1", std::vector<std::string> gpu_ids = {}) {
    EXPECT_FALSE(exec_.open.empty());
    PlacementCall p = exec_.open.front();
    exec_.open.pop_front();
    grants_[{p.trial_id, p.attempt}] += 1;
    runner_->OnTrialPlaced(p.trial_id, p.attempt, worker, gpu_ids);
    return p;
  }
  // Grants every open placement, each on its own worker "w<index>" unless `worker` is given.
  void GrantAll(const std::string& worker = "") {
    while (!exec_.open.empty()) {
      const std::string w = worker.empty() ? WorkerFor(exec_.open.front().trial_id) : worker;
      Grant(w);
    }
  }
  // Steps and grants until trial `index` is RUNNING.
  void Run(int index, const std::string& worker = "w1") {
    runner_->Step();
    ASSERT_FALSE(exec_.open.empty());
    ASSERT_EQ(exec_.open.front().trial_id, Id(index));
    Grant(worker);
    ASSERT_EQ(T(index).status, TrialStatus::kRunning);
  }
  Status Report(int index, int64_t seq, json metrics = json::object(), double dt = 1.0) {
    return runner_->OnResult(Id(index), T(index).attempt, seq, TrainingResult::FromJson(metrics),
                             dt);
  }
  // Starts `trials` trials (a grid over x) under the trial scheduler `name` (metric "acc"), with
  // every placement granted.
  void StartScheduled(const std::string& name, const json& config, int trials,
                      const std::string& mode = "max", int64_t max_concurrent = 0) {
    RunnerOptions o;
    o.metric = "acc";
    o.mode = mode;
    o.max_concurrent_trials = max_concurrent;
    auto s = MakeTrialScheduler(name, config, "acc", mode);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Start(o, trials, std::move(*s));
    runner_->Step();
    GrantAll();
  }
  // Steps and grants every placement until a Step places nothing more (window-1 searchers and
  // unpaused trials come a Step at a time).
  void StepAndGrantAll() {
    for (size_t placed = SIZE_MAX; placed != exec_.placements.size();) {
      placed = exec_.placements.size();
      runner_->Step();
      GrantAll();
    }
  }
  // Reports {"acc": acc} at `iteration` of trial `index` (its attempt's result iteration -
  // restored_iteration) and returns the action that answered it; after a "pause" the worker's
  // part follows, as for a real trial: the checkpoint of that iteration is stored and the
  // trainable exits.
  std::string AtIteration(int index, int64_t iteration, double acc) {
    const int64_t seq = iteration - T(index).restored_iteration;
    EXPECT_TRUE(Report(index, seq, {{"acc", acc}}).ok()) << Id(index) << " @" << iteration;
    const std::string action = LastAction(index);
    if (action == "pause") {
      const std::string checkpoint = Id(index) + "/" + std::to_string(iteration);
      EXPECT_TRUE(
          runner_->OnCheckpointSaved(Id(index), T(index).attempt, checkpoint, iteration, 10).ok());
      runner_->OnTrialExited(Id(index), T(index).attempt, true, "");
    }
    return action;
  }
  // Reports {"acc": acc} as result `seq` of trial `index`; the action that answered it.
  std::string Decide(int index, int64_t seq, double acc) {
    EXPECT_TRUE(Report(index, seq, {{"acc", acc}}).ok());
    return LastAction(index);
  }
  // The worker action that answered the newest result of trial `index`.
  std::string LastAction(int index) const {
    for (auto it = exec_.decisions.rbegin(); it != exec_.decisions.rend(); ++it) {
      if (it->trial_id == Id(index)) return it->action;
    }
    return "";
  }
  // A fresh scheduler built like the runner's, brought up from the journaled deltas alone,
  // holds the same state as the runner's (what a resume relies on).
  void ExpectDeltasRebuildState(const std::string& name, const json& config,
                                const std::string& metric, const std::string& mode,
                                uint64_t seed = 0) {
    auto fresh = MakeTrialScheduler(name, config, metric, mode, seed);
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    ASSERT_TRUE((*fresh)->RestoreState(nullptr).ok());
    for (const json& d : obs_.scheduler_deltas)
      ASSERT_TRUE((*fresh)->ApplyStateDelta(d).ok()) << d.dump();
    EXPECT_EQ((*fresh)->SaveState(), runner_->trial_scheduler().SaveState());
    auto again = MakeTrialScheduler(name, config, metric, mode, seed);
    ASSERT_TRUE((*again)->RestoreState(runner_->trial_scheduler().SaveState()).ok());
    EXPECT_EQ((*again)->SaveState(), runner_->trial_scheduler().SaveState());
  }
  void Fail(int index, const std::string& error) {
    runner_->OnTrialExited(Id(index), T(index).attempt, false, error);
  }

  // Every attempt granted by the test was released exactly once (and nothing else was).
  void ExpectEachGrantReleasedOnce() const {
    for (const auto& [key, n] : grants_)
      EXPECT_EQ(n, 1) << "granted twice: " << KeyOf(key.first, key.second);
    EXPECT_EQ(exec_.releases, grants_);
  }
  size_t IndexOf(const std::string& entry) const {
    auto it = std::find(log_.begin(), log_.end(), entry);
    EXPECT_NE(it, log_.end()) << "missing log entry: " << entry;
    return size_t(it - log_.begin());
  }

  ManualClock clock_{1000.0};  // the runner's time; tests move it with AdvanceTo
  std::vector<std::string> log_;
  FakeExecutor exec_{log_};
  RecordingObserver obs_{log_};
  std::map<AttemptKey, int> grants_;
  std::unique_ptr<TrialRunner> runner_;
};

}  // namespace
}  // namespace tunebus
