#include "libs/tune/trial_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace tunebus {

namespace rk = result_keys;

TrialRunner::TrialRunner(RunnerOptions options, std::unique_ptr<Searcher> search_alg,
                         std::unique_ptr<TrialScheduler> scheduler, TrialExecutor& executor,
                         RunnerObserver& observer, const Clock& clock)
    : options_(std::move(options)),
      executor_(executor),
      observer_(observer),
      clock_(clock),
      search_(std::move(search_alg), observer),
      host_(std::move(scheduler), *this, observer, clock),
      lifecycle_(options_.max_failures, options_.max_worker_losses, phases_, slots_, driver_,
                 executor, observer),
      checkpoints_(options_.checkpoint_freq, options_.checkpoint_at_end,
                   options_.keep_checkpoints_num, options_.checkpoint_score_attr),
      stop_(options_.stop),
      results_(options_.metric) {
  start_s_ = clock_.WallSeconds();
  // A known trial count is allocated once (no doubling of a vector of large Trial objects).
  constexpr int64_t kMaxReserve = 1'000'000;
  if (const int64_t total = search_.searcher().Total(); total > 0) {
    trials_.reserve(size_t(std::min(total, kMaxReserve)));
    index_.reserve(size_t(std::min(total, kMaxReserve)));
  }
}

Trial* TrialRunner::Find(const std::string& trial_id) {
  auto it = index_.find(trial_id);
  return it == index_.end() ? nullptr : &trials_[it->second];
}

const Trial* TrialRunner::FindTrial(const std::string& trial_id) const {
  auto it = index_.find(trial_id);
  return it == index_.end() ? nullptr : &trials_[it->second];
}

void TrialRunner::Step() {
  if (IsFinished()) return;
  if (options_.time_budget_s && clock_.WallSeconds() - start_s_ >= *options_.time_budget_s) {
    StopUnfinished();
    EndExperiment(ExperimentStatus::kFinished,
                  fmt::format("time budget of {} s reached", *options_.time_budget_s));
    return;
  }
  const bool one_at_a_time = search_.searcher().MaxPendingSuggestions() <= 1;
  // A window-1 searcher sees every result before it suggests, so it is asked again only once its
  // trial was placed; the bound keeps a Step finite when the executor always CanPlace.
  const int64_t max_rounds = std::max<int64_t>(32, 2 * options_.max_concurrent_trials);
  int64_t placed = 0;
  for (int64_t round = 0; round < max_rounds; ++round) {
    const int64_t added = MaybeAddTrials();
    placed = PlacePending();
    if (!one_at_a_time || (added == 0 && placed == 0) || !phases_.queued().empty() ||
        !executor_.CanPlace() || IsFinished()) {
      break;
    }
    if (options_.max_concurrent_trials > 0 && phases_.in_flight() >= options_.max_concurrent_trials)
      break;
  }
  // A window-1 searcher whose trial was just placed suggests the next one now, not a round later
  // (it waits PENDING for a slot): the suggestion is journaled no later than the placed trial's
  // start, so no result of that trial can come before it, across a scheduler kill either.
  if (one_at_a_time && placed > 0 && phases_.queued().empty() && !IsFinished()) MaybeAddTrials();
  CheckFinished();
}

// Keeps a window of suggested-but-unstarted trials (Ray Tune's _max_pending_trials), so an
// unbounded search space (num_samples: -1) is generated lazily. It is refilled once half of it
// has started, so a batch searcher's state (the variant generator's RNG state, about 6 KB) is
// journaled once per window/2 trials, not once per trial.
int64_t TrialRunner::MaybeAddTrials() {
  const int64_t window = std::max<int64_t>(1, search_.searcher().MaxPendingSuggestions());
  if (search_.Done() || int64_t(phases_.queued().size()) > window / 2) return 0;
  int64_t added = 0;
  while (int64_t(phases_.queued().size()) < window) {
    const std::string trial_id = fmt::format("{}_{:05d}", options_.experiment_id, trials_.size());
    Suggestion s = search_.Suggest(trial_id);
    if (s.kind != Suggestion::Kind::kConfig) break;
    if (!s.config.is_object()) s.config = nlohmann::json::object();
    NewTrial(std::move(s.config), std::move(s.tag));
    ++added;
    if (search_.Done()) break;
  }
  if (added > 0 && window > 1) observer_.OnSearcherState(search_.searcher().SaveState());
  return added;
}

