// TrialScheduler: decides what happens to a trial after each result (Ray Tune's
// `TrialScheduler`: on_trial_add / on_trial_result / on_trial_complete / on_trial_error /
// on_trial_remove / choose_trial_to_run), and which pending trial runs next.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"

namespace tunebus {

/// A trial scheduler's verdict on one result. Several buffered decisions for one trial combine
/// with STOP > PAUSE > CONTINUE (Combine).
enum class Decision { kContinue = 0, kPause = 1, kStop = 2 };

const char* DecisionName(Decision d);  // "continue" | "pause" | "stop"
inline Decision Combine(Decision a, Decision b) { return a > b ? a : b; }

class TrialScheduler {
 public:
  virtual ~TrialScheduler() = default;
  virtual const char* name() const = 0;
  virtual void OnTrialAdd(const Trial& trial) { (void)trial; }
  /// REQUIRES: trial is RUNNING; `result` has the auto-filled keys (training_iteration, ...).
  virtual Decision OnTrialResult(const Trial& trial, const nlohmann::json& result) = 0;
  virtual void OnTrialComplete(const Trial& trial, const nlohmann::json& result) {
    (void)trial;
    (void)result;
  }
  virtual void OnTrialError(const Trial& trial) { (void)trial; }
  virtual void OnTrialRemove(const Trial& trial) { (void)trial; }
  /// Picks which trial to start among `pending` (trial indices, in creation order, never
  /// empty). Returns one of them.
  virtual int64_t ChooseTrialToRun(const std::set<int64_t>& pending) = 0;
  /// State to journal so a resumed experiment decides the same way.
  virtual nlohmann::json SaveState() const { return nlohmann::json::object(); }
  virtual Status RestoreState(const nlohmann::json& state) {
    (void)state;
    return Status::Ok();
  }
};

/// FIFO (Ray Tune's FIFOScheduler): trials run in creation order, every result CONTINUEs.
class FifoScheduler final : public TrialScheduler {
 public:
  const char* name() const override { return "fifo"; }
  Decision OnTrialResult(const Trial&, const nlohmann::json&) override { return Decision::kContinue; }
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }
};

/// Builds the trial scheduler named in an experiment file ("fifo").
/// Errors: InvalidArgument for an unknown name or bad parameters.
Result<std::unique_ptr<TrialScheduler>> MakeTrialScheduler(const std::string& name,
                                                           const nlohmann::json& config);

}  // namespace tunebus
