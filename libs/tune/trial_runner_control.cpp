// TrialRunner: control of single trials (stop, pause, unpause, add, set resources, PBT exploit),
// checkpoint bookkeeping and retention, and queries. Ray Tune's TrialRunner.stop_trial /
// pause_trial / add_trial, TrialExecutor.unpause_trial and CheckpointManager (shared/seeds).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "libs/core/near_miss.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

Status TrialRunner::StopTrial(const std::string& trial_id, bool by_user) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (tunebus::IsFinished(t->status)) return Status::Ok();
  if (t->index == in_result_) {
    return Status::FailedPrecondition("a trial scheduler stops the trial it decides on with kStop");
  }
  if (!by_user) NoteDecision(*t, "stop");
  if (t->status == TrialStatus::kRunning) {
    scheduler_->OnTrialComplete(*t, TrainingResult::FromJson(t->LastResult()));
    JournalSchedulerDelta();
    SearcherTrialComplete(*t, /*error=*/false);
    LeaveRunning(*t, TrialStatus::kTerminated, "", /*stop_trainable=*/true);
  } else {
    DropPending(*t);  // a grant that still arrives is released in OnTrialPlaced
    t->status = TrialStatus::kTerminated;
    scheduler_->OnTrialRemove(*t);
    JournalSchedulerDelta();
    SearcherTrialComplete(*t, /*error=*/false);  // Ray's stop_trial of a PENDING/PAUSED trial
    NoteFailure(*t);
    observer_.OnTrialStatus(*t);
  }
  CheckFinished();
  return Status::Ok();
}

void TrialRunner::DropPending(Trial& t) {
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

Result<std::string> TrialRunner::PauseTrial(const std::string& trial_id) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (tunebus::IsFinished(t->status) || t->status == TrialStatus::kPaused) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}; only PENDING or RUNNING trials can be paused", trial_id,
                    TrialStatusName(t->status)));
  }
  if (IsPausing(*t)) {
    return fmt::format("trial {} is pausing: saving its checkpoint, then PAUSED", trial_id);
  }
  if (t->status == TrialStatus::kRunning && !phases_.IsRunning(t->index)) {
    return Status::FailedPrecondition(fmt::format(
        "trial {} was stopped when fail_fast: raise ended the experiment; resume it", trial_id));
  }
  if (t->status == TrialStatus::kRunning) {
    phases_.RequestPause(t->index);
    return fmt::format(
        "trial {} pauses at its next result (RUNNING until its checkpoint is stored, then PAUSED)",
        trial_id);
  }
  DropPending(*t);
  t->status = TrialStatus::kPaused;
  NoteFailure(*t);
  observer_.OnTrialStatus(*t);
  return fmt::format("trial {} paused (was PENDING)", trial_id);
}

Status TrialRunner::UnpauseTrial(const std::string& trial_id) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (IsFinished()) return Status::FailedPrecondition("the experiment is finished");
  // A trial scheduler that unpauses from inside a callback (HyperBand's halving) has its state
  // change journaled before the unpause.
  JournalSchedulerDelta();
  if (IsPausing(*t)) {
    // PENDING now (journaled), placed once its checkpoint is stored and it has exited.
    LeaveRunning(*t, TrialStatus::kPending, "", /*stop_trainable=*/false, /*saving=*/true);
    phases_.SetRequeue(t->index, true);
    return Status::Ok();
  }
  if (t->status != TrialStatus::kPaused) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}, not PAUSED", trial_id, TrialStatusName(t->status)));
  }
  t->status = TrialStatus::kPending;
  NoteFailure(*t);
  observer_.OnTrialStatus(*t);
  // An attempt still saving (paused while it saved before it stopped) is placed once it exits.
  if (phases_.Is(t->index, RunnerPhase::kSaving)) {
    phases_.SetRequeue(t->index, true);
  } else {
    phases_.Queue(t->index);
  }
  return Status::Ok();
}

