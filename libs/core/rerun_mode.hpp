// RerunMode: how a resume reruns an experiment's ERROR trials (tunectl resume --rerun-errored;
// Ray Tune's resume="ERRORED_ONLY"). Spelled as in proto::ResumeExperimentCommand's
// rerun_errored and the journal's experiment_resumed record.
#pragma once

#include <string_view>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

enum class RerunMode {
  kNone,     // "": ERROR trials stay as they are
  kRestore,  // "restore": each continues from its newest checkpoint
  kRestart,  // "restart": each starts from scratch (checkpoints forgotten, num_failures 0)
};

inline constexpr EnumName<RerunMode> kRerunModeNames[] = {
    {RerunMode::kNone, ""},
    {RerunMode::kRestore, "restore"},
    {RerunMode::kRestart, "restart"},
};

/// "" | "restore" | "restart".
inline const char* RerunModeName(RerunMode mode) { return NameIn(kRerunModeNames, mode); }
/// Parses "", "restore" or "restart". Errors: InvalidArgument naming the word.
inline Result<RerunMode> ParseRerunMode(std::string_view word) {
  return ParseIn(kRerunModeNames, word, "rerun mode");
}

}  // namespace tunebus
