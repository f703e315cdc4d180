// Journaled<Base>: a trial scheduler or searcher whose state changes only through events (small
// JSON values of its own shape) applied by Apply, both live and when a resume replays the
// journal. Record applies an event and keeps it for the next TakeStateDelta, so what is
// journaled is exactly what changed (DESIGN.md "Journal and recovery").
//
// Base is TrialScheduler or Searcher: each declares name(), TakeStateDelta() and
// ApplyStateDelta(delta) with this meaning.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "libs/core/status.hpp"

namespace tunebus {

template <typename Base>
class Journaled : public Base {
 public:
  /// The events recorded since the last call (a JSON array), or null if none.
  nlohmann::json TakeStateDelta() final {
    if (delta_.empty()) return nullptr;
    return std::exchange(delta_, nlohmann::json::array());
  }
  /// Applies each event of a delta in order. Errors: Corruption from Apply, or a delta that is
  /// not an array.
  Status ApplyStateDelta(const nlohmann::json& delta) final {
    if (!delta.is_array()) {
      return Status::Corruption(std::string(this->name()) +
                                ": a state delta is an array of events");
    }
    for (const nlohmann::json& event : delta) {
      if (Status s = Apply(event); !s.ok()) return s;
    }
    return Status::Ok();
  }

 protected:
  /// The one place the state changes. Errors: Corruption for an event it does not know.
  virtual Status Apply(const nlohmann::json& event) = 0;
  /// Applies `event` and keeps it for the next delta.
  void Record(nlohmann::json event) {
    (void)Apply(event);
    delta_.push_back(std::move(event));
  }
  /// Forgets recorded events (RestoreState replaces the whole state).
  void ClearDelta() { delta_ = nlohmann::json::array(); }

 private:
  nlohmann::json delta_ = nlohmann::json::array();
};

}  // namespace tunebus
