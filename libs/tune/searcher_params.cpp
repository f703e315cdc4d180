#include "libs/tune/searcher_params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace tunebus {
namespace {

constexpr std::array<std::string_view, 7> kRunnerKeys = {
    "type",      "metric", "mode", "max_concurrent", "points_to_evaluate", "evaluated_rewards",
    "warm_start"};

}  // namespace

SearcherParams::SearcherParams(const nlohmann::json& config, std::string searcher)
    : params_(config, searcher), searcher_(std::move(searcher)) {}

Result<double> SearcherParams::Number(const char* key, double def, double min,
                                      bool exclusive) const {
  return params_.Number(key, def, min, exclusive);
}

Result<int64_t> SearcherParams::Int(const char* key, int64_t def, int64_t min) const {
  return params_.Int(key, def, min);
}

Result<bool> SearcherParams::Bool(const char* key, bool def) const {
  return params_.Bool(key, def);
}

Result<std::string> SearcherParams::String(const char* key, const std::string& def,
                                           std::initializer_list<const char*> allowed) const {
  return params_.String(key, def, allowed);
}

Status SearcherParams::Error(const char* key, const std::string& message) {
  return Status::InvalidArgument(fmt::format("{}: {}", key, message));
}

Status SearcherParams::RequireMetricAndMode(const char* searcher, const std::string& metric,
                                            const std::string& mode) {
  if (metric.empty()) {
    return Status::InvalidArgument(
        fmt::format("metric: search: {} needs a metric to model: set `metric` and `mode` in the "
                    "experiment",
                    searcher));
  }
  if (mode != "max" && mode != "min") {
    return Status::InvalidArgument(
        fmt::format("mode: search: {} needs a mode, max or min, got '{}'", searcher, mode));
  }
  return Status::Ok();
}

Status SearcherParams::OnlyKnown(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : params_.config().items()) {
    (void)value;
    if (std::find(kRunnerKeys.begin(), kRunnerKeys.end(), key) != kRunnerKeys.end()) continue;
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      return Status::InvalidArgument(fmt::format("{}: unknown parameter of {} (known: {})", key,
                                                 searcher_, fmt::join(known, ", ")));
    }
  }
  return Status::Ok();
}

}  // namespace tunebus
