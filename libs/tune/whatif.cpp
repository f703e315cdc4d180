#include "libs/tune/whatif.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "libs/tune/make_trial_scheduler.hpp"

namespace tunebus {

using nlohmann::json;
namespace rk = result_keys;

namespace {

// Seconds one result cost: its time_this_iter_s, else the step of time_total_s, else 0.
double SecondsOf(const TrainingResult& result, double previous_total) {
  if (std::optional<double> s = result.Number(rk::kTimeThisIterS)) return *s;
  if (std::optional<double> total = result.Number(rk::kTimeTotalS)) {
    return std::max(0.0, *total - previous_total);
  }
  return 0;
}

json OrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json TrialJson(const TrialReplay& t) {
  return {{"trial_id", t.trial_id},
          {"fate", ReplayFateName(t.fate)},
          {"results_recorded", t.results_recorded},
          {"results_replayed", t.results_replayed},
          {"seconds_recorded", t.seconds_recorded},
          {"seconds_replayed", t.seconds_replayed},
          {"last_training_iteration", t.last_training_iteration},
          {"actual_final", OrNull(t.actual_final)},
          {"replay_final", OrNull(t.replay_final)},
          {"stop_detail", t.stop_detail}};
}

json TotalsJson(const ReplayTotals& t) {
  return {{"training_iterations", t.training_iterations},
          {"trial_seconds", t.trial_seconds},
          {"best_final", OrNull(t.best_final)},
          {"best_trial_id", t.best_trial_id.empty() ? json(nullptr) : json(t.best_trial_id)}};
}

// Keeps the better of (value, trial) in `totals` for mode sign `sign` (first wins a tie).
void KeepBest(ReplayTotals& totals, double sign, const std::optional<double>& value,
              const std::string& trial_id) {
  if (!value) return;
  if (!totals.best_final || sign * *value > sign * *totals.best_final) {
    totals.best_final = value;
    totals.best_trial_id = trial_id;
  }
}

}  // namespace

const char* ReplayFateName(ReplayFate fate) {
  switch (fate) {
    case ReplayFate::kAsRecorded:
      return "as_recorded";
    case ReplayFate::kStopped:
      return "stopped";
    case ReplayFate::kUnknownBeyond:
      return "unknown_beyond";
    case ReplayFate::kLeftPaused:
      return "left_paused";
  }
  return "as_recorded";
}

std::vector<uint32_t> ArrivalOrderByTimestamp(const std::vector<RecordedTrial>& trials) {
  // (timestamp, training_iteration, trial position)
  std::vector<std::tuple<double, double, uint32_t>> keys;
  for (uint32_t i = 0; i < trials.size(); ++i) {
    double previous = 0;
    for (size_t k = 0; k < trials[i].results.size(); ++k) {
      const TrainingResult& r = trials[i].results[k];
      previous = r.Number(rk::kTimestamp).value_or(previous);
      keys.emplace_back(previous, r.Number(rk::kTrainingIteration).value_or(double(k + 1)), i);
    }
  }
  std::stable_sort(keys.begin(), keys.end());
  std::vector<uint32_t> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(std::get<2>(key));
  return out;
}

json WhatIfReport::ToJson() const {
  json trials_json = json::array();
  for (const TrialReplay& t : per_trial) trials_json.push_back(TrialJson(t));
  return {{"scheduler", scheduler},
          {"scheduler_config", scheduler_config},
          {"metric", metric},
          {"mode", mode},
          {"trials", trials},
          {"actual", TotalsJson(actual)},
          {"replay", TotalsJson(replay)},
          {"saved",
           {{"training_iterations", actual.training_iterations - replay.training_iterations},
            {"trial_seconds", actual.trial_seconds - replay.trial_seconds}}},
          {"regret", OrNull(regret)},
          {"actual_best", actual_best ? TrialJson(*actual_best) : json(nullptr)},
          {"trials_stopped", trials_stopped},
          {"trials_unknown_beyond", trials_unknown_beyond},
          {"trials_left_paused", trials_left_paused},
          {"pauses", pauses},
          {"resumes", resumes},
          {"per_trial", std::move(trials_json)}};
}

SchedulerReplay::SchedulerReplay(const RecordedExperiment& experiment,
                                 std::unique_ptr<TrialScheduler> scheduler)
    : experiment_(experiment), scheduler_(std::move(scheduler)) {
  sign_ = experiment_.mode == "min" ? -1 : 1;
  scheduler_->Attach(this);
}

const Trial* SchedulerReplay::FindTrial(const std::string& trial_id) const {
  auto it = by_id_.find(trial_id);
  return it == by_id_.end() ? nullptr : &trials_[size_t(it->second)];
}

bool SchedulerReplay::IsPaused(const std::string& trial_id) const {
  const Trial* t = FindTrial(trial_id);
  return t != nullptr && t->status == TrialStatus::kPaused;
}

void SchedulerReplay::SetStatus(int64_t index, TrialStatus status) {
  trials_[size_t(index)].status = status;
  if (status == TrialStatus::kPending) {
    pending_.insert(index);
  } else {
    pending_.erase(index);
  }
  if (status == TrialStatus::kRunning) {
    running_.insert(index);
  } else {
    running_.erase(index);
  }
}

Status SchedulerReplay::UnpauseTrial(const std::string& trial_id) {
  auto it = by_id_.find(trial_id);
  if (it == by_id_.end()) return Status::NotFound("no trial " + trial_id);
  if (trials_[size_t(it->second)].status != TrialStatus::kPaused) {
    return Status::FailedPrecondition(trial_id + " is not paused");
  }
  SetStatus(it->second, TrialStatus::kPending);
  ++resumes_;
  return Status::Ok();
}

Status SchedulerReplay::StopTrial(const std::string& trial_id) {
  auto it = by_id_.find(trial_id);
  if (it == by_id_.end()) return Status::NotFound("no trial " + trial_id);
  const int64_t index = it->second;
  if (index == deciding_) {
    return Status::FailedPrecondition(trial_id + " is being decided: return STOP instead");
  }
  Trial& t = trials_[size_t(index)];
  if (IsFinished(t.status)) return Status::Ok();
  Cursor& c = cursors_[size_t(index)];
  const RecordedTrial& r = experiment_.trials[c.recorded];
  if (c.next < r.results.size()) {
    c.out.fate = ReplayFate::kStopped;
    c.out.stop_detail = scheduler_->TakeDecisionDetail();
  }
  if (t.status == TrialStatus::kRunning) {  // TrialRunner's stop_trial: complete, then leave
    scheduler_->OnTrialComplete(t, r.results[c.next - 1]);
    SetStatus(index, TrialStatus::kTerminated);
  } else {
    SetStatus(index, TrialStatus::kTerminated);
    scheduler_->OnTrialRemove(t);
  }
  return Status::Ok();
}

Status SchedulerReplay::ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                                     json new_config) {
  (void)new_config;
  return Status::FailedPrecondition(
      fmt::format("{} cannot exploit {} in a replay: no record holds the curve of a new config "
                  "from another trial's checkpoint",
                  trial_id, donor_trial_id));
}

