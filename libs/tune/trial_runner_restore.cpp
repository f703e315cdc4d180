// TrialRunner: taking over an experiment from its journal (DESIGN.md "Journal and recovery"):
// the replayed trials with their runner phases, the searcher's and the trial scheduler's state.
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

Status TrialRunner::Restore(RunnerRestore restored) {
  // Null: the searcher keeps the initial state it was built in (RestoreState(null)'s).
  if (Status s = search_.RestoreState(restored.searcher_state); !s.ok()) return s;
  trials_ = std::move(restored.trials);
  index_.clear();
  phases_.Reset(trials_.size());
  slots_.assign(trials_.size(), TrialSlot{});
  start_s_ = restored.start_s;
  for (Trial& t : trials_) {
    index_[t.trial_id] = size_t(t.index);
    if (t.status == TrialStatus::kPending) phases_.Queue(t.index);
    if (t.status == TrialStatus::kRunning) phases_.Adopt(t.index);
    if (StoresEndCheckpoint(t) && !t.worker_id.empty()) {
      phases_.AdoptSaving(t.index, t.attempt, t.worker_id);
    } else if (t.status != TrialStatus::kRunning) {
      t.worker_id.clear();
    }
    if (auto a = restored.last_actions.find(t.trial_id); a != restored.last_actions.end()) {
      slots_[size_t(t.index)].last_action = a->second;
      // Answered "pause" and not yet exited when the journal ends: still saving. Only a result
      // of the current attempt (last_seq > 0) says so: an unpaused trial's new attempt keeps
      // its previous attempt's "pause" here until its first result.
      if (t.status == TrialStatus::kRunning && a->second == Action::kPause && t.last_seq > 0)
        phases_.StartPausing(t.index, t.attempt);
    }
    if (!t.last_result_msgpack.empty()) {
      results_.CacheMetric(t, TrainingResult::FromJson(t.LastResult()));
    }
    if (t.num_results > 0) stop_.MarkAllSeen();  // accepted results carried every stop key
  }
  status_ = restored.ended_status;
  end_reason_ = std::move(restored.ended_reason);
  if (restored.trial_scheduler) {
    if (Status s = host_.Restore(restored.trial_scheduler->state, restored.trial_scheduler->deltas);
        !s.ok()) {
      return s;
    }
  }
  if (Status s = search_.ApplyDeltas(restored.searcher_deltas); !s.ok()) return s;
  DriverHolds::Restore(restored.driver_answers, trials_, slots_);
  return Status::Ok();
}

}  // namespace tunebus
