#include "libs/tune/median_stopping_rule.hpp"

#include <fmt/format.h>

#include <algorithm>

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

Decision MedianStoppingRule::OnTrialResult(const Trial& trial, const TrainingResult& result) {
  const double time = result.Number(options_.time_attr).value_or(0.0);
  const double value = sign_ * result.Number(options_.metric).value_or(0.0);
  auto it = trials_.find(trial.trial_id);
  if (it != trials_.end() && it->second.stopped)
    return Decision::kContinue;  // soft-stopped: FIFO from now on
  Record({{"r", {trial.trial_id, time, value}}});
  if (time < options_.grace_period) return Decision::kContinue;
  const TrialState& self = trials_.at(trial.trial_id);
  std::vector<double> means;
  int64_t samples = 0;  // other trials that reached `time`
  for (const auto& [id, s] : trials_) {
    if (id == trial.trial_id || s.results.empty() || s.results.back().first < time) continue;
    ++samples;
    if (std::optional<double> mean = RunningMean(s, time)) means.push_back(*mean);
  }
  if (samples < options_.min_samples_required) return OnInsufficientSamples(trial.trial_id, time);
  // A trial that jumped over [grace_period, time] (uneven time_attr steps) has no running mean:
  // Ray Tune's median is then NaN and no comparison stops the trial.
  if (int64_t(means.size()) < samples) return Decision::kContinue;
  // numpy.median: the mean of the two middle values for an even count.
  std::sort(means.begin(), means.end());
  const size_t n = means.size();
  const double median = n % 2 == 1 ? means[n / 2] : (means[n / 2 - 1] + means[n / 2]) / 2;
  double best = self.results.front().second;
  for (const auto& [t, v] : self.results) best = std::max(best, v);
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
      TrialState& s = trials_[e["r"].at(0).get<std::string>()];
      s.results.emplace_back(e["r"].at(1).get<double>(), e["r"].at(2).get<double>());
      s.paused_by_us = false;  // it runs
    } else if (e.contains("stop")) {
      trials_[e["stop"].get<std::string>()].stopped = true;
    } else if (e.contains("pause")) {
      TrialState& s = trials_[e["pause"].at(0).get<std::string>()];
      s.last_pause = e["pause"].at(1).get<double>();
      s.paused_by_us = true;
    } else if (e.contains("done")) {
      // Its results stay: finished trials count toward later medians (Ray Tune keeps them).
      trials_[e["done"].get<std::string>()].paused_by_us = false;
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
  ClearDelta();
  if (state.is_null()) return Status::Ok();
  try {
    for (const auto& [id, j] : state.items()) {
      TrialState& s = trials_[id];
      s.results = j.at("results").get<std::vector<std::pair<double, double>>>();
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
