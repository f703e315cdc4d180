// JournaledSearcher: a Searcher whose state changes only through events (small JSON values of
// its own shape) applied by Apply, both live and when a resume replays the journal — the
// pattern of JournaledTrialScheduler (trial_scheduler.hpp). Record applies an event and keeps
// it for the next TakeStateDelta, so what is journaled is exactly what changed.
#pragma once

#include <nlohmann/json.hpp>

#include "libs/core/status.hpp"
#include "libs/tune/searcher.hpp"

namespace tunebus {

class JournaledSearcher : public Searcher {
 public:
  /// The events recorded since the last call (a JSON array), or null if none.
  nlohmann::json TakeStateDelta() final;
  /// Applies each event of a delta in order. Errors: Corruption from Apply, or a delta that is
  /// not an array.
  Status ApplyStateDelta(const nlohmann::json& delta) final;

 protected:
  /// The one place the state changes. Errors: Corruption for an event it does not know.
  virtual Status Apply(const nlohmann::json& event) = 0;
  /// Applies `event` and keeps it for the next delta.
  void Record(nlohmann::json event);
  /// Forgets recorded events (RestoreState replaces the whole state).
  void ClearDelta() { delta_ = nlohmann::json::array(); }

 private:
  nlohmann::json delta_ = nlohmann::json::array();
};

}  // namespace tunebus
