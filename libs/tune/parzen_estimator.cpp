#include "libs/tune/parzen_estimator.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "libs/tune/normal_distribution.hpp"

namespace tunebus {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
// Terms more than this below the largest one change a log-sum-exp by < e^-40 each.
constexpr double kCut = 40;
// Bins narrower than this (in sigmas) use the midpoint series instead of two erfc.
constexpr double kNarrowBin = 1e-3;

// log of the standard normal mass of [za, zb] when zb - za < kNarrowBin: the integral of
// φ(m + s) over |s| <= w/2 is w φ(m) (1 + He2(m) w²/24 + He4(m) w⁴/1920 + O(w⁶ He6(m))).
double LogNarrowMass(double za, double zb, double log_width) {
  const double m = 0.5 * (za + zb), w = zb - za;
  const double m2 = m * m, w2 = w * w;
  const double eps = w2 * (m2 - 1) / 24 + w2 * w2 * (m2 * m2 - 6 * m2 + 3) / 1920;
  const double log1p_eps =
      std::abs(eps) < 1e-4 ? eps * (1 - eps * (0.5 - eps / 3)) : std::log1p(eps);
  return log_width - 0.5 * m2 - kLogSqrt2Pi + log1p_eps;
}

// log of the standard normal mass of [za, zb] (in sigmas); log_width = log(zb - za).
double LogBinMass(double za, double zb, double log_width) {
  if (zb - za < kNarrowBin) return LogNarrowMass(za, zb, log_width);
  return LogNormalMass(za, zb);
}

// log Z of N(mu, sigma) truncated to [low, high]; 0 when both ends are beyond 8.5 sigma
// (Φ(-8.5) < 1e-17).
double LogTruncationMass(double low, double high, double mu, double sigma) {
  const double a = (low - mu) / sigma, b = (high - mu) / sigma;
  if (a < -8.5 && b > 8.5) return 0;
  if (a < -8.5 && b > 0) return std::log1p(-NormalCdf(-b));  // one tail matters
  if (b > 8.5 && a < 0) return std::log1p(-NormalCdf(a));
  return LogNormalMass(a, b);
}

// The loops below are compiled twice on x86-64, for AVX2 (4 doubles a vector) and for the
// baseline (SSE2, 2), and the loader picks the one the processor runs. AVX2 brings no fused
// multiply-add (that is FMA's flag), so both give the same results, operation for operation.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TUNEBUS_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TUNEBUS_AVX2_CLONES
#endif

// e[i] = exp(e[i] - max) for the values within kCut of max, 0 for the others: a loop without
// branches, which the compiler vectorises.
TUNEBUS_AVX2_CLONES void ExpWithinCut(double* e, size_t n, double max) {
  for (size_t i = 0; i < n; ++i) {
    const double d = e[i] - max;
    const double exp_d = ExpNonPositive(d);
    e[i] = d > -kCut ? exp_d : 0.0;
  }
}

// out[k] = coef[k] - z²/2 with z = (x - center[k]) / sigma[k], k < n: the log terms of a
// continuous mixture's components.
TUNEBUS_AVX2_CLONES void ContinuousTerms(double x, const double* center, const double* sigma,
                                         const double* coef, size_t n, double* out) {
  for (size_t k = 0; k < n; ++k) {
    const double z = (x - center[k]) / sigma[k];
    out[k] = coef[k] - 0.5 * z * z;
  }
}

// out[b] = the largest value a term of block b can have at x, b < n: the block's largest log
// coefficient less z²/2, z the distance from x to its centers' range [low, high] in its
// largest sigma.
TUNEBUS_AVX2_CLONES void BlockBounds(double x, const double* low, const double* high,
                                     const double* max_sigma, const double* max_log_coef, size_t n,
                                     double* out) {
  for (size_t b = 0; b < n; ++b) {
    const double gap = std::max(low[b] - x, 0.0) + std::max(x - high[b], 0.0);
    const double z = gap / max_sigma[b];
    out[b] = max_log_coef[b] - 0.5 * z * z;
  }
}

// A multi-dim mixture's continuous dim at x: lo[i] and hi[i] += component i's log kernel,
// -z²/2 - log sigma - log √(2π) - log Z, i < n.
TUNEBUS_AVX2_CLONES void AddContinuousKernels(double x, const double* mu, const double* sigma,
                                              const double* log_sigma, const double* log_norm,
                                              size_t n, double* lo, double* hi) {
  for (size_t i = 0; i < n; ++i) {
    const double z = (x - mu[i]) / sigma[i];
    const double t = -0.5 * z * z - log_sigma[i] - kLogSqrt2Pi - log_norm[i];
    lo[i] += t;
    hi[i] += t;
  }
}

// A multi-dim mixture's stepped dim at the bin [xa, xb] (log_bin = log(xb - xa)): lo[i] +=
// a lower and hi[i] += an upper bound of component i's log mass of the bin, w φ(farthest end)
// and w φ(nearest point) over sigma Z, i < n.
TUNEBUS_AVX2_CLONES void AddSteppedKernelBounds(double xa, double xb, double log_bin,
                                                const double* mu, const double* sigma,
                                                const double* log_sigma, const double* log_norm,
                                                size_t n, double* lo, double* hi) {
  for (size_t i = 0; i < n; ++i) {
    const double za = (xa - mu[i]) / sigma[i], zb = (xb - mu[i]) / sigma[i];
    const double base = log_bin - log_sigma[i] - kLogSqrt2Pi - log_norm[i];
    const double z_near = za > 0 ? za : (zb < 0 ? zb : 0.0);
    const double z_far = std::max(std::abs(za), std::abs(zb));
    lo[i] += base - 0.5 * z_far * z_far;
    hi[i] += base - 0.5 * z_near * z_near;
  }
}

// A multi-dim mixture's categorical dim at choice c: lo[i] and hi[i] += log_prior where
// component i is the prior (center < 0), log_hit where its center is c, log_miss elsewhere.
TUNEBUS_AVX2_CLONES void AddChoiceKernels(double c, const double* mu, double log_prior,
                                          double log_hit, double log_miss, size_t n, double* lo,
                                          double* hi) {
  for (size_t i = 0; i < n; ++i) {
    // Centers are choice indices (whole numbers) or -1.
    const double t = mu[i] < 0 ? log_prior : (mu[i] == c ? log_hit : log_miss);
    lo[i] += t;
    hi[i] += t;
  }
}

// log Σ exp(e_i) over the values within kCut of max, the largest; overwrites e. The sum is
// in index order.
double LogSumExpAbove(double* e, size_t n, double max) {
  if (max == -kInf) return -kInf;
  ExpWithinCut(e, n, max);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += e[i];
  return max + std::log(sum);
}

}  // namespace

