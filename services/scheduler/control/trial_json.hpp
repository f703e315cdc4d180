// JSON views of experiments for the control socket, the event stream and experiment_state.json;
// the trial's view, which they embed, is libs/core/trial_view.hpp. Shapes are documented in
// proto/PROTOCOL.md ("Control socket").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/trial.hpp"
#include "libs/core/trial_view.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

/// {"PENDING": n, "RUNNING": n, "PAUSED": n, "TERMINATED": n, "ERROR": n} of `trials` (every
/// status, 0 when none has it).
nlohmann::json TrialCountsJson(const std::vector<Trial>& trials);

/// {"name", "experiment_id", "status", "reason", "counts": TrialCountsJson, "total", "finished",
///  "metric", "mode", "results_dir", "best": trial object or null, "searcher", "elapsed_s"},
/// plus "driver": DriverLink::Describe() when `driver` (the experiment's driver link) is given,
/// and for a multi-objective experiment (metric and mode "", best null) "objectives":
/// [{"metric", "mode"}, ...] and "pareto_front": [trial object, ...] (ParetoTrials' order).
nlohmann::json ExperimentToJson(const std::string& name, const TrialRunner& runner,
                                const std::string& experiment_dir, double elapsed_s,
                                const DriverLink* driver = nullptr);

}  // namespace tunebus