bool TrialRunner::IsPaused(const std::string& trial_id) const {
  const Trial* t = FindTrial(trial_id);
  return t != nullptr && (t->status == TrialStatus::kPaused || IsPausing(*t));
}

Result<const Trial*> TrialRunner::AddTrial(nlohmann::json config) {
  if (!config.is_object()) return Status::InvalidArgument("a trial's config must be a JSON object");
  if (IsFinished()) return Status::FailedPrecondition("experiment is finished");
  // A key the param space does not have is a typo unless the space is empty (every key is new).
  const nlohmann::json& space = options_.param_space;
  std::vector<std::string> known;
  if (space.is_object()) {
    for (const auto& [key, value] : space.items()) known.push_back(key);
  }
  for (const auto& [key, value] : config.items()) {
    if (known.empty() || space.contains(key)) continue;
    const auto meant = NearMiss(key, known);
    return Status::InvalidArgument(
        fmt::format("config key '{}' is not in the param space{} (its keys: {})", key,
                    meant ? "; did you mean " + *meant + "?" : "", fmt::join(known, ", ")));
  }
  Trial& t = NewTrial(std::move(config), "");
  return &t;
}

Status TrialRunner::SetTrialResources(const std::string& trial_id, const Resources& resources) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (IsPausing(*t)) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is pausing (RUNNING until its checkpoint is stored); change its "
                    "resources once it is PAUSED",
                    trial_id));
  }
  if (t->status == TrialStatus::kRunning || phases_.Is(t->index, RunnerPhase::kPlacing) ||
      phases_.Is(t->index, RunnerPhase::kSaving)) {
    return Status::FailedPrecondition(fmt::format(
        "trial {} is running; pause or stop it before changing its resources", trial_id));
  }
  if (tunebus::IsFinished(t->status)) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}", trial_id, TrialStatusName(t->status)));
  }
  t->resources = resources;
  observer_.OnTrialUpdated(*t, {{"resources", resources.ToString()}});
  return Status::Ok();
}

Status TrialRunner::ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                                 nlohmann::json new_config) {
  Trial* t = Find(trial_id);
  const Trial* donor = FindTrial(donor_trial_id);
  if (t == nullptr || donor == nullptr) {
    return Status::NotFound(fmt::format("no trial {}", t == nullptr ? trial_id : donor_trial_id));
  }
  if (donor->checkpoints.empty() || !donor->newest_checkpoint_has_config) {
    return Status::FailedPrecondition(
        fmt::format("trial {} has no checkpoint of its current config", donor_trial_id));
  }
  if (tunebus::IsFinished(t->status)) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}", trial_id, TrialStatusName(t->status)));
  }
  if (!new_config.is_object()) return Status::InvalidArgument("new_config must be a JSON object");
  if (t->index == in_result_) {  // applied by OnResult once this result is recorded
    deferred_exploit_ = Exploit{donor_trial_id, std::move(new_config)};
    return Status::Ok();
  }
  if (t->status == TrialStatus::kRunning) {
    LeaveRunning(*t, TrialStatus::kPending, "", /*stop_trainable=*/true);
    phases_.Queue(t->index);
  }
  nlohmann::json change = {{"pbt_exploit",
                            {{"donor", donor_trial_id},
                             {"checkpoint_id", donor->checkpoints.back().checkpoint_id},
                             {"old_config", t->config},
                             {"new_config", new_config}}}};
  slots_[size_t(t->index)].exploit_note = change["pbt_exploit"];
  nlohmann::json decision = change["pbt_exploit"];  // and where the donor's checkpoint is
  decision["donor_iteration"] = donor->checkpoints.back().training_iteration;
  NoteDecision(*t, "exploit", std::move(decision));
  t->config = std::move(new_config);
  t->restore_checkpoint = donor->checkpoints.back();
  // Its own checkpoints, and those its attempt was still asked for, hold the old config.
  t->newest_checkpoint_has_config = false;
  t->requested_checkpoints.clear();
  observer_.OnTrialUpdated(*t, change);
  return Status::Ok();
}

