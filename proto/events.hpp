// Scheduler event stream (PUB). Two frames: topic ("trial" | "experiment"), then the message.
// Subscribers (tunectl watch, dashboards) get every trial status change and result summary.
#pragma once

#include <string>
#include <string_view>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"
#include "proto/envelope.hpp"

namespace tunebus::proto {

/// What a SchedulerEvent reports.
enum class SchedulerEventKind {
  kTrialAdded,       // "trial_added": a trial was created (PENDING)
  kTrialStarted,     // "trial_started": an attempt is RUNNING on a worker
  kTrialResult,      // "trial_result": a result was accepted
  kTrialStatus,      // "trial_status": the status changed to something other than RUNNING
  kCheckpointSaved,  // "checkpoint_saved": a checkpoint was stored (body: the checkpoint)
  kTrialUpdated,     // "trial_updated": config or resources changed (set-resources, PBT)
  kExperimentEnded,  // "experiment_ended": body {status, reason}
};

inline constexpr EnumName<SchedulerEventKind> kSchedulerEventKindNames[] = {
    {SchedulerEventKind::kTrialAdded, "trial_added"},
    {SchedulerEventKind::kTrialStarted, "trial_started"},
    {SchedulerEventKind::kTrialResult, "trial_result"},
    {SchedulerEventKind::kTrialStatus, "trial_status"},
    {SchedulerEventKind::kCheckpointSaved, "checkpoint_saved"},
    {SchedulerEventKind::kTrialUpdated, "trial_updated"},
    {SchedulerEventKind::kExperimentEnded, "experiment_ended"},
};

/// The `event` word, e.g. "trial_result".
inline const char* SchedulerEventKindName(SchedulerEventKind kind) {
  return NameIn(kSchedulerEventKindNames, kind);
}
/// Errors: InvalidArgument naming an unknown event word.
inline Result<SchedulerEventKind> ParseSchedulerEventKind(std::string_view word) {
  return ParseIn(kSchedulerEventKindNames, word, "scheduler event");
}
/// The topic frame the event is sent under: "experiment" for experiment_ended, else "trial".
inline const char* SchedulerEventTopic(SchedulerEventKind kind) {
  return kind == SchedulerEventKind::kExperimentEnded ? "experiment" : "trial";
}

struct SchedulerEvent {
  TUNEBUS_ENVELOPE("scheduler_event");
  std::string event;  // SchedulerEventKindName
  std::string experiment;
  std::string trial_id;   // empty for experiment events
  std::string body_json;  // the trial object (as in list_trials) or the experiment summary
  TUNEBUS_DEFINE_MAP(v, type, id, event, experiment, trial_id, body_json)
};

}  // namespace tunebus::proto
