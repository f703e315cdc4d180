// The test functions of the search quality benchmark (bench/search_quality.cpp,
// docs/reference/search.md "Search quality benchmark"): each is a param space in the experiment
// file's syntax and a deterministic objective of a config from it, with a known optimum.
// bench/search_optuna.py has the same functions and spaces in Python for Optuna's side; the
// benchmark checks that both give the same values at the same points (search_function_check).
//
// Single-fidelity: a trial reports the function's value once (one training iteration); a noisy
// function adds N(0, noise_sd) to it (TrialNoise), and its regret is measured on the noise-free
// value of the config chosen by the noisy ones.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>

namespace tunebus::bench {

/// A test function: the param space, the metric it is reported as, and its optimum.
struct TestFunction {
  const char* name;              // "branin", ...
  const char* param_space_yaml;  // the experiment file's param_space (YAML flow map)
  const char* mode;              // "min" or "max"
  double optimum;                // the best value over the space
  /// The value of `config` (a config of param_space_yaml), without noise.
  double (*value)(const nlohmann::json& config);
  double noise_sd = 0;  // > 0: each report adds TrialNoise(seed, trial index, noise_sd)
};

/// splitmix64: a well-mixed 64-bit hash step (as synthetic_curve.hpp's Mix).
inline uint64_t MixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The N(0, sd) noise on trial `index`'s report in the experiment with `seed` (Box-Muller on
/// a hash of both; bench/search_optuna.py's noise() draws the same numbers).
inline double TrialNoise(uint64_t seed, int64_t index, double sd) {
  const uint64_t h = MixBits(MixBits(MixBits(seed) ^ uint64_t(index)) ^ 1);
  const double u1 = (double(h >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = double(MixBits(h) >> 11) * 0x1.0p-53;
  return sd * std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

/// Branin (Branin-Hoo), 2-d: Dixon & Szegő, "The global optimisation problem: an introduction",
/// Towards Global Optimisation 2, 1978; as in Surjanovic & Bingham's Virtual Library of
/// Simulation Experiments (sfu.ca/~ssurjano/branin.html): a (x2 - b x1² + c x1 - r)² +
/// s (1 - t) cos x1 + s with a = 1, b = 5.1 / (4π²), c = 5 / π, r = 6, s = 10, t = 1 / (8π);
/// x1 in [-5, 10], x2 in [0, 15]. Minimum 0.397887 at (-π, 12.275), (π, 2.275), (9.42478, 2.475).
inline double Branin(const nlohmann::json& c) {
  using std::numbers::pi;
  const double x1 = c.at("x1").get<double>(), x2 = c.at("x2").get<double>();
  const double b = 5.1 / (4 * pi * pi), cc = 5 / pi, t = 1 / (8 * pi);
  const double u = x2 - b * x1 * x1 + cc * x1 - 6;
  return u * u + 10 * (1 - t) * std::cos(x1) + 10;
}

/// Hartmann-6, 6-d on [0, 1]^6: Dixon & Szegő 1978 (as above); Surjanovic & Bingham
/// (sfu.ca/~ssurjano/hart6.html): -Σ_i α_i exp(-Σ_j A_ij (x_j - P_ij)²). Minimum -3.32237 at
/// (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
inline double Hartmann6(const nlohmann::json& c) {
  static constexpr std::array<double, 4> kAlpha = {1.0, 1.2, 3.0, 3.2};
  static constexpr double kA[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                      {0.05, 10, 17, 0.1, 8, 14},
                                      {3, 3.5, 1.7, 10, 17, 8},
                                      {17, 8, 0.05, 10, 0.1, 14}};
  static constexpr double kP[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                      {2329, 4135, 8307, 3736, 1004, 9991},
                                      {2348, 1451, 3522, 2883, 3047, 6650},
                                      {4047, 8828, 8732, 5743, 1091, 381}};
  double x[6];
  static constexpr const char* kKeys[6] = {"x1", "x2", "x3", "x4", "x5", "x6"};
  for (int j = 0; j < 6; ++j) x[j] = c.at(kKeys[j]).get<double>();
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j) {
      const double d = x[j] - kP[i][j] * 1e-4;
      inner += kA[i][j] * d * d;
    }
    sum += kAlpha[i] * std::exp(-inner);
  }
  return -sum;
}

/// A 10-d mixed space shaped like a training run's (tunebus' own, for this benchmark): two
/// categoricals (optimizer, activation), two log floats (lr, weight_decay), three ints (layers,
/// log units, stepped batch_size), three floats (dropout, momentum, warmup_frac). The value is
/// a sum of non-negative terms, each 0 at its optimum; lr's optimum depends on the optimizer
/// and dropout's on the layers (interactions a univariate model does not see). Minimum 0 at
/// optimizer adam, activation gelu, lr 1e-3, weight_decay 1e-4, layers 3, units 128,
/// batch_size 64, dropout 0.25, momentum 0.9, warmup_frac 0.1 (every value in the space).
inline double Mixed10(const nlohmann::json& c) {
  const std::string optimizer = c.at("optimizer").get<std::string>();
  const std::string activation = c.at("activation").get<std::string>();
  // Per optimizer: its penalty and the log10 of its best learning rate.
  double opt_penalty = 0.3, lr_best = -1;  // sgd
  if (optimizer == "momentum") opt_penalty = 0.1, lr_best = -1.5;
  if (optimizer == "adam") opt_penalty = 0, lr_best = -3;
  if (optimizer == "rmsprop") opt_penalty = 0.05, lr_best = -2.5;
  const double act_penalty = activation == "gelu"   ? 0
                             : activation == "relu" ? 0.05
                             : activation == "tanh" ? 0.2
                                                    : 0.5;  // sigmoid
  const double dl = std::log10(c.at("lr").get<double>()) - lr_best;
  const double dw = std::log10(c.at("weight_decay").get<double>()) + 4;
  const double layers = c.at("layers").get<double>();
  const double du = std::log2(c.at("units").get<double>()) - 7;
  const double db = std::log2(c.at("batch_size").get<double>() / 64);
  const double dd = c.at("dropout").get<double>() - (0.1 + 0.05 * layers);
  const double dm = c.at("momentum").get<double>() - 0.9;
  const double dr = c.at("warmup_frac").get<double>() - 0.1;
  return opt_penalty + act_penalty + 0.1 * dl * dl + 0.05 * dw * dw +
         0.05 * (layers - 3) * (layers - 3) + 0.08 * du * du + 0.1 * db * db + dd * dd +
         0.5 * dm * dm + 2 * dr * dr;
}

/// Six-hump camel, 2-d: Dixon & Szegő 1978 (as above); Surjanovic & Bingham
/// (sfu.ca/~ssurjano/camel6.html): (4 - 2.1 x1² + x1⁴/3) x1² + x1 x2 + (-4 + 4 x2²) x2², x1 in
/// [-3, 3], x2 in [-2, 2]. Minimum -1.0316285 at (0.0898, -0.7126) and (-0.0898, 0.7126).
inline double SixHumpCamel(const nlohmann::json& c) {
  const double x1 = c.at("x1").get<double>(), x2 = c.at("x2").get<double>();
  return (4 - 2.1 * x1 * x1 + x1 * x1 * x1 * x1 / 3) * x1 * x1 + x1 * x2 +
         (-4 + 4 * x2 * x2) * x2 * x2;
}

/// Styblinski-Tang, 8-d on [-5, 5]^8: Styblinski & Tang, "Experiments in nonconvex
/// optimization: stochastic approximation with function smoothing and simulated annealing",
/// Neural Networks 3(4), 1990; Surjanovic & Bingham (sfu.ca/~ssurjano/stybtang.html): ½ Σ (x⁴ -
/// 16 x² + 5 x). Minimum -39.16616570377142 · 8 at x_i = -2.903534.
inline double StyblinskiTang8(const nlohmann::json& c) {
  static constexpr const char* kKeys[8] = {"x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8"};
  double sum = 0;
  for (const char* key : kKeys) {
    const double x = c.at(key).get<double>();
    sum += x * x * x * x - 16 * x * x + 5 * x;
  }
  return 0.5 * sum;
}

/// Levy, 20-d on [-10, 10]^20: Laguna & Martí, "Experimental testing of advanced scatter search
/// designs for global optimization of multimodal functions", J. Global Optimization 33, 2005;
/// Surjanovic & Bingham (sfu.ca/~ssurjano/levy.html): with w_i = 1 + (x_i - 1) / 4,
/// sin²(π w_1) + Σ_{i<20} (w_i - 1)² (1 + 10 sin²(π w_i + 1)) + (w_20 - 1)² (1 + sin²(2π w_20)).
/// Minimum 0 at (1, ..., 1).
inline double Levy20(const nlohmann::json& c) {
  using std::numbers::pi;
  static constexpr const char* kKeys[20] = {"x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",
                                            "x8",  "x9",  "x10", "x11", "x12", "x13", "x14",
                                            "x15", "x16", "x17", "x18", "x19", "x20"};
  double w[20];
  for (int j = 0; j < 20; ++j) w[j] = 1 + (c.at(kKeys[j]).get<double>() - 1) / 4;
  const double s0 = std::sin(pi * w[0]);
  double sum = s0 * s0;
  for (int j = 0; j < 19; ++j) {
    const double s = std::sin(pi * w[j] + 1);
    sum += (w[j] - 1) * (w[j] - 1) * (1 + 10 * s * s);
  }
  const double s = std::sin(2 * pi * w[19]);
  return sum + (w[19] - 1) * (w[19] - 1) * (1 + s * s);
}

/// A conditional space (tunebus' own, shaped like an optimizer choice): `optimizer` is a
/// choice of three conditional branches (VariantGenerator), {name: sgd, lr}, {name: momentum,
/// lr, m} and {name: adam, lr, beta1, beta2}; weight_decay is shared. Optuna's side
/// (bench/search_optuna.py) suggests the same params define-by-run (sgd_lr, momentum_lr,
/// momentum_m, adam_lr, adam_beta1, adam_beta2). Branch floors 0.4 (sgd), 0.15 (momentum,
/// whose best lr is 0.1 (1 - m)), 0 (adam). Minimum 0 at adam, lr 1e-3, beta1 0.9, beta2
/// 0.999, weight_decay 1e-4.
inline double Conditional(const nlohmann::json& c) {
  const double dw = std::log10(c.at("weight_decay").get<double>()) + 4;
  const double shared = 0.05 * dw * dw;
  const nlohmann::json& optimizer = c.at("optimizer");
  const std::string name = optimizer.at("name").get<std::string>();
  const double lr = optimizer.at("lr").get<double>();
  if (name == "sgd") {
    const double dl = std::log10(lr) + 1;
    return 0.4 + 0.25 * dl * dl + shared;
  }
  if (name == "momentum") {
    const double m = optimizer.at("m").get<double>();
    const double dl = std::log10(lr) - std::log10(0.1 * (1 - m));
    return 0.15 + 0.2 * dl * dl + 2 * (m - 0.9) * (m - 0.9) + shared;
  }
  const double dl = std::log10(lr) + 3;
  const double d1 = optimizer.at("beta1").get<double>() - 0.9;
  const double d2 = optimizer.at("beta2").get<double>() - 0.999;
  return 0.2 * dl * dl + 3 * d1 * d1 + 50 * d2 * d2 + shared;
}

/// The single-fidelity functions evaluated in-process.
inline constexpr TestFunction kTestFunctions[] = {
    {"branin", "{x1: {uniform: [-5, 10]}, x2: {uniform: [0, 15]}}", "min", 0.39788735772973816,
     Branin},
    {"six_hump_camel", "{x1: {uniform: [-3, 3]}, x2: {uniform: [-2, 2]}}", "min",
     -1.0316284534898774, SixHumpCamel},
    {"hartmann6",
     "{x1: {uniform: [0, 1]}, x2: {uniform: [0, 1]}, x3: {uniform: [0, 1]}, x4: {uniform: [0, 1]}, "
     "x5: {uniform: [0, 1]}, x6: {uniform: [0, 1]}}",
     "min", -3.32236801141551, Hartmann6},
    {"hartmann6_noisy",
     "{x1: {uniform: [0, 1]}, x2: {uniform: [0, 1]}, x3: {uniform: [0, 1]}, x4: {uniform: [0, 1]}, "
     "x5: {uniform: [0, 1]}, x6: {uniform: [0, 1]}}",
     "min", -3.32236801141551, Hartmann6, 0.1},
    {"styblinski_tang8",
     "{x1: {uniform: [-5, 5]}, x2: {uniform: [-5, 5]}, x3: {uniform: [-5, 5]}, x4: {uniform: [-5, "
     "5]}, x5: {uniform: [-5, 5]}, x6: {uniform: [-5, 5]}, x7: {uniform: [-5, 5]}, x8: {uniform: "
     "[-5, 5]}}",
     "min", -39.16616570377142 * 8, StyblinskiTang8},
    {"mixed10",
     "{optimizer: {choice: [sgd, momentum, adam, rmsprop]}, activation: {choice: [relu, tanh, "
     "sigmoid, gelu]}, lr: {loguniform: [1.0e-5, 1.0]}, weight_decay: {loguniform: [1.0e-7, "
     "1.0e-1]}, layers: {randint: [1, 9]}, units: {lograndint: [8, 1025]}, batch_size: "
     "{qrandint: [16, 512, 16]}, dropout: {uniform: [0.0, 0.8]}, momentum: {uniform: [0.0, "
     "0.99]}, warmup_frac: {uniform: [0.0, 0.5]}}",
     "min", 0.0, Mixed10},
    {"conditional",
     "{optimizer: {choice: [{name: sgd, lr: {loguniform: [1.0e-4, 1.0]}}, {name: momentum, lr: "
     "{loguniform: [1.0e-5, 1.0]}, m: {uniform: [0.0, 0.99]}}, {name: adam, lr: {loguniform: "
     "[1.0e-5, 1.0e-1]}, beta1: {uniform: [0.5, 0.999]}, beta2: {uniform: [0.9, 0.9999]}}]}, "
     "weight_decay: {loguniform: [1.0e-6, 1.0e-1]}}",
     "min", 0.0, Conditional},
    {"levy20",
     "{x1: {uniform: [-10, 10]}, x2: {uniform: [-10, 10]}, x3: {uniform: [-10, 10]}, x4: "
     "{uniform: [-10, 10]}, x5: {uniform: [-10, 10]}, x6: {uniform: [-10, 10]}, x7: {uniform: "
     "[-10, 10]}, x8: {uniform: [-10, 10]}, x9: {uniform: [-10, 10]}, x10: {uniform: [-10, 10]}, "
     "x11: {uniform: [-10, 10]}, x12: {uniform: [-10, 10]}, x13: {uniform: [-10, 10]}, x14: "
     "{uniform: [-10, 10]}, x15: {uniform: [-10, 10]}, x16: {uniform: [-10, 10]}, x17: {uniform: "
     "[-10, 10]}, x18: {uniform: [-10, 10]}, x19: {uniform: [-10, 10]}, x20: {uniform: [-10, "
     "10]}}",
     "min", 0.0, Levy20},
};

/// The digits model (examples/digits, scikit-learn SGDClassifier on load_digits), evaluated by
/// bench/quality/digits_objective.py; metric val_accuracy (max), optimum unknown (reported
/// against 1.0).
inline constexpr const char* kDigitsParamSpaceYaml =
    "{alpha: {loguniform: [1.0e-6, 1.0e-2]}, eta0: {loguniform: [1.0e-4, 1.0e-1]}, loss: "
    "{choice: [hinge, log_loss, modified_huber]}, learning_rate: {choice: [constant, "
    "invscaling]}}";

}  // namespace tunebus::bench