void ParzenEstimator::Reset(std::span<const ParzenDim> dims, size_t n) {
  if (n * dims.size() > reserved_) Reserve(n, dims.size());
  dims_.assign(dims.begin(), dims.end());
  n_ = n;
  weights_.assign(n, 1.0);
  centers_.assign(n * dims.size(), 0.0);
  sigmas_.assign(n * dims.size(), 1.0);
}

void ParzenEstimator::Reserve(size_t n, size_t num_dims) {
  // Half again as much, so refits with a few more components reuse the buffers instead of
  // growing them over the next suggestions; and written once now, because a fresh buffer's
  // pages fault in when first written (about a hundred a fit of 1,000 components, a few
  // hundred microseconds), which had better happen in the fit that grows the buffers. The
  // buffers are refilled by every fit; the previous fit's tables are dropped (not reused once).
  const size_t per_dim = n + n / 2 + 2, all = per_dim * std::max<size_t>(num_dims, 1);
  auto grow = [](auto* v, size_t size) {
    v->reserve(size);
    v->resize(size);
    v->clear();
  };
  for (std::vector<double>* v :
       {&weights_, &log_weights_, &cumulative_weights_, &scratch_, &scratch_hi_, &merged_center_,
        &merged_sigma_, &merged_log_sigma_, &merged_log_norm_, &merged_log_coef_, &previous_.center,
        &previous_.sigma, &previous_.log_sigma, &previous_.log_norm, &sorted_}) {
    grow(v, per_dim);
  }
  for (std::vector<double>* v : {&centers_, &sigmas_, &log_sigmas_, &log_norms_}) grow(v, all);
  grow(&order_, per_dim);
  grow(&keyed_, per_dim);
  reserved_ = all;
}

