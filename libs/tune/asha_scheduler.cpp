#include "libs/tune/asha_scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "libs/core/fields.hpp"
#include "libs/tune/scheduler_params.hpp"

namespace tunebus {

using nlohmann::json;

Result<std::unique_ptr<TrialScheduler>> AshaScheduler::Create(const json& config,
                                                              const std::string& metric,
                                                              const std::string& mode,
                                                              uint64_t seed) {
  SchedulerParams p(config, "asha");
  if (Status s = p.OnlyKnown({"time_attr", "max_t", "grace_period", "reduction_factor", "brackets",
                              "stop_last_trials"});
      !s.ok()) {
    return s;
  }
  Options o;
  if (Status s = p.MetricAndMode(metric, mode, &o.metric, &o.mode); !s.ok()) return s;
  auto time_attr = p.String("time_attr", o.time_attr);
  auto max_t = p.Number("max_t", o.max_t, 0, /*exclusive=*/true);
  auto grace = p.Number("grace_period", o.grace_period, 0, /*exclusive=*/true);
  auto eta = p.Number("reduction_factor", o.reduction_factor, 1, /*exclusive=*/true);
  auto brackets = p.Int("brackets", o.brackets, 1);
  auto stop_last = p.Bool("stop_last_trials", o.stop_last_trials);
  for (const Status& s : {time_attr.status(), max_t.status(), grace.status(), eta.status(),
                          brackets.status(), stop_last.status()}) {
    if (!s.ok()) return s;
  }
  if (*grace > *max_t) {
    return Status::InvalidArgument(
        fmt::format("grace_period: must be <= max_t ({}), got {}", *max_t, *grace));
  }
  o.time_attr = *time_attr;
  o.max_t = *max_t;
  o.grace_period = *grace;
  o.reduction_factor = *eta;
  o.brackets = *brackets;
  o.stop_last_trials = *stop_last;
  const double rungs0 = std::log(o.max_t / o.grace_period) / std::log(o.reduction_factor) + 1;
  if (double(o.brackets) > rungs0) {
    return Status::InvalidArgument(fmt::format(
        "brackets: at most {} with these max_t, grace_period and reduction_factor, got {}",
        int64_t(rungs0), o.brackets));
  }
  return std::unique_ptr<TrialScheduler>(new AshaScheduler(std::move(o), seed));
}

AshaScheduler::AshaScheduler(Options options, uint64_t seed)
    : options_(std::move(options)), rng_(seed) {
  sign_ = options_.mode == "min" ? -1 : 1;
  brackets_.resize(size_t(options_.brackets));
  for (size_t s = 0; s < brackets_.size(); ++s) {
    // Ray Tune: MAX_RUNGS = int(log(max_t / min_t) / log(rf) - s + 1), milestones min_t * rf^(k+s).
    const int64_t rungs = int64_t(std::log(options_.max_t / options_.grace_period) /
                                      std::log(options_.reduction_factor) -
                                  double(s) + 1 + 1e-9);
    for (int64_t k = rungs - 1; k >= 0; --k) {
      brackets_[s].push_back(Rung{
          options_.grace_period * std::pow(options_.reduction_factor, double(k) + double(s)), {}});
    }
  }
}

std::vector<double> AshaScheduler::Milestones(size_t b) const {
  std::vector<double> out;
  for (const Rung& r : brackets_[b]) out.push_back(r.milestone);
  return out;
}

Status AshaScheduler::ValidateResult(const TrainingResult& result) const {
  return RequireNumbers(result, {{"metric", options_.metric}, {"time_attr", options_.time_attr}});
}

void AshaScheduler::OnTrialAdd(const Trial& trial) {
  size_t b = 0;
  if (brackets_.size() > 1) {
    // Ray Tune: P(bracket i) ~ e^(len(rungs_i) - max len(rungs)).
    size_t most = 0;
    for (const Bracket& br : brackets_) most = std::max(most, br.size());
    std::vector<double> weights;
    for (const Bracket& br : brackets_)
      weights.push_back(std::exp(double(br.size()) - double(most)));
    b = std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng_);
  }
  Record({{"add", {trial.trial_id, b}}});
}

Decision AshaScheduler::OnTrialResult(const Trial& trial, const TrainingResult& result) {
  const double t = result.Number(options_.time_attr).value_or(0.0);
  const double value = sign_ * result.Number(options_.metric).value_or(0.0);
  if (options_.stop_last_trials && t >= options_.max_t) {
    ExplainDecision({{"max_t", options_.max_t}});
    return Decision::kStop;
  }
  return OnBracketResult(trial.trial_id, t, value);
}

