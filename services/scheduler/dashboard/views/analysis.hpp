// What the dashboard's analysis views (docs/how-to/dashboard.md: progress and ETA, optimization
// history, parallel coordinates, hyperparameter importance, the searcher's phase) make of the
// control socket's answers: pure functions of JSON, no I/O, unit-tested
// (tests/unit/dashboard_analysis_test.cpp). Served by AnalysisRoutes
// (dashboard/routes/analysis_routes.cpp).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "services/scheduler/dashboard/views/importance.hpp"

namespace tunebus::dashboard {

/// The trials of an experiment as columns, one entry per trial in creation order (the position
/// is the trial number), for the optimization history and the parallel coordinates:
///   {"n", "trial_id": [string], "status": [int, an index into "statuses"], "statuses":
///    [PENDING, RUNNING, PAUSED, TERMINATED, ERROR], "value": [number or null: `metric` in the
///    trial's last result], "training_iteration": [int], "time_total_s": [number],
///    "params": [{"name", "kind": "numeric" | "categorical", "values": [number or null; for a
///    categorical one the index into "categories"], "categories": [string] (categorical only),
///    "min", "max" (numeric only)}]}
/// `trials` is ListTrials' answer (trial objects). Params are the config's scalar keys, nested
/// maps flattened with '/' ("model/depth"), in name order; a key whose value is the same in
/// every trial (a constant of the param space, not searched) is left out. A parameter is
/// numeric when every trial that has it holds a number, else categorical (values as their JSON
/// text, "true", "adam"). At most `max_params` parameters (those first in name order).
nlohmann::json AnalysisColumns(const nlohmann::json& trials, const std::string& metric,
                               size_t max_params = 32);

/// The ParamColumns of AnalysisColumns' "params" (the shape above).
std::vector<ParamColumn> ImportanceInputs(const nlohmann::json& columns);

/// {"method": "binned-variance (first-order fANOVA main effect, epsilon^2)", "trials": trials
///  with a value, "params": [{"name", "importance", "variance_explained", "bins", "trials"}]
///  most important first} of AnalysisColumns' answer (BinnedVarianceImportance).
nlohmann::json ImportanceJson(const nlohmann::json& columns);

/// An experiment's progress for the experiments page, from its lsx row and its summary
/// (GetExperiment, may be null):
///   {"basis": "trials" | "time_budget" | "none", "fraction" (0..1 or null), "finished",
///    "total" (-1 unknown), "elapsed_s", "time_budget_s" (or null), "eta_s" (or null),
///    "eta_method"}
/// basis "trials" (a known total): fraction = finished / total (TERMINATED + ERROR); ETA =
/// (total - finished) x elapsed_s / finished, the remaining trials at the rate trials finished
/// so far (it equals the mean trial duration divided by the concurrency observed); null before
/// the first trial finishes. basis "time_budget" (time_budget_s set and no known total, or the
/// budget ends first): fraction = elapsed / budget, ETA = budget - elapsed. A finished
/// experiment has fraction 1 and ETA 0 (or fraction finished / total when it ended early:
/// stopped, interrupted, a budget).
nlohmann::json Progress(const nlohmann::json& lsx_row, const nlohmann::json& summary);

/// The searcher's phase from the summary's "searcher" (Searcher::Describe()) and its trial
/// counts: {"searcher", "phase", "text", and the description's fields}. phase: the searcher's
/// own ("startup": TPE's n_startup_trials random trials / BOHB before its model has a budget;
/// "model"), else "exhausted" when it suggested its total (a grid that is done), else
/// "sampling"; `text` says it for people ("TPE: model phase (12 observations)", "random: 7 of
/// 12 suggested").
nlohmann::json SearcherPhase(const nlohmann::json& summary);

}  // namespace tunebus::dashboard
