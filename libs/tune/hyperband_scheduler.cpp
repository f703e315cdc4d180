#include "libs/tune/hyperband_scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "libs/core/fields.hpp"
#include "libs/tune/scheduler_params.hpp"

namespace tunebus {

using nlohmann::json;

Result<HyperBandScheduler::Options> HyperBandScheduler::ParseOptions(const json& config,
                                                                     const std::string& metric,
                                                                     const std::string& mode,
                                                                     const char* name) {
  SchedulerParams p(config, name);
  if (Status s = p.OnlyKnown({"time_attr", "max_t", "reduction_factor", "stop_last_trials"});
      !s.ok())
    return s;
  Options o;
  if (Status s = p.MetricAndMode(metric, mode, &o.metric, &o.mode); !s.ok()) return s;
  auto time_attr = p.String("time_attr", o.time_attr);
  auto max_t = p.Number("max_t", o.max_t, 1);
  auto eta = p.Number("reduction_factor", o.reduction_factor, 1, /*exclusive=*/true);
  auto stop_last = p.Bool("stop_last_trials", o.stop_last_trials);
  for (const Status& s : {time_attr.status(), max_t.status(), eta.status(), stop_last.status()}) {
    if (!s.ok()) return s;
  }
  o.time_attr = *time_attr;
  o.max_t = *max_t;
  o.reduction_factor = *eta;
  o.stop_last_trials = *stop_last;
  return o;
}

Result<std::unique_ptr<TrialScheduler>> HyperBandScheduler::Create(const json& config,
                                                                   const std::string& metric,
                                                                   const std::string& mode) {
  auto o = ParseOptions(config, metric, mode, "hyperband");
  if (!o.ok()) return o.status();
  return std::unique_ptr<TrialScheduler>(new HyperBandScheduler(std::move(o).value()));
}

namespace {

// s_max + 1, n0 and r0 of the file comment.
int64_t BracketCount(double max_t, double eta) {
  return int64_t(std::round(std::log(max_t) / std::log(eta))) + 1;
}
int64_t BracketTrials(int64_t s_max_1, double eta, int64_t s) {
  return int64_t(std::ceil(double(s_max_1) / double(s + 1) * std::pow(eta, double(s)) - 1e-9));
}
int64_t BracketFirstMilestone(double max_t, double eta, int64_t s) {
  return int64_t(max_t * std::pow(eta, -double(s)) + 1e-9);
}

}  // namespace

HyperBandScheduler::HyperBandScheduler(Options options) : options_(std::move(options)) {
  sign_ = options_.mode == "min" ? -1 : 1;
  s_max_1_ = BracketCount(options_.max_t, options_.reduction_factor);
}

int64_t HyperBandScheduler::BandTrials(double max_t, double reduction_factor) {
  const int64_t s_max_1 = BracketCount(max_t, reduction_factor);
  int64_t trials = 0;
  for (int64_t s = 0; s < s_max_1; ++s) {
    if (BracketFirstMilestone(max_t, reduction_factor, s) >= 1) {
      trials += BracketTrials(s_max_1, reduction_factor, s);
    }
  }
  return trials;
}

int64_t HyperBandScheduler::N0(int64_t s) const {
  return BracketTrials(s_max_1_, options_.reduction_factor, s);
}
int64_t HyperBandScheduler::R0(int64_t s) const {
  return BracketFirstMilestone(options_.max_t, options_.reduction_factor, s);
}

Status HyperBandScheduler::ValidateResult(const TrainingResult& result) const {
  return RequireNumbers(result, {{"metric", options_.metric}, {"time_attr", options_.time_attr}});
}

bool HyperBandScheduler::CurIterDone(const Bracket& b) const {
  return std::all_of(b.live.begin(), b.live.end(),
                     [&](const auto& kv) { return kv.second.time >= b.milestone; });
}

bool HyperBandScheduler::ContinueTrial(const Bracket& b, const std::string& trial_id) const {
  if (!options_.stop_last_trials && b.halves == 0) return true;
  auto it = b.live.find(trial_id);
  return it == b.live.end() || it->second.time < b.milestone;
}

void HyperBandScheduler::OnTrialAdd(const Trial& trial) { Record({{"add", trial.trial_id}}); }

void HyperBandScheduler::RecordResult(const std::string& trial_id, const TrainingResult& result) {
  Record({{"res",
           {trial_id, result.Number(options_.time_attr).value_or(0.0),
            sign_ * result.Number(options_.metric).value_or(0.0)}}});
}

Decision HyperBandScheduler::OnTrialResult(const Trial& trial, const TrainingResult& result) {
  auto it = trial_bracket_.find(trial.trial_id);
  if (it == trial_bracket_.end()) return Decision::kContinue;
  RecordResult(trial.trial_id, result);
  if (ContinueTrial(brackets_[it->second], trial.trial_id)) return Decision::kContinue;
  return ProcessBracket(it->second, trial.trial_id);
}

Decision HyperBandScheduler::ProcessBracket(size_t index, const std::string& current) {
  processing_ = true;
  Decision action = Decision::kPause;
  if (!CurIterDone(brackets_[index])) {
    processing_ = false;
    return action;
  }
  if (Finished(brackets_[index])) {  // Ray Tune's cleanup_full
    const std::vector<std::string> order = brackets_[index].order;
    for (const std::string& id : order) {
      if (id != current && context_->IsPaused(id)) (void)context_->StopTrial(id);
    }
    processing_ = false;
    return Decision::kStop;
  }
  std::vector<std::string> good, bad;
  const Bracket& b = brackets_[index];
  if (b.halves == 0 && !options_.stop_last_trials) {
    good = b.order;
  } else {
    Record({{"halve", index}});
    std::vector<std::string> sorted = brackets_[index].order;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const std::string& x, const std::string& y) {
      return brackets_[index].live.at(x).value < brackets_[index].live.at(y).value;
    });
    const size_t keep = std::min(sorted.size(), size_t(brackets_[index].n));
    bad.assign(sorted.begin(), sorted.end() - long(keep));
    good.assign(sorted.end() - long(keep), sorted.end());
  }
  for (const std::string& id : bad) {
    ExplainDecision({{"bracket", index}, {"halving", brackets_[index].halves}});
    if (id == current) {
      Record({{"del", id}});
      action = Decision::kStop;
    } else {
      (void)context_->StopTrial(id);  // PAUSED (or a RUNNING one past its milestone)
      if (trial_bracket_.contains(id)) Record({{"del", id}});
    }
  }
  // The current trial's stop is noted after the others' (each StopTrial took its own detail).
  if (action == Decision::kStop) {
    ExplainDecision({{"bracket", index}, {"halving", brackets_[index].halves}});
  }
  for (const std::string& id : good) {
    if (!ContinueTrial(brackets_[index], id)) continue;  // too far ahead: waits for the next rung
    if (id == current) {
      action = Decision::kContinue;
    } else if (context_->IsPaused(id)) {
      (void)context_->UnpauseTrial(id);
    }
  }
  processing_ = false;
  return action;
}

