#include "libs/tune/search_generator.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace tunebus {

void SearchGenerator::Journal() {
  nlohmann::json delta = searcher_->TakeStateDelta();
  if (!delta.is_null()) observer_.OnSearcherDelta(delta);
}

Suggestion SearchGenerator::Suggest(const std::string& trial_id) {
  Suggestion s = searcher_->Suggest(trial_id);
  unconfirmed_ = false;
  Journal();  // before the trial_added record and any effect of the trial
  if (s.kind == Suggestion::Kind::kFinished) finished_ = true;
  not_now_ = s.kind == Suggestion::Kind::kNotNow;
  return s;
}

void SearchGenerator::OnTrialResult(const std::string& trial_id, const TrainingResult& result) {
  searcher_->OnTrialResult(trial_id, result);
  Journal();
}

void SearchGenerator::OnTrialComplete(const std::string& trial_id,
                                      const TrainingResult* last_result, bool error) {
  searcher_->OnTrialComplete(trial_id, last_result, error);
  Journal();
}

void SearchGenerator::OnTrialComplete(const Trial& t, bool error) {
  std::optional<TrainingResult> last;
  if (!t.last_result_msgpack.empty()) {
    if (Result<TrainingResult> r = TrainingResult::FromMsgpack(t.last_result_msgpack); r.ok())
      last = std::move(r).value();
  }
  OnTrialComplete(t.trial_id, last ? &*last : nullptr, error);
}

bool SearchGenerator::Done() const {
  if (finished_) return true;
  if (unconfirmed_) return false;
  const int64_t total = searcher_->Total();
  return total >= 0 && searcher_->suggested() >= total;
}

int64_t SearchGenerator::TotalTrials(int64_t created) const {
  if (finished_) return created;
  const int64_t searched = searcher_->Total();
  return searched < 0 ? -1 : created + std::max<int64_t>(0, searched - searcher_->suggested());
}

Status SearchGenerator::RestoreState(const nlohmann::json& state) {
  if (!state.is_null()) {
    if (Status s = searcher_->RestoreState(state); !s.ok()) return s;
  }
  (void)searcher_->TakeStateDelta();
  finished_ = false;  // asked again: a finished searcher answers Finished again
  unconfirmed_ = true;
  return Status::Ok();
}

Status SearchGenerator::ApplyDeltas(const std::vector<nlohmann::json>& deltas) {
  for (const nlohmann::json& delta : deltas) {
    if (Status s = searcher_->ApplyStateDelta(delta); !s.ok()) return s;
  }
  (void)searcher_->TakeStateDelta();  // what replay applied is journaled already
  return Status::Ok();
}

}  // namespace tunebus
