// TrialRunner: attempts that end without reporting their exit — a worker lost or restarted
// without them, an attempt lost while it saved the checkpoint its stop or pause asked for — and
// which attempts still own their allocation. Ray Tune counts a dead actor as a trial failure;
// here worker loss is its own failure kind (DESIGN.md, docs/recovery.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "libs/tune/trial_runner.hpp"

namespace tunebus {

void TrialRunner::RequeueLost(const std::string& trial_id, const std::string& why) {
  Trial* t = Find(trial_id);
  if (t == nullptr || t->status != TrialStatus::kRunning || IsFinished()) return;
  HandleWorkerLoss(*t, why);
}

void TrialRunner::HandleWorkerLoss(Trial& t, const std::string& lost) {
  t.num_worker_losses += 1;
  if (IsPausing(t)) {
    // Lost while saving its pause checkpoint: PAUSED all the same (from its newest stored one).
    LeaveRunning(t, TrialStatus::kPaused, "while saving its pause checkpoint: " + lost, false,
                 false, FailureKind::kWorkerLost);
    return;
  }
  const std::string why = lost + CheckpointsLostWith(t);
  if (options_.max_worker_losses >= 0 && t.num_worker_losses > options_.max_worker_losses) {
    const std::string error = fmt::format("{} ({} worker losses, max_worker_losses {})", why,
                                          t.num_worker_losses, options_.max_worker_losses);
    LeaveRunning(t, TrialStatus::kError, error, false, false, FailureKind::kWorkerLost);
    OnTrialErrored(t, error);
    return;
  }
  LeaveRunning(t, TrialStatus::kPending, why, false, false, FailureKind::kWorkerLost);
  phases_.Queue(t.index);
}

std::string TrialRunner::CheckpointsLostWith(const Trial& t) {
  if (t.requested_checkpoints.empty()) return "";
  std::vector<int64_t> iterations;
  for (const CheckpointRef& c : t.requested_checkpoints) iterations.push_back(c.training_iteration);
  return fmt::format(
      "; the checkpoint of iteration {} it was saving was not stored, so the trial "
      "goes on from {}",
      fmt::join(iterations, ", "),
      t.checkpoints.empty() ? std::string("the start")
                            : fmt::format("iteration {}", t.checkpoints.back().training_iteration));
}

void TrialRunner::EndSaving(Trial& t, bool ok, const std::string& error, FailureKind kind) {
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

void TrialRunner::EndSavingGoneFrom(const std::string& worker_id,
                                    const std::set<std::string>& still_running,
                                    const std::string& why) {
  for (int64_t index : phases_.SavingOn(worker_id)) {
    Trial& t = trials_[size_t(index)];
    if (!still_running.contains(t.trial_id)) EndSaving(t, false, why, FailureKind::kWorkerLost);
  }
  CheckFinished();
}

bool TrialRunner::EndSavingLost(const std::string& trial_id, const std::string& why) {
  Trial* t = Find(trial_id);
  if (t == nullptr || !phases_.Is(t->index, RunnerPhase::kSaving)) return false;
  EndSaving(*t, false, why, FailureKind::kWorkerLost);
  CheckFinished();
  return true;
}

bool HoldsAllocation(const TrialRunner& runner, const std::string& trial_id, int64_t attempt,
                     const std::string& worker_id) {
  const Trial* t = runner.FindTrial(trial_id);
  if (t == nullptr || t->attempt != attempt) return false;
  if (t->status == TrialStatus::kRunning) return t->worker_id == worker_id;
  const TrialPhase& p = runner.phases().at(t->index);
  return p.phase == RunnerPhase::kSaving && p.attempt == attempt && p.worker_id == worker_id;
}

void TrialRunner::OnWorkerLost(const std::string& worker_id) {
  EndSavingGoneFrom(worker_id, {}, fmt::format("worker {} was lost", worker_id));
  for (Trial& t : trials_) {
    if (t.status != TrialStatus::kRunning || t.worker_id != worker_id) continue;
    HandleWorkerLoss(t, fmt::format("worker {} was lost", worker_id));
  }
  CheckFinished();
}

}  // namespace tunebus