void HyperBandScheduler::OnTrialComplete(const Trial& trial, const TrainingResult& result) {
  auto it = trial_bracket_.find(trial.trial_id);
  if (it == trial_bracket_.end()) return;
  if (ValidateResult(result).ok()) RecordResult(trial.trial_id, result);
  OnTrialRemove(trial);
}

void HyperBandScheduler::OnTrialRemove(const Trial& trial) {
  auto it = trial_bracket_.find(trial.trial_id);
  if (it == trial_bracket_.end()) return;
  const size_t b = it->second;
  Record({{"del", trial.trial_id}});
  if (!processing_ && !brackets_[b].live.empty() && !Finished(brackets_[b]))
    (void)ProcessBracket(b, "");
}

void HyperBandScheduler::OnTrialError(const Trial& trial) { OnTrialRemove(trial); }

int64_t HyperBandScheduler::ChooseTrialToRun(const std::set<int64_t>& pending) {
  for (size_t band = 0; band < bands_; ++band) {
    std::vector<const Bracket*> in_band;
    for (const Bracket& b : brackets_) {
      if (b.band == band) in_band.push_back(&b);
    }
    std::stable_sort(in_band.begin(), in_band.end(), [](const Bracket* x, const Bracket* y) {
      const double px = x->total_work > 0 ? x->completed / x->total_work : 0;
      const double py = y->total_work > 0 ? y->completed / y->total_work : 0;
      return px < py;
    });
    for (const Bracket* b : in_band) {
      for (const std::string& id : b->order) {
        const Trial* t = context_->FindTrial(id);
        if (t != nullptr && pending.contains(t->index)) return t->index;
      }
    }
  }
  return *pending.begin();
}

