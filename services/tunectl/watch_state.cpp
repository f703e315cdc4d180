#include "services/tunectl/watch_state.hpp"

#include <fmt/format.h>

namespace tunebus {

using nlohmann::json;

WatchState::WatchState(const json& experiment, const json& trials)
    : experiment_(experiment.is_object() ? experiment : json::object()) {
  if (!trials.is_array()) return;
  for (const json& t : trials) {
    const std::string id = StringField(t, "trial_id");
    if (!id.empty()) trials_[id] = t;
  }
}

std::optional<std::string> WatchState::Apply(const proto::SchedulerEvent& e) {
  // An event this tunectl does not know (from a newer scheduler) is skipped.
  const auto kind = proto::ParseSchedulerEventKind(e.event);
  if (!kind.ok()) return std::nullopt;
  const json body = json::parse(e.body_json, nullptr, /*allow_exceptions=*/false);
  if (*kind == proto::SchedulerEventKind::kExperimentEnded) {
    ended_ = true;
    ended_status_ = StringField(body, "status", "UNKNOWN");
    return std::nullopt;
  }
  // Trial events carry the trial object; anything else (checkpoint events, odd bodies) is skipped.
  if (e.trial_id.empty() || !body.is_object() || StringField(body, "status").empty())
    return std::nullopt;
  const auto known = trials_.find(e.trial_id);
  const std::string before = known == trials_.end() ? "" : StringField(known->second, "status");
  trials_[e.trial_id] = body;
  const std::string status = StringField(body, "status");
  if (*kind == proto::SchedulerEventKind::kTrialResult && before == status) return std::nullopt;
  return fmt::format("{} {} {} iter {}", e.event, e.trial_id, status,
                     IntField(body, "training_iteration"));
}

int64_t WatchState::Finished() const {
  int64_t n = 0;
  for (const auto& [id, t] : trials_) {
    const std::string status = StringField(t, "status");
    n += status == "TERMINATED" || status == "ERROR";
  }
  return n;
}

int64_t WatchState::Total() const {
  const int64_t total = IntField(experiment_, "total", -1);
  return total < 0 ? total : std::max(total, int64_t(trials_.size()));
}

json WatchState::Trials() const {
  json list = json::array();
  for (const auto& [id, t] : trials_) list.push_back(t);
  return list;
}

json WatchState::Summary() const {
  json summary = experiment_;
  json counts = json::object();
  for (const auto& [id, t] : trials_) {
    const std::string status = StringField(t, "status", "UNKNOWN");
    counts[status] = IntField(counts, status.c_str()) + 1;
  }
  summary["counts"] = counts;
  summary["total"] = Total();
  return summary;
}

Result<std::string> WatchEndpoint(const std::string& control, const nlohmann::json& experiment) {
  std::string events = StringField(experiment, "events_endpoint");
  if (events.empty()) {
    return Status::FailedPrecondition(
        "the scheduler does not say where its event stream is; pass --events");
  }
  if (events.rfind("inproc://", 0) == 0) {
    return Status::FailedPrecondition(
        "the scheduler's event stream is in-process (" + events +
        "): run the suite with `tunectl up` or as services to watch it from another terminal");
  }
  // A scheduler bound to every interface (tcp://0.0.0.0:P, tcp://*:P) is reached at the host the
  // control socket was reached at.
  for (const char* any : {"tcp://0.0.0.0:", "tcp://*:"}) {
    const std::string prefix = any;
    if (events.rfind(prefix, 0) == 0 && control.rfind("tcp://", 0) == 0) {
      const std::string host = control.substr(0, control.rfind(':') + 1);
      events = host + events.substr(prefix.size());
    }
  }
  return events;
}

}  // namespace tunebus
