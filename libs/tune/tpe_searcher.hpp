// TpeSearcher: the Tree-structured Parzen Estimator (Bergstra, Bardenet, Bengio, Kégl,
// "Algorithms for Hyper-Parameter Optimization", NeurIPS 2011, section 4), as Optuna 3.1.0's
// TPESampler (optuna/samplers/_tpe/sampler.py) with its behaviour and, but where said below,
// its defaults:
//
// - The first n_startup_trials suggestions (counted in completed observations, as Optuna's
//   `n < n_startup_trials`) are random: the variant generator's draw of the param space.
// - Then the n completed observations are sorted by loss (the metric, negated for mode max;
//   stable, oldest first among equals) and split: the best gamma(n) = min(ceil(0.1 n), 25)
//   are "below" (l(x)), the rest "above" (g(x)), plus, with constant_liar, every trial still
//   running (suggested and not complete), which counts as worse than any observation (Optuna's
//   constant liar: score +inf). Each side is fitted with a ParzenEstimator (FitTpeEstimator:
//   Optuna's _ParzenEstimator with the weights, the prior, the magic clip), n_ei_candidates
//   points are drawn from l, and the one maximising log l(x) - log g(x) is suggested (the
//   expected improvement, paper eq. 6, is monotone in l/g).
// - Multivariate (default; Optuna's multivariate=True, Falkner et al. 2018): one joint
//   estimator over all dims, each kernel's width per dim its own neighbour gap (bandwidth
//   hyperopt; Optuna's Scott rule with bandwidth scott), the good observations weighted by
//   their improvement on the best bad one (weight_strategy EI), as Watanabe 2023
//   (arXiv:2304.11127) studies them. Univariate (multivariate: false, Optuna's default): each
//   dim is modelled and chosen on its own, in param-space order (Optuna's sample_independent).
//   multivariate_parallel: false makes a suggestion univariate while other trials run.
//   Conditional spaces (a choice over maps holding samplers, VariantGenerator) are decomposed
//   as Optuna's group=True decomposes the params that appear together: one joint estimator for
//   the unconditional params, then one for each branch the suggestion picked, fitted to the
//   trials that picked it (the others have no value there: Optuna's param mask), in the order
//   of SearchSpace's groups, so a branch's choice is made before its params. That is always
//   done; the group option is accepted for Optuna's spelling and changes nothing. Univariate
//   models skip the params of branches not picked. The defaults were chosen on the search
//   quality benchmark
//   (docs/reference/search.md "TPE ahead of Optuna's"): better than Optuna 3.1's TPESampler with
//   and without its multivariate and constant_liar options on most of 8 functions, at 1 and 16
//   trials at once.
// - Observations: a trial's value is the metric of its last result (OnTrialComplete), also for
//   a trial a trial scheduler stopped early (Optuna ranks a pruned trial by its last
//   intermediate value too, though behind the completed ones; tunebus cannot tell them apart).
//   A trial that ended in ERROR, or whose last result has no finite number under the metric,
//   is no observation (Optuna ignores failed trials); it stops counting as running.
// - constant_liar defaults to true (Optuna: false): tunebus runs trials in parallel by design,
//   and without it the suggestions made while trials run all come from the same model. In a
//   joint model of 3 or more params Optuna's lie (liar_kernel kObservation) changes no
//   suggestion, though the running trials are among g(x)'s observations: there each gets the
//   width of its neighbour gaps among g's, clipped at 1/(1 + m) of the range, about 1% once g
//   holds ~90 observations, while l(x)'s ~10 get at least 8%; a candidate drawn from the l(x)
//   component that drew a running trial lies ~10 of the lie's widths from it in every param, so
//   the lie's kernel there is ~e^-50 per param, nothing beside g's prior. liar_kernel kSource /
//   kSourceWidths give the lie its source component's widths (and weight) so it acts; on the
//   search quality benchmark both are worse than the inert lie (docs/reference/search.md,
//   "Lies that act in the joint model"), so the default is Optuna's.
// - Densities are Optuna 3.1.0's: a continuous kernel's log density leaves out -log sigma
//   (optuna/optuna#5109, "fixed" by #5110 in Optuna 3.5), so narrow components count for less
//   in l(x) / g(x). normalized_density: true computes the normalised density instead; the
//   search quality benchmark (docs/reference/search.md) measured it worse on Branin, Hartmann-6 and
//   the 10-d mixed space (e.g. median trials to random search's best of 100 on Branin 41.5 vs
//   30.5), so the default is Optuna 3.1.0's. Random numbers are tunebus' own, so a seed does
//   not reproduce Optuna's sequence; the estimators match Optuna's (parzen_estimator_test).
// - Cost: with 1,000 observations a suggestion takes about 0.1 ms per numeric param
//   (bench/searcher_bench.cpp, thread CPU on a shared 2-core host): the observations stay
//   sorted across suggestions, each dim keeps its estimators so a refit reuses log sigma and
//   log Z of unchanged components, equal integer components are merged, far components are
//   skipped, and the log-sum-exp loops are vectorised (AVX2 where the processor has it).
//
// Determinism and journaling: the randomness of suggestion k comes from SearchRng(seed, k), so
// the state is just the trials (in suggestion order: id, config, running / complete value /
// dropped), changed only by Apply through three events:
//   {"suggest": trial_id, "config": {...}}      a suggestion was made
//   {"complete": trial_id, "value": x | null}   the trial ended (null: no observation)
//   {"evaluated": {...config}, "value": x}      a point evaluated elsewhere (AddEvaluatedPoint)
// The same seed and the same events in the same order give the same suggestions.
#pragma once

