// The Pareto front of a multi-objective experiment's trials (docs/reference/search.md "Many
// objectives"): what `tunectl best`, `tunectl ls --pareto`, get_experiment's `pareto_front` and the
// dashboard show in place of one best trial. Pure: trials in, trials out.
#pragma once

#include <vector>

#include "libs/core/trial.hpp"
#include "libs/tune/pareto.hpp"

namespace tunebus {

/// The non-dominated trials of `trials` for `objectives` (two or more): among the TERMINATED
/// trials whose last result holds every objective as a finite number (Losses), those no other
/// such trial dominates (Deb et al. 2002's first front, as Optuna's `Study.best_trials`; Ray
/// Tune's scope "last": each trial's last result). Sorted by the first objective, best first
/// (ties by the next objectives, then by trial index). Empty for fewer than two objectives.
/// O(n log n + n f m) for n candidates, f on the front, m objectives, plus decoding each
/// candidate's last result.
std::vector<const Trial*> ParetoTrials(const std::vector<Trial>& trials,
                                       const std::vector<Objective>& objectives);

}  // namespace tunebus