Trial& TrialRunner::NewTrial(nlohmann::json config, std::string tag) {
  Trial t;
  t.index = int64_t(trials_.size());
  t.trial_id = fmt::format("{}_{:05d}", options_.experiment_id, t.index);
  t.config = std::move(config);
  t.experiment_tag = tag.empty() ? std::to_string(t.index) : fmt::format("{}_{}", t.index, tag);
  t.resources = options_.resources_per_trial;
  t.restore_checkpoint = options_.restore_from;
  index_[t.trial_id] = trials_.size();
  phases_.Queue(phases_.Add());
  slots_.emplace_back();
  trials_.push_back(std::move(t));
  observer_.OnTrialAdded(trials_.back());
  host_.scheduler().OnTrialAdd(trials_.back());
  host_.Journal();
  return trials_.back();
}

int64_t TrialRunner::PlacePending() {
  if (phases_.queued().empty() && phases_.count(RunnerPhase::kPlacing) == 0 && !IsFinished() &&
      (search_.Done() || search_.not_now())) {
    // Ray Tune's FIFO choose_trial_to_run falls back to PAUSED trials: a trial the scheduler
    // paused itself (time slicing) runs again when nothing else waits (nor will come now: the
    // searcher is done, or said not now, e.g. a ConcurrencyLimiter full of paused trials).
    std::optional<std::string> id = host_.scheduler().ChoosePausedTrialToRun();
    host_.Journal();  // it may have changed its state (HyperBandForBOHB halves a rung)
    if (id) (void)TrialControl(*this).UnpauseTrial(*id);
  }
  int64_t placed = 0;
  while (!phases_.queued().empty() && executor_.CanPlace() && !IsFinished()) {
    if (options_.max_concurrent_trials > 0 && phases_.in_flight() >= options_.max_concurrent_trials)
      break;
    const int64_t index = host_.scheduler().ChooseTrialToRun(phases_.queued());
    host_.Journal();
    phases_.Place(index);
    Trial& t = trials_[size_t(index)];
    executor_.PlaceTrial(t, t.attempt + 1);
    ++placed;
  }
  return placed;
}

void TrialRunner::OnTrialPlaced(const std::string& trial_id, int64_t attempt,
                                const std::string& worker_id,
                                const std::vector<std::string>& gpu_ids) {
  Trial* t = Find(trial_id);
  if (t == nullptr || attempt != t->attempt + 1) return;
  const bool was_placing = phases_.Is(t->index, RunnerPhase::kPlacing);
  if (!was_placing || t->status != TrialStatus::kPending || IsFinished()) {
    // Stopped while its placement was in flight: give the grant straight back.
    if (was_placing) phases_.Drop(t->index);
    Trial released = *t;
    released.attempt = attempt;
    released.worker_id = worker_id;
    executor_.ReleaseResources(released);
    return;
  }
  t->attempt = attempt;
  t->status = TrialStatus::kRunning;
  t->worker_id = worker_id;
  t->gpu_ids = gpu_ids;
  t->last_seq = 0;
  t->returned = false;
  t->requested_checkpoints.clear();  // asked of the previous attempt: its checkpoints are stale
  // Restore the one-shot override (exploit, restore_from), else the newest checkpoint, else
  // start from scratch (Ray Tune restores a restarted trial from its latest checkpoint).
  std::optional<CheckpointRef> from = std::move(t->restore_checkpoint);
  t->restore_checkpoint.reset();
  if (!from && !t->checkpoints.empty()) from = t->checkpoints.back();
  t->restored_checkpoint_id = from ? from->checkpoint_id : "";
  t->restored_iteration = from ? from->training_iteration : 0;
  t->restored_time_total_s = from ? from->time_total_s : 0;
  t->training_iteration = t->restored_iteration;
  t->time_total_s = t->restored_time_total_s;
  if (t->start_time_s == 0) t->start_time_s = clock_.WallSeconds();
  phases_.Placed(t->index);
  observer_.OnTrialStarted(*t);
  executor_.LaunchTrial(*t);
}