#include <cstdint>
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

/// How many completed observations are "below" (Watanabe 2023, arXiv:2304.11127, Table 3's
/// splitting algorithm): kLinear min(ceil(beta n), 25) (Optuna's default_gamma with beta 0.1),
/// kSqrt min(ceil(beta sqrt(n)), 25) (hyperopt's with beta 0.25).
enum class TpeGamma { kLinear, kSqrt };

/// The weights of the observations in l(x) and g(x) (Watanabe 2023, Table 3's weighting
/// algorithm): kOldDecay, Optuna 3.1.0's default_weights (a ramp over all but the newest 25);
/// kUniform, all 1; kExpectedImprovement, uniform in g(x) and in l(x) each observation's
/// improvement on the best loss in g(x), max(1e-12, threshold - loss), the prior weighing as
/// their mean (the weighting the paper derives from the expected improvement).
enum class TpeWeights { kOldDecay, kUniform, kExpectedImprovement };

/// What a running trial's lie is in a joint g(x) (constant_liar with a multivariate model of
/// two or more params; univariate models always take kObservation). kObservation: Optuna
/// 3.1.0's, one more observation of g (weight and widths as any other), which in the joint
/// model changes no suggestion (see TpeSearcher). kSourceWidths: its kernel per numeric param
/// at least as wide as that of the l(x) component most likely to have drawn it
/// (ParzenEstimator::MostLikelyComponent). kSource: that, and in g(x) it weighs what that
/// component weighs in l(x) (relative to g's other components), so l(x)/g(x) near the running
/// trial falls to about 1, as the constant liar of Ginsbourger et al. 2010 (section 3.2: the
/// pending point is believed known at the lie, so its expected improvement is 0) asks of the
/// expected improvement, which TPE orders by l(x)/g(x) (Bergstra et al. 2011, eq. 6).
enum class TpeLiarKernel { kObservation, kSourceWidths, kSource };

/// TPESampler's arguments (Optuna 3.1.0 defaults, but constant_liar, multivariate, bandwidth
/// and weight_strategy; see the file comment), and normalized_density (not Optuna's: which
/// density, see the file comment).
struct TpeOptions {
  int64_t n_startup_trials = 10;
  int64_t n_ei_candidates = 24;
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool multivariate = true;
  bool group = false;  // REQUIRES multivariate (as Optuna); conditional spaces are grouped anyway
  /// With multivariate: false models each param on its own for a suggestion made while other
  /// trials run (the constant liar's), jointly otherwise; true: jointly always (Optuna's).
  bool multivariate_parallel = true;
  TpeBandwidth bandwidth = TpeBandwidth::kHyperopt;  // kScott: multivariate only
  bool constant_liar = true;
  TpeLiarKernel liar_kernel = TpeLiarKernel::kObservation;  // Optuna's; see TpeLiarKernel
  bool normalized_density = false;  // true: normalised kernels (Optuna >= 3.5), see above
  // Watanabe 2023's components (the OptunaHub tpe_tutorial sampler's argument names).
  TpeGamma gamma_strategy = TpeGamma::kLinear;
  double gamma_beta = 0.1;
  TpeWeights weight_strategy = TpeWeights::kExpectedImprovement;
  double min_bandwidth_factor = 0.01;  // Δ of the magic clip (TpeEstimatorOptions)
  double b_magic_exponent = 1.0;       // α of the magic clip

  /// From the experiment file's `search:` map (JSON) with the keys above. "type", "metric",
  /// "mode", "max_concurrent", "points_to_evaluate" and "evaluated_rewards" are the runner's
  /// and are ignored. Errors: InvalidArgument "search.<key>: <what is wrong>", e.g. "search.foo:
  /// unknown parameter of tpe (known: ...)", "search.n_ei_candidates: must be >= 1, got 0".
  static Result<TpeOptions> Parse(const nlohmann::json& params);
};

/// Optuna 3.1.0's default_gamma: min(ceil(0.1 n), 25) observations are "below".
int64_t TpeDefaultGamma(int64_t n);
/// The observations "below" out of n under `strategy` with `beta` (TpeGamma), at most n.
int64_t TpeGammaOf(TpeGamma strategy, double beta, int64_t n);

class TpeSearcher final : public JournaledSearcher {
 public:
  /// num_samples: how many configs to suggest in all, -1 for unbounded.
  TpeSearcher(TpeOptions options, int64_t num_samples, uint64_t seed);

