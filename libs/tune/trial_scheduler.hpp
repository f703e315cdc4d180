// TrialScheduler: decides what happens to a trial after each result (Ray Tune's
// `TrialScheduler`: on_trial_add / on_trial_result / on_trial_complete / on_trial_error /
// on_trial_remove / choose_trial_to_run), and which pending trial runs next.
#pragma once

#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/journaled.hpp"
#include "libs/tune/training_result.hpp"

namespace tunebus {

/// A trial scheduler's verdict on one result. Several buffered decisions for one trial combine
/// with STOP > PAUSE > CONTINUE (Combine).
enum class Decision { kContinue = 0, kPause = 1, kStop = 2 };

const char* DecisionName(Decision d);  // "continue" | "pause" | "stop"
inline Decision Combine(Decision a, Decision b) { return a > b ? a : b; }

/// What a trial scheduler may do to trials besides answering a result. Ray Tune passes its
/// TrialRunner to every scheduler callback; these are the calls Ray's schedulers make on it
/// (HyperBand's unpause/stop of paused trials, PBT's exploit). Implemented by the runner's
/// TrialSchedulerHost (trial_scheduler_host.hpp).
///
/// Re-entrancy: the runner may call back into the scheduler (OnTrialRemove / OnTrialComplete)
/// from inside these calls, exactly as Ray Tune's stop_trial does.
class TrialSchedulerContext {
 public:
  virtual ~TrialSchedulerContext() = default;
  /// Every trial of the experiment, in creation order (Trial::index == position).
  virtual const std::vector<Trial>& trials() const = 0;
  virtual const Trial* FindTrial(const std::string& trial_id) const = 0;
  /// True for a PAUSED trial and for one still saving the checkpoint of a pause decision
  /// (RUNNING until its trainable exits): both are paused as far as a trial scheduler goes, and
  /// both can be unpaused or stopped.
  virtual bool IsPaused(const std::string& trial_id) const = 0;
  /// PAUSED -> PENDING: the trial runs again, restoring its latest checkpoint (Ray Tune's
  /// TrialExecutor.unpause_trial); a pausing one once its checkpoint is stored. Errors:
  /// NotFound; FailedPrecondition if not IsPaused.
  virtual Status UnpauseTrial(const std::string& trial_id) = 0;
  /// PENDING / PAUSED / RUNNING -> TERMINATED (Ray Tune's TrialRunner.stop_trial): the runner
  /// calls OnTrialRemove (PENDING, PAUSED) or OnTrialComplete (RUNNING) on the scheduler.
  /// Never call it for the trial whose OnTrialResult is running: return kStop instead.
  /// Errors: NotFound. A finished trial is a no-op.
  virtual Status StopTrial(const std::string& trial_id) = 0;
  /// PBT exploit (Ray Tune's PopulationBasedTraining._exploit): `trial_id` takes `new_config`
  /// and continues from `donor_trial_id`'s latest checkpoint, keeping its own trial_id and
  /// training_iteration from the donor's checkpoint. A RUNNING trial's attempt is stopped and it
  /// goes PENDING at once (the decision returned from the current OnTrialResult is then
  /// ignored); a PAUSED or PENDING trial restores when next started. The change is journaled
  /// and written into the trial's next result as "pbt_exploit" (donor, old and new config).
  /// Errors: NotFound; FailedPrecondition if the donor has no checkpoint or the trial is finished.
  virtual Status ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                              nlohmann::json new_config) = 0;
  /// Makes the answer to the result being decided save a checkpoint (PBT checkpoints its top
  /// trials at each perturbation). Only for the trial whose OnTrialResult is running.
  virtual void RequestCheckpoint(const std::string& trial_id) = 0;
  /// Adds `key: value` to the result being decided (Ray Tune's schedulers write into the result
  /// dict: HyperBandForBOHB's `hyperband_info`), before the searcher, the journal and the result
  /// files see it; a later call for the same key wins. Only for the trial whose OnTrialResult is
  /// running (others are ignored).
  virtual void SetResultInfo(const std::string& trial_id, const std::string& key,
                             nlohmann::json value) = 0;
  /// The runner's clock, seconds (fake in unit tests).
  virtual double NowS() const = 0;
  /// The driver's `samples` for the result being decided (proto/PROTOCOL.md section 7b: mutation
  /// key path -> value its PBT mutation function drew), or nullptr when there is no driver
  /// answer. Only for the trial whose OnTrialResult is running (nullptr for others).
  virtual const nlohmann::json* DriverSamples(const std::string& trial_id) const {
    (void)trial_id;
    return nullptr;
  }
};

