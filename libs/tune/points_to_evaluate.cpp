#include "libs/tune/points_to_evaluate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "libs/core/fields.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): the seed of point `i`'s draws.
uint64_t PointSeed(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The param space with the point's values in place of the samplers and constants they name
// (Ray's count_variants deep_update of the spec's config with the preset).
json Substitute(const json& space, const json& point) {
  json out = space;
  for (const auto& [key, value] : point.items()) {
    json& node = out[key];
    if (node.is_object() && value.is_object() && !VariantGenerator::IsSampler(node)) {
      node = Substitute(node, value);
    } else {
      node = value;
    }
  }
  return out;
}

// Dotted paths of the samplers of `space` that `point` does not give.
void MissingSampled(const json& space, const json& point, const std::string& path,
                    std::vector<std::string>* missing) {
  for (const auto& [key, node] : space.items()) {
    const std::string where = path.empty() ? key : path + "." + key;
    const bool given = point.is_object() && point.contains(key);
    if (VariantGenerator::IsSampler(node)) {
      if (!given) missing->push_back(where);
    } else if (node.is_object()) {
      MissingSampled(node, given ? point[key] : json::object(), where, missing);
    }
  }
}

}  // namespace

PointsToEvaluate::PointsToEvaluate(std::unique_ptr<Searcher> inner, std::vector<json> points,
                                   std::vector<double> rewards, uint64_t seed)
    : SearcherWrapper(std::move(inner)),
      points_(std::move(points)),
      rewards_(std::move(rewards)),
      seed_(seed) {}

Status PointsToEvaluate::SetSearchProperties(const std::string& metric, const std::string& mode,
                                             const json& param_space) {
  metric_ = metric;
  param_space_ = param_space;
  expansions_.clear();
  if (!RunsPoints() && metric.empty()) {
    return Status::InvalidArgument(
        "evaluated_rewards: rewards are values of the experiment's metric; set `metric` and "
        "`mode`");
  }
  for (size_t i = 0; i < points_.size(); ++i) {
    const std::string where = fmt::format("points_to_evaluate[{}]", i);
    if (!points_[i].is_object()) {
      return Status::InvalidArgument(fmt::format(
          "{}: a point is a map of config keys to values, got {}", where, points_[i].dump()));
    }
    if (Status s = VariantGenerator::ValidatePoint(param_space, points_[i]); !s.ok()) {
      return Status::InvalidArgument(where + "." + s.message());
    }
    if (!RunsPoints()) {
      std::vector<std::string> missing;
      MissingSampled(param_space, points_[i], "", &missing);
      if (!missing.empty()) {
        return Status::InvalidArgument(fmt::format(
            "{}: a point with a reward (evaluated_rewards) gives every sampled key; it lacks {}",
            where, fmt::join(missing, ", ")));
      }
    }
    expansions_.push_back(PointGenerator(i)->Total());
  }
  return inner_->SetSearchProperties(metric, mode, param_space);
}

std::unique_ptr<VariantGenerator> PointsToEvaluate::PointGenerator(size_t i) const {
  return std::make_unique<VariantGenerator>(Substitute(param_space_, points_[i]), 1,
                                            PointSeed(seed_, i));
}

void PointsToEvaluate::FeedRewards() {
  if (fed_ || RunsPoints()) return;
  for (size_t i = 0; i < points_.size(); ++i) {
    (void)inner_->AddEvaluatedPoint(points_[i], rewards_[i]);  // validated in SetSearchProperties
  }
  Record({{"fed", true}});
}

