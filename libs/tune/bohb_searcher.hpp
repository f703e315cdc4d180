// BohbSearcher: BOHB's model (Falkner, Klein, Hutter, "BOHB: Robust and Efficient
// Hyperparameter Optimization at Scale", ICML 2018, section 3.1 and Algorithm 2), as
// HpBandSter's BOHB config generator (hpbandster/optimizers/config_generators/bohb.py), the one
// Ray Tune's TuneBOHB wraps. The HyperBand side (HyperBandForBOHB) is a trial scheduler.
//
// - Observations: with `scheduler: hyperband_bohb` (HyperBandForBohb), as Ray's TuneBOHB, the
//   results at a bracket's milestone, at budget = their `hyperband_info.budget` (a result with
//   `hyperband_info` but no budget is none). With any other trial scheduler every result is one,
//   at budget = the result's `time_attr` (default training_iteration). Loss = the metric
//   (negated for mode max); a non-finite metric is the worst loss (HpBandSter: inf), a result
//   without the metric or the budget is none. A trial that reports a budget again (after a
//   restore) replaces its value there.
// - The model is the pair of KDEs at the largest budget with enough observations: n >=
//   min_points_in_model (default d + 1, never less), good = the best max(min_points,
//   floor(top_n_percent n / 100)) and bad = the next max(min_points, floor((100 -
//   top_n_percent) n / 100)), each with more than d rows (HpBandSter refits per budget and
//   uses the largest budget with a model; the same set).
// - KDEs (statsmodels' KDEMultivariate as HpBandSter uses it): coordinates normalised to
//   [0, 1] (SearchSpace model coordinates over its bounds; choice index for categorical),
//   bandwidth per dim 1.06 σ n^(-1/(d+4)) (normal reference rule, σ with ddof 0), at least
//   min_bandwidth; Gaussian kernels not truncated, Aitchison-Aitken kernels for choices
//   (1 - λ on the row's choice, λ / (c - 1) elsewhere, λ capped at 1). statsmodels takes c
//   from the levels present in the data; here c is the number of choices, so a choice no good
//   row has is not a division by zero.
// - Suggestion: random (the variant generator's draw) while there is no model, and with
//   probability random_fraction; else num_samples candidates, each a good row with every
//   numeric coordinate drawn from N(row, bandwidth_factor · bandwidth) truncated to [0, 1] and
//   every choice kept with probability 1 - λ (else uniform), and the one minimising
//   max(g, 1e-32) / max(l, 1e-32) is suggested (HpBandSter's get_config).
//   Rows whose config does not fit the param space (a restored state from another space) are
//   left out of the KDEs.
//
// Determinism and journaling as TpeSearcher: the randomness of suggestion k is SearchRng(seed,
// k); the state (trials in suggestion order, observations in arrival order per budget)
// changes only through Apply's events:
//   {"suggest": trial_id, "config": {...}}
//   {"result": trial_id, "budget": b, "value": x | null}   (null: a non-finite metric)
//   {"complete": trial_id}
//   {"evaluated": {...config}, "budget": b, "value": x | null}   AddEvaluatedPointAtBudget
// An evaluated point (a warm start's trial of an earlier experiment) is an observation at its
// budget like a result, of a trial that is not this experiment's (no id, never running); it
// takes no suggestion's place (suggested() and the draws count suggestions only).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/journaled_searcher.hpp"
#include "libs/tune/parzen_estimator.hpp"
#include "libs/tune/search_space.hpp"

namespace tunebus {

/// HpBandSter's BOHB arguments (its defaults), plus the result key that is the budget.
struct BohbOptions {
  int64_t min_points_in_model = 0;  // 0: d + 1; below d + 1 it is raised to d + 1 (HpBandSter)
  double top_n_percent = 15;        // (0, 100)
  int64_t num_samples = 64;         // candidates per model-based suggestion (not trials)
  double random_fraction = 1.0 / 3;
  double bandwidth_factor = 3;
  double min_bandwidth = 1e-3;
  std::string time_attr = "training_iteration";

