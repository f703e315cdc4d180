// The synthetic learning-curve family of the tuning quality benchmark
// (docs/reference/schedulers.md).
//
// A config {lr, width, dropout} (sampled by the real VariantGenerator from kParamSpace) trains a
// model whose quality s follows a saturating curve: every training iteration moves s toward the
// config's final value f(config) by the fraction 1 - exp(-1 / tau(config)), so with a fixed
// config from s = 0
//
//     s(t) = f(config) * (1 - exp(-t / tau(config)))        t = training_iteration
//
// and a config change (PBT's explore) makes s continue from where it was toward the new f. What a
// trainable reports is s(t) + noise, noise ~ N(0, kNoiseSd) drawn from a hash of (seed, trial
// index, iteration): every scheduler sees the same noise at the same point of the same trial.
//
// f has a known optimum kOptimum = 0.95 at lr = 3e-3, width = 256, dropout = 0.2 and falls off
// quadratically in log10(lr), log2(width) and dropout (0.6 .. 0.95 over the space).
// tau = 2 * (3e-3 / lr)^k * (width / 256)^0.1: higher learning rates and smaller widths learn
// faster, so curves cross (a fast, slightly worse config leads early, the better one wins at
// max_t); k (CurveFamily::tau_lr_exponent) sets how strongly. Units: s and f are an accuracy
// in [0, 1]; tau in iterations; IterationSeconds in simulated seconds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numbers>

namespace tunebus::bench {

/// The best f over the search space (reached at lr 3e-3, width 256, dropout 0.2).
inline constexpr double kOptimum = 0.95;
/// Standard deviation of the noise on every reported value (accuracy units).
inline constexpr double kNoiseSd = 0.005;

/// The param space, in the experiment file's syntax (YAML flow map).
inline constexpr const char* kParamSpaceYaml =
    "{lr: {loguniform: [1.0e-4, 1.0e-1]}, width: {choice: [32, 64, 128, 256, 512]}, "
    "dropout: {uniform: [0.0, 0.5]}}";

/// The family's shape knob: how strongly the learning rate sets the learning speed.
struct CurveFamily {
  /// tau ~ (3e-3 / lr)^tau_lr_exponent. 0.1 (default): near-optimal curves cross in the first
  /// few iterations (lr 3e-2 leads lr 3e-3 at t = 1), then the ranking follows f. 0.5: strong
  /// short-horizon bias, the case where an early rung misleads (docs/reference/schedulers.md).
  double tau_lr_exponent = 0.1;

  /// f(config): the quality the config saturates at; at most kOptimum.
  double FinalValue(const nlohmann::json& c) const {
    const double dl = std::log10(c.at("lr").get<double>() / 3e-3);
    const double dw = std::log2(c.at("width").get<double>() / 256.0);
    const double dd = c.at("dropout").get<double>() - 0.2;
    return kOptimum - 0.06 * dl * dl - 0.01 * dw * dw - 0.3 * dd * dd;
  }
  /// tau(config): iterations to reach 1 - 1/e of f; in [1, 200].
  double TimeConstant(const nlohmann::json& c) const {
    const double lr = c.at("lr").get<double>();
    const double width = c.at("width").get<double>();
    return std::clamp(2.0 * std::pow(3e-3 / lr, tau_lr_exponent) * std::pow(width / 256.0, 0.1),
                      1.0, 200.0);
  }
  /// One training iteration from quality `s` under `config`: the next s.
  double Step(double s, const nlohmann::json& config) const {
    return s + (FinalValue(config) - s) * (1 - std::exp(-1 / TimeConstant(config)));
  }
};

/// Simulated seconds one iteration takes (wider models are slower).
inline double IterationSeconds(const nlohmann::json& c) {
  return 0.5 + c.at("width").get<double>() / 512.0;
}

/// splitmix64: a well-mixed 64-bit hash step.
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The noise on trial `index`'s report at `iteration` (N(0, kNoiseSd), Box-Muller).
inline double Noise(uint64_t seed, int64_t index, int64_t iteration) {
  const uint64_t h = Mix(Mix(Mix(seed) ^ uint64_t(index)) ^ uint64_t(iteration));
  const double u1 = (double(h >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = double(Mix(h) >> 11) * 0x1.0p-53;
  return kNoiseSd * std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace tunebus::bench