Result<std::pair<Trial*, CheckpointRef>> TrialRunner::CloseCheckpointRequest(
    const std::string& trial_id, int64_t attempt, int64_t training_iteration,
    std::string_view what) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("{} of unknown trial {}", what, trial_id));
  if (attempt != t->attempt) {
    return Status::FailedPrecondition(fmt::format("{} of {} attempt {} is stale (current {})", what,
                                                  trial_id, attempt, t->attempt));
  }
  auto& asked = t->requested_checkpoints;
  auto it = std::find_if(asked.begin(), asked.end(), [&](const CheckpointRef& c) {
    return c.training_iteration == training_iteration;
  });
  if (it == asked.end()) {
    return Status::FailedPrecondition(fmt::format(
        "checkpoint of {} at iteration {} was never asked for", trial_id, training_iteration));
  }
  CheckpointRef ref = *it;
  asked.erase(asked.begin(), std::next(it));
  return std::make_pair(t, std::move(ref));
}

Status TrialRunner::OnCheckpointSaved(const std::string& trial_id, int64_t attempt,
                                      const std::string& checkpoint_id, int64_t training_iteration,
                                      int64_t size_bytes) {
  auto closed = CloseCheckpointRequest(trial_id, attempt, training_iteration, "checkpoint");
  if (!closed.ok()) return closed.status();
  auto& [t, ref] = *closed;
  ref.checkpoint_id = checkpoint_id;
  ref.size_bytes = size_bytes;
  t->checkpoints.push_back(ref);
  t->newest_checkpoint_has_config = true;
  observer_.OnCheckpointSaved(*t, ref);
  ApplyRetention(*t);
  return Status::Ok();
}

