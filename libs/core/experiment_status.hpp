// ExperimentStatus: where an experiment is in its life (Ray Tune's experiment states), spelled
// as in the journal's experiment_ended record, the snapshot and the control replies.
#pragma once

#include <string_view>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

enum class ExperimentStatus {
  kRunning,      // trials remain to run
  kFinished,     // every trial finished (or the time budget ran out)
  kStopped,      // stopped by the user
  kError,        // fail_fast and a trial errored, or every trial ended in ERROR
  kInterrupted,  // interrupted by the user (Ctrl-C): unfinished trials wait; Reopen continues it
};

inline constexpr EnumName<ExperimentStatus> kExperimentStatusNames[] = {
    {ExperimentStatus::kRunning, "RUNNING"},         {ExperimentStatus::kFinished, "FINISHED"},
    {ExperimentStatus::kStopped, "STOPPED"},         {ExperimentStatus::kError, "ERROR"},
    {ExperimentStatus::kInterrupted, "INTERRUPTED"},
};

/// "RUNNING" | "FINISHED" | "STOPPED" | "ERROR" | "INTERRUPTED".
inline const char* ExperimentStatusName(ExperimentStatus status) {
  return NameIn(kExperimentStatusNames, status);
}
/// Parses a status name (exact spelling). Errors: InvalidArgument naming it.
inline Result<ExperimentStatus> ParseExperimentStatus(std::string_view name) {
  return ParseIn(kExperimentStatusNames, name, "experiment status");
}

}  // namespace tunebus
