// TrialLifecycle: the TrialRunner's status changes that end or withdraw a trial's attempt —
// leaving RUNNING, a failure (requeue or ERROR per max_failures), a lost worker (requeue or
// ERROR per max_worker_losses), the end of an attempt that saved a checkpoint before it stopped,
// and taking a PENDING or PAUSED trial out of the placement queue — each with its effects in one
// order: the trial's fields and phase, then the observer (the journal) before the executor
// (stop the trainable, then release its resources), so nothing else gets those resources first.
//
// It owns no state: it works on the runner's phases (trial_phases.hpp) and slots
// (trial_slot.hpp: a held result is dropped when its trial leaves RUNNING), through references
// the runner gives it. What an ERROR then means for the experiment (the trial scheduler, the
// searcher, fail_fast) is the runner's: HandleFailure and HandleWorkerLoss say whether the trial
// is now ERROR, with the reason in trial.error.
//
// Thread-compatibility: owned by the runner's thread.
#pragma once

#include <string>
#include <vector>

#include "libs/core/failure_kind.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/driver_holds.hpp"
#include "libs/tune/trial_executor.hpp"
#include "libs/tune/trial_phases.hpp"
#include "libs/tune/trial_slot.hpp"

namespace tunebus {

class TrialLifecycle {
 public:
  /// `max_failures`, `max_worker_losses`: RunnerOptions' (-1: no limit). Every reference
  /// outlives this.
  TrialLifecycle(int64_t max_failures, int64_t max_worker_losses, TrialPhases& phases,
                 std::vector<TrialSlot>& slots, DriverHolds& driver, TrialExecutor& executor,
                 RunnerObserver& observer)
      : max_failures_(max_failures),
        max_worker_losses_(max_worker_losses),
        phases_(phases),
        slots_(slots),
        driver_(driver),
        executor_(executor),
        observer_(observer) {}

  /// RUNNING -> `to` with `error`: observer first, then (if asked) stop the trainable, then
  /// release. `saving`: the trainable saves a checkpoint before it stops, so the attempt keeps
  /// its resources until it exits (RunnerPhase::kSaving, EndSaving). `kind` is the failure's
  /// (a worker loss returns the whole allocation, ReleaseResources; else ReleaseReusable).
  void LeaveRunning(Trial& trial, TrialStatus to, const std::string& error,
                    bool stop_trainable = false, bool saving = false,
                    FailureKind kind = FailureKind::kError);
  /// The trainable failed: num_failures + 1, then requeue (from the newest checkpoint) while
  /// max_failures allows, else ERROR. `stop_trainable`: the trainable still runs (the runner
  /// fails it) and is told to stop. True if the trial is now ERROR.
  [[nodiscard]] bool HandleFailure(Trial& trial, const std::string& error,
                                   bool stop_trainable = false);
  /// The trial's worker was lost (or never reached): num_worker_losses + 1, then a pausing trial
  /// is PAUSED, others requeue, or are ERROR past max_worker_losses. `lost` says why; the error
  /// adds CheckpointManager::LostWith(trial). True if the trial is now ERROR.
  [[nodiscard]] bool HandleWorkerLoss(Trial& trial, const std::string& lost);
  /// The attempt in kSaving (saving before it stopped) exited (`ok`) or failed: its resources
  /// are returned; a TERMINATED trial whose end checkpoint was not stored gets the error in its
  /// journaled status (failure `kind`); a trial unpaused meanwhile is queued.
  void EndSaving(Trial& trial, bool ok, const std::string& error, FailureKind kind);
  /// A PENDING or PAUSED trial is taken out of the placement queue (kQueued, kPlacing -> kIdle:
  /// a grant that still arrives is released by the runner), or its attempt that still saves is
  /// no longer requeued when it exits.
  void DropPending(Trial& trial);

 private:
  int64_t max_failures_;
  int64_t max_worker_losses_;
  TrialPhases& phases_;
  std::vector<TrialSlot>& slots_;
  DriverHolds& driver_;
  TrialExecutor& executor_;
  RunnerObserver& observer_;
};

}  // namespace tunebus