double ParzenEstimator::ChoiceProbability(size_t d, size_t i, int64_t c) const {
  const ParzenDim& dim = dims_[d];
  const double center = centers_[d * n_ + i];
  if (center < 0) return 1.0 / double(dim.n_choices);
  return int64_t(center) == c ? dim.p_hit : dim.p_miss;
}

size_t ParzenEstimator::MostLikelyComponent(const double* point) const {
  size_t best = 0;
  double best_log = -kInf;
  for (size_t i = 0; i < n_; ++i) {
    double e = std::log(weights_[i]);
    for (size_t d = 0; d < dims_.size(); ++d) {
      const ParzenDim& dim = dims_[d];
      if (dim.categorical()) {
        e += std::log(ChoiceProbability(d, i, int64_t(point[d])));
      } else if (dim.step <= 0) {
        const size_t k = d * n_ + i;
        if (point[d] < dim.low || point[d] > dim.high) {
          e = -kInf;
        } else {
          const double z = (point[d] - centers_[k]) / sigmas_[k];
          e += -0.5 * z * z - std::log(sigmas_[k]) - log_norms_[k];
        }
      } else {
        e += LogKernelNumeric(d, i, point[d]);  // a mass: no -log sigma to add back
      }
    }
    if (e > best_log) best_log = e, best = i;
  }
  return best;
}

void ParzenEstimator::Finalize(std::span<const uint32_t> center_order) {
  const double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  for (double& w : weights_) w /= total;
  cumulative_weights_.resize(n_);
  double cumulative = 0;
  for (size_t i = 0; i < n_; ++i) cumulative_weights_[i] = cumulative += weights_[i];
  const size_t num_dims = dims_.size();
  if (num_dims != 1) {  // 1-D uses merged weights
    log_weights_.resize(n_);
    for (size_t i = 0; i < n_; ++i) log_weights_[i] = std::log(weights_[i]);
  }
  choice_log_prob_.clear();
  for (std::vector<double>* v :
       {&block_low_, &block_high_, &block_max_sigma_, &block_max_log_coef_}) {
    v->clear();
  }
  if (num_dims == 1 && !dims_[0].categorical()) {
    MergeComponents(center_order);
    return;
  }
  merged_center_.clear();  // no previous fit to reuse
  log_sigmas_.resize(n_ * num_dims);
  log_norms_.resize(n_ * num_dims);
  for (size_t d = 0; d < num_dims; ++d) {
    if (dims_[d].categorical()) continue;
    double last_sigma = -1, last_log = 0;
    for (size_t i = 0; i < n_; ++i) {
      const size_t k = d * n_ + i;
      if (sigmas_[k] != last_sigma) last_sigma = sigmas_[k], last_log = std::log(last_sigma);
      // Optuna 3.1.0's continuous log density has no -log sigma term (set_optuna31_density).
      log_sigmas_[k] = optuna31_density_ && dims_[d].step <= 0 ? 0.0 : last_log;
      log_norms_[k] = LogTruncationMass(dims_[d].low, dims_[d].high, centers_[k], sigmas_[k]);
    }
  }
  if (num_dims != 1) return;
  const ParzenDim& dim = dims_[0];
  // Categorical: Σ_i w_i p_i(c) = prior mass / n_choices + hit(c) p_hit + (observed mass -
  // hit(c)) p_miss.
  choice_log_prob_.assign(size_t(dim.n_choices), 0.0);
  double prior_mass = 0, observed_mass = 0;
  for (size_t i = 0; i < n_; ++i) {
    const double c = centers_[i];
    if (c < 0) {
      prior_mass += weights_[i];
    } else {
      observed_mass += weights_[i];
      if (size_t(c) < choice_log_prob_.size()) choice_log_prob_[size_t(c)] += weights_[i];
    }
  }
  for (double& p : choice_log_prob_) {
    p = std::log(prior_mass / double(dim.n_choices) + p * dim.p_hit +
                 (observed_mass - p) * dim.p_miss);
  }
}

