// One experiment of the tuning and search quality benchmarks: the experiment file text (parsed
// by the real libs/spec parser), and a run of it through the real TrialRunner, searcher and
// trial scheduler on the SimExecutor (bench/quality/sim_executor.hpp).
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

/// An experiment file's fields that the benchmarks vary. The *_yaml fields are YAML flow values
/// of the experiment file's keys of the same name.
struct ExperimentShape {
  std::string param_space_yaml = kParamSpaceYaml;
  std::string metric = "mean_accuracy";
  std::string mode = "max";
  std::string search_yaml = "random";
  std::string scheduler_yaml = "fifo";
  QualitySetup setup;
};

/// The experiment file (YAML) of `shape` with `seed`: stop at training_iteration setup.max_t.
std::string ExperimentYaml(const ExperimentShape& shape, uint64_t seed);

/// The tuning quality benchmark's experiment file for `scheduler_yaml`, the value of its
/// `scheduler:` field, e.g. "{type: asha, grace_period: 1}": metric mean_accuracy, mode max,
/// param space kParamSpaceYaml, the random searcher.
std::string ExperimentYaml(const std::string& scheduler_yaml, const QualitySetup& setup,
                           uint64_t seed);

/// Parses `yaml` with ParseExperimentYaml and plays it as the scheduler service would:
/// MakeTrialScheduler and MakeSearcher (the file's `search:`) seeded with the file's seed, the
/// noise keyed by the same seed, the trainables following `model`. Errors: InvalidArgument from
/// the parser, the trial scheduler's or the searcher's parameters; Internal from the simulation.
Result<SimFigures> RunExperiment(const std::string& yaml, const SimModel& model);
/// RunExperiment with the trainables following `curves` (SimModel::Curves).
Result<SimFigures> RunExperiment(const std::string& yaml, const CurveFamily& curves);

}  // namespace tunebus::bench