void SchedulerReplay::Take() { (void)scheduler_->TakeStateDelta(); }

void SchedulerReplay::Start(uint32_t recorded) {
  const RecordedTrial& r = experiment_.trials[recorded];
  const int64_t index = int64_t(trials_.size());
  Trial t;
  t.trial_id = r.trial_id;
  t.index = index;
  t.config = r.config;
  t.status = TrialStatus::kPending;
  trials_.push_back(std::move(t));
  Cursor c;
  c.recorded = recorded;
  c.out.trial_id = r.trial_id;
  cursors_.push_back(std::move(c));
  started_[recorded] = index;
  by_id_[r.trial_id] = index;
}

void SchedulerReplay::EndWithoutResult(int64_t index) {
  Cursor& c = cursors_[size_t(index)];
  Trial& t = trials_[size_t(index)];
  switch (experiment_.trials[c.recorded].end) {
    case RecordedEnd::kErrored:  // it fails here again, as it did
      SetStatus(index, TrialStatus::kError);
      scheduler_->OnTrialError(t);
      break;
    case RecordedEnd::kStopped:
      c.out.fate = ReplayFate::kUnknownBeyond;
      SetStatus(index, TrialStatus::kTerminated);
      scheduler_->OnTrialRemove(t);
      break;
    case RecordedEnd::kFinished:  // its last result stopped it already; kept for completeness
      SetStatus(index, TrialStatus::kTerminated);
      scheduler_->OnTrialRemove(t);
      break;
  }
  Take();
}

