// One experiment of the tuning quality benchmark: the experiment file text (parsed by the real
// libs/spec parser), and a run of it through the real TrialRunner and trial scheduler on the
// SimExecutor (bench/quality/sim_executor.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "bench/quality/sim_executor.hpp"
#include "libs/core/status.hpp"

namespace tunebus::bench {

/// The benchmark's shape, shared by every scheduler of a run.
struct QualitySetup {
  int64_t num_samples = 64;           // trials per experiment (same for every scheduler)
  int64_t max_t = 100;                // training iterations a trial may run (stop criterion)
  int64_t max_concurrent_trials = 8;  // trials running at once
};

/// The experiment file (YAML) for `scheduler_yaml`, the value of its `scheduler:` field, e.g.
/// "{type: asha, grace_period: 1}". Metric mean_accuracy, mode max, param space
/// kParamSpaceYaml, stop at training_iteration max_t, the given seed.
std::string ExperimentYaml(const std::string& scheduler_yaml, const QualitySetup& setup,
                           uint64_t seed);

/// Parses `yaml` with ParseExperimentYaml and plays it: MakeTrialScheduler and the
/// VariantGenerator seeded with the file's seed (as the scheduler service does), the noise keyed
/// by the same seed, the trainables following `curves`. Errors: InvalidArgument from the parser or
/// the scheduler's parameters; Internal from the simulation.
Result<SimFigures> RunExperiment(const std::string& yaml, const CurveFamily& curves);

}  // namespace tunebus::bench
