#include "libs/tune/stop_criteria.hpp"

#include <fmt/format.h>

#include <vector>

#include "libs/core/near_miss.hpp"

namespace tunebus {

Status StopCriteria::Validate(const TrainingResult& result) {
  for (const auto& [key, threshold] : stop_) {
    if (result.Has(key)) {
      seen_.insert(key);
      continue;
    }
    if (seen_.contains(key)) continue;
    const std::vector<std::string> keys = result.Keys();
    std::string listed;
    for (const std::string& k : keys) listed += (listed.empty() ? "" : ", ") + k;
    const auto meant = NearMiss(key, keys);
    return Status::InvalidArgument(
        fmt::format("stop criterion '{}' is not in the result{} (its keys: {})", key,
                    meant ? "; did you mean " + *meant + "?" : "", listed));
  }
  return Status::Ok();
}

bool StopCriteria::Met(const TrainingResult& result) const {
  for (const auto& [key, threshold] : stop_) {
    if (auto value = result.Number(key); value && *value >= threshold) return true;
  }
  return false;
}

void StopCriteria::MarkAllSeen() {
  for (const auto& [key, threshold] : stop_) seen_.insert(key);
}

}  // namespace tunebus