void ParzenEstimator::MergeComponents(std::span<const uint32_t> center_order) {
  const ParzenDim& dim = dims_[0];
  // The previous fit's components: their log sigma and log Z are reused when this fit has a
  // component of the same center and sigma (bitwise) in the same dim.
  std::swap(merged_center_, previous_.center);
  std::swap(merged_sigma_, previous_.sigma);
  std::swap(merged_log_sigma_, previous_.log_sigma);
  std::swap(merged_log_norm_, previous_.log_norm);
  const bool in_order = center_order.size() == n_;
  const bool reuse = previous_.in_order && in_order && previous_.low == dim.low &&
                     previous_.high == dim.high && previous_.step == dim.step &&
                     previous_.optuna31_density == optuna31_density_;
  previous_.in_order = in_order;
  previous_.low = dim.low;
  previous_.high = dim.high;
  previous_.step = dim.step;
  previous_.optuna31_density = optuna31_density_;
  const size_t num_previous = reuse ? previous_.center.size() : 0;
  const double* previous_center = previous_.center.data();
  const double* previous_sigma = previous_.sigma.data();

  // Components equal in center and sigma (adjacent in center order) become one.
  std::vector<double>& merged_weight = scratch_;
  for (std::vector<double>* v :
       {&merged_center_, &merged_sigma_, &merged_log_sigma_, &merged_log_norm_, &merged_weight}) {
    v->resize(n_);
  }
  double* center_out = merged_center_.data();
  double* sigma_out = merged_sigma_.data();
  double* weight_out = merged_weight.data();
  size_t m = 0, from = 0;
  for (size_t j = 0; j < n_; ++j) {
    const size_t i = in_order ? center_order[j] : j;
    const double center = centers_[i], sigma = sigmas_[i];
    if (m > 0 && center_out[m - 1] == center && sigma_out[m - 1] == sigma) {
      weight_out[m - 1] += weights_[i];
      continue;
    }
    center_out[m] = center;
    sigma_out[m] = sigma;
    weight_out[m] = weights_[i];
    // Both fits list their components by ascending center: skip the previous fit's smaller
    // centers, then look through its run of equal ones.
    while (from < num_previous && previous_center[from] < center) ++from;
    size_t k = from;
    while (k < num_previous && previous_center[k] == center &&
           !(std::bit_cast<uint64_t>(previous_center[k]) == std::bit_cast<uint64_t>(center) &&
             std::bit_cast<uint64_t>(previous_sigma[k]) == std::bit_cast<uint64_t>(sigma))) {
      ++k;
    }
    if (k < num_previous && previous_center[k] == center) {
      merged_log_sigma_[m] = previous_.log_sigma[k];
      merged_log_norm_[m] = previous_.log_norm[k];
    } else {
      // Optuna 3.1.0's continuous log density has no -log sigma term (set_optuna31_density).
      merged_log_sigma_[m] = optuna31_density_ && dim.step <= 0 ? 0.0 : std::log(sigma);
      merged_log_norm_[m] = LogTruncationMass(dim.low, dim.high, center, sigma);
    }
    ++m;
  }
  for (std::vector<double>* v :
       {&merged_center_, &merged_sigma_, &merged_log_sigma_, &merged_log_norm_, &merged_weight}) {
    v->resize(m);
  }
  merged_log_coef_.resize(m);
  for (size_t k = 0; k < m; ++k) {
    // Continuous: log(w / (sigma sqrt(2 pi) Z)); stepped: log(w / Z) (the bin mass carries the
    // rest).
    double coef = std::log(merged_weight[k]) - merged_log_norm_[k];
    if (dim.step <= 0) coef -= merged_log_sigma_[k] + kLogSqrt2Pi;
    merged_log_coef_[k] = coef;
  }
  if (dim.step > 0) return;
  for (size_t begin = 0; begin < m; begin += kBlock) {
    const size_t end = std::min(begin + kBlock, m);
    double low = kInf, high = -kInf, max_sigma = 0, max_log_coef = -kInf;
    for (size_t k = begin; k < end; ++k) {
      low = std::min(low, merged_center_[k]);
      high = std::max(high, merged_center_[k]);
      max_sigma = std::max(max_sigma, merged_sigma_[k]);
      max_log_coef = std::max(max_log_coef, merged_log_coef_[k]);
    }
    block_low_.push_back(low);
    block_high_.push_back(high);
    block_max_sigma_.push_back(max_sigma);
    block_max_log_coef_.push_back(max_log_coef);
  }
}

