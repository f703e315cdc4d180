// RunnerObservers for TrialRunner unit tests: RecordingObserver logs every call (as "obs:..."
// lines in a log shared with the FakeExecutor, fake_executor.hpp) and keeps copies for
// assertions; JournalingObserver writes every call as the journal record the scheduler's
// ExperimentRecorder would (libs/journal/records.hpp), through its msgpack encoding, for tests
// that replay what a runner journaled.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/experiment_status.hpp"
#include "libs/core/trial.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/trial_executor.hpp"
#include "tests/unit/fake_executor.hpp"

namespace tunebus {
namespace {  // each test file gets its own copy (the fakes are test-local)

using json = nlohmann::json;

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

}  // namespace
}  // namespace tunebus
