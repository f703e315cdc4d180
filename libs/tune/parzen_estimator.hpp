// ParzenEstimator: a weighted mixture of product kernels, the density model of TPE and BOHB.
//
// Component i has weight w_i (the weights sum to 1) and, in each dimension d, a kernel centred
// on centers(d)[i]:
// - numeric d: a normal N(center, sigma_i) truncated to [low_d, high_d] (either may be
//   infinite: not truncated). With step_d > 0 the density of x is the kernel's mass on
//   [x - step/2, x + step/2] ∩ [low, high] (Optuna's stepped and integer distributions).
// - categorical d (n_choices > 0): the center is a choice index; the kernel gives that choice
//   p_hit and every other p_miss; a center of -1 gives every choice 1 / n_choices (a prior).
// The density of a point is Σ_i w_i Π_d kernel_{i,d}(x_d), each kernel a normalised density
// (Optuna 3.1.0's truncnorm.logpdf leaves out the -log sigma term, optuna/optuna#5109, fixed
// by #5110 in Optuna 3.5; this class computes the fixed, normalised density unless
// set_optuna31_density(true): then a continuous kernel is Optuna 3.1.0's φ(z) / Z without the
// 1 / sigma, which TPE uses by default, see TpeOptions::normalized_density).
//
// TPE (Bergstra et al., NeurIPS 2011, section 4) fits one to the good and one to the bad
// observations with FitTpeEstimator (Optuna 3.1.0's _ParzenEstimator); BOHB (Falkner et al.,
// ICML 2018, section 3.1) builds its KDEs with the same class (bohb_searcher.cpp).
//
// Coordinates are the searcher's model coordinates (SearchSpace: log for log-scaled params,
// choice index for categorical ones). Use: Reset, fill the weights, centers and sigmas,
// Finalize, then Sample / LogPdf. The object keeps its buffers between fits, so refitting it
// for every suggestion allocates nothing once warm. Not thread-safe (LogPdf uses scratch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "libs/tune/search_rng.hpp"

namespace tunebus {

/// One coordinate of a ParzenEstimator (see the file comment).
struct ParzenDim {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  double step = 0;        // > 0: densities are masses of bins of this width
  int64_t n_choices = 0;  // > 0: categorical
  double p_hit = 1;       // categorical: probability of the center's choice
  double p_miss = 0;      // categorical: probability of each other choice
  bool categorical() const { return n_choices > 0; }
};

/// The prior component TPE adds in a numeric dimension: N(mu, sigma) (Optuna: the middle of
/// the range and its width).
struct TpePrior {
  double mu = 0;
  double sigma = 1;
};

/// How a multivariate TPE estimator picks its numeric bandwidths (univariate ones always use
/// kHyperopt's rule). kScott: Optuna 3.1.0's multivariate rule, 0.2 n^(-1/(D+4)) (high - low)
/// for every component. kHyperopt: each component's own, per dim, as univariate TPE (the larger
/// gap to its sorted neighbours; Bergstra et al. 2011's Parzen estimator, hyperopt's
/// adaptive_parzen_normal), Watanabe 2023's `heuristic="hyperopt"` with `multivariate=True`
/// (arXiv:2304.11127; github.com/nabenabe0928/tpe).
enum class TpeBandwidth { kScott, kHyperopt };

/// Optuna 3.1.0's _ParzenEstimatorParameters, with weights = default_weights.
struct TpeEstimatorOptions {
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool multivariate = false;
  TpeBandwidth bandwidth = TpeBandwidth::kScott;  // multivariate only
  /// false: continuous kernels as Optuna 3.1.0 evaluates them (ParzenEstimator's
  /// set_optuna31_density); true: normalised (Optuna >= 3.5, optuna/optuna#5110).
  bool normalized_density = true;
  /// The magic clip's smallest numeric bandwidth, as a fraction of high - low: max(Δ, 1 / (1 +
  /// m)^α) with m the components (observations and the prior). Δ = min_bandwidth_factor, α =
  /// magic_clip_exponent (Watanabe 2023, arXiv:2304.11127, section 3.3 / Table 6: "minimum
  /// bandwidth factor" and "exponent α"; Optuna 3.1.0's (high - low) / min(100, 1 + m) is Δ =
  /// 0.01, α = 1).
  double min_bandwidth_factor = 0.01;
  double magic_clip_exponent = 1.0;
};

class ParzenEstimator {
 public:
  /// Starts a mixture of `n` components over `dims`: weights 1, centers 0, sigmas 1 until set.
  void Reset(std::span<const ParzenDim> dims, size_t n);
  /// true: LogPdf gives continuous (not stepped, not categorical) kernels Optuna 3.1.0's
  /// log density, -z²/2 - log √(2π) - log Z, without -log sigma (optuna/optuna#5109), so the
  /// mixture is not normalised; stepped and categorical kernels are unchanged (Optuna 3.1.0
  /// computes those as masses). Takes effect at Finalize. Default false.
  void set_optuna31_density(bool on) { optuna31_density_ = on; }
  ParzenDim& dim(size_t d) { return dims_[d]; }
  double* mutable_weights() { return weights_.data(); }
  double* mutable_centers(size_t d) { return centers_.data() + d * n_; }
  double* mutable_sigmas(size_t d) { return sigmas_.data() + d * n_; }
  /// Normalises the weights and precomputes what Sample and LogPdf use. `center_order`, when
  /// given for a one-dimensional numeric mixture, lists the components by ascending center
  /// (the TPE fit sorts them anyway): components equal in center and sigma are then merged
  /// for LogPdf, which makes integer parameters cheap. REQUIRES: every sigma > 0, the weights
  /// >= 0 with a positive sum.
  void Finalize(std::span<const uint32_t> center_order = {});

