#include "libs/tune/trial_lifecycle.hpp"

#include <fmt/format.h>

#include "libs/tune/checkpoint_manager.hpp"

namespace tunebus {

void TrialLifecycle::LeaveRunning(Trial& t, TrialStatus to, const std::string& error,
                                  bool stop_trainable, bool saving, FailureKind kind) {
  t.status = to;
  t.error = error;
  if (saving) {
    phases_.LeaveSaving(t.index, t.attempt, t.worker_id, /*requeue=*/false);
  } else if (phases_.IsRunning(t.index)) {
    phases_.Leave(t.index);  // else kIdle: an attempt fail_fast: raise stopped
  }
  driver_.Drop(slots_[size_t(t.index)], t.trial_id);
  NoteFailure(t, kind);
  observer_.OnTrialStatus(t);
  if (stop_trainable) executor_.StopTrial(t);  // before the release: nothing else gets them first
  // A saving attempt keeps its allocation until it exits (EndSaving).
  if (!saving && kind == FailureKind::kWorkerLost) executor_.ReleaseResources(t);
  if (!saving && kind != FailureKind::kWorkerLost) executor_.ReleaseReusable(t);
  // A TERMINATED trial storing its end checkpoint keeps its worker until the attempt exits, as
  // replay has it (StoresEndCheckpoint): snapshots carry it to a successor.
  if (!(saving && to == TrialStatus::kTerminated)) {
    t.worker_id.clear();
    t.gpu_ids.clear();
  }
}

bool TrialLifecycle::HandleFailure(Trial& t, const std::string& error, bool stop_trainable) {
  t.num_failures += 1;
  const bool retry = max_failures_ < 0 || t.num_failures <= max_failures_;
  if (retry) {
    LeaveRunning(t, TrialStatus::kPending, error, stop_trainable);
    phases_.Queue(t.index);
    return false;
  }
  LeaveRunning(t, TrialStatus::kError, error, stop_trainable);
  return true;
}

bool TrialLifecycle::HandleWorkerLoss(Trial& t, const std::string& lost) {
  t.num_worker_losses += 1;
  if (phases_.IsPausing(t.index)) {
    // Lost while saving its pause checkpoint: PAUSED all the same (from its newest stored one).
    LeaveRunning(t, TrialStatus::kPaused, "while saving its pause checkpoint: " + lost, false,
                 false, FailureKind::kWorkerLost);
    return false;
  }
  const std::string why = lost + CheckpointManager::LostWith(t);
  if (max_worker_losses_ >= 0 && t.num_worker_losses > max_worker_losses_) {
    const std::string error = fmt::format("{} ({} worker losses, max_worker_losses {})", why,
                                          t.num_worker_losses, max_worker_losses_);
    LeaveRunning(t, TrialStatus::kError, error, false, false, FailureKind::kWorkerLost);
    return true;
  }
  LeaveRunning(t, TrialStatus::kPending, why, false, false, FailureKind::kWorkerLost);
  phases_.Queue(t.index);
  return false;
}

void TrialLifecycle::EndSaving(Trial& t, bool ok, const std::string& error, FailureKind kind) {
  const TrialPhase saving = phases_.EndSaving(t.index);
  Trial released = t;
  released.worker_id = saving.worker_id;
  const bool end_checkpoint_lost = !ok && StoresEndCheckpoint(t);
  if (!ok) t.error = "while saving its checkpoint: " + error;
  if (end_checkpoint_lost) {
    // The trial stays TERMINATED with every result it reported; the journal says that the
    // checkpoint its stop asked for (checkpoint_at_end) is not stored, and why. The request
    // stays open: the checkpoint is still taken if it turns up (a frozen worker that comes
    // back; an upload the store committed, adopted at a takeover).
    NoteFailure(t, kind);
    observer_.OnTrialStatus(t);
  } else {
    t.requested_checkpoints.clear();
  }
  if (kind == FailureKind::kWorkerLost) {
    executor_.ReleaseResources(released);
  } else {
    executor_.ReleaseReusable(released);
  }
  if (t.status != TrialStatus::kRunning) {
    t.worker_id.clear();
    t.gpu_ids.clear();
  }
  if (saving.requeue && t.status == TrialStatus::kPending) phases_.Queue(t.index);
}

void TrialLifecycle::DropPending(Trial& t) {
  switch (phases_.phase(t.index)) {
    case RunnerPhase::kQueued:
    case RunnerPhase::kPlacing:
      phases_.Drop(t.index);
      break;
    case RunnerPhase::kSaving:
      phases_.SetRequeue(t.index, false);
      break;
    default:
      break;
  }
}

}  // namespace tunebus