double ParzenEstimator::LogKernelNumeric(size_t d, size_t i, double x) const {
  const ParzenDim& dim = dims_[d];
  const size_t k = d * n_ + i;
  const double mu = centers_[k], sigma = sigmas_[k];
  if (dim.step <= 0) {
    if (x < dim.low || x > dim.high) return -kInf;
    const double z = (x - mu) / sigma;
    return -0.5 * z * z - log_sigmas_[k] - kLogSqrt2Pi - log_norms_[k];
  }
  const double xa = std::max(x - 0.5 * dim.step, dim.low);
  const double xb = std::min(x + 0.5 * dim.step, dim.high);
  if (!(xa < xb)) return -kInf;
  return LogBinMass((xa - mu) / sigma, (xb - mu) / sigma, std::log(xb - xa) - log_sigmas_[k]) -
         log_norms_[k];
}

double ParzenEstimator::LogPdfContinuous1D(double x) const {
  const ParzenDim& dim = dims_[0];
  if (x < dim.low || x > dim.high) return -kInf;
  const size_t m = merged_center_.size(), num_blocks = block_low_.size();
  // A bound on each block's terms; the block with the largest bound first, so the running
  // maximum is high early and far blocks are skipped.
  scratch_hi_.resize(num_blocks);
  BlockBounds(x, block_low_.data(), block_high_.data(), block_max_sigma_.data(),
              block_max_log_coef_.data(), num_blocks, scratch_hi_.data());
  size_t first = 0;
  for (size_t b = 1; b < num_blocks; ++b) {
    if (scratch_hi_[b] > scratch_hi_[first]) first = b;
  }
  scratch_.resize(m);
  size_t kept = 0;
  double max = -kInf;
  auto evaluate = [&](size_t b) {
    const size_t begin = b * kBlock, size = std::min(kBlock, m - begin);
    double* e = scratch_.data() + kept;
    ContinuousTerms(x, merged_center_.data() + begin, merged_sigma_.data() + begin,
                    merged_log_coef_.data() + begin, size, e);
    for (size_t k = 0; k < size; ++k) max = std::max(max, e[k]);
    kept += size;
  };
  evaluate(first);
  for (size_t b = 0; b < num_blocks; ++b) {
    if (b != first && scratch_hi_[b] >= max - kCut) evaluate(b);
  }
  return LogSumExpAbove(scratch_.data(), kept, max);
}

double ParzenEstimator::LogPdfStepped1D(double x) const {
  const ParzenDim& dim = dims_[0];
  const double xa = std::max(x - 0.5 * dim.step, dim.low);
  const double xb = std::min(x + 0.5 * dim.step, dim.high);
  if (!(xa < xb)) return -kInf;
  const double log_bin = std::log(xb - xa);
  const size_t m = merged_center_.size();
  scratch_.resize(m);
  scratch_hi_.resize(m);
  // Cheap bounds first: the mass of [za, zb] lies between w φ(farthest) and w φ(nearest).
  double max_low = -kInf;
  for (size_t k = 0; k < m; ++k) {
    const double za = (xa - merged_center_[k]) / merged_sigma_[k];
    const double zb = (xb - merged_center_[k]) / merged_sigma_[k];
    const double base = merged_log_coef_[k] + log_bin - merged_log_sigma_[k] - kLogSqrt2Pi;
    const double z_near = za > 0 ? za : (zb < 0 ? zb : 0.0);
    const double z_far = std::max(std::abs(za), std::abs(zb));
    scratch_[k] = base - 0.5 * z_far * z_far;
    scratch_hi_[k] = base - 0.5 * z_near * z_near;
    max_low = std::max(max_low, scratch_[k]);
  }
  // Exact masses for the components that can matter.
  double max = -kInf;
  for (size_t k = 0; k < m; ++k) {
    if (scratch_hi_[k] < max_low - kCut) {
      scratch_[k] = -kInf;
      continue;
    }
    const double za = (xa - merged_center_[k]) / merged_sigma_[k];
    const double zb = (xb - merged_center_[k]) / merged_sigma_[k];
    scratch_[k] = merged_log_coef_[k] + LogBinMass(za, zb, log_bin - merged_log_sigma_[k]);
    max = std::max(max, scratch_[k]);
  }
  return LogSumExpAbove(scratch_.data(), m, max);
}