void TrialRunner::OnPlacementDeferred(const std::string& trial_id, int64_t attempt) {
  Trial* t = Find(trial_id);
  if (t == nullptr || attempt != t->attempt + 1 || !phases_.Is(t->index, RunnerPhase::kPlacing))
    return;
  phases_.Defer(t->index);  // placing: PENDING
}

void TrialRunner::OnPlacementFailed(const std::string& trial_id, int64_t attempt,
                                    const std::string& reason) {
  Trial* t = Find(trial_id);
  if (t == nullptr || attempt != t->attempt + 1 || !phases_.Is(t->index, RunnerPhase::kPlacing))
    return;
  if (options_.queue_trials) {  // waits until a big enough worker registers
    phases_.Defer(t->index);
    return;
  }
  phases_.Drop(t->index);
  t->status = TrialStatus::kError;
  t->error = reason;
  NoteFailure(*t);
  observer_.OnTrialStatus(*t);
  OnTrialErrored(*t, reason);
  CheckFinished();
}

void TrialRunner::OnTrialErrored(Trial& t, const std::string& error) {
  host_.scheduler().OnTrialError(t);
  host_.Journal();
  search_.OnTrialComplete(t, /*error=*/true);
  const std::string why = fmt::format("trial {} errored (fail_fast): {}", t.trial_id, error);
  switch (options_.fail_fast) {
    case FailFast::kOff:
      break;
    case FailFast::kStopExperiment:
      EndExperiment(ExperimentStatus::kError, why);
      break;
    case FailFast::kRaise:
      if (IsFinished()) break;
      // RUNNING trials keep their status for a resume; their attempts are stopped and released
      // here, so their phase is kIdle (a later exit or stop of one releases nothing more).
      for (Trial& other : trials_) {
        const RunnerPhase phase = phases_.phase(other.index);
        if (phase == RunnerPhase::kQueued || phase == RunnerPhase::kPlacing)
          phases_.Drop(other.index);
        if (phases_.IsRunning(other.index)) phases_.Leave(other.index);
        if (other.status != TrialStatus::kRunning) continue;
        executor_.StopTrial(other);
        executor_.ReleaseResources(other);
      }
      status_ = ExperimentStatus::kError;
      end_reason_ = why;
      observer_.OnExperimentEnded(status_, why);
      break;
  }
}

Status TrialRunner::OnResult(const std::string& trial_id, int64_t attempt, int64_t seq,
                             TrainingResult metrics, double time_this_iter_s) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("result for unknown trial {}", trial_id));
  TrialSlot& slot = slots_[size_t(t->index)];
  if (slot.held && slot.held->attempt == attempt && slot.held->seq == seq) {
    // Resent (a reconnect) while the driver has not answered: its decision follows the answer.
    return Status::FailedPrecondition(fmt::format(
        "result {} of {} attempt {} waits for the driver's answer", seq, trial_id, attempt));
  }
  if (attempt == t->attempt && seq == t->last_seq && seq > 0) {
    // Seen before (resent after a reconnect): its decision may have been lost, answer again
    // (an attempt saving before it stops is reached at the worker it saves on).
    if (slot.last_action) {
      Trial to = *t;
      if (const TrialPhase& p = phases_.at(t->index);
          p.phase == RunnerPhase::kSaving && p.attempt == attempt)
        to.worker_id = p.worker_id;
      executor_.SendDecision(to, seq, *slot.last_action);
    }
    return Status::FailedPrecondition(
        fmt::format("duplicate result {} of {} attempt {}", seq, trial_id, attempt));
  }
  if (IsFinished())
    return Status::FailedPrecondition("result of " + trial_id + ": the experiment is finished");
  if (attempt != t->attempt || t->status != TrialStatus::kRunning || phases_.IsPausing(t->index) ||
      !phases_.IsRunning(t->index)) {
    return Status::FailedPrecondition(
        fmt::format("result of {} attempt {} is stale (current attempt {}, {})", trial_id, attempt,
                    t->attempt, TrialStatusName(t->status)));
  }
  if (seq <= t->last_seq) {
    return Status::FailedPrecondition(
        fmt::format("duplicate result {} of {} attempt {}", seq, trial_id, attempt));
  }
  const bool user_done = metrics.Truthy(rk::kDone);
  results_.AutoFill(metrics, *t, time_this_iter_s, clock_.WallSeconds(),
                    std::exchange(slot.exploit_note, nullptr));

  Status valid = stop_.Validate(metrics);
  if (valid.ok()) valid = host_.scheduler().ValidateResult(metrics);
  if (!valid.ok()) {
    ResultLedger::Accept(*t, seq, time_this_iter_s);
    metrics.SetBool(rk::kDone, user_done);
    results_.SetLast(*t, metrics);
    observer_.OnTrialResult(*t, metrics, Action::kStop);
    executor_.SendDecision(*t, seq, Action::kStop);
    lifecycle_.LeaveRunning(*t, TrialStatus::kError, valid.message());
    OnTrialErrored(*t, valid.message());
    CheckFinished();
    return Status::Ok();
  }
  if (driver_.link() == nullptr) {
    ResultLedger::Accept(*t, seq, time_this_iter_s);
    Decide(*t, seq, std::move(metrics), user_done, nullptr);
    return Status::Ok();
  }
  if (std::optional<JournaledAnswer> journaled = DriverHolds::TakeJournaled(slot, attempt, seq)) {
    // Answered before a restart (its driver_decision record is durable): not asked again.
    ResultLedger::Accept(*t, seq, time_this_iter_s);
    Decide(*t, seq, std::move(metrics), user_done, &journaled->answer);
    if (journaled->answer.stop_all) {
      TrialControl(*this).StopExperiment("the driver's stopper asked to stop all");
    }
    return Status::Ok();
  }
  driver_.Hold(slot, *t, HeldResult{attempt, seq, time_this_iter_s, std::move(metrics), user_done});
  return Status::Ok();
}