Status TrialRunner::OnCheckpointFailed(const std::string& trial_id, int64_t attempt,
                                       int64_t training_iteration, const std::string& reason) {
  auto closed = CloseCheckpointRequest(trial_id, attempt, training_iteration, "refused checkpoint");
  if (!closed.ok()) return closed.status();
  Trial* t = closed->first;
  NoteCheckpointNotStored(*t, training_iteration, reason);
  // Noted also after the experiment ended (like a checkpoint stored then: JournalReader::Ended
  // skips both kinds of record after experiment_ended), with nothing more to do.
  observer_.OnCheckpointFailed(*t, t->checkpoints_not_stored.back());
  // A pause or an end checkpoint: the decision that asked for it has already stopped the trial.
  if (IsFinished() || t->status != TrialStatus::kRunning || IsPausing(*t)) return Status::Ok();
  switch (options_.checkpoint_failure) {
    case CheckpointFailureMode::kContinue:
      break;
    case CheckpointFailureMode::kPause:
      (void)PauseTrial(trial_id);  // RUNNING: cannot fail
      break;
    case CheckpointFailureMode::kFail:
      HandleFailure(
          *t, fmt::format("checkpoint at iteration {} not stored: {}", training_iteration, reason),
          /*stop_trainable=*/true);
      CheckFinished();
      break;
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

// Ray Tune's CheckpointManager: keep the best keep_checkpoints_num by checkpoint_score_attr
// (newest are best without one); the newest is always kept since the trial restores from it.
void TrialRunner::ApplyRetention(Trial& t) {
  const int64_t keep = options_.keep_checkpoints_num;
  if (keep <= 0 || int64_t(t.checkpoints.size()) <= keep) return;
  const bool minimise = options_.checkpoint_score_attr.rfind("min-", 0) == 0;
  const bool scored = !options_.checkpoint_score_attr.empty();
  // Rank all but the newest; a checkpoint without a score ranks below every scored one.
  auto worse = [&](const CheckpointRef& a, const CheckpointRef& b) {
    if (!scored) return a.training_iteration < b.training_iteration;
    if (a.score.has_value() != b.score.has_value()) return !a.score.has_value();
    if (!a.score) return a.training_iteration < b.training_iteration;
    return minimise ? *a.score > *b.score : *a.score < *b.score;
  };
  while (int64_t(t.checkpoints.size()) > keep) {
    auto victim = std::min_element(t.checkpoints.begin(), std::prev(t.checkpoints.end()), worse);
    const std::string id = victim->checkpoint_id;
    const bool in_use = std::any_of(trials_.begin(), trials_.end(), [&](const Trial& other) {
      return other.restore_checkpoint && other.restore_checkpoint->checkpoint_id == id;
    });
    if (in_use) return;  // a pending exploit restores it; retention runs again later
    t.checkpoints.erase(victim);
    observer_.OnCheckpointDeleted(t, id);
    executor_.DeleteCheckpoint(id);
  }
}

Result<int64_t> TrialRunner::RerunErrored(RerunMode mode) {
  if (mode == RerunMode::kNone) {
    return Status::InvalidArgument("rerun_errored must be 'restore' or 'restart', got ''");
  }
  int64_t n = 0;
  for (Trial& t : trials_) {
    if (t.status != TrialStatus::kError) continue;
    if (mode == RerunMode::kRestart) {
      t.checkpoints.clear();
      t.newest_checkpoint_has_config = false;
      t.restore_checkpoint.reset();
      t.num_failures = 0;
      t.num_worker_losses = 0;
    }
    t.status = TrialStatus::kPending;
    t.error.clear();
    NoteFailure(t);
    observer_.OnTrialStatus(t);
    phases_.Queue(t.index);
    ++n;
  }
  if (n > 0 && IsFinished()) {
    status_ = ExperimentStatus::kRunning;
    end_reason_.clear();
  }
  return n;
}

void TrialRunner::StopUnfinished() {
  for (Trial& t : trials_) {
    if (!tunebus::IsFinished(t.status)) SearcherTrialComplete(t, /*error=*/false);
    if (t.status == TrialStatus::kRunning) {
      LeaveRunning(t, TrialStatus::kTerminated, "", /*stop_trainable=*/true);
    } else if (!tunebus::IsFinished(t.status)) {
      DropPending(t);  // grants that still arrive are released in OnTrialPlaced
      t.status = TrialStatus::kTerminated;
      NoteFailure(t);
      observer_.OnTrialStatus(t);
    }
  }
}

void TrialRunner::StopExperiment(const std::string& reason) {
  if (IsFinished()) return;
  StopUnfinished();
  EndExperiment(ExperimentStatus::kStopped, reason);
}

void TrialRunner::InterruptExperiment(const std::string& reason) {
  if (IsFinished()) return;
  for (Trial& t : trials_) {
    if (t.status != TrialStatus::kRunning) continue;
    // A pausing trial stays paused (from its newest stored checkpoint).
    const bool paused = IsPausing(t);
    LeaveRunning(t, paused ? TrialStatus::kPaused : TrialStatus::kPending, "",
                 /*stop_trainable=*/true);
    if (!paused) phases_.Queue(t.index);
  }
  // Placements in flight are given back when their grant arrives (OnTrialPlaced); their trials
  // wait with the others.
  for (const Trial& t : trials_) {
    if (phases_.Is(t.index, RunnerPhase::kPlacing)) phases_.Defer(t.index);
  }
  EndExperiment(ExperimentStatus::kInterrupted, reason);
}

bool TrialRunner::Reopen() {
  if (status_ != ExperimentStatus::kInterrupted) return false;
  status_ = ExperimentStatus::kRunning;
  end_reason_.clear();
  return true;
}

// fail_fast: raise (Ray Tune re-raises the trial's error out of tune.run): the experiment ends
// at once; other trials keep their status for a later resume, their trainables are stopped.
void TrialRunner::AbortExperiment(const std::string& reason) {
  if (IsFinished()) return;
  // RUNNING trials keep their status for a resume; their attempts are stopped and released here,
  // so their phase is kIdle (a later exit or stop of one releases nothing more in the runner).
  for (Trial& t : trials_) {
    const RunnerPhase phase = phases_.phase(t.index);
    if (phase == RunnerPhase::kQueued || phase == RunnerPhase::kPlacing) phases_.Drop(t.index);
    if (phases_.IsRunning(t.index)) phases_.Leave(t.index);
    if (t.status != TrialStatus::kRunning) continue;
    executor_.StopTrial(t);
    executor_.ReleaseResources(t);
  }
  status_ = ExperimentStatus::kError;
  end_reason_ = reason;
  observer_.OnExperimentEnded(status_, reason);
}

void TrialRunner::NoteDecision(const Trial& t, const char* kind, nlohmann::json detail) {
  nlohmann::json said = scheduler_->TakeDecisionDetail();
  SchedulerDecision d;
  d.kind = kind;
  d.trial_id = t.trial_id;
  d.scheduler = scheduler_->name();
  d.training_iteration = t.training_iteration;
  d.time_total_s = t.time_total_s;
  d.at_s = clock_.WallSeconds();
  d.detail = detail.is_null() ? std::move(said) : std::move(detail);
  decisions_.Add(std::move(d));
}

const Trial* BestTrial(const TrialRunner& runner) {
  const RunnerOptions& options = runner.options();
  if (options.metric.empty()) return nullptr;
  const Trial* best = nullptr;
  double best_value = 0;
  for (const Trial& t : runner.trials()) {
    if (!t.last_metric) continue;
    const double v = *t.last_metric;
    const bool better = options.mode == "min" ? v < best_value : v > best_value;
    if (best == nullptr || better) {
      best = &t;
      best_value = v;
    }
  }
  return best;
}

std::map<TrialStatus, int64_t> CountByStatus(const std::vector<Trial>& trials) {
  std::map<TrialStatus, int64_t> counts;
  for (const Trial& t : trials) counts[t.status]++;
  return counts;
}

std::unordered_set<std::string> ReferencedCheckpoints(const std::vector<Trial>& trials) {
  std::unordered_set<std::string> ids;
  for (const Trial& t : trials) {
    if (t.restore_checkpoint) ids.insert(t.restore_checkpoint->checkpoint_id);
    for (const CheckpointRef& c : t.checkpoints) ids.insert(c.checkpoint_id);
  }
  return ids;
}

std::map<std::string, Action> LastActions(const TrialRunner& runner) {
  std::map<std::string, Action> out;
  for (const Trial& t : runner.trials()) {
    if (const std::optional<Action>& a = runner.slot(t.index).last_action; a) out[t.trial_id] = *a;
  }
  return out;
}

Status CheckSlots(const TrialRunner& runner) {
  const std::vector<Trial>& trials = runner.trials();
  if (runner.phases().size() != trials.size()) {
    return Status::Internal(
        fmt::format("{} trials but {} phases", trials.size(), runner.phases().size()));
  }
  for (const Trial& t : trials) {
    const TrialSlot& slot = runner.slot(t.index);
    if (const std::optional<HeldResult>& held = slot.held; held) {
      if (t.status != TrialStatus::kRunning || held->attempt != t.attempt ||
          held->seq <= t.last_seq) {
        return Status::Internal(fmt::format(
            "trial {} ({}, attempt {}, last seq {}) holds result {} of attempt {}", t.trial_id,
            TrialStatusName(t.status), t.attempt, t.last_seq, held->seq, held->attempt));
      }
    }
    if (const std::optional<JournaledAnswer>& j = slot.journaled_answer;
        j && j->attempt > t.attempt) {
      return Status::Internal(fmt::format("trial {} (attempt {}) keeps an answer for attempt {}",
                                          t.trial_id, t.attempt, j->attempt));
    }
    if (!slot.exploit_note.is_null() && !slot.exploit_note.is_object()) {
      return Status::Internal(fmt::format("trial {}'s exploit note is not an object", t.trial_id));
    }
  }
  return Status::Ok();
}

}  // namespace tunebus
