// The trial as the control socket, the event stream and experiment_state.json show it. Shapes
// are documented in proto/PROTOCOL.md ("Control socket").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/trial.hpp"

namespace tunebus {

/// {"checkpoint_id", "training_iteration", "time_total_s" (seconds), "score" (number or null),
///  "size_bytes"}
nlohmann::json CheckpointToJson(const CheckpointRef& checkpoint);

/// {"trial_id", "status", "config", "last_result", the failure counts num_failures and
///  num_worker_losses, "resources" (amounts), "worker", "gpu_ids", "error", "experiment_tag",
///  "training_iteration", "time_total_s", "attempt", "checkpoints": [checkpoint objects, oldest
///  first], "checkpoints_not_stored": [{"training_iteration", "reason"}, oldest first: the
///  newest 100 checkpoints the store refused], "num_checkpoints_not_stored" (all of them),
///  "failures": [{"attempt", "error", "kind", "then"}, oldest first],
///  "restored_checkpoint_id", "dir" (`experiment_dir`/Trial::DirName())}; "worker", "error" and
///  "restored_checkpoint_id" are null when empty.
nlohmann::json TrialToJson(const Trial& trial, const std::string& experiment_dir);

/// TrialToJson(trial).dump() in substance (the same keys and values; "config" and "last_result"
/// last), appended to `out` as text, field by field, with no document of the trial:
/// experiment_state.json writes every trial this way when an experiment ends.
void AppendTrialJson(const Trial& trial, const std::string& experiment_dir, std::string& out);

}  // namespace tunebus