void TrialRunner::OnDriverAnswer(const std::string& trial_id, int64_t attempt, int64_t seq,
                                 const DriverAnswer& answer) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return;
  TrialSlot& slot = slots_[size_t(t->index)];
  if (!slot.held || t->attempt != attempt || t->status != TrialStatus::kRunning || IsFinished() ||
      !phases_.IsRunning(t->index)) {
    return;  // no longer held: the trial left RUNNING meanwhile
  }
  std::optional<HeldResult> held = DriverHolds::Take(slot, attempt, seq);
  if (!held) return;
  // Write-ahead: the answer is journaled before the result's record and its decision.
  observer_.OnDriverDecision(*t, seq, answer.ToJson());
  ResultLedger::Accept(*t, seq, held->time_this_iter_s);
  Decide(*t, seq, std::move(held->metrics), held->user_done, &answer);
  if (answer.stop_all) TrialControl(*this).StopExperiment("the driver's stopper asked to stop all");
}

void TrialRunner::Decide(Trial& t, int64_t seq, TrainingResult metrics, bool user_done,
                         const DriverAnswer* answer) {
  Decision decision = host_.Decide(t, metrics, answer);
  TrialSchedulerHost::Asked asked = host_.TakeAsked();
  for (auto& [key, value] : asked.result_info) metrics.SetJson(key, value);
  // Ray Tune's `should_checkpoint` result key asks for a checkpoint at this result, and so
  // does a driver callback that set it (DriverAnswer::should_checkpoint).
  const bool checkpoint_requested = asked.checkpoint || metrics.Truthy("should_checkpoint") ||
                                    (answer != nullptr && answer->should_checkpoint);
  if (user_done || stop_.Met(metrics)) decision = Combine(decision, Decision::kStop);
  if (phases_.TakePauseRequest(t.index)) decision = Combine(decision, Decision::kPause);
  metrics.SetBool(rk::kDone, user_done || decision == Decision::kStop);
  results_.SetLast(t, metrics);
  // Ray's _process_trial_result: the searcher sees the result, then (a stop) the trial's end.
  search_.OnTrialResult(t.trial_id, metrics);
  if (decision == Decision::kStop) search_.OnTrialComplete(t.trial_id, &metrics, /*error=*/false);
  const std::optional<TrialSchedulerHost::Exploit>& exploit = asked.exploit;
  const Action action =
      exploit ? Action::kStop : checkpoints_.ActionFor(t, metrics, decision, checkpoint_requested);
  observer_.OnTrialResult(t, metrics, action);
  slots_[size_t(t.index)].last_action = action;
  executor_.SendDecision(t, seq, action);
  const bool saving = action == Action::kCheckpointAndStop;
  if (exploit && decision != Decision::kStop) {
    lifecycle_.LeaveRunning(t, TrialStatus::kPending, "");
    (void)TrialControl(*this).ExploitTrial(t.trial_id, exploit->donor_trial_id,
                                           std::move(asked.exploit->new_config));
    phases_.Queue(t.index);
  } else if (decision == Decision::kStop) {
    host_.scheduler().OnTrialComplete(t, metrics);
    host_.Journal();
    lifecycle_.LeaveRunning(t, TrialStatus::kTerminated, "", /*stop_trainable=*/false, saving);
  } else if (decision == Decision::kPause) {
    phases_.StartPausing(t.index, t.attempt);  // PAUSED in OnTrialExited
  }
  CheckFinished();
}

