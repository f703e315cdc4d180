#include "libs/tune/journaled_searcher.hpp"

#include <string>
#include <utility>

namespace tunebus {

nlohmann::json JournaledSearcher::TakeStateDelta() {
  if (delta_.empty()) return nullptr;
  return std::exchange(delta_, nlohmann::json::array());
}

Status JournaledSearcher::ApplyStateDelta(const nlohmann::json& delta) {
  if (!delta.is_array()) {
    return Status::Corruption(std::string(name()) + ": a state delta is an array of events");
  }
  for (const nlohmann::json& event : delta) {
    if (Status s = Apply(event); !s.ok()) return s;
  }
  return Status::Ok();
}

void JournaledSearcher::Record(nlohmann::json event) {
  (void)Apply(event);
  delta_.push_back(std::move(event));
}

}  // namespace tunebus
