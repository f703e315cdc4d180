#include "libs/tune/trial_scheduler.hpp"

#include <fmt/format.h>

namespace tunebus {

const char* DecisionName(Decision d) {
  switch (d) {
    case Decision::kContinue:
      return "continue";
    case Decision::kPause:
      return "pause";
    case Decision::kStop:
      return "stop";
  }
  return "continue";
}

Status TrialScheduler::RequireNumbers(
    const TrainingResult& result,
    std::initializer_list<std::pair<const char*, std::string>> role_and_key) const {
  for (const auto& [role, key] : role_and_key) {
    if (result.Number(key)) continue;
    const std::vector<std::string> keys = result.Keys();
    return Status::InvalidArgument(
        fmt::format("result has no number '{}' (needed by the {} scheduler as its {}); "
                    "its keys: {}",
                    key, name(), role, fmt::join(keys, ", ")));
  }
  return Status::Ok();
}

}  // namespace tunebus
