// The TrialRunner options an experiment file asks for: one conversion from ExperimentSpec
// (libs/spec/experiment_spec.hpp) to RunnerOptions (libs/tune/trial_runner.hpp), used by the
// scheduler's experiments and by the quality benchmarks (bench/quality).
#pragma once

#include <optional>
#include <string>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

/// Every runner field of `spec` (metric, mode, stop and time budget, concurrency, failures,
/// queueing, resources per trial, checkpointing, param space) with `experiment_id` (the trial
/// ids' prefix) and `restore_from` (the checkpoint every searched trial starts from, or none).
/// Errors: InvalidArgument when resources_per_trial does not convert (Resources::FromAmounts).
Result<RunnerOptions> MakeRunnerOptions(const ExperimentSpec& spec,
                                        const std::string& experiment_id,
                                        std::optional<CheckpointRef> restore_from);

}  // namespace tunebus