Status HyperBandScheduler::Apply(const json& e) {
  try {
    if (e.contains("add")) {
      const std::string id = e["add"].get<std::string>();
      if (brackets_.empty() || HoldsItsSize(brackets_.back())) {
        // Ray Tune's on_trial_add: the next bracket of this band (s = brackets so far), or a new
        // band; a bracket whose r0 would be 0 takes its slot empty.
        for (;;) {
          size_t in_band = 0;
          for (const Bracket& b : brackets_) in_band += bands_ > 0 && b.band == bands_ - 1;
          if (bands_ == 0 || int64_t(in_band) == s_max_1_) {
            ++bands_;
            in_band = 0;
          }
          Bracket b;
          b.band = bands_ - 1;
          b.s = BracketS(int64_t(in_band));
          b.n0 = b.n = R0(b.s) == 0 ? 0 : N0(b.s);
          b.r = R0(b.s);
          b.milestone = double(b.r);
          b.halves = b.s;
          // Ray Tune's _calculate_total_work.
          double n = double(b.n0), r = double(b.r);
          for (int64_t k = 0; k <= b.s; ++k) {
            b.total_work += std::floor(n) * std::floor(r);
            n = std::ceil(n / options_.reduction_factor);
            r = std::floor(std::min(r * options_.reduction_factor, options_.max_t - double(b.r)));
          }
          brackets_.push_back(std::move(b));
          if (brackets_.back().n > 0) break;
        }
      }
      Bracket& b = brackets_.back();
      b.order.push_back(id);
      b.live[id] = Live{};
      ++b.added;
      trial_bracket_[id] = brackets_.size() - 1;
    } else if (e.contains("res")) {
      const std::string id = e["res"].at(0).get<std::string>();
      auto it = trial_bracket_.find(id);
      if (it == trial_bracket_.end()) return Status::Ok();
      Bracket& b = brackets_[it->second];
      Live& l = b.live[id];
      const double time = e["res"].at(1).get<double>();
      b.completed += std::max(0.0, time - l.time);
      l = Live{time, e["res"].at(2).get<double>(), true};
    } else if (e.contains("halve")) {
      const size_t index = fields::GetInteger<size_t>(e["halve"]);
      if (index >= brackets_.size())
        return Status::Corruption(fmt::format("hyperband: no bracket {}", index));
      Bracket& b = brackets_[index];
      b.halves -= 1;
      b.n = int64_t(std::ceil(double(b.n) / options_.reduction_factor - 1e-9));
      b.r =
          int64_t(std::min(double(b.r) * options_.reduction_factor, options_.max_t - b.milestone));
      b.milestone = double(b.r);
    } else if (e.contains("del")) {
      const std::string id = e["del"].get<std::string>();
      auto it = trial_bracket_.find(id);
      if (it == trial_bracket_.end()) return Status::Ok();
      Bracket& b = brackets_[it->second];
      b.live.erase(id);
      b.order.erase(std::remove(b.order.begin(), b.order.end(), id), b.order.end());
      trial_bracket_.erase(it);
    } else {
      return Status::Corruption("hyperband: unknown state event " + e.dump());
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("hyperband: malformed state event: ") + ex.what());
  }
  return Status::Ok();
}

json HyperBandScheduler::SaveState() const {
  json brackets = json::array();
  for (const Bracket& b : brackets_) {
    json live = json::array();
    for (const std::string& id : b.order) {
      const Live& l = b.live.at(id);
      live.push_back({id, l.time, l.value, l.has_result});
    }
    brackets.push_back({{"band", b.band},
                        {"s", b.s},
                        {"n0", b.n0},
                        {"n", b.n},
                        {"r", b.r},
                        {"milestone", b.milestone},
                        {"halves", b.halves},
                        {"added", b.added},
                        {"total_work", b.total_work},
                        {"completed", b.completed},
                        {"live", std::move(live)}});
  }
  return {{"bands", bands_}, {"brackets", std::move(brackets)}};
}

Status HyperBandScheduler::RestoreState(const json& state) {
  brackets_.clear();
  trial_bracket_.clear();
  bands_ = 0;
  ClearDelta();
  if (state.is_null()) return Status::Ok();
  try {
    bands_ = fields::GetInteger<size_t>(state.at("bands"));
    for (const json& j : state.at("brackets")) {
      Bracket b;
      b.band = fields::GetInteger<size_t>(j.at("band"));
      b.s = fields::GetInteger<int64_t>(j.at("s"));
      b.n0 = fields::GetInteger<int64_t>(j.at("n0"));
      b.n = fields::GetInteger<int64_t>(j.at("n"));
      b.r = fields::GetInteger<int64_t>(j.at("r"));
      b.milestone = j.at("milestone").get<double>();
      b.halves = fields::GetInteger<int64_t>(j.at("halves"));
      b.added = fields::GetInteger<int64_t>(j.at("added"));
      b.total_work = j.at("total_work").get<double>();
      b.completed = j.at("completed").get<double>();
      for (const json& l : j.at("live")) {
        const std::string id = l.at(0).get<std::string>();
        b.order.push_back(id);
        b.live[id] = Live{l.at(1).get<double>(), l.at(2).get<double>(), l.at(3).get<bool>()};
        trial_bracket_[id] = brackets_.size();
      }
      brackets_.push_back(std::move(b));
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("hyperband: malformed state: ") + ex.what());
  }
  return Status::Ok();
}

std::vector<HyperBandScheduler::BracketView> HyperBandScheduler::Brackets() const {
  std::vector<BracketView> out;
  for (const Bracket& b : brackets_)
    out.push_back({b.band, b.s, b.n, b.r, b.halves, b.milestone, b.order});
  return out;
}

}  // namespace tunebus