  const char* name() const override { return "tpe"; }
  /// Errors: InvalidArgument "metric: ..." without a metric, "mode: ..." unless max or min, and
  /// SearchSpace::Create's ("param_space.<path>: grid_search cannot be combined with search:
  /// tpe; use search: random").
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// A config (random during startup, else TPE's), or Finished after num_samples (or before
  /// SetSearchProperties succeeded). A trial_id it already suggested for gets the same config
  /// again, and nothing changes. An empty trial_id gets NotNow.
  Suggestion Suggest(const std::string& trial_id) override;
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override;
  /// Ray's add_evaluated_point / Optuna's add_trial: `config` reached `value` of the metric
  /// elsewhere (evaluated_rewards); it becomes a completed observation, in order with the
  /// trials (event {"evaluated": config, "value": x}). A non-finite value is ignored.
  /// Errors: FailedPrecondition before SetSearchProperties; InvalidArgument "<param>: ..." when
  /// `config` lacks a value of the space or has one outside it.
  Status AddEvaluatedPoint(const nlohmann::json& config, double value) override;

  int64_t Total() const override { return num_samples_; }
  int64_t suggested() const override { return suggested_; }
  /// {"searcher": "tpe", "phase": "startup" | "model", "observations": n, "running": m}.
  nlohmann::json Describe() const override;

  /// {"trials": [{"id", "config", "state": "running" | "complete" | "dropped", "value"}...]}
  /// (an evaluated point: id "", state "complete").
  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  const TpeOptions& options() const { return options_; }
  int64_t num_observations() const { return complete_; }
  int64_t num_running() const { return running_; }

 protected:
  Status Apply(const nlohmann::json& event) override;

 private:
  enum class TrialState { kRunning, kComplete, kDropped };
  struct TrialRecord {
    std::string id;
    nlohmann::json config;
  };

  nlohmann::json ModelConfig(SearchRng& rng);
  // Fits below/above to their rows' values of dims [d, d + count) and puts the value of the
  // best candidate into chosen_[d, d + count).
  void ChooseDims(SearchRng& rng, size_t d, size_t count);
  // The values of dims [d, d + count) of `rows` into `out` (row-major), leaving out rows where
  // one is missing (Optuna's param mask); returns how many rows are kept. slots: also sets
  // slot_[row] to each kept row's index in `out`.
  // kept: when given, the trial of each kept row.
  size_t GatherObservations(const std::vector<uint32_t>& rows, size_t d, size_t count, bool slots,
                            std::vector<double>* out, const std::vector<double>* row_weights,
                            std::vector<double>* weights_out,
                            std::vector<uint32_t>* kept = nullptr);
  // Makes the running trials' components of the joint g(x) `above` (fitted to above_obs_,
  // dims [d, d + count)) the lies options_.liar_kernel asks for, from l(x) `below`.
  void ShapeLies(const ParzenEstimator& below, ParzenEstimator* above, size_t d, size_t count);
  void EncodeNewTrials();
  void Reset();

  TpeOptions options_;
  int64_t num_samples_;
  uint64_t seed_;
  std::string metric_;
  double sign_ = 1;  // loss = sign_ * value (mode max: -1)
  std::optional<SearchSpace> space_;
  std::vector<ParzenDim> parzen_dims_;
  std::vector<TpePrior> priors_;

  std::vector<TrialRecord> trials_;  // in suggestion order (Optuna's chronological order)
  std::vector<TrialState> states_;   // per trial, apart so the model's scans stay compact
  std::vector<double> values_;       // per trial: the metric when kComplete
  std::unordered_map<std::string, size_t> index_;
  int64_t suggested_ = 0, complete_ = 0, running_ = 0;

  // Per-suggestion work, kept to reuse its buffers.
  std::vector<double> encoded_;  // trials_ × dims, model coordinates (NaN: missing)
  size_t encoded_rows_ = 0;
  // Per numeric dim (when a fit takes neighbour gaps as widths), (model value, trial) of every
  // encoded trial in ascending order, kept across suggestions so a fit filters instead of
  // sorting.
  std::vector<std::vector<std::pair<double, uint32_t>>> sorted_;
  std::vector<int32_t> slot_;  // per trial: its row among its side's observations, or -1
  std::vector<uint32_t> below_sorted_, above_sorted_;  // each side's rows by value, per dim
  std::vector<std::pair<double, uint32_t>> ranked_;    // (loss, trial) of completed trials
  std::vector<uint32_t> below_rows_, above_rows_;
  std::vector<uint32_t> above_kept_;  // the trial of each of g(x)'s observations
  // Per below/above row (weight_strategy other than kOldDecay), and each side's gathered ones.
  std::vector<double> below_row_weights_, above_row_weights_, below_weights_, above_weights_;
  std::vector<char> is_below_;
  std::vector<double> below_obs_, above_obs_;          // each side's observations
  std::vector<double> candidates_, candidate_values_;  // model coordinates, values
  std::vector<double> log_l_, log_g_, chosen_;
  // One pair per dim (univariate) or per group (multivariate), at the index of its first dim,
  // refitted for every suggestion; a refit reuses what the estimator computed for components
  // that did not change.
  std::vector<ParzenEstimator> below_, above_;
  bool joint_ = false;  // this suggestion's model is one joint estimator
};

}  // namespace tunebus
