#include "libs/tune/multiobjective_searcher.hpp"

#include <fmt/format.h>

#include <cmath>

#include "libs/core/fields.hpp"
#include "libs/tune/searcher_params.hpp"

namespace tunebus {

using nlohmann::json;

MultiObjectiveSearcher::MultiObjectiveSearcher(std::vector<Objective> objectives,
                                               int64_t num_samples, uint64_t seed)
    : objectives_(std::move(objectives)),
      objectives_given_(!objectives_.empty()),
      num_samples_(num_samples),
      seed_(seed) {}

Status MultiObjectiveSearcher::SetSearchProperties(const std::string& metric,
                                                   const std::string& mode,
                                                   const json& param_space) {
  if (!objectives_given_) {
    if (Status s = SearcherParams::RequireMetricAndMode(name(), metric, mode); !s.ok()) return s;
    objectives_ = {{metric, mode}};
  }
  for (const Objective& o : objectives_) {
    if (Status s = SearcherParams::RequireMetricAndMode(name(), o.metric, o.mode); !s.ok()) {
      return s;
    }
  }
  auto space = SearchSpace::Create(param_space, name());
  if (!space.ok()) return space.status();
  space_ = std::move(*space);
  return Status::Ok();
}

Suggestion MultiObjectiveSearcher::Suggest(const std::string& trial_id) {
  if (!space_) return Suggestion::Finished();
  if (trial_id.empty()) return Suggestion::NotNow();  // "" marks evaluated points
  if (auto it = index_.find(trial_id); it != index_.end()) {
    const json& config = trials_[it->second].config;
    return Suggestion::Config(config, space_->Tag(config));
  }
  const int64_t k = suggested_;
  if (num_samples_ >= 0 && k >= num_samples_) return Suggestion::Finished();
  SearchRng rng(seed_, uint64_t(k));
  int64_t generation = -1;
  json config = NewConfig(rng, &generation);
  std::string tag = space_->Tag(config);
  json event = {{"suggest", trial_id}, {"config", config}};
  if (generation >= 0) event["generation"] = generation;
  Record(std::move(event));
  return Suggestion::Config(std::move(config), std::move(tag));
}

void MultiObjectiveSearcher::OnTrialComplete(const std::string& trial_id,
                                             const TrainingResult* last_result, bool error) {
  auto it = index_.find(trial_id);
  if (it == index_.end() || trials_[it->second].state != TrialState::kRunning) return;
  json losses = nullptr;
  if (!error && last_result != nullptr) {
    if (auto l = Losses(objectives_, last_result->ToJson())) losses = *l;
  }
  Record({{"complete", trial_id}, {"losses", losses}});
}

Status MultiObjectiveSearcher::AddEvaluatedPoint(const json& config, double value) {
  if (!space_) {
    return Status::FailedPrecondition(
        fmt::format("{}: AddEvaluatedPoint before SetSearchProperties", name()));
  }
  if (objectives_.size() != 1) {
    return Status::InvalidArgument(fmt::format(
        "evaluated_rewards: one number per point cannot give the {} objectives of search: {}",
        objectives_.size(), name()));
  }
  if (!std::isfinite(value)) return Status::Ok();
  std::vector<double> row(space_->size());
  if (config.is_object()) space_->Encode(config, row.data());
  for (size_t d = 0; d < row.size(); ++d) {
    if (!config.is_object() || std::isnan(row[d])) {
      return Status::InvalidArgument(
          fmt::format("{}: the evaluated point has no value of this param in its domain: {}",
                      space_->dims()[d].name, config.dump()));
    }
  }
  const double loss = objectives_[0].mode == "max" ? -value : value;
  Record({{"evaluated", config}, {"losses", json::array({loss})}});
  return Status::Ok();
}

namespace {

// A loss vector of `objectives` entries from an event, or nullopt.
std::optional<std::vector<double>> EventLosses(const json& losses, size_t objectives) {
  if (!losses.is_array() || losses.size() != objectives) return std::nullopt;
  std::vector<double> out;
  for (const json& v : losses) {
    if (!v.is_number()) return std::nullopt;
    out.push_back(v.get<double>());
  }
  return out;
}

}  // namespace

Status MultiObjectiveSearcher::Apply(const json& event) {
  auto corrupt = [&](const char* what) {
    return Status::Corruption(fmt::format("{}: {} {}", name(), what, event.dump()));
  };
  if (!event.is_object()) return corrupt("an event is an object, got");
  if (auto it = event.find("suggest"); it != event.end()) {
    auto config = event.find("config");
    if (!it->is_string() || config == event.end() || !config->is_object()) {
      return corrupt("bad suggest event");
    }
    const std::string& id = it->get_ref<const std::string&>();
    if (id.empty() || index_.count(id) != 0) return corrupt("trial suggested twice or unnamed:");
    Trial trial{id, *config, -1, TrialState::kRunning, {}};
    if (auto g = event.find("generation"); g != event.end()) {
      if (!g->is_number_integer()) return corrupt("bad generation in");
      trial.generation = fields::GetInteger<int64_t>(*g);
    }
    index_.emplace(id, trials_.size());
    trials_.push_back(std::move(trial));
    ++running_;
    ++suggested_;
    return Status::Ok();
  }
  if (auto it = event.find("evaluated"); it != event.end()) {
    auto losses = EventLosses(event.value("losses", json()), objectives_.size());
    if (!it->is_object() || !losses) return corrupt("bad evaluated event");
    trials_.push_back({"", *it, -1, TrialState::kComplete, std::move(*losses)});
    ++complete_;
    return Status::Ok();
  }
  if (auto it = event.find("complete"); it != event.end()) {
    const json value = event.value("losses", json());
    auto losses = EventLosses(value, objectives_.size());
    if (!it->is_string() || !(value.is_null() || losses)) return corrupt("bad complete event");
    auto found = index_.find(it->get<std::string>());
    if (found == index_.end()) return corrupt("complete event for a trial never suggested:");
    Trial& trial = trials_[found->second];
    if (trial.state == TrialState::kRunning) --running_;
    if (trial.state == TrialState::kComplete) --complete_;
    if (losses) {
      trial.state = TrialState::kComplete;
      trial.losses = std::move(*losses);
      ++complete_;
    } else {
      trial.state = TrialState::kDropped;
      trial.losses.clear();
    }
    return Status::Ok();
  }
  return corrupt("unknown event");
}

json MultiObjectiveSearcher::SaveState() const {
  json trials = json::array();
  for (const Trial& t : trials_) {
    const char* state = t.state == TrialState::kRunning    ? "running"
                        : t.state == TrialState::kComplete ? "complete"
                                                           : "dropped";
    trials.push_back({{"id", t.id},
                      {"config", t.config},
                      {"generation", t.generation},
                      {"state", state},
                      {"losses", t.state == TrialState::kComplete ? json(t.losses) : json()}});
  }
  return {{"trials", std::move(trials)}};
}

void MultiObjectiveSearcher::Reset() {
  trials_.clear();
  index_.clear();
  suggested_ = complete_ = running_ = 0;
}

Status MultiObjectiveSearcher::RestoreState(const json& state) {
  ClearDelta();
  Reset();
  if (state.is_null()) return Status::Ok();
  auto invalid = [&](const std::string& why) {
    Reset();
    return Status::InvalidArgument(fmt::format("{} state: {}", name(), why));
  };
  if (!state.is_object() || !state.contains("trials") || !state["trials"].is_array()) {
    return invalid("expected {\"trials\": [...]}");
  }
  for (const json& t : state["trials"]) {
    if (!t.is_object() || !t.contains("id") || !t.contains("config") || !t.contains("state")) {
      return invalid("a trial needs id, config and state, got " + t.dump());
    }
    const json& st = t["state"];
    // Replayed as the events that made it, so the checks are Apply's.
    if (t["id"] == "") {  // an evaluated point
      Status s = Apply({{"evaluated", t["config"]}, {"losses", t.value("losses", json())}});
      if (!s.ok()) return invalid(s.message());
      continue;
    }
    json suggest = {{"suggest", t["id"]}, {"config", t["config"]}};
    if (t.value("generation", json(-1)) != -1) suggest["generation"] = t["generation"];
    Status s = Apply(suggest);
    if (s.ok() && st != "running") {
      if (st != "complete" && st != "dropped") return invalid("unknown state " + st.dump());
      s = Apply({{"complete", t["id"]},
                 {"losses", st == "complete" ? t.value("losses", json()) : json()}});
    }
    if (!s.ok()) return invalid(s.message());
  }
  return Status::Ok();
}

}  // namespace tunebus
