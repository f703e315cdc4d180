#include "libs/tune/hyperband_for_bohb.hpp"

#include <algorithm>

namespace tunebus {

using nlohmann::json;

Result<std::unique_ptr<TrialScheduler>> HyperBandForBohb::Create(const json& config,
                                                                 const std::string& metric,
                                                                 const std::string& mode) {
  auto o = ParseOptions(config, metric, mode, "hyperband_bohb");
  if (!o.ok()) return o.status();
  return std::unique_ptr<TrialScheduler>(new HyperBandForBohb(std::move(o).value()));
}

Decision HyperBandForBohb::OnTrialResult(const Trial& trial, const TrainingResult& result) {
  auto it = trial_bracket_.find(trial.trial_id);
  if (it == trial_bracket_.end()) return Decision::kContinue;
  const size_t index = it->second;
  context_->SetResultInfo(trial.trial_id, kHyperBandInfo, json::object());
  RecordResult(trial.trial_id, result);
  const Bracket& b = brackets_[index];
  if (ContinueTrial(b, trial.trial_id)) return Decision::kContinue;
  context_->SetResultInfo(trial.trial_id, kHyperBandInfo, {{"budget", b.r}});
  // Ray's HyperBandForBOHB.on_trial_result: wait, paused, for the bracket to fill and for every
  // other live trial to reach the milestone.
  const bool others_paused = std::all_of(b.order.begin(), b.order.end(), [&](const auto& id) {
    return id == trial.trial_id || context_->IsPaused(id);
  });
  if (!HoldsItsSize(b) || !others_paused) return Decision::kPause;
  return ProcessBracket(index, trial.trial_id);
}

int64_t HyperBandForBohb::ChooseTrialToRun(const std::set<int64_t>& pending) {
  for (const Bracket& b : brackets_) {  // creation order: oldest band, then its brackets
    for (const std::string& id : b.order) {
      const Trial* t = context_->FindTrial(id);
      if (t != nullptr && pending.contains(t->index)) return t->index;
    }
  }
  return *pending.begin();
}

std::optional<std::string> HyperBandForBohb::ChoosePausedTrialToRun() {
  auto has = [&](const Bracket& b, auto predicate) {
    return std::any_of(b.order.begin(), b.order.end(), [&](const std::string& id) {
      const Trial* t = context_->FindTrial(id);
      return t != nullptr && predicate(*t);
    });
  };
  auto running = [](const Trial& t) { return t.status == TrialStatus::kRunning; };
  auto paused = [](const Trial& t) { return t.status == TrialStatus::kPaused; };
  auto pending = [](const Trial& t) { return t.status == TrialStatus::kPending; };
  if (std::any_of(brackets_.begin(), brackets_.end(),
                  [&](const Bracket& b) { return has(b, running); })) {
    return std::nullopt;
  }
  for (size_t index = 0; index < brackets_.size(); ++index) {
    if (!has(brackets_[index], paused)) continue;
    (void)ProcessBracket(index, "");
    if (has(brackets_[index], pending)) break;
  }
  return std::nullopt;
}

}  // namespace tunebus
