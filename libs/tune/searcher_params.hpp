// Reading a searcher's options (the experiment file's `search:` map, as JSON) with errors that
// name the field: every Status from here reads "<key>: <what is wrong>" (the spec parser adds
// "search." and the key's line). The typed readers are SchedulerParams' (scheduler_params.hpp).
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/status.hpp"
#include "libs/tune/scheduler_params.hpp"

namespace tunebus {

class SearcherParams {
 public:
  /// `config`: the `search:` map (an object); `searcher`: its type ("tpe"), for messages.
  SearcherParams(const nlohmann::json& config, std::string searcher);

  /// As SchedulerParams::Number / Int / Bool / String.
  Result<double> Number(const char* key, double def, double min, bool exclusive = false) const;
  Result<int64_t> Int(const char* key, int64_t def, int64_t min) const;
  Result<bool> Bool(const char* key, bool def) const;
  Result<std::string> String(const char* key, const std::string& def,
                             std::initializer_list<const char*> allowed = {}) const;
  /// InvalidArgument "<key>: <message>".
  static Status Error(const char* key, const std::string& message);
  /// A model-based or external searcher's SetSearchProperties check: InvalidArgument "metric:
  /// search: <searcher> needs a metric to model: ..." or "mode: ... needs a mode, max or min".
  static Status RequireMetricAndMode(const char* searcher, const std::string& metric,
                                     const std::string& mode);
  /// InvalidArgument "<key>: unknown parameter of <searcher> (known: ...)" for the first
  /// key neither in `known` nor one the runner reads ("type", "metric", "mode",
  /// "max_concurrent", "points_to_evaluate", "evaluated_rewards", "warm_start").
  Status OnlyKnown(std::initializer_list<const char*> known) const;

 private:
  SchedulerParams params_;
  std::string searcher_;
};

}  // namespace tunebus
