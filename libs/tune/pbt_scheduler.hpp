// PopulationBasedTraining: Jaderberg et al., "Population Based Training of Neural Networks",
// 2017, arXiv:1711.09846 (§3: truncation selection, explore by perturb / resample), with Ray
// Tune's PopulationBasedTraining semantics (asynchronous, synch=False) and parameter names:
//
//   time_attr              result key measuring time (default time_total_s)
//   metric, mode           what is compared (default: the experiment's)
//   perturbation_interval  time_attr between two perturbations of a trial (default 60)
//   burn_in_period         no perturbation before this time_attr (default 0)
//   hyperparam_mutations   config keys to explore (required): a list (move to a neighbouring
//                          value, or resample), a sampler such as {uniform: [a, b]} (multiply
//                          by a perturbation factor, or resample), {driver: {}} (a Python
//                          function the driver calls on every result: resample takes the value
//                          it drew, DriverAnswer::samples by the key's dotted path; perturb
//                          multiplies a number by a factor, as Ray does for a callable), or a
//                          nested map
//   quantile_fraction      the top and bottom fraction of the population (default 0.25, <= 0.5)
//   resample_probability   probability of resampling instead of perturbing (default 0.25)
//   perturbation_factors   [up, down] multipliers (default [1.2, 0.8])
//
// At each result where a perturbation is due, the trial's score is recorded; a trial in the top
// quantile saves a checkpoint (the "checkpoint" action), a trial in the bottom quantile exploits
// a random top-quantile trial: it takes that trial's newest stored checkpoint (from the
// checkpoint-store, on any worker) and an explored copy of its config (TrialSchedulerContext::
// ExploitTrial, which journals the change and writes it into the trial's next result as
// "pbt_exploit"). As Ray Tune, a trial is PAUSEd at a perturbation while other trials wait
// (PENDING or PAUSED), and PAUSEd trials run again when nothing is PENDING. A donor without a
// stored checkpoint yet means no exploit this time (Ray Tune: "no checkpoint for trial").
// Random draws come from a seeded engine whose draw count is journaled, so a resumed experiment
// draws the same numbers.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

class PopulationBasedTraining final : public JournaledTrialScheduler {
 public:
  struct Options {
    std::string time_attr = "time_total_s";
    std::string metric;
    std::string mode = "max";
    double perturbation_interval = 60;
    double burn_in_period = 0;
    nlohmann::json hyperparam_mutations = nlohmann::json::object();
    double quantile_fraction = 0.25;
    double resample_probability = 0.25;
    double factor_up = 1.2, factor_down = 0.8;
  };
  /// Errors: InvalidArgument "<param>: ..." (hyperparam_mutations:
  /// "hyperparam_mutations.<key>...").
  static Result<std::unique_ptr<TrialScheduler>> Create(const nlohmann::json& config,
                                                        const std::string& metric,
                                                        const std::string& mode, uint64_t seed);
  PopulationBasedTraining(Options options, uint64_t seed);

  const char* name() const override { return "pbt"; }
  Status ValidateResult(const TrainingResult& result) const override;
  void OnTrialAdd(const Trial& trial) override;
  Decision OnTrialResult(const Trial& trial, const TrainingResult& result) override;
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }
  std::optional<std::string> ChoosePausedTrialToRun() override;

  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  /// Ray Tune's _explore: a copy of `config` with every key of `mutations` perturbed or
  /// resampled. `driver_samples`: the driver's values of the `{driver: {}}` mutations (dotted
  /// key path -> value; nullptr: none), `prefix` the key path of `mutations` in the config.
  /// Public for tests.
  nlohmann::json Explore(const nlohmann::json& config, const nlohmann::json& mutations,
                         const nlohmann::json* driver_samples = nullptr,
                         const std::string& prefix = "");
  /// True if `mutations` (hyperparam_mutations) holds a `{driver: {}}` mutation at any depth.
  static bool HasDriverMutations(const nlohmann::json& mutations);

 private:
  struct TrialState {
    std::optional<double> last_score;  // metric * sign at its last perturbation
    double last_perturbation_time = 0;
    double last_train_time = 0;
    bool paused_by_us = false;
  };
  /// Whether a donor's `newest` checkpoint holds its state at `perturbation_time` (time_attr).
  bool HoldsPerturbation(const CheckpointRef& newest, double perturbation_time) const;
  double Uniform();  // [0, 1), counted
  size_t Choice(size_t n);
  /// The one place state changes (live and in replay):
  ///   {"add": id}  {"score": [id, time, score]}  {"pause": id}  {"run": id}
  ///   {"exploit": [id, donor]}  {"draws": n}
  Status Apply(const nlohmann::json& event) override;

  Options options_;
  double sign_ = 1;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  uint64_t draws_ = 0;  // engine outputs consumed since seeding
  std::map<std::string, TrialState> trials_;
};

}  // namespace tunebus
