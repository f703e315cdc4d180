// JSON views of trials and experiments for the control socket, the event stream and
// experiment_state.json. Shapes are documented in proto/PROTOCOL.md ("Control socket").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/trial.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

/// {"checkpoint_id", "training_iteration", "time_total_s" (seconds), "score" (number or null),
///  "size_bytes"}
nlohmann::json CheckpointToJson(const CheckpointRef& checkpoint);

/// {"trial_id", "status", "config", "last_result", "num_failures", "resources", "worker",
///  "error", "experiment_tag", "training_iteration", "time_total_s", "attempt",
///  "checkpoints": [checkpoint objects, oldest first], "restored_checkpoint_id", "dir"}
nlohmann::json TrialToJson(const Trial& trial, const std::string& experiment_dir);

/// TrialToJson(trial).dump() in substance (the same keys and values; "config" and "last_result"
/// last), appended to `out` as text, field by field, with no document of the trial:
/// experiment_state.json writes every trial this way when an experiment ends.
void AppendTrialJson(const Trial& trial, const std::string& experiment_dir, std::string& out);

/// {"name", "experiment_id", "status", "reason", "counts": {STATUS: n}, "total", "finished",
///  "metric", "mode", "results_dir", "best": trial object or null, "elapsed_s"}
nlohmann::json ExperimentToJson(const std::string& name, const TrialRunner& runner,
                                const std::string& experiment_dir, double elapsed_s);

}  // namespace tunebus