void TrialRunner::OnTrialExited(const std::string& trial_id, int64_t attempt, bool ok,
                                const std::string& error, bool start_failed) {
  Trial* t = Find(trial_id);
  if (t == nullptr || t->attempt != attempt) return;
  const TrialPhase& phase = phases_.at(t->index);
  if (phase.phase == RunnerPhase::kSaving && phase.attempt == attempt) {
    lifecycle_.EndSaving(*t, ok, error, FailureKind::kError);
    CheckFinished();
    return;
  }
  if (phase.phase == RunnerPhase::kPausing && phase.attempt == attempt) {
    t->requested_checkpoints.clear();
    lifecycle_.LeaveRunning(*t, TrialStatus::kPaused,
                            ok ? "" : "while saving its pause checkpoint: " + error);
    CheckFinished();
    return;
  }
  // After fail_fast: raise the trials keep their status; their attempts were already released.
  if (t->status != TrialStatus::kRunning || IsFinished()) return;
  if (ok) {
    results_.RecordReturn(*t);
    host_.scheduler().OnTrialComplete(*t, TrainingResult::FromJson(t->LastResult()));
    host_.Journal();
    search_.OnTrialComplete(*t, /*error=*/false);
    lifecycle_.LeaveRunning(*t, TrialStatus::kTerminated, "");
  } else if (start_failed) {
    t->num_failures += 1;
    lifecycle_.LeaveRunning(*t, TrialStatus::kError, error);
    OnTrialErrored(*t, error);
  } else if (lifecycle_.HandleFailure(*t, error)) {
    OnTrialErrored(*t, error);
  }
  CheckFinished();
}

void TrialRunner::StopUnfinished() {
  for (Trial& t : trials_) {
    if (!tunebus::IsFinished(t.status)) search_.OnTrialComplete(t, /*error=*/false);
    if (t.status == TrialStatus::kRunning) {
      lifecycle_.LeaveRunning(t, TrialStatus::kTerminated, "", /*stop_trainable=*/true);
    } else if (!tunebus::IsFinished(t.status)) {
      lifecycle_.DropPending(t);  // grants that still arrive are released in OnTrialPlaced
      t.status = TrialStatus::kTerminated;
      NoteFailure(t);
      observer_.OnTrialStatus(t);
    }
  }
}

void TrialRunner::EndExperiment(ExperimentStatus status, const std::string& reason) {
  if (IsFinished()) return;
  if (status == ExperimentStatus::kError) StopUnfinished();
  status_ = status;
  end_reason_ = reason;
  observer_.OnExperimentEnded(status, reason);
}

void TrialRunner::CheckFinished() {
  if (IsFinished() || !search_.Done() || phases_.busy() > 0) return;
  int64_t errored = 0;
  for (const Trial& t : trials_) {
    if (t.status == TrialStatus::kPaused) return;  // waits for an unpause
    errored += t.status == TrialStatus::kError;
  }
  if (errored > 0 && errored == int64_t(trials_.size())) {
    EndExperiment(ExperimentStatus::kError,
                  fmt::format("every trial ({}) ended in ERROR", errored));
    return;
  }
  EndExperiment(ExperimentStatus::kFinished, "all trials finished");
}

}  // namespace tunebus
