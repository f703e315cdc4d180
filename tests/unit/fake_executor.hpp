// FakeExecutor: a TrialExecutor for TrialRunner unit tests that records every call (in its own
// vectors and, as "exec:..." lines, in a log shared with the observer, so a test can check the
// order of journal and executor effects) and keeps the placement requests the test has not
// answered yet (`open`). It never places anything by itself: the test grants (OnTrialPlaced).
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/trial_executor.hpp"

namespace tunebus {
namespace {  // each test file gets its own copy (the fakes are test-local)

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

}  // namespace
}  // namespace tunebus