double ParzenEstimator::LogPdfOne(const double* point) const {
  if (dims_.size() == 1) {
    if (dims_[0].categorical()) {
      const double c = point[0];
      if (!(c >= 0) || size_t(c) >= choice_log_prob_.size()) return -kInf;
      return choice_log_prob_[size_t(c)];
    }
    return dims_[0].step > 0 ? LogPdfStepped1D(point[0]) : LogPdfContinuous1D(point[0]);
  }
  // General mixture: cheap lower and upper bounds per component (exact except for stepped
  // dims), then the exact log kernel of the components that can matter.
  scratch_.assign(log_weights_.begin(), log_weights_.end());
  scratch_hi_.assign(log_weights_.begin(), log_weights_.end());
  bool inexact = false;
  for (size_t d = 0; d < dims_.size(); ++d) {
    const ParzenDim& dim = dims_[d];
    const double x = point[d];
    const double* mu = centers_.data() + d * n_;
    const double* sigma = sigmas_.data() + d * n_;
    const double* log_sigma = log_sigmas_.data() + d * n_;
    const double* log_norm = log_norms_.data() + d * n_;
    if (dim.categorical()) {
      const int64_t c = int64_t(x);
      if (!(x >= 0) || c >= dim.n_choices) return -kInf;
      AddChoiceKernels(double(c), mu, -std::log(double(dim.n_choices)), std::log(dim.p_hit),
                       std::log(dim.p_miss), n_, scratch_.data(), scratch_hi_.data());
    } else if (dim.step <= 0) {
      if (x < dim.low || x > dim.high) return -kInf;
      AddContinuousKernels(x, mu, sigma, log_sigma, log_norm, n_, scratch_.data(),
                           scratch_hi_.data());
    } else {
      const double xa = std::max(x - 0.5 * dim.step, dim.low);
      const double xb = std::min(x + 0.5 * dim.step, dim.high);
      if (!(xa < xb)) return -kInf;
      inexact = true;
      AddSteppedKernelBounds(xa, xb, std::log(xb - xa), mu, sigma, log_sigma, log_norm, n_,
                             scratch_.data(), scratch_hi_.data());
    }
  }
  double max = *std::max_element(scratch_.begin(), scratch_.end());
  if (inexact) {
    // The exact sum of the components that can matter, each categorical term as
    // log(ChoiceProbability), which takes one of three values per dim.
    choice_log_terms_.resize(3 * dims_.size());
    for (size_t d = 0; d < dims_.size(); ++d) {
      const ParzenDim& dim = dims_[d];
      if (!dim.categorical()) continue;
      choice_log_terms_[3 * d] = std::log(1.0 / double(dim.n_choices));
      choice_log_terms_[3 * d + 1] = std::log(dim.p_hit);
      choice_log_terms_[3 * d + 2] = std::log(dim.p_miss);
    }
    const double max_low = max;
    max = -kInf;
    for (size_t i = 0; i < n_; ++i) {
      if (scratch_hi_[i] < max_low - kCut) {
        scratch_[i] = -kInf;
        continue;
      }
      double e = log_weights_[i];
      for (size_t d = 0; d < dims_.size(); ++d) {
        const ParzenDim& dim = dims_[d];
        if (dim.categorical()) {
          const double center = centers_[d * n_ + i];
          e += choice_log_terms_[3 * d + (center < 0                             ? 0
                                          : int64_t(center) == int64_t(point[d]) ? 1
                                                                                 : 2)];
        } else {
          e += LogKernelNumeric(d, i, point[d]);
        }
      }
      scratch_[i] = e;
      max = std::max(max, e);
    }
  }
  return LogSumExpAbove(scratch_.data(), n_, max);
}

