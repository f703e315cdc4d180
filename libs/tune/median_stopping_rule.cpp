#include "libs/tune/median_stopping_rule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "libs/tune/scheduler_params.hpp"

namespace tunebus {

using nlohmann::json;

Result<std::unique_ptr<TrialScheduler>> MedianStoppingRule::Create(const json& config,
                                                                   const std::string& metric,
                                                                   const std::string& mode) {
  SchedulerParams p(config, "median_stopping");
  if (Status s = p.OnlyKnown(
          {"time_attr", "grace_period", "min_samples_required", "min_time_slice", "hard_stop"});
      !s.ok()) {
    return s;
  }
  Options o;
  if (Status s = p.MetricAndMode(metric, mode, &o.metric, &o.mode); !s.ok()) return s;
  auto time_attr = p.String("time_attr", o.time_attr);
  auto grace = p.Number("grace_period", o.grace_period, 0);
  auto min_samples = p.Int("min_samples_required", o.min_samples_required, 1);
  auto slice = p.Number("min_time_slice", o.min_time_slice, 0);
  auto hard = p.Bool("hard_stop", o.hard_stop);
  for (const Status& s :
       {time_attr.status(), grace.status(), min_samples.status(), slice.status(), hard.status()}) {
    if (!s.ok()) return s;
  }
  o.time_attr = *time_attr;
  o.grace_period = *grace;
  o.min_samples_required = *min_samples;
  o.min_time_slice = *slice;
  o.hard_stop = *hard;
  return std::unique_ptr<TrialScheduler>(new MedianStoppingRule(std::move(o)));
}

MedianStoppingRule::MedianStoppingRule(Options options) : options_(std::move(options)) {
  sign_ = options_.mode == "min" ? -1 : 1;
}

Status MedianStoppingRule::ValidateResult(const TrainingResult& result) const {
  return RequireNumbers(result, {{"metric", options_.metric}, {"time_attr", options_.time_attr}});
}

std::optional<double> MedianStoppingRule::RunningMean(const TrialState& s, double time) const {
  if (s.monotone && !std::isnan(time)) {
    // The results past the grace period come last and in time order: those up to `time` are a
    // prefix of them, summed in the same order as the scan below.
    const size_t n = size_t(std::upper_bound(s.graced_times.begin(), s.graced_times.end(), time) -
                            s.graced_times.begin());
    if (n == 0) return std::nullopt;
    return s.graced_sums[n - 1] / double(n);
  }
  double sum = 0;
  int64_t n = 0;
  for (const auto& [t, v] : s.results) {
    if (t < options_.grace_period || t > time) continue;
    sum += v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / double(n);
}

MedianStoppingRule::TrialState& MedianStoppingRule::State(const std::string& trial_id) {
  auto [it, added] = trials_.try_emplace(trial_id);
  if (added) {
    it->second.slot = states_.size();
    states_.push_back(&it->second);
    newest_times_.push_back(-std::numeric_limits<double>::infinity());
  }
  return it->second;
}

void MedianStoppingRule::AddResult(TrialState& s, double time, double value) {
  if (s.results.empty()) {
    s.best = value;
  } else {
    s.monotone = s.monotone && time >= s.results.back().first;
  }
  s.best = std::max(s.best, value);
  s.results.emplace_back(time, value);
  newest_times_[s.slot] = time;
  if (!s.monotone) {
    s.graced_times.clear();
    s.graced_sums.clear();
  } else if (!(time < options_.grace_period)) {
    s.graced_sums.push_back((s.graced_sums.empty() ? 0.0 : s.graced_sums.back()) + value);
    s.graced_times.push_back(time);
  }
}

Decision MedianStoppingRule::OnTrialResult(const Trial& trial, const TrainingResult& result) {
  const double time = result.Number(options_.time_attr).value_or(0.0);
  const double value = sign_ * result.Number(options_.metric).value_or(0.0);
  auto it = trials_.find(trial.trial_id);
  if (it != trials_.end() && it->second.stopped)
    return Decision::kContinue;  // soft-stopped: FIFO from now on
  Record({{"r", {trial.trial_id, time, value}}});
  if (time < options_.grace_period) return Decision::kContinue;
  const TrialState& self = trials_.at(trial.trial_id);
  std::vector<double>& means = means_;
  means.clear();
  int64_t samples = 0;  // other trials that reached `time`
  for (size_t slot = 0; slot < newest_times_.size(); ++slot) {
    if (newest_times_[slot] < time || slot == self.slot) continue;
    const TrialState& s = *states_[slot];
    if (s.results.empty()) continue;
    ++samples;
    if (std::optional<double> mean = RunningMean(s, time)) means.push_back(*mean);
  }
  if (samples < options_.min_samples_required) return OnInsufficientSamples(trial.trial_id, time);
  // A trial that jumped over [grace_period, time] (uneven time_attr steps) has no running mean:
  // Ray Tune's median is then NaN and no comparison stops the trial.
  if (int64_t(means.size()) < samples) return Decision::kContinue;
  // numpy.median: the middle value, or the mean of the two middle values for an even count
  // (the values a sort would put there: nth_element, then the largest of the lower half).
  const size_t n = means.size();
  const auto mid = means.begin() + ptrdiff_t(n / 2);
  std::nth_element(means.begin(), mid, means.end());
  const double median = n % 2 == 1 ? *mid : (*std::max_element(means.begin(), mid) + *mid) / 2;
  const double best = self.best;
  if (best < median && time > options_.grace_period) {
    ExplainDecision({{"median", median}, {"best", best}, {"time", time}});
    Record({{"stop", trial.trial_id}});
    if (options_.hard_stop) return Decision::kStop;
    Record({{"pause", {trial.trial_id, time}}});
    return Decision::kPause;
  }
  return Decision::kContinue;  // as Ray Tune: time slicing only while samples are insufficient
}

Decision MedianStoppingRule::OnInsufficientSamples(const std::string& trial_id, double time) {
  if (time - trials_.at(trial_id).last_pause <= options_.min_time_slice) return Decision::kContinue;
  bool waiting = false;
  for (const Trial& t : context_->trials()) {
    if (t.trial_id == trial_id) continue;
    waiting = waiting || t.status == TrialStatus::kPending || t.status == TrialStatus::kPaused;
  }
  if (!waiting) return Decision::kContinue;
  Record({{"pause", {trial_id, time}}});
  return Decision::kPause;
}

std::optional<std::string> MedianStoppingRule::ChoosePausedTrialToRun() {
  for (const auto& [id, s] : trials_) {
    if (!s.paused_by_us) continue;
    const Trial* t = context_->FindTrial(id);
    if (t != nullptr && t->status == TrialStatus::kPaused) return id;
  }
  return std::nullopt;
}

void MedianStoppingRule::OnTrialComplete(const Trial& trial, const TrainingResult& result) {
  (void)result;
  if (trials_.contains(trial.trial_id)) Record({{"done", trial.trial_id}});
}
void MedianStoppingRule::OnTrialRemove(const Trial& trial) {
  OnTrialComplete(trial, TrainingResult());
}
void MedianStoppingRule::OnTrialError(const Trial& trial) {
  OnTrialComplete(trial, TrainingResult());
}

Status MedianStoppingRule::Apply(const json& e) {
  try {
    if (e.contains("r")) {
      TrialState& s = State(e["r"].at(0).get<std::string>());
      AddResult(s, e["r"].at(1).get<double>(), e["r"].at(2).get<double>());
      s.paused_by_us = false;  // it runs
    } else if (e.contains("stop")) {
      State(e["stop"].get<std::string>()).stopped = true;
    } else if (e.contains("pause")) {
      TrialState& s = State(e["pause"].at(0).get<std::string>());
      s.last_pause = e["pause"].at(1).get<double>();
      s.paused_by_us = true;
    } else if (e.contains("done")) {
      // Its results stay: finished trials count toward later medians (Ray Tune keeps them).
      State(e["done"].get<std::string>()).paused_by_us = false;
    } else {
      return Status::Corruption("median_stopping: unknown state event " + e.dump());
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("median_stopping: malformed state event: ") + ex.what());
  }
  return Status::Ok();
}

json MedianStoppingRule::SaveState() const {
  json out = json::object();
  for (const auto& [id, s] : trials_) {
    out[id] = {{"results", s.results},
               {"last_pause", s.last_pause},
               {"stopped", s.stopped},
               {"paused_by_us", s.paused_by_us}};
  }
  return out;
}

Status MedianStoppingRule::RestoreState(const json& state) {
  trials_.clear();
  states_.clear();
  newest_times_.clear();
  ClearDelta();
  if (state.is_null()) return Status::Ok();
  try {
    for (const auto& [id, j] : state.items()) {
      TrialState& s = State(id);
      for (const auto& [t, v] : j.at("results").get<std::vector<std::pair<double, double>>>()) {
        AddResult(s, t, v);
      }
      s.last_pause = j.at("last_pause").get<double>();
      s.stopped = j.at("stopped").get<bool>();
      s.paused_by_us = j.at("paused_by_us").get<bool>();
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("median_stopping: malformed state: ") + ex.what());
  }
  return Status::Ok();
}

}  // namespace tunebus
