#include "libs/tune/trial_runner.hpp"

#include <fmt/format.h>

namespace tunebus {

namespace rk = result_keys;

namespace {
// Ray Tune's `if result.get(DONE)`: booleans as-is, numbers when not 0, containers and strings
// when not empty, null false.
bool Truthy(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string() || v.is_array() || v.is_object()) return !v.empty();
  return false;
}
}  // namespace

const char* ExperimentStatusName(ExperimentStatus s) {
  switch (s) {
    case ExperimentStatus::kRunning: return "RUNNING";
    case ExperimentStatus::kFinished: return "FINISHED";
    case ExperimentStatus::kStopped: return "STOPPED";
    case ExperimentStatus::kError: return "ERROR";
  }
  return "UNKNOWN";
}

TrialRunner::TrialRunner(RunnerOptions options, std::unique_ptr<VariantGenerator> search_alg,
                         std::unique_ptr<TrialScheduler> scheduler, TrialExecutor& executor,
                         RunnerObserver& observer, std::function<double()> now_s)
    : options_(std::move(options)),
      search_alg_(std::move(search_alg)),
      scheduler_(std::move(scheduler)),
      executor_(executor),
      observer_(observer),
      now_s_(std::move(now_s)) {
  start_s_ = now_s_();
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

int64_t TrialRunner::TotalTrials() const { return search_alg_->Total(); }

void TrialRunner::Step() {
  if (IsFinished()) return;
  if (options_.time_budget_s && now_s_() - start_s_ >= *options_.time_budget_s) {
    StopUnfinished();
    EndExperiment(ExperimentStatus::kFinished, fmt::format("time budget of {} s reached", *options_.time_budget_s));
    return;
  }
  MaybeAddTrials();
  PlacePending();
  CheckFinished();
}

// Keeps a window of generated-but-unstarted trials (Ray Tune's _max_pending_trials), so an
// unbounded search space (num_samples: -1) is generated lazily.
void TrialRunner::MaybeAddTrials() {
  const int64_t window = std::max<int64_t>(16, 2 * options_.max_concurrent_trials);
  bool added = false;
  while (search_alg_->HasNext() && int64_t(pending_.size()) < window) {
    Variant v = search_alg_->Next();
    Trial t;
    t.index = int64_t(trials_.size());
    t.trial_id = fmt::format("{}_{:05d}", options_.experiment_id, t.index);
    t.config = std::move(v.config);
    t.experiment_tag = v.tag.empty() ? std::to_string(t.index) : fmt::format("{}_{}", t.index, v.tag);
    t.resources = options_.resources_per_trial;
    index_[t.trial_id] = trials_.size();
    pending_.insert(t.index);
    trials_.push_back(std::move(t));
    observer_.OnTrialAdded(trials_.back());
    scheduler_->OnTrialAdd(trials_.back());
    added = true;
  }
  if (added) observer_.OnSearcherState(search_alg_->SaveState());
}

void TrialRunner::PlacePending() {
  while (!pending_.empty() && executor_.CanPlace() && !IsFinished()) {
    if (options_.max_concurrent_trials > 0 && InFlight() >= options_.max_concurrent_trials) return;
    const int64_t index = scheduler_->ChooseTrialToRun(pending_);
    pending_.erase(index);
    placing_.insert(index);
    Trial& t = trials_[size_t(index)];
    executor_.PlaceTrial(t, t.attempt + 1);
  }
}

void TrialRunner::OnTrialPlaced(const std::string& trial_id, int64_t attempt, const std::string& worker_id,
                                const std::vector<std::string>& gpu_ids) {
  Trial* t = Find(trial_id);
  if (t == nullptr || attempt != t->attempt + 1) return;
  const bool was_placing = placing_.erase(t->index) > 0;
  if (!was_placing || t->status != TrialStatus::kPending || IsFinished()) {
    // Stopped while its placement was in flight: give the grant straight back.
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
  if (t->start_time_s == 0) t->start_time_s = now_s_();
  ++running_;
  observer_.OnTrialStarted(*t);
  executor_.LaunchTrial(*t);
}

void TrialRunner::OnPlacementDeferred(const std::string& trial_id, int64_t attempt) {
  Trial* t = Find(trial_id);
  if (t == nullptr || attempt != t->attempt + 1 || !placing_.erase(t->index)) return;
  if (t->status == TrialStatus::kPending) pending_.insert(t->index);
}

void TrialRunner::OnPlacementFailed(const std::string& trial_id, int64_t attempt, const std::string& reason) {
  Trial* t = Find(trial_id);
  if (t == nullptr || attempt != t->attempt + 1 || !placing_.erase(t->index)) return;
  if (t->status != TrialStatus::kPending) return;
  t->status = TrialStatus::kError;
  t->error = reason;
  observer_.OnTrialStatus(*t);
  scheduler_->OnTrialError(*t);
  if (!options_.fail_fast.empty()) {
    EndExperiment(ExperimentStatus::kError, fmt::format("trial {} errored (fail_fast): {}", t->trial_id, reason));
  }
  CheckFinished();
}

std::optional<Decision> TrialRunner::StopperDecision(const nlohmann::json& result) const {
  if (result.value(rk::kDone, false)) return Decision::kStop;
  for (const auto& [key, threshold] : options_.stop) {
    auto it = result.find(key);
    if (it != result.end() && it->is_number() && it->get<double>() >= threshold) return Decision::kStop;
  }
  return std::nullopt;
}

Status TrialRunner::OnResult(const std::string& trial_id, int64_t attempt, int64_t seq, nlohmann::json metrics,
                             double time_this_iter_s) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("result for unknown trial {}", trial_id));
  if (attempt != t->attempt || t->status != TrialStatus::kRunning) {
    return Status::FailedPrecondition(fmt::format("result of {} attempt {} is stale (current attempt {}, {})",
                                                  trial_id, attempt, t->attempt, TrialStatusName(t->status)));
  }
  if (seq <= t->last_seq) {
    return Status::FailedPrecondition(fmt::format("duplicate result {} of {} attempt {}", seq, trial_id, attempt));
  }
  if (!metrics.is_object()) return Status::InvalidArgument("result must be a JSON object");
  t->last_seq = seq;
  t->training_iteration += 1;
  t->time_total_s += time_this_iter_s;
  ++t->num_results;
  metrics[rk::kTrainingIteration] = t->training_iteration;
  metrics[rk::kTimeThisIterS] = time_this_iter_s;
  metrics[rk::kTimeTotalS] = t->time_total_s;
  metrics[rk::kTimestamp] = int64_t(now_s_());
  metrics[rk::kTrialId] = t->trial_id;
  metrics[rk::kExperimentTag] = t->experiment_tag;
  metrics[rk::kDone] = metrics.contains(rk::kDone) && Truthy(metrics[rk::kDone]);

  Decision decision = scheduler_->OnTrialResult(*t, metrics);
  if (auto stop = StopperDecision(metrics)) decision = Combine(decision, *stop);
  if (decision == Decision::kStop) metrics[rk::kDone] = true;
  t->last_result = metrics;
  observer_.OnTrialResult(*t, t->last_result, DecisionName(decision));
  executor_.SendDecision(*t, seq, DecisionName(decision));
  if (decision == Decision::kStop) {
    scheduler_->OnTrialComplete(*t, t->last_result);
    LeaveRunning(*t, TrialStatus::kTerminated, "");
  } else if (decision == Decision::kPause) {
    LeaveRunning(*t, TrialStatus::kPaused, "");
  }
  CheckFinished();
  return Status::Ok();
}