class TrialScheduler {
 public:
  virtual ~TrialScheduler() = default;
  virtual const char* name() const = 0;
  /// Called once by the TrialRunner before any other call; `context` outlives the scheduler.
  void Attach(TrialSchedulerContext* context) { context_ = context; }
  /// Strict metric checking (Ray Tune's _validate_result_metrics): Ok, or InvalidArgument naming
  /// the metric this scheduler needs, the scheduler and the result's keys. The runner makes the
  /// trial ERROR (no retry) with that message. Called before OnTrialResult.
  virtual Status ValidateResult(const TrainingResult& result) const {
    (void)result;
    return Status::Ok();
  }
  virtual void OnTrialAdd(const Trial& trial) { (void)trial; }
  /// REQUIRES: trial is RUNNING; `result` has the auto-filled keys (training_iteration, ...).
  virtual Decision OnTrialResult(const Trial& trial, const TrainingResult& result) = 0;
  virtual void OnTrialComplete(const Trial& trial, const TrainingResult& result) {
    (void)trial;
    (void)result;
  }
  virtual void OnTrialError(const Trial& trial) { (void)trial; }
  virtual void OnTrialRemove(const Trial& trial) { (void)trial; }
  /// Picks which trial to start among `pending` (indices of PENDING trials, in creation order,
  /// never empty; an unpaused trial is PENDING again). Returns one of them.
  virtual int64_t ChooseTrialToRun(const std::set<int64_t>& pending) = 0;
  /// A trial this scheduler PAUSEd itself that may run again now, or nullopt. Ray Tune's
  /// FIFOScheduler.choose_trial_to_run falls back to PAUSED trials when none is PENDING; the
  /// runner asks this when nothing is PENDING and unpauses the trial it names.
  virtual std::optional<std::string> ChoosePausedTrialToRun() { return std::nullopt; }
  /// What the scheduler said of its newest STOP or PAUSE (ExplainDecision), then null until it
  /// explains another: the runner takes it for the decision log (scheduler_decisions.hpp).
  nlohmann::json TakeDecisionDetail() { return std::exchange(decision_detail_, nullptr); }

  // ---- journaling (DESIGN.md "Journal and recovery") ---------------------------------------
  // A scheduler's state is journaled as deltas: every callback that changes it leaves a delta
  // (a JSON value of the scheduler's own shape) that the runner takes with TakeStateDelta right
  // after the callback and journals (record trial_scheduler) before any effect of the decision
  // leaves. A resume calls RestoreState with the newest snapshot's SaveState (or null) and then
  // ApplyStateDelta for every delta journaled after it, in order, reaching the state the
  // scheduler had: a resumed experiment makes the decisions it would have made.

  /// The whole state, for snapshots.
  virtual nlohmann::json SaveState() const { return nullptr; }
  /// Replaces the whole state; null means the initial state.
  virtual Status RestoreState(const nlohmann::json& state) {
    (void)state;
    return Status::Ok();
  }
  /// The changes made since the last call, or null if none.
  virtual nlohmann::json TakeStateDelta() { return nullptr; }
  /// Replays one journaled delta. Errors: Corruption for a delta it does not understand.
  virtual Status ApplyStateDelta(const nlohmann::json& delta) {
    (void)delta;
    return Status::Ok();
  }

 protected:
  /// Notes why the decision being returned (or the StopTrial about to be called) was made, e.g.
  /// {"rung": 4, "cutoff": 0.61}; shown by the dashboard, not journaled.
  void ExplainDecision(nlohmann::json detail) { decision_detail_ = std::move(detail); }
  /// Strict metric checking shared by the schedulers: Ok if `result` has a number under each
  /// of `keys`, else InvalidArgument "result has no '<key>' (needed by the <name> scheduler
  /// as its <role>); its keys: ...".
  Status RequireNumbers(
      const TrainingResult& result,
      std::initializer_list<std::pair<const char*, std::string>> role_and_key) const;

  TrialSchedulerContext* context_ = nullptr;

 private:
  nlohmann::json decision_detail_;
};

/// A trial scheduler journaled as events (journaled.hpp).
using JournaledTrialScheduler = Journaled<TrialScheduler>;

/// FIFO (Ray Tune's FIFOScheduler): trials run in creation order, every result CONTINUEs.
class FifoScheduler final : public TrialScheduler {
 public:
  const char* name() const override { return "fifo"; }
  Decision OnTrialResult(const Trial&, const TrainingResult&) override {
    return Decision::kContinue;
  }
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }
};

}  // namespace tunebus