void AshaScheduler::Rung::Record(const std::string& trial_id, double value) {
  auto [it, added] = recorded.try_emplace(trial_id, value);
  if (!added) {  // a replayed duplicate: its old value leaves the sorted list
    sorted.erase(std::lower_bound(sorted.begin(), sorted.end(), it->second));
    it->second = value;
  }
  sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), value), value);
}

void AshaScheduler::Rung::Clear() {
  recorded.clear();
  sorted.clear();
}

Decision AshaScheduler::OnBracketResult(const std::string& trial_id, double t, double value) {
  auto it = trial_bracket_.find(trial_id);
  if (it == trial_bracket_.end()) return Decision::kContinue;
  const size_t b = it->second;
  Bracket& bracket = brackets_[b];
  for (size_t r = 0; r < bracket.size(); ++r) {
    Rung& rung = bracket[r];
    if (t < rung.milestone || rung.recorded.contains(trial_id)) continue;
    Decision decision = Decision::kContinue;
    if (!rung.sorted.empty()) {
      const double cutoff =
          PercentileOfSorted(rung.sorted, (1 - 1 / options_.reduction_factor) * 100);
      if (value < cutoff) {
        decision = Decision::kStop;
        ExplainDecision({{"rung", rung.milestone},
                         {"bracket", b},
                         {"cutoff", sign_ * cutoff},
                         {"value", sign_ * value}});
      }
    }
    Record({{"rec", {trial_id, b, r, value}}});
    return decision;
  }
  return Decision::kContinue;
}

void AshaScheduler::OnTrialComplete(const Trial& trial, const TrainingResult& result) {
  if (ValidateResult(result).ok()) {
    OnBracketResult(trial.trial_id, result.Number(options_.time_attr).value_or(0.0),
                    sign_ * result.Number(options_.metric).value_or(0.0));
  }
  Record({{"del", trial.trial_id}});
}

void AshaScheduler::OnTrialRemove(const Trial& trial) { Record({{"del", trial.trial_id}}); }

Status AshaScheduler::Apply(const json& e) {
  try {
    if (e.contains("add")) {
      const size_t b = fields::GetInteger<size_t>(e["add"].at(1));
      if (b >= brackets_.size()) return Status::Corruption(fmt::format("asha: no bracket {}", b));
      trial_bracket_[e["add"].at(0).get<std::string>()] = b;
    } else if (e.contains("rec")) {
      const json& r = e["rec"];
      const size_t b = fields::GetInteger<size_t>(r.at(1)),
                   rung = fields::GetInteger<size_t>(r.at(2));
      if (b >= brackets_.size() || rung >= brackets_[b].size()) {
        return Status::Corruption(fmt::format("asha: no rung {} in bracket {}", rung, b));
      }
      brackets_[b][rung].Record(r.at(0).get<std::string>(), r.at(3).get<double>());
    } else if (e.contains("del")) {
      trial_bracket_.erase(e["del"].get<std::string>());
    } else {
      return Status::Corruption("asha: unknown state event " + e.dump());
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("asha: malformed state event: ") + ex.what());
  }
  return Status::Ok();
}

json AshaScheduler::SaveState() const {
  json rungs = json::array();
  for (size_t b = 0; b < brackets_.size(); ++b) {
    for (size_t r = 0; r < brackets_[b].size(); ++r) {
      for (const auto& [id, v] : brackets_[b][r].recorded) rungs.push_back({id, b, r, v});
    }
  }
  return {{"trial_bracket", trial_bracket_}, {"rec", std::move(rungs)}};
}

Status AshaScheduler::RestoreState(const json& state) {
  trial_bracket_.clear();
  for (Bracket& b : brackets_) {
    for (Rung& r : b) r.Clear();
  }
  ClearDelta();
  if (state.is_null()) return Status::Ok();
  try {
    for (const auto& [id, b] : state.at("trial_bracket").items()) {
      if (Status s = Apply({{"add", {id, b}}}); !s.ok()) return s;
    }
    for (const json& r : state.at("rec")) {
      if (Status s = Apply({{"rec", r}}); !s.ok()) return s;
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("asha: malformed state: ") + ex.what());
  }
  return Status::Ok();
}

}  // namespace tunebus
