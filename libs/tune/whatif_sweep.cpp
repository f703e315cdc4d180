#include "libs/tune/whatif_sweep.hpp"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "libs/tune/make_trial_scheduler.hpp"

namespace tunebus {

using nlohmann::json;

// Named (not anonymous): the unity build compiles this file with whatif.cpp, whose helpers
// have the same names.
namespace whatif_sweep {

json OrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json TotalsJson(const ReplayTotals& t) {
  return {{"training_iterations", t.training_iterations},
          {"trial_seconds", t.trial_seconds},
          {"best_final", OrNull(t.best_final)},
          {"best_trial_id", t.best_trial_id.empty() ? json(nullptr) : json(t.best_trial_id)}};
}

bool KeepsActualBest(const WhatIfReport& r) {
  return r.actual_best && (r.actual_best->fate == ReplayFate::kAsRecorded ||
                           r.actual_best->fate == ReplayFate::kUnknownBeyond);
}

}  // namespace whatif_sweep

Result<WhatIfScheduler> ParseWhatIfScheduler(const json& spec) {
  if (!spec.is_object()) {
    return Status::InvalidArgument(
        "scheduler: expected a map such as {type: asha, grace_period: 2}, got " + spec.dump());
  }
  WhatIfScheduler out;
  out.params = spec;
  if (auto type = spec.find("type"); type != spec.end()) {
    if (!type->is_string()) {
      return Status::InvalidArgument(
          "scheduler: type must be a name (fifo, asha, hyperband, "
          "hyperband_bohb, median_stopping), got " +
          type->dump());
    }
    out.type = type->get<std::string>();
    out.params.erase("type");
  }
  return out;
}

Status CheckWhatIfScheduler(const WhatIfScheduler& scheduler, const std::string& metric,
                            const std::string& mode) {
  if (scheduler.type == "pbt") {
    return Status::InvalidArgument(
        "pbt cannot be replayed: its exploit restarts a trial from another trial's checkpoint "
        "with a new config, a curve no recorded result holds");
  }
  Result<std::unique_ptr<TrialScheduler>> made =
      MakeTrialScheduler(scheduler.type, scheduler.params, metric, mode);
  return made.ok() ? Status::Ok() : made.status();
}

Result<std::vector<json>> ExpandSweep(const json& base, const json& grid) {
  if (!grid.is_object() || grid.empty()) {
    return Status::InvalidArgument(
        "sweep: expected a map of parameter lists such as {grace_period: [1, 2, 4]}, got " +
        grid.dump());
  }
  size_t settings = 1;
  for (const auto& [param, values] : grid.items()) {
    if (param == "type") {
      return Status::InvalidArgument(
          "sweep: type cannot be swept; sweep one scheduler's "
          "parameters and name the scheduler in --scheduler");
    }
    if (!values.is_array() || values.empty()) {
      return Status::InvalidArgument(
          fmt::format("sweep: {}: expected a non-empty list of values such as [1, 2, 4], got {}",
                      param, values.dump()));
    }
    settings *= values.size();
    if (settings > kMaxSweepSettings) {
      return Status::InvalidArgument(
          fmt::format("sweep: the grid has more than {} settings", kMaxSweepSettings));
    }
  }
  std::vector<json> out;
  std::vector<std::pair<std::string, const json*>> axes;
  for (const auto& [param, values] : grid.items()) axes.emplace_back(param, &values);
  std::vector<size_t> at(axes.size(), 0);
  for (size_t n = 0; n < settings; ++n) {
    json setting = base.is_object() ? base : json::object();
    for (size_t k = 0; k < axes.size(); ++k) setting[axes[k].first] = (*axes[k].second)[at[k]];
    out.push_back(std::move(setting));
    for (size_t k = axes.size(); k-- > 0;) {  // the last key varies fastest
      if (++at[k] < axes[k].second->size()) break;
      at[k] = 0;
    }
  }
  return out;
}

Result<json> SweepExperiment(const RecordedExperiment& experiment, const WhatIfScheduler& scheduler,
                             const json& grid, uint64_t seed,
                             const std::function<bool()>& cancelled) {
  Result<std::vector<json>> settings = ExpandSweep(scheduler.params, grid);
  if (!settings.ok()) return settings.status();
  json body = {{"scheduler", scheduler.type}, {"base", scheduler.params}, {"sweep", grid},
               {"metric", experiment.metric}, {"mode", experiment.mode},  {"rows", json::array()},
               {"cheapest_keeping", nullptr}};
  std::optional<size_t> cheapest;
  double cheapest_s = 0;
  int64_t cheapest_iterations = 0;
  for (size_t i = 0; i < settings->size(); ++i) {
    if (cancelled && cancelled()) return Status::Unavailable("the whatif sweep was cancelled");
    const json& config = (*settings)[i];
    json swept = json::object();
    for (const auto& [param, values] : grid.items()) swept[param] = config[param];
    Result<WhatIfReport> r = ReplayExperiment(experiment, scheduler.type, config, seed);
    if (!r.ok()) {
      return Status(r.status().code(),
                    fmt::format("sweep setting {}: {}", swept.dump(), r.status().message()));
    }
    if (i == 0) {
      body["trials"] = r->trials;
      body["actual"] = whatif_sweep::TotalsJson(r->actual);
    }
    const bool keeps = whatif_sweep::KeepsActualBest(*r);
    json row = whatif_sweep::TotalsJson(r->replay);
    row["setting"] = std::move(swept);
    row["scheduler_config"] = config;
    row["regret"] = whatif_sweep::OrNull(r->regret);
    row["keeps_actual_best"] = keeps;
    row["actual_best_fate"] = r->actual_best ? json(ReplayFateName(r->actual_best->fate)) : json();
    const bool stopped = r->actual_best && r->actual_best->fate == ReplayFate::kStopped;
    row["actual_best_stopped_at"] =
        stopped ? json(r->actual_best->last_training_iteration) : json(nullptr);
    row["actual_best_stop_detail"] = stopped ? r->actual_best->stop_detail : json(nullptr);
    row["trials_stopped"] = r->trials_stopped;
    row["trials_unknown_beyond"] = r->trials_unknown_beyond;
    row["trials_left_paused"] = r->trials_left_paused;
    if (keeps && (!cheapest || r->replay.trial_seconds < cheapest_s ||
                  (r->replay.trial_seconds == cheapest_s &&
                   r->replay.training_iterations < cheapest_iterations))) {
      cheapest = i;
      cheapest_s = r->replay.trial_seconds;
      cheapest_iterations = r->replay.training_iterations;
    }
    body["rows"].push_back(std::move(row));
  }
  if (cheapest) body["cheapest_keeping"] = *cheapest;
  return body;
}

}  // namespace tunebus
