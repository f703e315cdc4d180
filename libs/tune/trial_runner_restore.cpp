// TrialRunner: taking over an experiment from its journal (DESIGN.md "Journal and recovery"):
// the replayed trials with their runner phases, the searcher's and the trial scheduler's state.
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

Status TrialRunner::Restore(RunnerRestore restored) {
  // Null: the searcher keeps the initial state it was built in (RestoreState(null)'s).
  if (!restored.searcher_state.is_null()) {
    if (Status s = search_alg_->RestoreState(restored.searcher_state); !s.ok()) return s;
  }
  (void)search_alg_->TakeStateDelta();
  searcher_finished_ = false;  // asked again: a finished searcher answers Finished again
  searcher_unconfirmed_ = true;
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
    if (!t.last_result_msgpack.empty()) CacheMetric(t, TrainingResult::FromJson(t.LastResult()));
    if (t.num_results > 0) {  // results were accepted: every stop key had been carried
      for (const auto& [key, threshold] : options_.stop) stop_keys_seen_.insert(key);
    }
  }
  status_ = restored.ended_status;
  end_reason_ = std::move(restored.ended_reason);
  if (restored.trial_scheduler) {
    if (Status s = RestoreTrialScheduler(restored.trial_scheduler->state,
                                         restored.trial_scheduler->deltas);
        !s.ok()) {
      return s;
    }
  }
  if (Status s = ApplySearcherDeltas(restored.searcher_deltas); !s.ok()) return s;
  RestoreDriverAnswers(restored.driver_answers);
  return Status::Ok();
}

Status TrialRunner::RestoreTrialScheduler(const nlohmann::json& state,
                                          const std::vector<nlohmann::json>& deltas) {
  if (Status s = scheduler_->RestoreState(state); !s.ok()) return s;
  for (const nlohmann::json& delta : deltas) {
    if (Status s = scheduler_->ApplyStateDelta(delta); !s.ok()) return s;
  }
  return Status::Ok();
}

Status TrialRunner::ApplySearcherDeltas(const std::vector<nlohmann::json>& deltas) {
  for (const nlohmann::json& delta : deltas) {
    if (Status s = search_alg_->ApplyStateDelta(delta); !s.ok()) return s;
  }
  (void)search_alg_->TakeStateDelta();  // what replay applied is journaled already
  return Status::Ok();
}

}  // namespace tunebus
