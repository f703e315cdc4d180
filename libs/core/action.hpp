// Action: the worker action that answers a trial's result (what the scheduler tells the
// trial-worker, and the worker tells the trainable). Spelled as on the wire (proto::DecisionItem
// action), in the journal's result records and in the trainable's decision protocol.
#pragma once

#include <string_view>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

enum class Action {
  kContinue,           // "continue": go on with the next iteration
  kCheckpoint,         // "checkpoint": save a checkpoint before the next report, then go on
  kPause,              // "pause": save a checkpoint, then stop the trainable (trial -> PAUSED)
  kCheckpointAndStop,  // "checkpoint_and_stop": save a checkpoint, then stop (checkpoint_at_end)
  kStop,               // "stop": stop the trainable now (it exits cleanly)
};

inline constexpr EnumName<Action> kActionNames[] = {
    {Action::kContinue, "continue"}, {Action::kCheckpoint, "checkpoint"},
    {Action::kPause, "pause"},       {Action::kCheckpointAndStop, "checkpoint_and_stop"},
    {Action::kStop, "stop"},
};

/// "continue" | "checkpoint" | "pause" | "checkpoint_and_stop" | "stop".
inline const char* ActionName(Action action) { return NameIn(kActionNames, action); }
/// Parses an action word. Errors: InvalidArgument naming the word and the valid ones.
inline Result<Action> ParseAction(std::string_view word) {
  return ParseIn(kActionNames, word, "action");
}

/// True for the actions that save a checkpoint (checkpoint, pause, checkpoint_and_stop).
inline bool SavesCheckpoint(Action action) {
  return action == Action::kCheckpoint || action == Action::kPause ||
         action == Action::kCheckpointAndStop;
}
/// True for the actions that stop the trainable once its checkpoint is saved (pause,
/// checkpoint_and_stop).
inline bool StopsAfterSaving(Action action) {
  return action == Action::kPause || action == Action::kCheckpointAndStop;
}

}  // namespace tunebus
