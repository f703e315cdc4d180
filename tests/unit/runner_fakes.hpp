// Fakes and the fixture for TrialRunner unit tests: a FakeExecutor and a RecordingObserver that
// log every call, a PausingScheduler, and TrialRunnerTest, which steps a runner with a fake
// clock. Shared by trial_runner_test.cpp and trial_runner_lifecycle_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/clock.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/make_trial_scheduler.hpp"
#include "libs/tune/runner_queries.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;
using AttemptKey = std::pair<std::string, int64_t>;  // (trial_id, attempt)

inline std::string KeyOf(const std::string& trial_id, int64_t attempt) {
  return trial_id + "/" + std::to_string(attempt);
}

struct PlacementCall {
  std::string trial_id;
  int64_t attempt = 0;
};

struct DecisionCall {
  std::string trial_id;
  int64_t attempt = 0;
  int64_t seq = 0;
  std::string action;
  std::string worker_id;  // where it goes
};

// Records every executor call into `log` (shared with the observer) and keeps the placement
// requests the test has not answered yet.
class FakeExecutor final : public TrialExecutor {
 public:
  explicit FakeExecutor(std::vector<std::string>& log) : log_(log) {}

  bool CanPlace() const override { return can_place; }
  void PlaceTrial(const Trial& trial, int64_t attempt) override {
    EXPECT_EQ(trial.status, TrialStatus::kPending) << trial.trial_id;
    placements.push_back({trial.trial_id, attempt});
    open.push_back({trial.trial_id, attempt});
    log_.push_back("exec:place " + KeyOf(trial.trial_id, attempt));
  }
  void LaunchTrial(const Trial& trial) override {
    EXPECT_EQ(trial.status, TrialStatus::kRunning) << trial.trial_id;
    launches.push_back(trial);
    log_.push_back("exec:launch " + KeyOf(trial.trial_id, trial.attempt));
  }
  void SendDecision(const Trial& trial, int64_t seq, Action action) override {
    decisions.push_back({trial.trial_id, trial.attempt, seq, ActionName(action), trial.worker_id});
    log_.push_back("exec:decision " + KeyOf(trial.trial_id, trial.attempt) + " " +
                   ActionName(action));
  }
  void StopTrial(const Trial& trial) override {
    stops.push_back(trial);
    log_.push_back("exec:stop " + KeyOf(trial.trial_id, trial.attempt));
  }
  void DeleteCheckpoint(const std::string& checkpoint_id) override {
    deleted_checkpoints.push_back(checkpoint_id);
    log_.push_back("exec:delete_checkpoint " + checkpoint_id);
  }
  void ReleaseResources(const Trial& trial) override {
    releases[{trial.trial_id, trial.attempt}] += 1;
    released.push_back(trial);
    log_.push_back("exec:release " + KeyOf(trial.trial_id, trial.attempt));
  }

  bool can_place = true;
  std::vector<PlacementCall> placements;
  std::deque<PlacementCall> open;  // placement requests not answered by the test yet
  std::vector<Trial> launches;
  std::vector<DecisionCall> decisions;
  std::vector<Trial> stops;
  std::vector<std::string> deleted_checkpoints;
  std::map<AttemptKey, int> releases;
  std::vector<Trial> released;

 private:
  std::vector<std::string>& log_;
};

// Records every observer call into `log` and keeps copies for assertions.
class RecordingObserver final : public RunnerObserver {
 public:
  explicit RecordingObserver(std::vector<std::string>& log) : log_(log) {}

