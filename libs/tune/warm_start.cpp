#include "libs/tune/warm_start.hpp"

#include <cmath>
#include <limits>

#include "libs/core/fields.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

using nlohmann::json;

WarmStart::WarmStart(std::unique_ptr<Searcher> inner, std::vector<std::string> experiments,
                     json sources)
    : SearcherWrapper(std::move(inner)),
      experiments_(std::move(experiments)),
      sources_(std::move(sources)) {}

Status WarmStart::SetSearchProperties(const std::string& metric, const std::string& mode,
                                      const json& param_space) {
  param_space_ = param_space;
  if (metric.empty()) {
    return Status::InvalidArgument(
        "warm_start: observations are values of the experiment's metric; set `metric` and "
        "`mode`");
  }
  return inner_->SetSearchProperties(metric, mode, param_space);
}

void WarmStart::Feed() {
  if (fed_) return;
  int64_t fed = 0, skipped = 0;
  if (sources_.is_array()) {
    for (const json& source : sources_) {
      if (!source.is_object() || !source.contains("observations")) continue;
      for (const json& o : source["observations"]) {
        const json config = o.value("config", json());
        const json value = o.value("value", json());
        if (!value.is_number() || !VariantGenerator::ValidatePoint(param_space_, config).ok()) {
          ++skipped;
          continue;
        }
        const json budget = o.value("budget", json());
        const double b =
            budget.is_number() ? budget.get<double>() : std::numeric_limits<double>::quiet_NaN();
        if (inner_->AddEvaluatedPointAtBudget(config, value.get<double>(), b).ok()) {
          ++fed;
        } else {
          ++skipped;
        }
      }
    }
  }
  Record({{"fed", fed}, {"skipped", skipped}});
}

Suggestion WarmStart::Suggest(const std::string& trial_id) {
  Feed();
  return inner_->Suggest(trial_id);
}

json WarmStart::Describe() const {
  json d = inner_->Describe();
  d["warm_start"] = {
      {"experiments", experiments_}, {"observations", observations_}, {"skipped", skipped_}};
  return d;
}

Status WarmStart::Apply(const json& event) {
  if (event.is_object() && event.contains("fed") && event["fed"].is_number_integer() &&
      event.value("skipped", json()).is_number_integer()) {
    fed_ = true;
    observations_ = fields::GetInteger<int64_t>(event["fed"]);
    skipped_ = fields::GetInteger<int64_t>(event["skipped"]);
    return Status::Ok();
  }
  return Status::Corruption("warm_start: unknown event " + event.dump());
}

json WarmStart::SaveOwn() const {
  return {{"fed", fed_}, {"observations", observations_}, {"skipped", skipped_}};
}

Status WarmStart::RestoreOwn(const json& own) {
  fed_ = false;
  observations_ = skipped_ = 0;
  if (own.is_null()) return Status::Ok();
  try {
    fed_ = own.at("fed").get<bool>();
    observations_ = fields::GetInteger<int64_t>(own.at("observations"));
    skipped_ = fields::GetInteger<int64_t>(own.at("skipped"));
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("warm_start state: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace tunebus
