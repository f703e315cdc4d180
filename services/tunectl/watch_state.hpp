// WatchState: what `tunectl watch` knows of an experiment, kept up to date from the scheduler's
// event stream (proto/events.hpp). Events come from the network: every shape is accepted, a
// field of the wrong type or a body that is not an object is ignored, and nothing throws.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "libs/core/status.hpp"
#include "proto/events.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {

/// Where to subscribe to the events of the scheduler reached at `control`: the
/// `events_endpoint` its get_experiment answer names, with a wildcard host replaced by
/// `control`'s. Errors: FailedPrecondition when it names none or an in-process one.
Result<std::string> WatchEndpoint(const std::string& control, const nlohmann::json& experiment);

class WatchState {
 public:
  /// Starts from the control socket's snapshot: `experiment` (get_experiment's body) and
  /// `trials` (list_trials' array); anything else is taken as empty.
  WatchState(const nlohmann::json& experiment, const nlohmann::json& trials);

  /// Applies one event. Returns the line a non-terminal output prints for it (a trial's status
  /// change or start), if any.
  std::optional<std::string> Apply(const proto::SchedulerEvent& event);

  /// experiment_ended arrived; its status ("FINISHED", ...) in ended_status().
  bool ended() const { return ended_; }
  const std::string& ended_status() const { return ended_status_; }
  /// The experiment summary with the counts, total and trials as they are now: total is at
  /// least the number of trials known (trials added with `tunectl add` count), -1 if unbounded.
  nlohmann::json Summary() const;
  /// The trials, by id, as list_trials shows them.
  nlohmann::json Trials() const;
  /// Trials TERMINATED or ERROR, and the total (see Summary).
  int64_t Finished() const;
  int64_t Total() const;

 private:
  nlohmann::json experiment_;
  std::map<std::string, nlohmann::json> trials_;
  bool ended_ = false;
  std::string ended_status_;
};

}  // namespace tunebus
