// Scheduler event stream (PUB). Two frames: topic ("trial" | "experiment"), then the message.
// Subscribers (tunectl watch, dashboards) get every trial status change and result summary.
#pragma once

#include <string>

#include "proto/envelope.hpp"

namespace tunebus::proto {

struct SchedulerEvent {
  TUNEBUS_ENVELOPE("scheduler_event");
  std::string event;  // "trial_added" | "trial_started" | "trial_result" | "trial_status" |
                      // "experiment_ended"
  std::string experiment;
  std::string trial_id;   // empty for experiment events
  std::string body_json;  // the trial object (as in list_trials) or the experiment summary
  TUNEBUS_DEFINE_MAP(v, type, id, event, experiment, trial_id, body_json)
};

}  // namespace tunebus::proto
