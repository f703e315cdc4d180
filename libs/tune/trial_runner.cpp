#include "libs/tune/trial_runner.hpp"

#include <fmt/format.h>

#include "libs/core/near_miss.hpp"

namespace tunebus {

namespace rk = result_keys;

TrialRunner::TrialRunner(RunnerOptions options, std::unique_ptr<Searcher> search_alg,
                         std::unique_ptr<TrialScheduler> scheduler, TrialExecutor& executor,
                         RunnerObserver& observer, const Clock& clock)
    : options_(std::move(options)),
      search_alg_(std::move(search_alg)),
      scheduler_(std::move(scheduler)),
      executor_(executor),
      observer_(observer),
      clock_(clock) {
  start_s_ = clock_.WallSeconds();
  scheduler_->Attach(this);
  // A known trial count is allocated once (no doubling of a vector of large Trial objects).
  constexpr int64_t kMaxReserve = 1'000'000;
  if (const int64_t total = search_alg_->Total(); total > 0) {
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

Trial* TrialRunner::FindCurrent(const std::string& trial_id, int64_t attempt, const char* what) {
  (void)what;
  Trial* t = Find(trial_id);
  if (t == nullptr || t->attempt != attempt) return nullptr;
  return t;
}

int64_t TrialRunner::TotalTrials() const {
  const int64_t searched = search_alg_->Total();
  // The trials there are (tunectl add's included) plus those the search algorithm has yet to make.
  if (searcher_finished_) return int64_t(trials_.size());
  return searched < 0
             ? -1
             : int64_t(trials_.size()) + std::max<int64_t>(0, searched - search_alg_->suggested());
}

bool TrialRunner::SearcherDone() const {
  if (searcher_finished_) return true;
  if (searcher_unconfirmed_) return false;
  const int64_t total = search_alg_->Total();
  return total >= 0 && search_alg_->suggested() >= total;
}

void TrialRunner::Step() {
  if (IsFinished()) return;
  if (options_.time_budget_s && clock_.WallSeconds() - start_s_ >= *options_.time_budget_s) {
    StopUnfinished();
    EndExperiment(ExperimentStatus::kFinished,
                  fmt::format("time budget of {} s reached", *options_.time_budget_s));
    return;
  }
  const bool one_at_a_time = search_alg_->MaxPendingSuggestions() <= 1;
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
    if (options_.max_concurrent_trials > 0 && InFlight() >= options_.max_concurrent_trials) break;
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
  const int64_t window = std::max<int64_t>(1, search_alg_->MaxPendingSuggestions());
  if (SearcherDone() || int64_t(phases_.queued().size()) > window / 2) return 0;
  int64_t added = 0;
  while (int64_t(phases_.queued().size()) < window) {
    const std::string trial_id = fmt::format("{}_{:05d}", options_.experiment_id, trials_.size());
    Suggestion s = search_alg_->Suggest(trial_id);
    searcher_unconfirmed_ = false;
    JournalSearcherDelta();  // before the trial_added record and any effect of the trial
    if (s.kind == Suggestion::Kind::kFinished) searcher_finished_ = true;
    searcher_not_now_ = s.kind == Suggestion::Kind::kNotNow;
    if (s.kind != Suggestion::Kind::kConfig) break;
    if (!s.config.is_object()) s.config = nlohmann::json::object();
    NewTrial(std::move(s.config), std::move(s.tag));
    ++added;
    if (SearcherDone()) break;
  }
  if (added > 0 && window > 1) observer_.OnSearcherState(search_alg_->SaveState());
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
  scheduler_->OnTrialAdd(trials_.back());
  JournalSchedulerDelta();
  return trials_.back();
}

int64_t TrialRunner::PlacePending() {
  if (phases_.queued().empty() && phases_.count(RunnerPhase::kPlacing) == 0 && !IsFinished() &&
      (SearcherDone() || searcher_not_now_)) {
    // Ray Tune's FIFO choose_trial_to_run falls back to PAUSED trials: a trial the scheduler
    // paused itself (time slicing) runs again when nothing else waits (nor will come now: the
    // searcher is done, or said not now, e.g. a ConcurrencyLimiter full of paused trials).
    std::optional<std::string> id = scheduler_->ChoosePausedTrialToRun();
    JournalSchedulerDelta();  // it may have changed its state (HyperBandForBOHB halves a rung)
    if (id) (void)UnpauseTrial(*id);
  }
  int64_t placed = 0;
  while (!phases_.queued().empty() && executor_.CanPlace() && !IsFinished()) {
    if (options_.max_concurrent_trials > 0 && InFlight() >= options_.max_concurrent_trials) break;
    const int64_t index = scheduler_->ChooseTrialToRun(phases_.queued());
    JournalSchedulerDelta();
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
  scheduler_->OnTrialError(t);
  JournalSchedulerDelta();
  SearcherTrialComplete(t, /*error=*/true);
  const std::string why = fmt::format("trial {} errored (fail_fast): {}", t.trial_id, error);
  switch (options_.fail_fast) {
    case FailFast::kOff:
      break;
    case FailFast::kStopExperiment:
      EndExperiment(ExperimentStatus::kError, why);
      break;
    case FailFast::kRaise:
      AbortExperiment(why);
      break;
  }
}

// Ray Tune's stopping criteria check (Trial.should_stop raises "Stopping criteria X not provided
// in result dict"): a stop key the result lacks is a typo, not a criterion never met.
// A key some result has carried is a metric reported now and then (e.g. every few epochs).
Status TrialRunner::ValidateStopKeys(const TrainingResult& result) {
  for (const auto& [key, threshold] : options_.stop) {
    if (result.Has(key)) {
      stop_keys_seen_.insert(key);
      continue;
    }
    if (stop_keys_seen_.contains(key)) continue;
    const std::vector<std::string> keys = result.Keys();
    std::string listed;
    for (const std::string& k : keys) listed += (listed.empty() ? "" : ", ") + k;
    const auto meant = NearMiss(key, keys);
    return Status::InvalidArgument(
        fmt::format("stop criterion '{}' is not in the result{} (its keys: {})", key,
                    meant ? "; did you mean " + *meant + "?" : "", listed));
  }
  return Status::Ok();
}

std::optional<Decision> TrialRunner::StopperDecision(const TrainingResult& result,
                                                     bool user_done) const {
  if (user_done) return Decision::kStop;
  for (const auto& [key, threshold] : options_.stop) {
    if (auto value = result.Number(key); value && *value >= threshold) return Decision::kStop;
  }
  return std::nullopt;
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
  if (attempt != t->attempt || t->status != TrialStatus::kRunning || IsPausing(*t) ||
      !phases_.IsRunning(t->index)) {
    return Status::FailedPrecondition(
        fmt::format("result of {} attempt {} is stale (current attempt {}, {})", trial_id, attempt,
                    t->attempt, TrialStatusName(t->status)));
  }
  if (seq <= t->last_seq) {
    return Status::FailedPrecondition(
        fmt::format("duplicate result {} of {} attempt {}", seq, trial_id, attempt));
  }
  // The counters this result moves the trial to (AcceptResult sets them once it is decided).
  const int64_t training_iteration = t->training_iteration + 1;
  const double time_total_s = t->time_total_s + time_this_iter_s;
  // Ray Tune's auto-filled keys, set in sorted order (TrainingResult::Order is cheapest on
  // sorted runs); `done` last, once the decision is known.
  const bool user_done = metrics.Truthy(rk::kDone);
  const int64_t timestamp = int64_t(clock_.WallSeconds());
  if (timestamp != date_of_) {  // formatted once a second at most
    date_of_ = timestamp;
    date_ = RayDate(timestamp);
  }
  metrics.SetString(rk::kDate, date_);
  metrics.SetString(rk::kExperimentTag, t->experiment_tag);
  metrics.SetInt(rk::kIterationsSinceRestore, training_iteration - t->restored_iteration);
  if (!slot.exploit_note.is_null()) {
    metrics.SetJson("pbt_exploit", std::exchange(slot.exploit_note, nullptr));
  }
  metrics.SetDouble(rk::kTimeSinceRestore, time_total_s - t->restored_time_total_s);
  metrics.SetDouble(rk::kTimeThisIterS, time_this_iter_s);
  metrics.SetDouble(rk::kTimeTotalS, time_total_s);
  metrics.SetInt(rk::kTimestamp, timestamp);
  metrics.SetInt(rk::kTrainingIteration, training_iteration);
  metrics.SetString(rk::kTrialId, t->trial_id);

  Status valid = ValidateStopKeys(metrics);
  if (valid.ok()) valid = scheduler_->ValidateResult(metrics);
  if (!valid.ok()) {
    AcceptResult(*t, seq, time_this_iter_s);
    metrics.SetBool(rk::kDone, user_done);
    SetLastResult(*t, metrics);
    observer_.OnTrialResult(*t, metrics, Action::kStop);
    executor_.SendDecision(*t, seq, Action::kStop);
    LeaveRunning(*t, TrialStatus::kError, valid.message());
    OnTrialErrored(*t, valid.message());
    CheckFinished();
    return Status::Ok();
  }
  if (driver_ == nullptr) {
    AcceptResult(*t, seq, time_this_iter_s);
    Decide(*t, seq, std::move(metrics), user_done, nullptr);
    return Status::Ok();
  }
  if (slot.journaled_answer) {
    const JournaledAnswer journaled = std::move(*slot.journaled_answer);
    slot.journaled_answer.reset();
    if (journaled.attempt == attempt && journaled.seq == seq) {
      // Answered before a restart (its driver_decision record is durable): not asked again.
      AcceptResult(*t, seq, time_this_iter_s);
      Decide(*t, seq, std::move(metrics), user_done, &journaled.answer);
      if (journaled.answer.stop_all) StopExperiment("the driver's stopper asked to stop all");
      return Status::Ok();
    }
  }
  // The driver sees the result as the trial scheduler will, with the trial's config (Ray's
  // result dict carries it).
  nlohmann::json shown = metrics.ToJson();
  shown["config"] = t->config;
  slot.held = HeldResult{attempt, seq, time_this_iter_s, std::move(metrics), user_done};
  driver_->Ask(t->trial_id, attempt, seq, std::move(shown));
  return Status::Ok();
}

void TrialRunner::AcceptResult(Trial& t, int64_t seq, double time_this_iter_s) {
  t.last_seq = seq;
  t.training_iteration += 1;
  t.time_total_s += time_this_iter_s;
  ++t.num_results;
}

void TrialRunner::OnDriverAnswer(const std::string& trial_id, int64_t attempt, int64_t seq,
                                 const DriverAnswer& answer) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return;
  std::optional<HeldResult>& h = slots_[size_t(t->index)].held;
  if (!h || h->attempt != attempt || h->seq != seq || t->attempt != attempt ||
      t->status != TrialStatus::kRunning || IsFinished() || !phases_.IsRunning(t->index)) {
    return;  // no longer held: the trial left RUNNING meanwhile
  }
  HeldResult held = std::move(*h);
  h.reset();
  // Write-ahead: the answer is journaled before the result's record and its decision.
  observer_.OnDriverDecision(*t, seq, answer.ToJson());
  AcceptResult(*t, seq, held.time_this_iter_s);
  Decide(*t, seq, std::move(held.metrics), held.user_done, &answer);
  if (answer.stop_all) StopExperiment("the driver's stopper asked to stop all");
}

void TrialRunner::RestoreDriverAnswers(const std::map<std::string, nlohmann::json>& records) {
  for (TrialSlot& slot : slots_) slot.journaled_answer.reset();
  for (const auto& [trial_id, record] : records) {
    const Trial* t = FindTrial(trial_id);
    const int64_t attempt = record.value("attempt", int64_t(0));
    const int64_t seq = record.value("seq", int64_t(0));
    if (t == nullptr || t->status != TrialStatus::kRunning || attempt != t->attempt ||
        seq <= t->last_seq) {
      continue;  // its result was journaled too: decided, nothing to reuse
    }
    Result<DriverAnswer> answer = DriverAnswer::FromJson(record);
    if (answer.ok()) {
      slots_[size_t(t->index)].journaled_answer =
          JournaledAnswer{attempt, seq, std::move(answer).value()};
    }
  }
}

const nlohmann::json* TrialRunner::DriverSamples(const std::string& trial_id) const {
  const Trial* t = FindTrial(trial_id);
  if (t == nullptr || t->index != in_result_ || deciding_answer_ == nullptr) return nullptr;
  return &deciding_answer_->samples;
}

void TrialRunner::Decide(Trial& t, int64_t seq, TrainingResult metrics, bool user_done,
                         const DriverAnswer* answer) {
  Decision decision = Decision::kStop;
  in_result_ = t.index;
  if (answer == nullptr || !answer->stop_trial) {
    // Ray's _process_trial_result: a stopper's STOP is final, the trial scheduler is not asked.
    deciding_answer_ = answer;
    decision = scheduler_->OnTrialResult(t, metrics);
    deciding_answer_ = nullptr;
    if (decision != Decision::kContinue) NoteDecision(t, DecisionName(decision));
  }
  in_result_ = -1;
  JournalSchedulerDelta();
  for (auto& [key, value] : result_info_) metrics.SetJson(key, value);
  result_info_.clear();
  // Ray Tune's `should_checkpoint` result key asks for a checkpoint at this result, and so
  // does a driver callback that set it (DriverAnswer::should_checkpoint).
  const bool checkpoint_requested = std::exchange(checkpoint_requested_, false) ||
                                    metrics.Truthy("should_checkpoint") ||
                                    (answer != nullptr && answer->should_checkpoint);
  if (auto stop = StopperDecision(metrics, user_done)) decision = Combine(decision, *stop);
  if (phases_.TakePauseRequest(t.index)) decision = Combine(decision, Decision::kPause);
  std::optional<Exploit> exploit = std::move(deferred_exploit_);
  deferred_exploit_.reset();
  metrics.SetBool(rk::kDone, user_done || decision == Decision::kStop);
  SetLastResult(t, metrics);
  // Ray's _process_trial_result: the searcher sees the result, then (a stop) the trial's end.
  search_alg_->OnTrialResult(t.trial_id, metrics);
  JournalSearcherDelta();
  if (decision == Decision::kStop) {
    search_alg_->OnTrialComplete(t.trial_id, &metrics, /*error=*/false);
    JournalSearcherDelta();
  }
  const Action action =
      exploit ? Action::kStop : ActionFor(t, metrics, decision, checkpoint_requested);
  observer_.OnTrialResult(t, metrics, action);
  slots_[size_t(t.index)].last_action = action;
  executor_.SendDecision(t, seq, action);
  const bool saving = action == Action::kCheckpointAndStop;
  if (exploit && decision != Decision::kStop) {
    LeaveRunning(t, TrialStatus::kPending, "");
    (void)ExploitTrial(t.trial_id, exploit->donor_trial_id, std::move(exploit->new_config));
    phases_.Queue(t.index);
  } else if (decision == Decision::kStop) {
    scheduler_->OnTrialComplete(t, metrics);
    JournalSchedulerDelta();
    LeaveRunning(t, TrialStatus::kTerminated, "", /*stop_trainable=*/false, saving);
  } else if (decision == Decision::kPause) {
    phases_.StartPausing(t.index, t.attempt);  // PAUSED in OnTrialExited
  }
  CheckFinished();
}

void TrialRunner::RecordReturn(Trial& t) {
  if (t.last_seq == 0 || t.last_result_msgpack.empty()) return;  // no result in this attempt
  Result<TrainingResult> last = TrainingResult::FromMsgpack(t.last_result_msgpack);
  if (!last.ok() || last->Truthy(rk::kDone)) return;  // the last result already says done
  last->SetBool(rk::kDone, true);
  SetLastResult(t, *last);
  t.returned = true;  // journaled with the TERMINATED status that follows
}

void TrialRunner::SetLastResult(Trial& t, const TrainingResult& result) const {
  t.last_result_msgpack = result.Encode();
  CacheMetric(t, result);
}

void TrialRunner::CacheMetric(Trial& t, const TrainingResult& result) const {
  t.last_metric.reset();
  if (!options_.metric.empty()) t.last_metric = result.Number(options_.metric);
}

Action TrialRunner::ActionFor(Trial& t, const TrainingResult& result, Decision decision,
                              bool requested) {
  // Ray Tune's _process_trial_result: the periodic (or asked) checkpoint is taken whatever the
  // decision, a stopped trial's last iteration included; checkpoint_at_end adds one at a stop.
  const bool at_end = decision == Decision::kStop && options_.checkpoint_at_end;
  const bool periodic = requested || (options_.checkpoint_freq > 0 &&
                                      t.training_iteration % options_.checkpoint_freq == 0);
  const bool checkpoint = decision == Decision::kPause || at_end || periodic;
  if (checkpoint) {
    CheckpointRef asked;
    asked.training_iteration = t.training_iteration;
    asked.time_total_s = t.time_total_s;
    std::string attr = options_.checkpoint_score_attr;
    if (attr.rfind("min-", 0) == 0) attr = attr.substr(4);
    if (!attr.empty()) asked.score = result.Number(attr);
    t.requested_checkpoints.push_back(std::move(asked));
  }
  switch (decision) {
    case Decision::kContinue:
      return checkpoint ? Action::kCheckpoint : Action::kContinue;
    case Decision::kPause:
      return Action::kPause;
    case Decision::kStop:
      return checkpoint ? Action::kCheckpointAndStop : Action::kStop;
  }
  return Action::kContinue;
}

void TrialRunner::JournalSchedulerDelta() {
  nlohmann::json delta = scheduler_->TakeStateDelta();
  if (!delta.is_null()) observer_.OnTrialSchedulerState(delta);
}

void TrialRunner::JournalSearcherDelta() {
  nlohmann::json delta = search_alg_->TakeStateDelta();
  if (!delta.is_null()) observer_.OnSearcherDelta(delta);
}

void TrialRunner::SearcherTrialComplete(const Trial& t, bool error) {
  std::optional<TrainingResult> last;
  if (!t.last_result_msgpack.empty()) {
    if (Result<TrainingResult> r = TrainingResult::FromMsgpack(t.last_result_msgpack); r.ok())
      last = std::move(r).value();
  }
  search_alg_->OnTrialComplete(t.trial_id, last ? &*last : nullptr, error);
  JournalSearcherDelta();
}

void TrialRunner::RequestCheckpoint(const std::string& trial_id) {
  const Trial* t = FindTrial(trial_id);
  if (t != nullptr && t->index == in_result_) checkpoint_requested_ = true;
}

void TrialRunner::SetResultInfo(const std::string& trial_id, const std::string& key,
                                nlohmann::json value) {
  const Trial* t = FindTrial(trial_id);
  if (t != nullptr && t->index == in_result_) result_info_.emplace_back(key, std::move(value));
}

void TrialRunner::LeaveRunning(Trial& t, TrialStatus to, const std::string& error,
                               bool stop_trainable, bool saving, FailureKind kind) {
  t.status = to;
  t.error = error;
  if (saving) {
    phases_.LeaveSaving(t.index, t.attempt, t.worker_id, /*requeue=*/false);
  } else if (phases_.IsRunning(t.index)) {
    phases_.Leave(t.index);  // else kIdle: an attempt AbortExperiment stopped (fail_fast: raise)
  }
  if (std::optional<HeldResult>& held = slots_[size_t(t.index)].held; held) {
    held.reset();
    if (driver_ != nullptr) driver_->Forget(t.trial_id);
  }
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

void TrialRunner::HandleFailure(Trial& t, const std::string& error, bool stop_trainable) {
  t.num_failures += 1;
  const bool retry = options_.max_failures < 0 || t.num_failures <= options_.max_failures;
  if (retry) {
    LeaveRunning(t, TrialStatus::kPending, error, stop_trainable);
    phases_.Queue(t.index);
    return;
  }
  LeaveRunning(t, TrialStatus::kError, error, stop_trainable);
  OnTrialErrored(t, error);
}

void TrialRunner::OnTrialExited(const std::string& trial_id, int64_t attempt, bool ok,
                                const std::string& error, bool start_failed) {
  Trial* t = Find(trial_id);
  if (t == nullptr || t->attempt != attempt) return;
  const TrialPhase& phase = phases_.at(t->index);
  if (phase.phase == RunnerPhase::kSaving && phase.attempt == attempt) {
    EndSaving(*t, ok, error, FailureKind::kError);
    CheckFinished();
    return;
  }
  if (phase.phase == RunnerPhase::kPausing && phase.attempt == attempt) {
    t->requested_checkpoints.clear();
    LeaveRunning(*t, TrialStatus::kPaused, ok ? "" : "while saving its pause checkpoint: " + error);
    CheckFinished();
    return;
  }
  // After fail_fast: raise the trials keep their status; their attempts were already released.
  if (t->status != TrialStatus::kRunning || IsFinished()) return;
  if (ok) {
    RecordReturn(*t);
    scheduler_->OnTrialComplete(*t, TrainingResult::FromJson(t->LastResult()));
    JournalSchedulerDelta();
    SearcherTrialComplete(*t, /*error=*/false);
    LeaveRunning(*t, TrialStatus::kTerminated, "");
  } else if (start_failed) {
    t->num_failures += 1;
    LeaveRunning(*t, TrialStatus::kError, error);
    OnTrialErrored(*t, error);
  } else {
    HandleFailure(*t, error);
  }
  CheckFinished();
}

void TrialRunner::EndExperiment(ExperimentStatus status, const std::string& reason) {
  if (IsFinished()) return;
  if (status == ExperimentStatus::kError) StopUnfinished();
  status_ = status;
  end_reason_ = reason;
  observer_.OnExperimentEnded(status, reason);
}

void TrialRunner::CheckFinished() {
  if (IsFinished() || !SearcherDone() || phases_.busy() > 0) return;
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
