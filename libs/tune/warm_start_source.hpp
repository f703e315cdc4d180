// WarmStartSource: the observations an earlier experiment gives a searcher's warm start
// (`search: {type: tpe, warm_start: [earlier-experiment, ...]}`, docs/reference/search.md "Warm
// start"), read from that experiment's trials, and the checks that it fits the experiment being
// submitted.
//
// An observation is a finished trial of the earlier experiment (TERMINATED, no error): its config
// and its last result's metric, with that result's training_iteration as its budget (BOHB keeps
// the observation at that budget). Trials that ended in ERROR, did not end, or whose last result
// has no finite value of the metric give none (Ray's and Optuna's searchers learn only from
// completed trials).
//
// The observations of every source together form the `warm_start` field of the experiment's
// experiment_submitted record (ExperimentIdentity), so a resume feeds the searcher what the
// submission read even when the earlier experiment was deleted or run again since:
//   [{"experiment": "exp-a", "journal": "exp-a-1f2e3",
//     "observations": [{"config": {...}, "value": 0.93, "budget": 27}, ...]}, ...]
// Pure: no I/O (the scheduler finds the experiments, services/scheduler/control/handlers).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"

namespace tunebus {

/// The experiment being submitted, as the checks see it.
struct WarmStartTarget {
  nlohmann::json param_space;  // validated
  std::string metric;
};

/// An earlier experiment found by name: its param space, metric, whether it ended, its trials.
struct WarmStartExperiment {
  std::string name;     // as the experiment file names it
  std::string journal;  // its journal name (<name>-<experiment id>)
  nlohmann::json param_space;
  std::string metric;
  bool ended = false;
  const std::vector<Trial>* trials = nullptr;  // REQUIRES: not null
};

/// The key paths of a param space's leaves (samplers and constants; nested maps give
/// "outer.inner"), sorted.
std::vector<std::string> ParamSpaceKeys(const nlohmann::json& param_space);

/// The source entry of `earlier` for `target` (the shape in the file comment), named by
/// `warm_start[index]` in errors. Errors: InvalidArgument
///   "warm_start[<i>]: experiment '<name>' has not finished (...); warm start reads finished ones",
///   "warm_start[<i>]: experiment '<name>' has keys a, b; this param space has a, c",
///   "warm_start[<i>]: experiment '<name>' has metric 'x'; this experiment's metric is 'y'".
Result<nlohmann::json> CollectWarmStart(const WarmStartExperiment& earlier,
                                        const WarmStartTarget& target, size_t index);

}  // namespace tunebus
