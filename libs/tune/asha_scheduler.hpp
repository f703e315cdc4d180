// AshaScheduler: asynchronous successive halving (Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", MLSys 2020, arXiv:1810.05934, Algorithm 2), with Ray Tune's
// AsyncHyperBandScheduler semantics and parameter names:
//
//   time_attr          result key that measures progress (default training_iteration)
//   metric, mode       what is compared (default: the experiment's)
//   max_t              a trial is stopped when time_attr reaches it (default 100)
//   grace_period       the first rung: no trial is stopped before this (default 1)
//   reduction_factor   eta: keep the top 1/eta at each rung (default 4)
//   brackets           number of brackets s = 0..brackets-1 (default 1)
//   stop_last_trials   stop trials that reach max_t (default true)
//
// Bracket s has rungs at grace_period * eta^(k+s) for k = 0 .. floor(log_eta(max_t /
// grace_period) - s). When a trial's time_attr first reaches a rung's milestone, its metric is
// compared with the (1 - 1/eta) quantile (numpy's linear interpolation) of the values recorded
// at that rung so far: below it the trial STOPs, otherwise it CONTINUEs; either way its value
// is recorded. Only the highest rung reached counts for a result (Ray Tune's _Bracket.on_result).
// A new trial joins bracket i with probability proportional to e^(rungs_i - max rungs), drawn
// from a seeded RNG.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

class AshaScheduler final : public JournaledTrialScheduler {
 public:
  struct Options {
    std::string time_attr = "training_iteration";
    std::string metric;
    std::string mode = "max";
    double max_t = 100;
    double grace_period = 1;
    double reduction_factor = 4;
    int64_t brackets = 1;
    bool stop_last_trials = true;
  };
  /// Errors: InvalidArgument "<param>: ..." for a bad parameter (see the file comment).
  static Result<std::unique_ptr<TrialScheduler>> Create(const nlohmann::json& config,
                                                        const std::string& metric,
                                                        const std::string& mode, uint64_t seed);
  AshaScheduler(Options options, uint64_t seed);

  const char* name() const override { return "asha"; }
  Status ValidateResult(const TrainingResult& result) const override;
  void OnTrialAdd(const Trial& trial) override;
  Decision OnTrialResult(const Trial& trial, const TrainingResult& result) override;
  void OnTrialComplete(const Trial& trial, const TrainingResult& result) override;
  void OnTrialRemove(const Trial& trial) override;
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }

  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  /// Rung milestones of bracket `b`, highest first.
  std::vector<double> Milestones(size_t b) const;
  /// The values recorded at rung `r` of bracket `b` (trial_id -> metric, sign-adjusted to max).
  const std::map<std::string, double>& Recorded(size_t b, size_t r) const {
    return brackets_[b][r].recorded;
  }

 private:
  struct Rung {
    double milestone = 0;
    std::map<std::string, double> recorded;  // trial_id -> metric * sign
    std::vector<double> sorted;  // recorded's values, ascending: the cutoff is O(1), not a sort
    void Record(const std::string& trial_id, double value);
    void Clear();
  };
  using Bracket = std::vector<Rung>;  // highest milestone first

  /// Ray Tune's _Bracket.on_result; records through Apply.
  Decision OnBracketResult(const std::string& trial_id, double t, double value);
  /// The one place state changes, live (Record) and in replay (ApplyStateDelta):
  ///   {"add": [trial_id, bracket]}  {"rec": [trial_id, bracket, rung, value]}  {"del": trial_id}
  Status Apply(const nlohmann::json& event) override;

  Options options_;
  double sign_ = 1;
  std::vector<Bracket> brackets_;
  std::map<std::string, size_t> trial_bracket_;
  std::mt19937_64 rng_;
};

}  // namespace tunebus
