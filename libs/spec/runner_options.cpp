#include "libs/spec/runner_options.hpp"

#include <utility>

#include "libs/core/resources.hpp"

namespace tunebus {

Result<RunnerOptions> MakeRunnerOptions(const ExperimentSpec& spec,
                                        const std::string& experiment_id,
                                        std::optional<CheckpointRef> restore_from) {
  Result<Resources> resources = Resources::FromAmounts(spec.resources_per_trial);
  if (!resources.ok()) return resources.status();
  RunnerOptions ro;
  ro.experiment_id = experiment_id;
  ro.metric = spec.metric;
  ro.mode = spec.mode;
  ro.objectives = spec.objectives;
  ro.stop = spec.stop.thresholds;
  ro.time_budget_s = spec.stop.time_budget_s;
  ro.max_concurrent_trials = spec.max_concurrent_trials;
  ro.max_failures = spec.max_failures;
  ro.max_worker_losses = spec.max_worker_losses;
  ro.fail_fast = spec.fail_fast;
  ro.queue_trials = spec.queue_trials;
  ro.resources_per_trial = std::move(*resources);
  ro.checkpoint_freq = spec.checkpoint_freq;
  ro.checkpoint_at_end = spec.checkpoint_at_end;
  ro.keep_checkpoints_num = spec.keep_checkpoints_num;
  ro.checkpoint_score_attr = spec.checkpoint_score_attr;
  ro.checkpoint_failure = spec.checkpoint_failure;
  ro.restore_from = std::move(restore_from);
  ro.param_space = spec.param_space;
  return ro;
}

}  // namespace tunebus
