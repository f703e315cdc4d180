// Reading a trial scheduler's parameters (the experiment file's `scheduler:` map, as JSON) with
// errors that name the parameter: every Status from here reads "<param>: <what is wrong>", so
// the spec parser can point at the parameter's line (libs/spec).
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/status.hpp"

namespace tunebus {

class SchedulerParams {
 public:
  /// `config`: the parameters (an object); `scheduler`: its name, for messages.
  SchedulerParams(const nlohmann::json& config, std::string scheduler);

  /// A number; `def` when absent. Errors: InvalidArgument if not a number or below `min`
  /// (or not above it when `exclusive`).
  Result<double> Number(const char* key, double def, double min, bool exclusive = false) const;
  /// An integer; `def` when absent. Errors: InvalidArgument if not an integer or below `min`.
  Result<int64_t> Int(const char* key, int64_t def, int64_t min) const;
  Result<bool> Bool(const char* key, bool def) const;
  /// A string, one of `allowed` when given. `def` when absent.
  Result<std::string> String(const char* key, const std::string& def,
                             std::initializer_list<const char*> allowed = {}) const;
  /// The metric and mode: the scheduler's own `metric`/`mode`, else the experiment's (Ray Tune:
  /// schedulers inherit tune.run's metric and mode). Errors: InvalidArgument "metric: ..." when
  /// neither names one.
  Status MetricAndMode(const std::string& experiment_metric, const std::string& experiment_mode,
                       std::string* metric, std::string* mode) const;
  /// InvalidArgument "<key>: unknown parameter of <scheduler> (known: ...)" for the first key
  /// not in `known` ("type", "metric" and "mode" are always known).
  Status OnlyKnown(std::initializer_list<const char*> known) const;

  const nlohmann::json& config() const { return config_; }

 private:
  Status Error(const char* key, const std::string& message) const;
  nlohmann::json config_;
  std::string scheduler_;
};

/// The q-th percentile (0..100) of `values` with linear interpolation between closest ranks,
/// as numpy.percentile / nanpercentile. REQUIRES: values not empty.
double Percentile(std::vector<double> values, double q);
/// The same for values already sorted ascending: O(1). REQUIRES: sorted not empty.
double PercentileOfSorted(const std::vector<double>& sorted, double q);

}  // namespace tunebus
