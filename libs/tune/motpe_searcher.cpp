#include "libs/tune/motpe_searcher.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "libs/tune/searcher_params.hpp"
#include "libs/tune/tpe_searcher.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

constexpr double kMotpeEps = 1e-12;  // Optuna's EPS in samplers/_tpe/sampler.py

// Optuna's reference point for a set of losses: max(1.1 w, 0.9 w) of the worst point w, a 0
// made kMotpeEps, so every point is strictly inside.
std::vector<double> MotpeReference(const std::vector<std::vector<double>>& points) {
  std::vector<double> worst = points[0];
  for (const auto& p : points) {
    for (size_t i = 0; i < worst.size(); ++i) worst[i] = std::max(worst[i], p[i]);
  }
  for (double& w : worst) {
    w = std::max(1.1 * w, 0.9 * w);
    if (w == 0) w = kMotpeEps;
  }
  return worst;
}

// Optuna 3.1.0's _solve_hssp: `count` of `points` chosen greedily by hypervolume contribution
// (first of equals), in the order chosen.
std::vector<size_t> GreedyHypervolumeSubset(const std::vector<std::vector<double>>& points,
                                            size_t count, const std::vector<double>& reference) {
  std::vector<double> contribution(points.size());
  for (size_t j = 0; j < points.size(); ++j) contribution[j] = Hypervolume({points[j]}, reference);
  std::vector<char> taken(points.size(), 0);
  std::vector<std::vector<double>> selected;
  std::vector<size_t> chosen;
  double selected_volume = 0;
  while (chosen.size() < count) {
    size_t best = points.size();
    for (size_t j = 0; j < points.size(); ++j) {
      if (!taken[j] && (best == points.size() || contribution[j] > contribution[best])) best = j;
    }
    taken[best] = 1;
    for (size_t j = 0; j < points.size(); ++j) {
      if (taken[j]) continue;
      std::vector<double> limited(points[j].size());
      for (size_t i = 0; i < limited.size(); ++i) {
        limited[i] = std::max(points[best][i], points[j][i]);
      }
      selected.push_back(std::move(limited));
      contribution[j] -= Hypervolume(selected, reference) - selected_volume;
      selected.pop_back();
    }
    selected.push_back(points[best]);
    chosen.push_back(best);
    selected_volume = Hypervolume(selected, reference);
  }
  return chosen;
}

}  // namespace

Result<MotpeOptions> MotpeOptions::Parse(const json& params) {
  SearcherParams p(params, "motpe");
  if (Status s =
          p.OnlyKnown({"n_startup_trials", "n_ei_candidates", "consider_prior", "prior_weight",
                       "consider_magic_clip", "consider_endpoints", "normalized_density"});
      !s.ok()) {
    return s;
  }
  MotpeOptions o;
  auto startup = p.Int("n_startup_trials", o.n_startup_trials, 0);
  auto candidates = p.Int("n_ei_candidates", o.n_ei_candidates, 1);
  auto consider_prior = p.Bool("consider_prior", o.consider_prior);
  auto prior_weight = p.Number("prior_weight", o.prior_weight, 0, /*exclusive=*/true);
  auto magic_clip = p.Bool("consider_magic_clip", o.consider_magic_clip);
  auto endpoints = p.Bool("consider_endpoints", o.consider_endpoints);
  auto normalized = p.Bool("normalized_density", o.normalized_density);
  for (const Status& s :
       {startup.status(), candidates.status(), consider_prior.status(), prior_weight.status(),
        magic_clip.status(), endpoints.status(), normalized.status()}) {
    if (!s.ok()) return s;
  }
  o.n_startup_trials = *startup;
  o.n_ei_candidates = *candidates;
  o.consider_prior = *consider_prior;
  o.prior_weight = *prior_weight;
  o.consider_magic_clip = *magic_clip;
  o.consider_endpoints = *endpoints;
  o.normalized_density = *normalized;
  return o;
}

std::vector<size_t> MotpeBelow(const std::vector<std::vector<double>>& losses, size_t n_below) {
  std::vector<size_t> below;
  for (const std::vector<size_t>& front : NonDominatedSort(losses)) {
    if (below.size() >= n_below) break;
    if (below.size() + front.size() <= n_below) {
      below.insert(below.end(), front.begin(), front.end());
      continue;
    }
    std::vector<std::vector<double>> points;
    for (size_t i : front) points.push_back(losses[i]);
    for (size_t j :
         GreedyHypervolumeSubset(points, n_below - below.size(), MotpeReference(points))) {
      below.push_back(front[j]);
    }
  }
  std::sort(below.begin(), below.end());
  return below;
}

std::vector<double> MotpeWeights(const std::vector<std::vector<double>>& below) {
  if (below.size() <= 1) return std::vector<double>(below.size(), 1.0);
  const std::vector<double> reference = MotpeReference(below);
  const double volume = Hypervolume(below, reference);
  std::vector<double> weights(below.size());
  std::vector<std::vector<double>> others;
  for (size_t i = 0; i < below.size(); ++i) {
    others.clear();
    for (size_t j = 0; j < below.size(); ++j) {
      if (j != i) others.push_back(below[j]);
    }
    weights[i] = volume - Hypervolume(others, reference) + kMotpeEps;
  }
  const double largest = *std::max_element(weights.begin(), weights.end());
  for (double& w : weights) w = std::clamp(w / largest, 0.0, 1.0);
  return weights;
}

