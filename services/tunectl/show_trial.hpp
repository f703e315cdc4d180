// What `tunectl show` prints of a trial beyond its fields: the checkpoints the checkpoint-store
// refused (the trial object's `checkpoints_not_stored`, proto/PROTOCOL.md "Control socket"),
// grouped so that an outage of many checkpoints is one line. The trial object comes from the
// network: any shape is accepted (a field of the wrong type counts as absent), nothing throws.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tunebus {

/// A refused checkpoint's reason longer than this (bytes) is cut, ending in "…".
inline constexpr size_t kMaxNotStoredReasonBytes = 240;

/// One line per run of the trial's refused checkpoints, oldest first: a run is consecutive
/// entries of `checkpoints_not_stored` with the same reason, increasing iterations and none of
/// the trial's stored `checkpoints` between them. "checkpoint 12 not stored: <reason>" for one,
/// "checkpoints 4–10 not stored: <reason>" for a run of every iteration from 4 to 10, and
/// "checkpoints 5–15 not stored (3 checkpoints): <reason>" for a run with gaps (checkpoint_freq
/// above 1). When `num_checkpoints_not_stored` counts more than the list holds (the trial keeps
/// the newest 100), a first line says how many earlier ones are not listed. Empty for a trial
/// whose checkpoints were all stored.
std::vector<std::string> RenderCheckpointsNotStored(const nlohmann::json& trial);

}  // namespace tunebus
