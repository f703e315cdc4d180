// TrialRunner: attempts that end without reporting their exit — a worker lost or restarted
// without them, an attempt lost while it saved the checkpoint its stop or pause asked for. Ray
// Tune counts a dead actor as a trial failure; here worker loss is its own failure kind
// (DESIGN.md, docs/explanation/recovery.md). What each loss does to a trial is TrialLifecycle's.
#include <fmt/format.h>

#include "libs/tune/trial_runner.hpp"

namespace tunebus {

void TrialRunner::RequeueLost(const std::string& trial_id, const std::string& why) {
  Trial* t = Find(trial_id);
  if (t == nullptr || t->status != TrialStatus::kRunning || IsFinished()) return;
  if (lifecycle_.HandleWorkerLoss(*t, why)) OnTrialErrored(*t, std::string(t->error));
}

void TrialRunner::EndSavingGoneFrom(const std::string& worker_id,
                                    const std::set<std::string>& still_running,
                                    const std::string& why) {
  for (int64_t index : phases_.SavingOn(worker_id)) {
    Trial& t = trials_[size_t(index)];
    if (!still_running.contains(t.trial_id)) {
      lifecycle_.EndSaving(t, false, why, FailureKind::kWorkerLost);
    }
  }
  CheckFinished();
}

bool TrialRunner::EndSavingLost(const std::string& trial_id, const std::string& why) {
  Trial* t = Find(trial_id);
  if (t == nullptr || !phases_.Is(t->index, RunnerPhase::kSaving)) return false;
  lifecycle_.EndSaving(*t, false, why, FailureKind::kWorkerLost);
  CheckFinished();
  return true;
}

void TrialRunner::OnWorkerLost(const std::string& worker_id) {
  EndSavingGoneFrom(worker_id, {}, fmt::format("worker {} was lost", worker_id));
  for (Trial& t : trials_) {
    if (t.status != TrialStatus::kRunning || t.worker_id != worker_id) continue;
    if (lifecycle_.HandleWorkerLoss(t, fmt::format("worker {} was lost", worker_id))) {
      OnTrialErrored(t, std::string(t.error));
    }
  }
  CheckFinished();
}

}  // namespace tunebus