  size_t size() const { return n_; }
  size_t num_dims() const { return dims_.size(); }
  const ParzenDim& dim(size_t d) const { return dims_[d]; }
  std::span<const double> weights() const { return weights_; }
  std::span<const double> centers(size_t d) const { return {centers_.data() + d * n_, n_}; }
  std::span<const double> sigmas(size_t d) const { return {sigmas_.data() + d * n_, n_}; }
  /// The probability component i gives choice c of categorical dimension d.
  double ChoiceProbability(size_t d, size_t i, int64_t c) const;
  /// The component most likely to have drawn `point` (num_dims() coordinates): the largest
  /// w_i k_i(point) with normalised kernels (with -log sigma also under set_optuna31_density),
  /// the first of equals. REQUIRES: Finalize, num_dims() >= 2, size() >= 1.
  size_t MostLikelyComponent(const double* point) const;

  /// Draws `count` points into `out` (row-major, count × num_dims()): a component by weight,
  /// then each coordinate from its kernel (a truncated normal by inversion; a choice).
  void Sample(SearchRng& rng, size_t count, double* out) const;
  /// out[j] = log density of point j of `points` (row-major, count × num_dims()); -inf
  /// outside the support. Terms below e^-40 of the largest are left out (relative error
  /// < 1e-14).
  void LogPdf(const double* points, size_t count, double* out) const;

 private:
  // Gives every per-component buffer room for about 1.5 n components of num_dims dims.
  void Reserve(size_t n, size_t num_dims);
  double LogKernelNumeric(size_t d, size_t i, double x) const;  // exact, any dim
  double LogPdfOne(const double* point) const;
  double LogPdfContinuous1D(double x) const;
  double LogPdfStepped1D(double x) const;
  // Finalize of a one-dimensional numeric mixture: the merged components and their tables.
  void MergeComponents(std::span<const uint32_t> center_order);