void TrialRunner::LeaveRunning(Trial& t, TrialStatus to, const std::string& error, bool stop_trainable) {
  t.status = to;
  t.error = error;
  --running_;
  observer_.OnTrialStatus(t);
  if (stop_trainable) executor_.StopTrial(t);  // before the release: nothing else gets them first
  executor_.ReleaseResources(t);
  t.worker_id.clear();
  t.gpu_ids.clear();
}

void TrialRunner::SetPending(Trial& t) {
  t.training_iteration = 0;  // restarts from scratch (no checkpoint to restore yet)
  t.time_total_s = 0;
  pending_.insert(t.index);
}

void TrialRunner::HandleFailure(Trial& t, const std::string& error) {
  t.num_failures += 1;
  const bool retry = options_.max_failures < 0 || t.num_failures <= options_.max_failures;
  if (retry) {
    LeaveRunning(t, TrialStatus::kPending, error);
    SetPending(t);
    return;
  }
  LeaveRunning(t, TrialStatus::kError, error);
  scheduler_->OnTrialError(t);
  if (!options_.fail_fast.empty()) {
    EndExperiment(ExperimentStatus::kError, fmt::format("trial {} errored (fail_fast): {}", t.trial_id, error));
  }
}

void TrialRunner::OnTrialExited(const std::string& trial_id, int64_t attempt, bool ok, const std::string& error) {
  Trial* t = Find(trial_id);
  if (t == nullptr || t->attempt != attempt || t->status != TrialStatus::kRunning) return;
  if (ok) {
    scheduler_->OnTrialComplete(*t, t->last_result);
    LeaveRunning(*t, TrialStatus::kTerminated, "");
  } else {
    HandleFailure(*t, error);
  }
  CheckFinished();
}

