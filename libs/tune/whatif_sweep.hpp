// What-if requests and sweeps: the replayed trial scheduler as a request names it, checked
// before any record is read, and a sweep over a grid of its parameters, replayed setting by
// setting through ReplayExperiment (whatif.hpp), as a table whose cheapest setting that keeps
// the actual best trial is marked.
//
// A sweep's grid is a map {param: [values...]} (e.g. {grace_period: [1, 2, 4],
// reduction_factor: [2, 3, 4]}); its settings are every combination, each the base parameters
// with the combination's values over them, in the grid's key order (sorted: nlohmann::json's
// object order), the last key varying fastest.
//
// "Keeps the actual best trial": the replay did not stop it and did not leave it paused (its
// fate is as_recorded or unknown_beyond). "Cheapest": the fewest trial-seconds replayed, then the
// fewest training iterations, then the first in grid order.
//
// Pure: no I/O, no clock. Cost: one replay per setting (whatif.hpp), the record read once.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/whatif.hpp"

namespace tunebus {

/// The replayed trial scheduler: MakeTrialScheduler's name and its parameters.
struct WhatIfScheduler {
  std::string type = "fifo";
  nlohmann::json params = nlohmann::json::object();
};

/// The scheduler a request names, {"type": name, param: value, ...} (no type: fifo).
/// Errors: InvalidArgument "scheduler: ..." (not a map, type not a name).
Result<WhatIfScheduler> ParseWhatIfScheduler(const nlohmann::json& spec);

/// Builds `scheduler` for an experiment of `metric` and `mode` and drops it: the replay would
/// accept it. Errors: InvalidArgument for pbt (it cannot be replayed), an unknown scheduler, a
/// bad parameter ("<param>: ..."), as ReplayExperiment's.
Status CheckWhatIfScheduler(const WhatIfScheduler& scheduler, const std::string& metric,
                            const std::string& mode);

/// The most settings a sweep replays.
inline constexpr size_t kMaxSweepSettings = 256;

/// Every setting of the grid `grid` over `base`: base's parameters with one combination's values
/// over them. Errors: InvalidArgument "sweep: ..." (not a non-empty map, a value that is not a
/// non-empty list, `type` swept, more than kMaxSweepSettings settings).
Result<std::vector<nlohmann::json>> ExpandSweep(const nlohmann::json& base,
                                                const nlohmann::json& grid);

/// Replays `experiment` through `scheduler` at every setting of `grid` (ExpandSweep). body:
/// {"scheduler", "base" (its params), "sweep" (the grid), "metric", "mode", "trials", "actual":
/// {training_iterations, trial_seconds, best_final, best_trial_id}, "rows": [{"setting" (the
/// swept params), "scheduler_config", "training_iterations", "trial_seconds", "best_final",
/// "best_trial_id", "regret", "keeps_actual_best", "actual_best_fate", "actual_best_stopped_at"
/// (its last training_iteration fed when stopped, else null), "actual_best_stop_detail",
/// "trials_stopped", "trials_unknown_beyond", "trials_left_paused"}], "cheapest_keeping" (row
/// index or null)}. `cancelled` is asked before each setting. Errors: ExpandSweep's; a
/// setting's ReplayExperiment error, prefixed with the setting; Unavailable "the whatif sweep
/// was cancelled" once `cancelled` said true.
Result<nlohmann::json> SweepExperiment(const RecordedExperiment& experiment,
                                       const WhatIfScheduler& scheduler, const nlohmann::json& grid,
                                       uint64_t seed, const std::function<bool()>& cancelled);

}  // namespace tunebus