  void OnTrialAdded(const Trial& trial) override {
    added.push_back(trial);
    log_.push_back("obs:added " + trial.trial_id);
  }
  void OnTrialStarted(const Trial& trial) override {
    started.push_back(trial);
    log_.push_back("obs:started " + KeyOf(trial.trial_id, trial.attempt));
  }
  void OnTrialResult(const Trial& trial, const TrainingResult& result, Action decision) override {
    results.push_back({trial.trial_id, result.ToJson(), ActionName(decision)});
    log_.push_back("obs:result " + KeyOf(trial.trial_id, trial.attempt) + " " +
                   ActionName(decision));
  }
  void OnTrialStatus(const Trial& trial) override {
    statuses.push_back(trial);
    log_.push_back("obs:status " + KeyOf(trial.trial_id, trial.attempt) + " " +
                   TrialStatusName(trial.status));
  }
  void OnCheckpointSaved(const Trial& trial, const CheckpointRef& ref) override {
    saved_checkpoints.push_back(ref);
    log_.push_back("obs:checkpoint " + trial.trial_id + " " + ref.checkpoint_id);
  }
  void OnCheckpointDeleted(const Trial& trial, const std::string& checkpoint_id) override {
    log_.push_back("obs:checkpoint_deleted " + trial.trial_id + " " + checkpoint_id);
  }
  void OnCheckpointFailed(const Trial& trial, const CheckpointNotStored& failed) override {
    failed_checkpoints.push_back(failed);
    log_.push_back("obs:checkpoint_failed " + trial.trial_id + " " +
                   std::to_string(failed.training_iteration));
  }
  void OnTrialUpdated(const Trial& trial, const json& change) override {
    updates.push_back(change);
    log_.push_back("obs:updated " + trial.trial_id);
  }
  void OnSearcherState(const json& state) override { searcher_states.push_back(state); }
  void OnSearcherDelta(const json& delta) override {
    searcher_deltas.push_back(delta);
    log_.push_back("obs:searcher");
  }
  void OnTrialSchedulerState(const json& delta) override { scheduler_deltas.push_back(delta); }
  void OnDriverDecision(const Trial& trial, int64_t seq, const json& answer) override {
    driver_decisions.push_back(answer);
    log_.push_back("obs:driver_decision " + KeyOf(trial.trial_id, trial.attempt) + " " +
                   std::to_string(seq));
  }
  void OnExperimentEnded(ExperimentStatus status, const std::string& reason) override {
    ended.emplace_back(ExperimentStatusName(status), reason);
    log_.push_back(std::string("obs:ended ") + ExperimentStatusName(status));
  }

  struct ResultCall {
    std::string trial_id;
    json result;
    std::string decision;
  };
  std::vector<Trial> added;
  std::vector<Trial> started;
  std::vector<ResultCall> results;
  std::vector<Trial> statuses;
  std::vector<json> searcher_states;
  std::vector<json> searcher_deltas;
  std::vector<json> scheduler_deltas;
  std::vector<json> driver_decisions;
  std::vector<CheckpointRef> saved_checkpoints;
  std::vector<CheckpointNotStored> failed_checkpoints;
  std::vector<json> updates;
  std::vector<std::pair<std::string, std::string>> ended;

 private:
  std::vector<std::string>& log_;
};

// An observer that journals every call as the scheduler's ExperimentRecorder does (the records of
// libs/journal/records.hpp, through their msgpack encoding).
class JournalingObserver final : public RunnerObserver {
 public:
  explicit JournalingObserver(std::vector<json>& records) : records_(records) {}
  void OnTrialAdded(const Trial& t) override { Add(journal::TrialAdded(t)); }
  void OnTrialStarted(const Trial& t) override { Add(journal::TrialStarted(t)); }
  void OnTrialResult(const Trial& t, const TrainingResult& r, Action a) override {
    Add(journal::ResultRecord(t, r.ToJson(), a));
  }
  void OnTrialStatus(const Trial& t) override { Add(journal::TrialStatusRecord(t)); }
  void OnCheckpointSaved(const Trial& t, const CheckpointRef& ref) override {
    Add(journal::CheckpointSavedRecord(t, ref));
  }
  void OnCheckpointDeleted(const Trial& t, const std::string& id) override {
    Add(journal::CheckpointDeletedRecord(t, id));
  }
  void OnCheckpointFailed(const Trial& t, const CheckpointNotStored& failed) override {
    Add(journal::CheckpointFailedRecord(t, failed));
  }
  void OnSearcherState(const json& state) override { Add(journal::SearcherState(state)); }
  void OnSearcherDelta(const json& delta) override { Add(journal::SearcherDelta(delta)); }
  void OnTrialSchedulerState(const json& d) override { Add(journal::TrialSchedulerDelta(d)); }
  void OnDriverDecision(const Trial& t, int64_t seq, const json& answer) override {
    Add(journal::DriverDecisionRecord(t, seq, answer));
  }
  void OnExperimentEnded(ExperimentStatus s, const std::string& why) override {
    Add(journal::ExperimentEnded(s, why));
  }

 private:
  void Add(const json& record) {
    auto decoded = journal::DecodeRecord(journal::EncodeRecord(record));
    ASSERT_TRUE(decoded.ok());
    records_.push_back(*decoded);
  }
  std::vector<json>& records_;
};

// A trial scheduler that PAUSEs every result of the trials in `pause` (FIFO otherwise).
class PausingScheduler final : public TrialScheduler {
 public:
  explicit PausingScheduler(std::set<std::string> pause) : pause_(std::move(pause)) {}
  const char* name() const override { return "pausing"; }
  Decision OnTrialResult(const Trial& trial, const TrainingResult&) override {
    return pause_.count(trial.trial_id) ? Decision::kPause : Decision::kContinue;
  }
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }

 private:
  std::set<std::string> pause_;
};

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
