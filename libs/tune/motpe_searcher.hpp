// MotpeSearcher: multi-objective TPE (Ozaki, Tanigaki, Watanabe, Onishi, "Multiobjective
// tree-structured Parzen estimator for computationally expensive optimization problems", GECCO
// 2020; JAIR 75, 2022), as Optuna 3.1.0's TPESampler with several objectives
// (optuna/samplers/_tpe/sampler.py: _split_observation_pairs, _calculate_weights_below_for_
// multi_objective; optuna/_hypervolume/hssp.py), with its defaults:
//
// - The first n_startup_trials suggestions (counted in completed observations) are random: the
//   variant generator's draw of the param space.
// - Then the n completed observations are split: gamma(n) = min(ceil(0.1 n), 25) are "below"
//   (l(x)): whole fronts of the non-dominated sort while they fit, then from the next front a
//   subset chosen greedily by hypervolume contribution (the greedy hypervolume subset selection
//   of Guerreiro, Fonseca, Paquete 2016, as Optuna's _solve_hssp), the reference point
//   max(1.1 w, 0.9 w) of that front's worst point w (0 made 1e-12). The rest are "above" (g(x)).
//   Running trials are neither (Optuna's multi-objective TPE has no constant liar).
// - Weights: each below observation's hypervolume contribution among the below set (reference
//   max(1.1 w, 0.9 w) of its worst point), plus 1e-12, divided by the largest (one observation:
//   1); above: TPE's default_weights; the prior component prior_weight. The paper (section 3.2)
//   weighs l(x)'s components by their hypervolume contributions likewise.
// - Each param on its own (Optuna's sample_independent), in param-space order: both sides fitted
//   with FitTpeEstimator (libs/tune/parzen_estimator.hpp, TpeSearcher's estimators), the below
//   one re-weighted as above; n_ei_candidates drawn from l, the one maximising
//   log l(x) - log g(x) chosen (the paper's acquisition, EHVI's surrogate as l/g). Every
//   sampling function of the param space works, as in TpeSearcher.
// - Observations, determinism and journaling: MultiObjectiveSearcher's. Densities are Optuna
//   3.1.0's by default (TpeSearcher's normalized_density). Random numbers are tunebus' own.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/multiobjective_searcher.hpp"
#include "libs/tune/parzen_estimator.hpp"

namespace tunebus {

/// TPESampler's arguments that apply to several objectives (Optuna 3.1.0 defaults), and
/// normalized_density (TpeOptions').
struct MotpeOptions {
  int64_t n_startup_trials = 10;
  int64_t n_ei_candidates = 24;
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool normalized_density = false;

  /// From the experiment file's `search:` map (JSON) with the keys above. The runner's keys are
  /// ignored. Errors: InvalidArgument "<key>: <what is wrong>".
  static Result<MotpeOptions> Parse(const nlohmann::json& params);
};

/// The split of observations `losses` (rows, minimised) into below and above: the indices of
/// the n_below below ones (fronts, then the greedy hypervolume subset of the next front, see the
/// file comment), ascending. REQUIRES: n_below <= losses.size().
std::vector<size_t> MotpeBelow(const std::vector<std::vector<double>>& losses, size_t n_below);
/// The below observations' weights: hypervolume contributions (see the file comment), one per
/// row of `below`, in (0, 1].
std::vector<double> MotpeWeights(const std::vector<std::vector<double>>& below);

class MotpeSearcher final : public MultiObjectiveSearcher {
 public:
  MotpeSearcher(MotpeOptions options, std::vector<Objective> objectives, int64_t num_samples,
                uint64_t seed);

  const char* name() const override { return "motpe"; }
  /// {"searcher": "motpe", "phase": "startup" | "model", "observations", "running"}.
  nlohmann::json Describe() const override;
  const MotpeOptions& options() const { return options_; }

 protected:
  nlohmann::json NewConfig(SearchRng& rng, int64_t* generation) override;

 private:
  MotpeOptions options_;
  // Per-suggestion work, kept to reuse its buffers.
  std::vector<double> row_, obs_, weights_, candidates_, log_l_, log_g_, values_;
  std::vector<uint32_t> order_;
  ParzenEstimator below_, above_;
};

}  // namespace tunebus
