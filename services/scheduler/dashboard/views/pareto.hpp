// What the experiment page's Pareto front panel (docs/how-to/dashboard.md) draws of a
// multi-objective experiment: every trial's objective values and which trials the front holds. A
// pure function of the control socket's answers, served by ExperimentRoutes as GET
// /api/experiments/NAME/pareto and unit-tested (tests/unit/pareto_trials_test.cpp).
#pragma once

#include <nlohmann/json.hpp>

namespace tunebus::dashboard {

/// {"objectives": [{"metric", "mode"}] (the summary's; empty for one objective),
///  "points": [{"trial_id", "status", "values": [number per objective], "front": bool}] (every
///  trial of `trials` whose last result has every objective as a finite number, in creation
///  order), "front": [trial_id] (the summary's "pareto_front", best first by the first
///  objective)}. `summary` is GetExperiment's answer, `trials` ListTrials'. Any shape is taken
///  without throwing (a field of another type counts as absent).
nlohmann::json ParetoView(const nlohmann::json& summary, const nlohmann::json& trials);

}  // namespace tunebus::dashboard
