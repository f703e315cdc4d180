#include "libs/tune/scheduler_params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tunebus {

using nlohmann::json;

SchedulerParams::SchedulerParams(const json& config, std::string scheduler)
    : config_(config.is_object() ? config : json::object()), scheduler_(std::move(scheduler)) {}

Status SchedulerParams::Error(const char* key, const std::string& message) const {
  return Status::InvalidArgument(fmt::format("{}: {}", key, message));
}

Result<double> SchedulerParams::Number(const char* key, double def, double min,
                                       bool exclusive) const {
  if (!config_.contains(key)) return def;
  const json& v = config_[key];
  if (!v.is_number()) return Error(key, fmt::format("must be a number, got {}", v.dump()));
  const double x = v.get<double>();
  if (!std::isfinite(x) || (exclusive ? x <= min : x < min)) {
    return Error(key, fmt::format("must be {} {}, got {}", exclusive ? ">" : ">=", min, v.dump()));
  }
  return x;
}

Result<int64_t> SchedulerParams::Int(const char* key, int64_t def, int64_t min) const {
  if (!config_.contains(key)) return def;
  const json& v = config_[key];
  if (!v.is_number_integer())
    return Error(key, fmt::format("must be an integer, got {}", v.dump()));
  const int64_t x = v.get<int64_t>();
  if (x < min) return Error(key, fmt::format("must be >= {}, got {}", min, x));
  return x;
}

Result<bool> SchedulerParams::Bool(const char* key, bool def) const {
  if (!config_.contains(key)) return def;
  if (!config_[key].is_boolean())
    return Error(key, fmt::format("must be true or false, got {}", config_[key].dump()));
  return config_[key].get<bool>();
}

Result<std::string> SchedulerParams::String(const char* key, const std::string& def,
                                            std::initializer_list<const char*> allowed) const {
  if (!config_.contains(key)) return def;
  if (!config_[key].is_string())
    return Error(key, fmt::format("must be a string, got {}", config_[key].dump()));
  std::string s = config_[key].get<std::string>();
  if (allowed.size() > 0 &&
      std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return s == a; })) {
    return Error(key, fmt::format("must be one of {}, got '{}'", fmt::join(allowed, ", "), s));
  }
  return s;
}

Status SchedulerParams::MetricAndMode(const std::string& experiment_metric,
                                      const std::string& experiment_mode, std::string* metric,
                                      std::string* mode) const {
  auto m = String("metric", experiment_metric);
  if (!m.ok()) return m.status();
  auto md = String("mode", experiment_mode, {"max", "min"});
  if (!md.ok()) return md.status();
  if (m->empty()) {
    return Error("metric",
                 fmt::format("the {} scheduler needs a metric: set `metric` and `mode` in the "
                             "experiment (or in the scheduler)",
                             scheduler_));
  }
  if (md->empty())
    return Error("mode", fmt::format("the {} scheduler needs a mode (max or min)", scheduler_));
  *metric = *m;
  *mode = *md;
  return Status::Ok();
}

Status SchedulerParams::OnlyKnown(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : config_.items()) {
    (void)value;
    if (key == "type" || key == "metric" || key == "mode") continue;
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      return Status::InvalidArgument(
          fmt::format("{}: unknown parameter of the {} scheduler (known: {})", key, scheduler_,
                      fmt::join(known, ", ")));
    }
  }
  return Status::Ok();
}

double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, q);
}

double PercentileOfSorted(const std::vector<double>& sorted, double q) {
  const double rank = q / 100.0 * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

}  // namespace tunebus
