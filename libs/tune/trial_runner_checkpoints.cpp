// TrialRunner: the worker's answers to the checkpoints its decisions asked for (stored or
// refused by the checkpoint-store) and which attempts may still run on a worker. The policy
// (what to ask, retention) is CheckpointManager's.
#include <fmt/format.h>

#include "libs/tune/trial_runner.hpp"

namespace tunebus {

Status TrialRunner::OnCheckpointSaved(const std::string& trial_id, int64_t attempt,
                                      const std::string& checkpoint_id, int64_t training_iteration,
                                      int64_t size_bytes) {
  Trial* t = Find(trial_id);
  if (t == nullptr)
    return Status::NotFound(fmt::format("checkpoint of unknown trial {}", trial_id));
  Result<CheckpointRef> closed = checkpoints_.Close(*t, attempt, training_iteration, "checkpoint");
  if (!closed.ok()) return closed.status();
  CheckpointRef& ref = *closed;
  ref.checkpoint_id = checkpoint_id;
  ref.size_bytes = size_bytes;
  t->checkpoints.push_back(ref);
  t->newest_checkpoint_has_config = true;
  observer_.OnCheckpointSaved(*t, ref);
  while (std::optional<std::string> deleted = checkpoints_.DropOne(*t, trials_)) {
    observer_.OnCheckpointDeleted(*t, *deleted);
    executor_.DeleteCheckpoint(*deleted);
  }
  return Status::Ok();
}

Status TrialRunner::OnCheckpointFailed(const std::string& trial_id, int64_t attempt,
                                       int64_t training_iteration, const std::string& reason) {
  Trial* t = Find(trial_id);
  if (t == nullptr) {
    return Status::NotFound(fmt::format("refused checkpoint of unknown trial {}", trial_id));
  }
  Result<CheckpointRef> closed =
      checkpoints_.Close(*t, attempt, training_iteration, "refused checkpoint");
  if (!closed.ok()) return closed.status();
  NoteCheckpointNotStored(*t, training_iteration, reason);
  // Noted also after the experiment ended (like a checkpoint stored then: JournalReader::Ended
  // skips both kinds of record after experiment_ended), with nothing more to do.
  observer_.OnCheckpointFailed(*t, t->checkpoints_not_stored.back());
  // A pause or an end checkpoint: the decision that asked for it has already stopped the trial.
  if (IsFinished() || t->status != TrialStatus::kRunning || phases_.IsPausing(t->index)) {
    return Status::Ok();
  }
  switch (options_.checkpoint_failure) {
    case CheckpointFailureMode::kContinue:
      break;
    case CheckpointFailureMode::kPause:
      (void)TrialControl(*this).PauseTrial(trial_id);  // RUNNING: cannot fail
      break;
    case CheckpointFailureMode::kFail: {
      const std::string error =
          fmt::format("checkpoint at iteration {} not stored: {}", training_iteration, reason);
      if (lifecycle_.HandleFailure(*t, error, /*stop_trainable=*/true)) OnTrialErrored(*t, error);
      CheckFinished();
      break;
    }
  }
  return Status::Ok();
}

bool TrialRunner::AttemptMayRun(const std::string& trial_id, int64_t attempt,
                                const std::string& worker_id) const {
  const Trial* t = FindTrial(trial_id);
  if (t == nullptr || t->attempt != attempt) return false;
  if (t->status == TrialStatus::kRunning) return t->worker_id == worker_id;
  if (const TrialPhase& p = phases_.at(t->index); p.phase == RunnerPhase::kSaving)
    return p.attempt == attempt && p.worker_id == worker_id;
  const bool stopped_to_save =
      t->status == TrialStatus::kPaused || t->status == TrialStatus::kTerminated;
  return stopped_to_save && !t->requested_checkpoints.empty();
}

}  // namespace tunebus