Result<bool> SchedulerReplay::RunTurn(int64_t index) {
  if (IsFinished(trials_[size_t(index)].status)) return false;
  const Cursor& c = cursors_[size_t(index)];
  if (c.next == experiment_.trials[c.recorded].results.size()) {
    EndWithoutResult(index);
    return false;
  }
  SetStatus(index, TrialStatus::kRunning);
  if (Status s = Feed(index); !s.ok()) return s;
  return true;
}

Status SchedulerReplay::Feed(int64_t index) {
  Cursor& c = cursors_[size_t(index)];
  Trial& t = trials_[size_t(index)];
  const RecordedTrial& r = experiment_.trials[c.recorded];
  const TrainingResult& result = r.results[c.next];
  if (Status s = scheduler_->ValidateResult(result); !s.ok()) {
    return Status::InvalidArgument(
        fmt::format("trial {} result {}: {}", r.trial_id, c.next + 1, s.message()));
  }
  const double seconds = SecondsOf(result, t.time_total_s);
  ++c.next;
  t.training_iteration = int64_t(result.Number(rk::kTrainingIteration).value_or(double(c.next)));
  t.time_total_s = result.Number(rk::kTimeTotalS).value_or(t.time_total_s + seconds);
  t.last_metric = result.Number(experiment_.metric);
  ++t.num_results;
  c.out.results_replayed += 1;
  c.out.seconds_replayed += seconds;
  c.out.last_training_iteration = t.training_iteration;
  c.out.replay_final = t.last_metric;
  seconds_fed_ += seconds;

  deciding_ = index;
  Decision decision = scheduler_->OnTrialResult(t, result);
  deciding_ = -1;
  json detail = scheduler_->TakeDecisionDetail();
  Take();
  const bool last = c.next == r.results.size();
  // TrialRunner::Decide: the trainable's own end (done, stop criteria) is a STOP.
  if (last && r.end == RecordedEnd::kFinished) decision = Combine(decision, Decision::kStop);
  switch (decision) {
    case Decision::kStop:
      if (!last) {
        c.out.fate = ReplayFate::kStopped;
        c.out.stop_detail = std::move(detail);
      }
      scheduler_->OnTrialComplete(t, result);
      SetStatus(index, TrialStatus::kTerminated);
      Take();
      break;
    case Decision::kPause:
      ++pauses_;
      SetStatus(index, TrialStatus::kPaused);
      break;
    case Decision::kContinue:
      if (last) EndWithoutResult(index);  // it would run on: the record ends here
      break;
  }
  return Status::Ok();
}

Result<bool> SchedulerReplay::FreeTurn() {
  for (;;) {
    if (!pending_.empty()) {
      int64_t index = scheduler_->ChooseTrialToRun(pending_);
      Take();
      if (!pending_.contains(index)) index = *pending_.begin();
      Result<bool> fed = RunTurn(index);
      if (!fed.ok() || *fed) return fed;
      continue;  // it had nothing left and ended: the turn is still free
    }
    // HyperBandForBohb may unpause trials itself here and name none.
    std::optional<std::string> paused = scheduler_->ChoosePausedTrialToRun();
    Take();
    if (paused && IsPaused(*paused)) {
      (void)UnpauseTrial(*paused);
    } else if (pending_.empty()) {
      return false;  // nobody waits: the turn is saved
    }
  }
}