  /// From the `search:` map (JSON) with the keys above; the runner's keys ("type", "metric",
  /// "mode", "max_concurrent", "points_to_evaluate", "evaluated_rewards", "warm_start") are
  /// ignored. Errors:
  /// InvalidArgument "search.<key>: <what is wrong>".
  static Result<BohbOptions> Parse(const nlohmann::json& params);
};

class BohbSearcher final : public JournaledSearcher {
 public:
  /// num_samples: how many configs to suggest in all (trials), -1 for unbounded.
  BohbSearcher(BohbOptions options, int64_t num_samples, uint64_t seed);

  const char* name() const override { return "bohb"; }
  /// Errors: InvalidArgument "metric: ...", "mode: ...", and SearchSpace::Create's.
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// As TpeSearcher::Suggest.
  Suggestion Suggest(const std::string& trial_id) override;
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result) override;
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override;
  /// An observation of `config` at `budget` (the training_iteration of the result `value` is
  /// from). Errors: InvalidArgument when `config` is not a point of the space, or `budget` is not
  /// finite; FailedPrecondition before SetSearchProperties.
  Status AddEvaluatedPointAtBudget(const nlohmann::json& config, double value,
                                   double budget) override;

  int64_t Total() const override { return num_samples_; }
  int64_t suggested() const override { return suggested_; }
  /// {"searcher": "bohb", "phase": "startup" | "model", "model_budget": b | null,
  ///  "observations": n, "running": m}.
  nlohmann::json Describe() const override;

  /// {"trials": [{"id", "config", "running"}...], "observations": [[trial index, budget,
  /// value | null]...]} (observations by budget, each budget's in arrival order); an evaluated
  /// point's trial has id "" and running false.
  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  const BohbOptions& options() const { return options_; }
  /// The budget whose KDEs the next model-based suggestion uses, if any.
  std::optional<double> ModelBudget() const;
  int64_t num_observations() const { return observations_; }

 protected:
  Status Apply(const nlohmann::json& event) override;

 private:
  struct TrialRecord {
    std::string id;
    nlohmann::json config;
    bool running = true;
    std::vector<std::pair<double, uint32_t>> budgets;  // budget, position in by_budget_
  };
  struct Observation {
    uint32_t trial;
    double value;  // the metric; NaN when it was not finite
  };

  bool Fittable(size_t n) const;
  nlohmann::json ModelConfig(SearchRng& rng, double budget);
  void FitKde(const std::vector<uint32_t>& rows, bool for_sampling, ParzenEstimator* out);
  void EncodeNewTrials();
  /// The observation of `trial` at budget `b` (NaN value: not finite); replaces its earlier one.
  void Observe(TrialRecord* trial, double b, double v);
  void Reset();
  int64_t MinPoints() const;

  BohbOptions options_;
  int64_t num_samples_;
  uint64_t seed_;
  std::string metric_;
  double sign_ = 1;  // loss = sign_ * value (mode max: -1)
  std::optional<SearchSpace> space_;

  std::vector<TrialRecord> trials_;  // in suggestion order
  std::unordered_map<std::string, size_t> index_;
  std::map<double, std::vector<Observation>> by_budget_;
  int64_t observations_ = 0, running_ = 0, suggested_ = 0;

  // Per-suggestion work, kept to reuse its buffers.
  std::vector<double> encoded_;  // trials_ × dims, normalised coordinates (NaN: missing)
  size_t encoded_rows_ = 0;
  std::vector<uint32_t> ranked_, good_rows_, bad_rows_;
  std::vector<double> losses_, bandwidths_, candidates_, log_l_, log_g_, values_;
  std::vector<ParzenDim> dims_;
  ParzenEstimator good_, bad_, proposal_;
};

}  // namespace tunebus