Suggestion PointsToEvaluate::Suggest(const std::string& trial_id) {
  FeedRewards();
  if (auto it = live_.find(trial_id); it != live_.end()) {
    return Suggestion::Config(it->second.config, it->second.tag);
  }
  if (!RunsPoints() || point_ >= int64_t(points_.size())) return inner_->Suggest(trial_id);
  if (!current_ || current_point_ != point_ || current_->produced() != within_) {
    current_ = PointGenerator(size_t(point_));
    current_point_ = point_;
    for (int64_t k = 0; k < within_ && current_->HasNext(); ++k) (void)current_->Next();
  }
  Variant v = current_->Next();
  Record({{"serve", trial_id}, {"config", v.config}, {"tag", v.tag}});
  return Suggestion::Config(std::move(v.config), std::move(v.tag));
}

void PointsToEvaluate::OnTrialResult(const std::string& trial_id, const TrainingResult& result) {
  if (!live_.contains(trial_id)) inner_->OnTrialResult(trial_id, result);
}

void PointsToEvaluate::OnTrialComplete(const std::string& trial_id,
                                       const TrainingResult* last_result, bool error) {
  auto it = live_.find(trial_id);
  if (it == live_.end()) {
    inner_->OnTrialComplete(trial_id, last_result, error);
    return;
  }
  const json config = it->second.config;
  Record({{"done", trial_id}});
  if (error || last_result == nullptr || metric_.empty()) return;
  if (auto value = last_result->Number(metric_)) (void)inner_->AddEvaluatedPoint(config, *value);
}

int64_t PointsToEvaluate::Total() const {
  const int64_t inner = inner_->Total();
  if (!RunsPoints() || inner < 0) return inner;
  int64_t total = inner;
  for (size_t i = 0; i < points_.size(); ++i) total += i < expansions_.size() ? expansions_[i] : 1;
  return total;
}

json PointsToEvaluate::Describe() const {
  json d = inner_->Describe();
  if (d.contains("suggested")) d["suggested"] = suggested();  // the points' trials count too
  if (d.contains("total")) d["total"] = Total();
  if (RunsPoints()) {
    d["points_to_evaluate"] = points_.size();
    d["points_served"] = served_;
  } else {
    d["evaluated_rewards"] = points_.size();
  }
  return d;
}

Status PointsToEvaluate::Apply(const json& event) {
  if (!event.is_object())
    return Status::Corruption("points_to_evaluate: unknown event " + event.dump());
  if (event.contains("fed")) {
    fed_ = true;
    return Status::Ok();
  }
  if (auto it = event.find("serve"); it != event.end() && it->is_string()) {
    live_[it->get<std::string>()] = {event.value("config", json::object()),
                                     event.value("tag", std::string())};
    ++served_;
    ++within_;
    const int64_t expansion = size_t(point_) < expansions_.size() ? expansions_[size_t(point_)] : 1;
    if (within_ >= expansion) {
      ++point_;
      within_ = 0;
    }
    return Status::Ok();
  }
  if (auto it = event.find("done"); it != event.end() && it->is_string()) {
    live_.erase(it->get<std::string>());
    return Status::Ok();
  }
  return Status::Corruption("points_to_evaluate: unknown event " + event.dump());
}

json PointsToEvaluate::SaveOwn() const {
  json live = json::object();
  for (const auto& [id, t] : live_) live[id] = {{"config", t.config}, {"tag", t.tag}};
  return {{"fed", fed_},
          {"point", point_},
          {"within", within_},
          {"served", served_},
          {"live", std::move(live)}};
}

Status PointsToEvaluate::RestoreOwn(const json& own) {
  fed_ = false;
  point_ = within_ = served_ = 0;
  live_.clear();
  current_.reset();
  current_point_ = -1;
  if (own.is_null()) return Status::Ok();
  try {
    fed_ = own.at("fed").get<bool>();
    point_ = fields::GetInteger<int64_t>(own.at("point"));
    within_ = fields::GetInteger<int64_t>(own.at("within"));
    served_ = fields::GetInteger<int64_t>(own.at("served"));
    for (const auto& [id, t] : own.at("live").items()) {
      live_[id] = {t.at("config"), t.at("tag").get<std::string>()};
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("points_to_evaluate state: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace tunebus
