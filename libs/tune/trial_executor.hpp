// TrialExecutor: how the TrialRunner acts on the world (Ray Tune's `TrialExecutor`, see
// shared/seeds/004). The scheduler service implements it over the bus (resource-manager +
// workers); unit tests use a fake. Every call is asynchronous: answers come back as
// TrialRunner::On* calls on the same thread.
//
// Write-ahead: the runner reports each state change to its RunnerObserver (which journals it)
// BEFORE calling the executor, so an implementation that releases effects only once the journal
// is durable (as the scheduler service does) never acts on a state it could lose.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/experiment_status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/training_result.hpp"

namespace tunebus {

class TrialExecutor {
 public:
  virtual ~TrialExecutor() = default;
  /// True if a new placement may be requested now. False while the cluster said "no room" and
  /// nothing was freed since, or while requests are in flight up to the executor's window.
  virtual bool CanPlace() const = 0;
  /// Asks for resources for `trial` (PENDING). Answered by TrialRunner::OnTrialPlaced,
  /// OnPlacementDeferred or OnPlacementFailed with the same attempt number (trial.attempt + 1).
  virtual void PlaceTrial(const Trial& trial, int64_t attempt) = 0;
  /// Starts the trainable of `trial` (RUNNING; worker_id, gpu_ids and attempt are set). When
  /// trial.restored_checkpoint_id is set the worker restores that checkpoint first and the
  /// trainable continues from trial.training_iteration.
  virtual void LaunchTrial(const Trial& trial) = 0;
  /// Answers result `seq` of the trial's current attempt with a worker action (see Action; a
  /// checkpoint it saves comes back as TrialRunner::OnCheckpointSaved).
  virtual void SendDecision(const Trial& trial, int64_t seq, Action action) = 0;
  /// Tells the trial's worker to stop its current attempt now.
  virtual void StopTrial(const Trial& trial) = 0;
  /// Returns the resources of the trial's current attempt. Called exactly once per attempt
  /// that was placed, when the trial leaves RUNNING.
  virtual void ReleaseResources(const Trial& trial) = 0;
  /// Same, when the attempt's worker is healthy (the trial left RUNNING by a decision, a stop or
  /// a trainable error, not a lost worker): the executor may hand the allocation straight to the
  /// next trial that asks for the same resources.
  virtual void ReleaseReusable(const Trial& trial) { ReleaseResources(trial); }
  /// Deletes a stored checkpoint (keep_checkpoints_num retention). Fire and forget.
  virtual void DeleteCheckpoint(const std::string& checkpoint_id) = 0;
};

/// What the runner tells the outside about every state change: the journal, result files and
/// the event stream hang here. Calls happen before the executor effects they cause.
class RunnerObserver {
 public:
  virtual ~RunnerObserver() = default;
  /// A trial was created (PENDING) with its config.
  virtual void OnTrialAdded(const Trial& trial) { (void)trial; }
  /// The trial got resources and is RUNNING as attempt trial.attempt on trial.worker_id.
  virtual void OnTrialStarted(const Trial& trial) { (void)trial; }
  /// A result was accepted; `result` has the auto-filled keys. `decision` is what it led to.
  virtual void OnTrialResult(const Trial& trial, const TrainingResult& result, Action decision) {
    (void)trial;
    (void)result;
    (void)decision;
  }
  /// The trial's status changed to something other than RUNNING (PENDING after a requeue,
  /// PAUSED, TERMINATED, ERROR). trial.error holds the reason for ERROR and requeues.
  virtual void OnTrialStatus(const Trial& trial) { (void)trial; }
  /// A checkpoint of the trial was stored (`ref` is now in trial.checkpoints).
  virtual void OnCheckpointSaved(const Trial& trial, const CheckpointRef& ref) {
    (void)trial;
    (void)ref;
  }
  /// A checkpoint asked of the trial was not stored: `failed` is now the newest of
  /// trial.checkpoints_not_stored (the trial's requests up to its iteration are closed).
  virtual void OnCheckpointFailed(const Trial& trial, const CheckpointNotStored& failed) {
    (void)trial;
    (void)failed;
  }
  /// Retention removed a checkpoint from trial.checkpoints (deletion from the store follows).
  virtual void OnCheckpointDeleted(const Trial& trial, const std::string& checkpoint_id) {
    (void)trial;
    (void)checkpoint_id;
  }
  /// The trial's config or resources changed without a status change (set-resources, PBT
  /// exploit). `change` describes it, e.g. {"resources": ...} or {"pbt_exploit": ...}.
  virtual void OnTrialUpdated(const Trial& trial, const nlohmann::json& change) {
    (void)trial;
    (void)change;
  }
  /// The searcher's whole state (Searcher::SaveState), journaled after each batch of suggestions
  /// of a searcher that suggests in batches (MaxPendingSuggestions() > 1: the variant generator):
  /// a resume restores it and applies the deltas journaled after it.
  virtual void OnSearcherState(const nlohmann::json& state) { (void)state; }
  /// A searcher call changed its state (Searcher::TakeStateDelta); journaled (record `searcher`)
  /// before any effect of that call, so a resume reaches the same state.
  virtual void OnSearcherDelta(const nlohmann::json& delta) { (void)delta; }
  /// The driver answered result `seq` of the trial's current attempt (proto/PROTOCOL.md section
  /// 7b); `answer` is DriverAnswer::ToJson(). Journaled (record driver_decision) before the
  /// result's own record and decision, so a resume never asks the driver again for it.
  virtual void OnDriverDecision(const Trial& trial, int64_t seq, const nlohmann::json& answer) {
    (void)trial;
    (void)seq;
    (void)answer;
  }
  /// The trial scheduler's state changed (TrialScheduler::TakeStateDelta); journaled so a
  /// resume reaches the same state.
  virtual void OnTrialSchedulerState(const nlohmann::json& delta) { (void)delta; }
  /// The experiment ended with `status` (FINISHED, STOPPED, ERROR or INTERRUPTED) and a reason.
  virtual void OnExperimentEnded(ExperimentStatus status, const std::string& reason) {
    (void)status;
    (void)reason;
  }
};

}  // namespace tunebus
