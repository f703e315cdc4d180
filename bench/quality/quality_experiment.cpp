#include "bench/quality/quality_experiment.hpp"

#include <fmt/format.h>

#include <memory>

#include "bench/quality/synthetic_curve.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/spec/runner_options.hpp"
#include "libs/tune/make_searcher.hpp"
#include "libs/tune/make_trial_scheduler.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus::bench {

std::string ExperimentYaml(const ExperimentShape& shape, uint64_t seed) {
  return fmt::format(
      "name: tuning_quality\n"
      "trainable: {{builtin: noop}}\n"
      "param_space: {}\n"
      "num_samples: {}\n"
      "seed: {}\n"
      "metric: {}\n"
      "mode: {}\n"
      "stop: {{training_iteration: {}}}\n"
      "max_concurrent_trials: {}\n"
      "search: {}\n"
      "scheduler: {}\n",
      shape.param_space_yaml, shape.setup.num_samples, seed, shape.metric, shape.mode,
      shape.setup.max_t, shape.setup.max_concurrent_trials, shape.search_yaml,
      shape.scheduler_yaml);
}

std::string ExperimentYaml(const std::string& scheduler_yaml, const QualitySetup& setup,
                           uint64_t seed) {
  ExperimentShape shape;
  shape.scheduler_yaml = scheduler_yaml;
  shape.setup = setup;
  return ExperimentYaml(shape, seed);
}

Result<SimFigures> RunExperiment(const std::string& yaml, const CurveFamily& curves) {
  return RunExperiment(yaml, SimModel::Curves(curves));
}

Result<SimFigures> RunExperiment(const std::string& yaml, const SimModel& model) {
  Result<ExperimentSpec> spec = ParseExperimentYaml(yaml, "/tmp", "tuning_quality.yaml");
  if (!spec.ok()) return spec.status();
  const uint64_t seed = spec->seed.value_or(0);
  auto scheduler =
      MakeTrialScheduler(spec->scheduler, spec->scheduler_config, spec->metric, spec->mode, seed);
  if (!scheduler.ok()) return scheduler.status();
  auto max_t = spec->stop.thresholds.find("training_iteration");
  if (max_t == spec->stop.thresholds.end())
    return Status::InvalidArgument("stop: needs training_iteration");

  Result<RunnerOptions> ro = MakeRunnerOptions(*spec, "q", std::nullopt);
  if (!ro.ok()) return ro.status();
  SearchSetup setup;
  setup.param_space = spec->param_space;
  setup.num_samples = spec->num_samples;
  setup.metric = spec->metric;
  setup.mode = spec->mode;
  setup.seed = seed;
  setup.max_concurrent_trials = spec->max_concurrent_trials;
  auto searcher = MakeSearcher(spec->search, spec->search_config, setup);
  if (!searcher.ok()) return searcher.status();
  SimExecutor executor(model, seed, spec->metric, int64_t(max_t->second));
  TrialRunner runner(std::move(*ro), std::move(*searcher), std::move(*scheduler), executor,
                     executor, executor);
  executor.set_runner(&runner);
  return executor.Run();
}

}  // namespace tunebus::bench
