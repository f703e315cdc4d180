// CheckpointFailureMode: what a trial does when a checkpoint it was asked for is not stored (the
// checkpoint-store refused it, e.g. its disk is full). Spelled as the experiment file's
// `checkpoint_failure` value: continue, pause or fail (docs/reference/experiment-file.md,
// docs/how-to/outages.md "A checkpoint the store refuses").
#pragma once

#include <string_view>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

enum class CheckpointFailureMode {
  kContinue,  // "continue": noted on the trial, which keeps running (Ray Tune 2.x's syncer)
  kPause,     // "pause": the trial pauses at its next result, as `tunectl pause` does
  kFail,      // "fail": a trial failure (max_failures retries from the newest stored one)
};

inline constexpr EnumName<CheckpointFailureMode> kCheckpointFailureModeNames[] = {
    {CheckpointFailureMode::kContinue, "continue"},
    {CheckpointFailureMode::kPause, "pause"},
    {CheckpointFailureMode::kFail, "fail"},
};

/// "continue" | "pause" | "fail".
inline const char* CheckpointFailureModeName(CheckpointFailureMode mode) {
  return NameIn(kCheckpointFailureModeNames, mode);
}
/// Parses "continue", "pause" or "fail". Errors: InvalidArgument naming the word.
inline Result<CheckpointFailureMode> ParseCheckpointFailureMode(std::string_view word) {
  return ParseIn(kCheckpointFailureModeNames, word, "checkpoint_failure");
}

}  // namespace tunebus