void TrialRunner::OnWorkerLost(const std::string& worker_id) {
  for (Trial& t : trials_) {
    if (t.status != TrialStatus::kRunning || t.worker_id != worker_id) continue;
    LeaveRunning(t, TrialStatus::kPending, fmt::format("worker {} was lost", worker_id));
    SetPending(t);
  }
}

Result<std::string> TrialRunner::StopTrial(const std::string& trial_id) {
  Trial* t = Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (tunebus::IsFinished(t->status)) {
    return fmt::format("trial {} is already {}; nothing to do", trial_id, TrialStatusName(t->status));
  }
  const TrialStatus was = t->status;
  if (was == TrialStatus::kRunning) {
    scheduler_->OnTrialRemove(*t);
    LeaveRunning(*t, TrialStatus::kTerminated, "", /*stop_trainable=*/true);
  } else {
    pending_.erase(t->index);
    placing_.erase(t->index);  // a grant that still arrives is released in OnTrialPlaced
    t->status = TrialStatus::kTerminated;
    scheduler_->OnTrialRemove(*t);
    observer_.OnTrialStatus(*t);
  }
  CheckFinished();
  return fmt::format("trial {} stopped (was {})", trial_id, TrialStatusName(was));
}

void TrialRunner::StopUnfinished() {
  for (Trial& t : trials_) {
    if (t.status == TrialStatus::kRunning) {
      LeaveRunning(t, TrialStatus::kTerminated, "", /*stop_trainable=*/true);
    } else if (!tunebus::IsFinished(t.status)) {
      t.status = TrialStatus::kTerminated;
      observer_.OnTrialStatus(t);
    }
  }
  pending_.clear();
  placing_.clear();  // grants that still arrive are released in OnTrialPlaced
}

void TrialRunner::StopExperiment(const std::string& reason) {
  if (IsFinished()) return;
  StopUnfinished();
  EndExperiment(ExperimentStatus::kStopped, reason);
}

void TrialRunner::EndExperiment(ExperimentStatus status, const std::string& reason) {
  if (IsFinished()) return;
  if (status == ExperimentStatus::kError) StopUnfinished();
  status_ = status;
  end_reason_ = reason;
  observer_.OnExperimentEnded(ExperimentStatusName(status), reason);
}

void TrialRunner::CheckFinished() {
  if (IsFinished() || search_alg_->HasNext() || !pending_.empty() || !placing_.empty() || running_ > 0) return;
  for (const Trial& t : trials_) {
    if (t.status == TrialStatus::kPaused) return;  // waits for an unpause
  }
  EndExperiment(ExperimentStatus::kFinished, "all trials finished");
}

const Trial* TrialRunner::BestTrial() const {
  if (options_.metric.empty()) return nullptr;
  const Trial* best = nullptr;
  double best_value = 0;
  for (const Trial& t : trials_) {
    if (!t.last_result.is_object()) continue;
    auto it = t.last_result.find(options_.metric);
    if (it == t.last_result.end() || !it->is_number()) continue;
    const double v = it->get<double>();
    const bool better = options_.mode == "min" ? v < best_value : v > best_value;
    if (best == nullptr || better) {
      best = &t;
      best_value = v;
    }
  }
  return best;
}

std::map<TrialStatus, int64_t> TrialRunner::CountByStatus() const {
  std::map<TrialStatus, int64_t> counts;
  for (const Trial& t : trials_) counts[t.status]++;
  return counts;
}

}  // namespace tunebus
