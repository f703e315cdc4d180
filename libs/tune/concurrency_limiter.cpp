#include "libs/tune/concurrency_limiter.hpp"

#include <algorithm>

namespace tunebus {

using nlohmann::json;

ConcurrencyLimiter::ConcurrencyLimiter(std::unique_ptr<Searcher> inner, int64_t max_concurrent)
    : SearcherWrapper(std::move(inner)), max_concurrent_(std::max<int64_t>(1, max_concurrent)) {}

Suggestion ConcurrencyLimiter::Suggest(const std::string& trial_id) {
  if (live_.contains(trial_id)) return inner_->Suggest(trial_id);
  if (int64_t(live_.size()) >= max_concurrent_) return Suggestion::NotNow();
  Suggestion s = inner_->Suggest(trial_id);
  if (s.kind == Suggestion::Kind::kConfig) Record({{"add", trial_id}});
  return s;
}

void ConcurrencyLimiter::OnTrialResult(const std::string& trial_id, const TrainingResult& result) {
  if (live_.contains(trial_id)) inner_->OnTrialResult(trial_id, result);
}

void ConcurrencyLimiter::OnTrialComplete(const std::string& trial_id,
                                         const TrainingResult* last_result, bool error) {
  if (!live_.contains(trial_id)) return;
  inner_->OnTrialComplete(trial_id, last_result, error);
  Record({{"remove", trial_id}});
}

json ConcurrencyLimiter::Describe() const {
  json d = inner_->Describe();
  d["max_concurrent"] = max_concurrent_;
  d["live_trials"] = live_.size();
  return d;
}

Status ConcurrencyLimiter::Apply(const json& event) {
  if (event.is_object() && event.size() == 1 && event.begin().value().is_string()) {
    const std::string& id = event.begin().value().get_ref<const std::string&>();
    if (event.contains("add")) {
      live_.insert(id);
      return Status::Ok();
    }
    if (event.contains("remove")) {
      live_.erase(id);
      return Status::Ok();
    }
  }
  return Status::Corruption("concurrency limiter: unknown event " + event.dump());
}

json ConcurrencyLimiter::SaveOwn() const { return {{"live", live_}}; }

Status ConcurrencyLimiter::RestoreOwn(const json& own) {
  live_.clear();
  if (own.is_null()) return Status::Ok();
  if (!own.is_object() || !own.contains("live") || !own["live"].is_array()) {
    return Status::InvalidArgument("concurrency limiter state must be {\"live\": [ids]}, got " +
                                   own.dump());
  }
  for (const json& id : own["live"]) {
    if (!id.is_string())
      return Status::InvalidArgument("concurrency limiter: a live id is a string");
    live_.insert(id.get<std::string>());
  }
  return Status::Ok();
}

}  // namespace tunebus