void ParzenEstimator::LogPdf(const double* points, size_t count, double* out) const {
  const size_t num_dims = dims_.size();
  for (size_t j = 0; j < count; ++j) {
    const double* point = points + j * num_dims;
    // Stepped and categorical candidates repeat: reuse an earlier equal point's density.
    bool reused = false;
    for (size_t k = 0; k < j && !reused; ++k) {
      if (std::equal(point, point + num_dims, points + k * num_dims)) {
        out[j] = out[k];
        reused = true;
      }
    }
    if (!reused) out[j] = LogPdfOne(point);
  }
}

void ParzenEstimator::Sample(SearchRng& rng, size_t count, double* out) const {
  const size_t num_dims = dims_.size();
  for (size_t j = 0; j < count; ++j) {
    // A component by weight: the first whose cumulative weight exceeds u (numpy's
    // RandomState.choice with p).
    const double u = rng.Uniform01() * cumulative_weights_.back();
    size_t i = size_t(std::upper_bound(cumulative_weights_.begin(), cumulative_weights_.end(), u) -
                      cumulative_weights_.begin());
    i = std::min(i, n_ - 1);
    for (size_t d = 0; d < num_dims; ++d) {
      const ParzenDim& dim = dims_[d];
      const double mu = centers_[d * n_ + i];
      if (dim.categorical()) {
        // Optuna's _sample_from_categorical_dist: the number of cumulative probabilities
        // below u.
        const double v = rng.Uniform01();
        double cumulative = 0;
        int64_t c = 0;
        for (; c < dim.n_choices - 1; ++c) {
          cumulative += ChoiceProbability(d, i, c);
          if (!(cumulative < v)) break;
        }
        out[j * num_dims + d] = double(c);
        continue;
      }
      const double sigma = sigmas_[d * n_ + i];
      const double z =
          TruncatedNormalQuantile(rng.Uniform01(), (dim.low - mu) / sigma, (dim.high - mu) / sigma);
      out[j * num_dims + d] = std::clamp(mu + sigma * z, dim.low, dim.high);
    }
  }
}

void TpeDefaultWeights(size_t n, double* out) {
  if (n < 25) {
    std::fill(out, out + n, 1.0);
    return;
  }
  // numpy.linspace(1/n, 1, n - 25): start + i * step, the last exactly 1.
  const size_t ramp = n - 25;
  const double start = 1.0 / double(n);
  const double step = ramp > 1 ? (1.0 - start) / double(ramp - 1) : 0.0;
  for (size_t i = 0; i < ramp; ++i) out[i] = double(i) * step + start;
  if (ramp > 1) out[ramp - 1] = 1.0;
  std::fill(out + ramp, out + n, 1.0);
}