MotpeSearcher::MotpeSearcher(MotpeOptions options, std::vector<Objective> objectives,
                             int64_t num_samples, uint64_t seed)
    : MultiObjectiveSearcher(std::move(objectives), num_samples, seed), options_(options) {}

json MotpeSearcher::NewConfig(SearchRng& rng, int64_t* generation) {
  (void)generation;
  std::vector<size_t> observed;
  std::vector<std::vector<double>> losses;
  for (size_t i = 0; i < trials().size(); ++i) {
    if (trials()[i].state != TrialState::kComplete) continue;
    observed.push_back(i);
    losses.push_back(trials()[i].losses);
  }
  const int64_t n = int64_t(observed.size());
  if (n < options_.n_startup_trials) return space().RandomConfig(rng.Next());
  const size_t n_below = size_t(std::min(TpeDefaultGamma(n), n));
  const std::vector<size_t> below = MotpeBelow(losses, n_below);
  std::vector<char> is_below(observed.size(), 0);
  std::vector<std::vector<double>> below_losses;
  for (size_t j : below) {
    is_below[j] = 1;
    below_losses.push_back(losses[j]);
  }
  const std::vector<double> below_weights = MotpeWeights(below_losses);

  const size_t num_dims = space().size();
  row_.resize(observed.size() * num_dims);
  for (size_t j = 0; j < observed.size(); ++j) {
    space().Encode(trials()[observed[j]].config, row_.data() + j * num_dims);
  }
  const TpeEstimatorOptions estimator_options{options_.consider_prior,
                                              options_.prior_weight,
                                              options_.consider_magic_clip,
                                              options_.consider_endpoints,
                                              false,
                                              TpeBandwidth::kScott,
                                              options_.normalized_density};
  const size_t n_candidates = size_t(options_.n_ei_candidates);
  values_.assign(num_dims, 0.0);
  for (size_t d = 0; d < num_dims; ++d) {
    const SearchDim& dim = space().dims()[d];
    const std::span<const ParzenDim> dims(&dim.parzen, 1);
    const std::span<const TpePrior> priors(&dim.prior, 1);
    // Below: in chronological order with their weights; a trial without this param is left out
    // (Optuna's param mask).
    obs_.clear();
    weights_.clear();
    for (size_t b = 0; b < below.size(); ++b) {
      const double x = row_[below[b] * num_dims + d];
      if (std::isnan(x)) continue;
      obs_.push_back(x);
      weights_.push_back(below_weights[b]);
    }
    const size_t nb = obs_.size();
    FitTpeEstimator(dims, priors, obs_.data(), nb, estimator_options, &below_);
    double* w = below_.mutable_weights();
    std::copy(weights_.begin(), weights_.end(), w);
    if (below_.size() > nb) w[nb] = options_.prior_weight;
    order_.clear();
    if (!dim.parzen.categorical()) {
      order_.resize(below_.size());
      std::iota(order_.begin(), order_.end(), uint32_t{0});
      const std::span<const double> centers = below_.centers(0);
      std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
        return centers[a] != centers[b] ? centers[a] < centers[b] : a < b;
      });
    }
    below_.Finalize(order_);

    obs_.clear();
    for (size_t j = 0; j < observed.size(); ++j) {
      const double x = row_[j * num_dims + d];
      if (!is_below[j] && !std::isnan(x)) obs_.push_back(x);
    }
    FitTpeEstimator(dims, priors, obs_.data(), obs_.size(), estimator_options, &above_);

    // Candidates from l(x), snapped to values the param takes; the best log l - log g wins
    // (first of equals, as numpy.argmax).
    candidates_.resize(n_candidates);
    below_.Sample(rng, n_candidates, candidates_.data());
    std::vector<double> candidate_values(n_candidates);
    for (size_t c = 0; c < n_candidates; ++c) {
      candidate_values[c] = space().ToValue(d, candidates_[c]);
      candidates_[c] = space().ToModel(d, candidate_values[c]);
    }
    log_l_.resize(n_candidates);
    log_g_.resize(n_candidates);
    below_.LogPdf(candidates_.data(), n_candidates, log_l_.data());
    above_.LogPdf(candidates_.data(), n_candidates, log_g_.data());
    size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < n_candidates; ++c) {
      const double score = log_l_[c] - log_g_[c];
      if (score > best_score) best_score = score, best = c;
    }
    values_[d] = candidate_values[best];
  }
  return space().Config(values_.data());
}

json MotpeSearcher::Describe() const {
  return {{"searcher", name()},
          {"phase", num_observations() < options_.n_startup_trials ? "startup" : "model"},
          {"observations", num_observations()},
          {"running", num_running()}};
}

}  // namespace tunebus