  std::vector<ParzenDim> dims_;
  size_t n_ = 0;
  size_t reserved_ = 0;  // components × dims the buffers have room for
  bool optuna31_density_ = false;
  std::vector<double> weights_, centers_, sigmas_;  // n_, n_ × dims, n_ × dims
  // Finalize's tables.
  std::vector<double> log_weights_, cumulative_weights_;
  // Mixtures of several dims and 1-D categorical ones: per component and numeric dim, log
  // sigma and log Z of the truncation to [low, high] (0 untruncated).
  std::vector<double> log_sigmas_, log_norms_;
  std::vector<double> choice_log_prob_;  // 1-D categorical: log density per choice
  // 1-D numeric: the merged components (center, sigma, log sigma, log Z, and log weight -
  // log Z, less log sigma + log √(2π) when continuous).
  std::vector<double> merged_center_, merged_sigma_, merged_log_sigma_, merged_log_norm_,
      merged_log_coef_;
  // 1-D numeric: the previous fit's merged components and what they depend on besides center
  // and sigma, kept for the next fit (MergeComponents).
  struct PreviousFit {
    std::vector<double> center, sigma, log_sigma, log_norm;
    double low = 0, high = 0, step = 0;
    bool optuna31_density = false;
    bool in_order = false;  // in ascending center order
  };
  PreviousFit previous_;
  // 1-D continuous: the merged components in blocks of kBlock, each with what bounds its
  // terms (the range of its centers, its largest sigma and log coefficient), so LogPdf skips
  // blocks whose terms cannot matter (with components in center order, most of those far
  // from x).
  static constexpr size_t kBlock = 16;
  std::vector<double> block_low_, block_high_, block_max_sigma_, block_max_log_coef_;
  mutable std::vector<double> scratch_, scratch_hi_;
  mutable std::vector<double> choice_log_terms_;  // LogPdfOne: per dim, log of each choice term
  // FitTpeEstimator's sort buffers.
  std::vector<uint32_t> order_;
  std::vector<double> sorted_;
  std::vector<std::pair<double, uint32_t>> keyed_;

  friend void FitTpeEstimator(std::span<const ParzenDim>, std::span<const TpePrior>, const double*,
                              size_t, const TpeEstimatorOptions&, ParzenEstimator*,
                              std::span<const uint32_t>, const double*);
};

/// Optuna 3.1.0 TPESampler's default_weights(n): 1 for every observation when n < 25, else a
/// ramp from 1/n to 1 over the oldest n - 25 and 1 for the newest 25 (chronological order).
void TpeDefaultWeights(size_t n, double* out);

/// Fits `out` to `n` observations as Optuna 3.1.0's _ParzenEstimator
/// (samplers/_tpe/parzen_estimator.py): `obs` is row-major n × dims.size() in chronological
/// order (model coordinates; choice indices for categorical dims); components are the
/// observations then, with consider_prior (forced when n == 0), the prior. Weights:
/// TpeDefaultWeights then prior_weight, normalised. Numeric sigmas: univariate, the larger gap
/// to the sorted neighbours with [low, high] as end points (the outermost take their inner gap
/// unless consider_endpoints); multivariate, 0.2 n^(-1/(D+4)) (high - low) (Scott's rule as
/// in the BOHB paper) or, with bandwidth kHyperopt, the univariate ones; then clipped
/// to [(high - low) max(Δ, 1 / (1 + components)^α), high - low] (the magic clip, Δ and α from
/// the options, Optuna's (high - low) / min(100, 1 + components) by default; 1e-12 from below
/// without it); the prior gets `priors[d].sigma`. Categorical: each observation row is
/// prior_weight/m everywhere plus 1 on its choice, normalised (m = components), the prior row
/// uniform. `priors` has one entry per dim (ignored for categorical ones). Ties between equal
/// observations are broken by age (Optuna uses an unstable sort there). `sorted_obs` may give,
/// per dim (n × dims.size(), dim after dim), the observations' indices by ascending value in
/// that dim (ties by index; a categorical dim's part is not read): the fit then skips its sorts
/// (a searcher keeps its observations sorted across suggestions), with the same result.
/// `obs_weights`, when given (n of them, > 0), replaces TpeDefaultWeights, and the prior's weight
/// is then prior_weight times their mean (Watanabe 2023's EI weighting, whose prior weighs as an
/// average observation).
void FitTpeEstimator(std::span<const ParzenDim> dims, std::span<const TpePrior> priors,
                     const double* obs, size_t n, const TpeEstimatorOptions& options,
                     ParzenEstimator* out, std::span<const uint32_t> sorted_obs = {},
                     const double* obs_weights = nullptr);

}  // namespace tunebus