void FitTpeEstimator(std::span<const ParzenDim> dims, std::span<const TpePrior> priors,
                     const double* obs, size_t n, const TpeEstimatorOptions& options,
                     ParzenEstimator* out, std::span<const uint32_t> sorted_obs,
                     const double* obs_weights) {
  const bool consider_prior = options.consider_prior || n == 0;
  const size_t m = n + (consider_prior ? 1 : 0);
  const size_t num_dims = dims.size();
  out->Reset(dims, m);
  double* weights = out->mutable_weights();
  double prior_weight = options.prior_weight;
  if (obs_weights != nullptr && n > 0) {
    std::copy_n(obs_weights, n, weights);
    prior_weight *= std::accumulate(obs_weights, obs_weights + n, 0.0) / double(n);
  } else {
    TpeDefaultWeights(n, weights);
  }
  if (consider_prior) weights[n] = prior_weight;

  // Multivariate: one bandwidth per dim (Scott's rule; Optuna's SIGMA0_MAGNITUDE = 0.2).
  const double sigma0 = 0.2 * std::pow(double(std::max<size_t>(n, 1)), -1.0 / double(num_dims + 4));
  bool sorted_once = false;
  const bool presorted = n > 0 && sorted_obs.size() == n * num_dims;
  for (size_t d = 0; d < num_dims; ++d) {
    double* mu = out->mutable_centers(d);
    for (size_t i = 0; i < n; ++i) mu[i] = obs[i * num_dims + d];
    ParzenDim& dim = out->dim(d);
    if (dim.categorical()) {
      if (consider_prior) mu[n] = -1;
      const double v = options.prior_weight / double(m);
      const double row = double(dim.n_choices) * v + 1;
      dim.p_hit = (v + 1) / row;
      dim.p_miss = v / row;
      continue;
    }
    const double low = dim.low, high = dim.high;
    if (consider_prior) mu[n] = priors[d].mu;
    double* sigma = out->mutable_sigmas(d);
    if (options.multivariate && options.bandwidth == TpeBandwidth::kScott) {
      std::fill(sigma, sigma + m, sigma0 * (high - low));
    } else {
      // The larger gap to the neighbours in sorted order, [low, high] as end points.
      std::vector<uint32_t>& order = out->order_;
      order.resize(m);
      if (presorted) {
        // This dim's observations by ascending value; the prior (index n) goes after the
        // observations equal to it.
        const std::span<const uint32_t> dim_sorted = sorted_obs.subspan(d * n, n);
        const auto at = std::upper_bound(dim_sorted.begin(), dim_sorted.end(), mu[m - 1],
                                         [&](double v, uint32_t i) { return v < mu[i]; });
        const size_t split = consider_prior ? size_t(at - dim_sorted.begin()) : n;
        std::copy(dim_sorted.begin(), dim_sorted.begin() + ptrdiff_t(split), order.begin());
        if (consider_prior) order[split] = uint32_t(n);
        std::copy(dim_sorted.begin() + ptrdiff_t(split), dim_sorted.end(),
                  order.begin() + ptrdiff_t(split + (consider_prior ? 1 : 0)));
      } else {
        // Sorted (center, index) pairs: contiguous, and ties in age order as a stable sort.
        std::vector<std::pair<double, uint32_t>>& keyed = out->keyed_;
        keyed.resize(m);
        for (size_t i = 0; i < m; ++i) keyed[i] = {mu[i], uint32_t(i)};
        std::sort(keyed.begin(), keyed.end());
        for (size_t k = 0; k < m; ++k) order[k] = keyed[k].second;
      }
      sorted_once = true;
      std::vector<double>& s = out->sorted_;  // low, sorted centers, high
      s.resize(m + 2);
      s[0] = low;
      for (size_t k = 0; k < m; ++k) s[k + 1] = mu[order[k]];
      s[m + 1] = high;
      for (size_t k = 1; k <= m; ++k) {
        sigma[order[k - 1]] = std::max(s[k] - s[k - 1], s[k + 1] - s[k]);
      }
      if (!options.consider_endpoints && m >= 2) {
        sigma[order[0]] = s[2] - s[1];
        sigma[order[m - 1]] = s[m] - s[m - 1];
      }
    }
    const double max_sigma = high - low;
    // Optuna 3.1.0: (high - low) / min(100, 1 + m), i.e. Δ = 0.01, α = 1 (kept bit for bit).
    const double min_sigma =
        !options.consider_magic_clip ? 1e-12
        : options.magic_clip_exponent == 1.0
            ? (high - low) / std::min(1.0 / options.min_bandwidth_factor, 1.0 + double(m))
            : (high - low) * std::max(options.min_bandwidth_factor,
                                      std::pow(1.0 + double(m), -options.magic_clip_exponent));
    for (size_t i = 0; i < m; ++i) sigma[i] = std::clamp(sigma[i], min_sigma, max_sigma);
    if (consider_prior) sigma[n] = priors[d].sigma;
  }
  out->set_optuna31_density(!options.normalized_density);
  out->Finalize(sorted_once && num_dims == 1 ? std::span<const uint32_t>(out->order_)
                                             : std::span<const uint32_t>());
}

}  // namespace tunebus
