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

nlohmann::json JournaledTrialScheduler::TakeStateDelta() {
  if (delta_.empty()) return nullptr;
  return std::exchange(delta_, nlohmann::json::array());
}

Status JournaledTrialScheduler::ApplyStateDelta(const nlohmann::json& delta) {
  if (!delta.is_array())
    return Status::Corruption(std::string(name()) + ": a state delta is an array of events");
  for (const nlohmann::json& e : delta) {
    if (Status s = Apply(e); !s.ok()) return s;
  }
  return Status::Ok();
}

void JournaledTrialScheduler::Record(nlohmann::json event) {
  (void)Apply(event);
  delta_.push_back(std::move(event));
}

}  // namespace tunebus