Result<WhatIfReport> SchedulerReplay::Run() {
  if (ran_) return Status::FailedPrecondition("a SchedulerReplay runs once");
  ran_ = true;
  if (std::string(scheduler_->name()) == "pbt") {
    return Status::InvalidArgument(
        "pbt cannot be replayed: its exploit restarts a trial from another trial's checkpoint "
        "with a new config, a curve no recorded result holds");
  }
  const std::vector<RecordedTrial>& recorded = experiment_.trials;
  const std::vector<uint32_t> by_time =
      experiment_.arrival.empty() ? ArrivalOrderByTimestamp(recorded) : std::vector<uint32_t>();
  const std::vector<uint32_t>& arrival =
      experiment_.arrival.empty() ? by_time : experiment_.arrival;
  std::vector<size_t> counts(recorded.size(), 0);
  for (uint32_t pos : arrival) {
    if (pos >= recorded.size()) {
      return Status::InvalidArgument(
          fmt::format("arrival: trial position {} of {} trials", pos, recorded.size()));
    }
    ++counts[pos];
  }
  for (size_t i = 0; i < recorded.size(); ++i) {
    if (counts[i] != recorded[i].results.size()) {
      return Status::InvalidArgument(
          fmt::format("arrival: trial {} appears {} times for {} results", recorded[i].trial_id,
                      counts[i], recorded[i].results.size()));
    }
  }
  started_.assign(recorded.size(), -1);
  trials_.reserve(recorded.size());  // the scheduler gets references into it
  cursors_.reserve(recorded.size());
  for (size_t i = 0; i < recorded.size(); ++i) {
    if (recorded[i].results.empty()) continue;  // never ran: left out
    Trial t;
    t.trial_id = recorded[i].trial_id;
    t.index = int64_t(i);
    t.config = recorded[i].config;
    scheduler_->OnTrialAdd(t);
    Take();
  }

  for (uint32_t pos : arrival) {
    if (started_[pos] < 0) Start(pos);
    const int64_t index = started_[pos];
    const TrialStatus status = trials_[size_t(index)].status;
    bool fed = false;
    if (status == TrialStatus::kRunning || status == TrialStatus::kPending) {
      Result<bool> own = RunTurn(index);
      if (!own.ok()) return own.status();
      fed = *own;
    }
    if (!fed) {
      if (Result<bool> free = FreeTurn(); !free.ok()) return free.status();
    }
  }
  // The record's turns are spent: what still runs or waits runs on, one result at a time.
  for (;;) {
    if (!running_.empty()) {
      if (Result<bool> fed = RunTurn(*running_.begin()); !fed.ok()) return fed.status();
      continue;
    }
    Result<bool> fed = FreeTurn();
    if (!fed.ok()) return fed.status();
    if (!*fed) break;
  }
  return Report();
}

WhatIfReport SchedulerReplay::Report() const {
  WhatIfReport out;
  out.scheduler = scheduler_->name();
  out.metric = experiment_.metric;
  out.mode = experiment_.mode;
  out.pauses = pauses_;
  out.resumes = resumes_;
  for (size_t i = 0; i < experiment_.trials.size(); ++i) {
    const RecordedTrial& r = experiment_.trials[i];
    if (started_[i] < 0) continue;  // no result recorded
    TrialReplay t = cursors_[size_t(started_[i])].out;
    double total = 0;
    for (const TrainingResult& result : r.results) {
      const double seconds = SecondsOf(result, total);
      total = result.Number(rk::kTimeTotalS).value_or(total + seconds);
      t.seconds_recorded += seconds;
    }
    t.results_recorded = int64_t(r.results.size());
    t.actual_final = r.results.back().Number(experiment_.metric);
    if (trials_[size_t(started_[i])].status == TrialStatus::kPaused) {
      t.fate = ReplayFate::kLeftPaused;
    }
    ++out.trials;
    out.actual.training_iterations += t.results_recorded;
    out.actual.trial_seconds += t.seconds_recorded;
    out.replay.training_iterations += t.results_replayed;
    out.replay.trial_seconds += t.seconds_replayed;
    KeepBest(out.actual, sign_, t.actual_final, t.trial_id);
    if (t.fate != ReplayFate::kUnknownBeyond)
      KeepBest(out.replay, sign_, t.replay_final, t.trial_id);
    out.trials_stopped += t.fate == ReplayFate::kStopped;
    out.trials_unknown_beyond += t.fate == ReplayFate::kUnknownBeyond;
    out.trials_left_paused += t.fate == ReplayFate::kLeftPaused;
    out.per_trial.push_back(t);
  }
  if (out.actual.best_final && out.replay.best_final) {
    out.regret = sign_ * (*out.actual.best_final - *out.replay.best_final);
  }
  for (const TrialReplay& t : out.per_trial) {
    if (t.trial_id == out.actual.best_trial_id) out.actual_best = t;
  }
  return out;
}

Result<WhatIfReport> ReplayExperiment(const RecordedExperiment& experiment,
                                      const std::string& scheduler, const json& config,
                                      uint64_t seed) {
  if (scheduler == "pbt") {
    return Status::InvalidArgument(
        "pbt cannot be replayed: its exploit restarts a trial from another trial's checkpoint "
        "with a new config, a curve no recorded result holds");
  }
  Result<std::unique_ptr<TrialScheduler>> made =
      MakeTrialScheduler(scheduler, config.is_null() ? json::object() : config, experiment.metric,
                         experiment.mode, seed);
  if (!made.ok()) return made.status();
  SchedulerReplay replay(experiment, std::move(made).value());
  Result<WhatIfReport> report = replay.Run();
  if (report.ok()) report->scheduler_config = config;
  return report;
}

}  // namespace tunebus
