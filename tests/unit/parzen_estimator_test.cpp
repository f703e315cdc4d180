// ParzenEstimator and FitTpeEstimator against Optuna 3.1.0's _ParzenEstimator: the expected
// weights, mus, sigmas and log densities are what tests/unit/data/tpe/optuna_parzen_reference.py
// prints (Optuna's own estimator on the same observations; log densities with Optuna's
// truncnorm.logpdf fix of optuna/optuna#5110 patched in, see the script), plus the normal
// distribution helpers against scipy / mpmath.
#include "libs/tune/parzen_estimator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

#include "libs/tune/normal_distribution.hpp"

namespace tunebus {
namespace {

constexpr double kTol = 1e-12;

ParzenDim Range(double low, double high, double step = 0) {
  ParzenDim d;
  d.low = low;
  d.high = high;
  d.step = step;
  return d;
}

void ExpectNear(std::span<const double> actual, const std::vector<double>& expected,
                double tol = kTol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol * std::max(1.0, std::abs(expected[i]))) << "at " << i;
  }
}

std::vector<double> LogPdf(const ParzenEstimator& pe, const std::vector<double>& points) {
  std::vector<double> out(points.size() / pe.num_dims());
  pe.LogPdf(points.data(), out.size(), out.data());
  return out;
}

struct Fit1D {
  ParzenEstimator pe;
  Fit1D(ParzenDim dim, TpePrior prior, const std::vector<double>& obs,
        TpeEstimatorOptions options = {}) {
    const ParzenDim dims[] = {dim};
    const TpePrior priors[] = {prior};
    FitTpeEstimator(dims, priors, obs.data(), obs.size(), options, &pe);
  }
};

// Optuna's prior in a numeric dim: the middle of [low, high] and its width.
TpePrior MidPrior(const ParzenDim& d) { return {0.5 * (d.low + d.high), d.high - d.low}; }

TEST(ParzenEstimatorTest, FloatMatchesOptuna) {
  // FloatDistribution(-5, 5), observations 1, -2, 3.5, 0.2 (univariate, defaults).
  const ParzenDim dim = Range(-5, 5);
  Fit1D f(dim, MidPrior(dim), {1.0, -2.0, 3.5, 0.2});
  ExpectNear(f.pe.weights(), {0.2, 0.2, 0.2, 0.2, 0.2});
  ExpectNear(f.pe.centers(0), {1.0, -2.0, 3.5, 0.2, 0.0});
  ExpectNear(f.pe.sigmas(0), {2.5, 2.0, 2.5, 1.6666666666666667, 10.0});
  ExpectNear(LogPdf(f.pe, {0.0, 2.5, -4.9}),
             {-1.949153273553865, -2.196524603770782, -3.3206959855835128});
  EXPECT_EQ(LogPdf(f.pe, {5.5})[0], -std::numeric_limits<double>::infinity());
}

TEST(ParzenEstimatorTest, ConsiderEndpointsWidensTheOutermost) {
  // The same observations with consider_endpoints: -2's gap to low (3) counts.
  const ParzenDim dim = Range(-5, 5);
  TpeEstimatorOptions o;
  o.consider_endpoints = true;
  Fit1D f(dim, MidPrior(dim), {1.0, -2.0, 3.5, 0.2}, o);
  ExpectNear(f.pe.sigmas(0), {2.5, 3.0, 2.5, 1.6666666666666667, 10.0});
  ExpectNear(LogPdf(f.pe, {0.0}), {-1.9514349162986866});
}

TEST(ParzenEstimatorTest, RampWeightsAndMagicClipMatchOptuna) {
  // 30 observations on [0, 1] (golden-ratio sequence): default_weights ramps the oldest five,
  // the magic clip lifts most sigmas to 1 / 31.
  std::vector<double> obs;
  for (int i = 0; i < 30; ++i) obs.push_back(std::fmod(i * 0.6180339887498949, 1.0));
  const ParzenDim dim = Range(0, 1);
  Fit1D f(dim, MidPrior(dim), obs);
  const auto w = f.pe.weights();
  ASSERT_EQ(w.size(), 31u);
  EXPECT_NEAR(w[0], 0.0011661807580174927, kTol);
  EXPECT_NEAR(w[1], 0.009620991253644314, kTol);
  EXPECT_NEAR(w[3], 0.026530612244897955, kTol);
  EXPECT_NEAR(w[4], 0.034985422740524776, kTol);
  EXPECT_NEAR(w[30], 0.034985422740524776, kTol);
  const auto s = f.pe.sigmas(0);
  EXPECT_NEAR(s[0], 0.03444185374863373, kTol);
  EXPECT_NEAR(s[4], 0.03125, kTol);
  EXPECT_NEAR(s[9], 0.05572809000084078, kTol);
  EXPECT_NEAR(s[30], 1.0, kTol);
  ExpectNear(LogPdf(f.pe, {0.5, 0.01}), {-0.03434155811001949, -0.5295269155996244}, 1e-11);
}

TEST(ParzenEstimatorTest, MinBandwidthFactorAndExponentSetTheMagicClip) {
  // The same 30 observations: Δ = 0.05 lifts the clip from 1/31 to 0.05 of the range; α = 2
  // with Δ = 0.001 lowers it to 1/31² (Watanabe 2023's "minimum bandwidth factor" and
  // "exponent α"); the prior keeps its own width.
  std::vector<double> obs;
  for (int i = 0; i < 30; ++i) obs.push_back(std::fmod(i * 0.6180339887498949, 1.0));
  const ParzenDim dim = Range(0, 1);
  TpeEstimatorOptions wide;
  wide.min_bandwidth_factor = 0.05;
  Fit1D w(dim, MidPrior(dim), obs, wide);
  EXPECT_NEAR(w.pe.sigmas(0)[4], 0.05, kTol);
  EXPECT_NEAR(w.pe.sigmas(0)[9], 0.05572809000084078, kTol);  // its own gap is wider
  EXPECT_NEAR(w.pe.sigmas(0)[30], 1.0, kTol);
  TpeEstimatorOptions narrow;
  narrow.min_bandwidth_factor = 0.001;
  narrow.magic_clip_exponent = 2;
  Fit1D n(dim, MidPrior(dim), obs, narrow);
  const auto s = n.pe.sigmas(0);
  EXPECT_LT(*std::min_element(s.begin(), s.end()), 0.03125);
  EXPECT_GE(*std::min_element(s.begin(), s.end()), 1.0 / (31.0 * 31.0) - 1e-15);
}

TEST(ParzenEstimatorTest, ObservationWeightsReplaceTheRampAndScaleThePrior) {
  // Given weights 1, 3 (and the prior at prior_weight 2 times their mean 2): normalised 1/8,
  // 3/8, 4/8.
  const ParzenDim dims[] = {Range(0, 1)};
  const TpePrior priors[] = {MidPrior(dims[0])};
  const double obs[] = {0.2, 0.7}, weights[] = {1, 3};
  TpeEstimatorOptions o;
  o.prior_weight = 2;
  ParzenEstimator pe;
  FitTpeEstimator(dims, priors, obs, 2, o, &pe, {}, weights);
  ExpectNear(pe.weights(), {0.125, 0.375, 0.5});
}

TEST(ParzenEstimatorTest, IntIsSteppedAndMatchesOptuna) {
  // IntDistribution(0, 9): bounds [-0.5, 9.5], densities are masses of unit bins; the two equal
  // observations get different sigmas (gap to the left, then the magic clip).
  const ParzenDim dim = Range(-0.5, 9.5, 1);
  Fit1D f(dim, MidPrior(dim), {3, 3, 7, 0});
  ExpectNear(f.pe.centers(0), {3.0, 3.0, 7.0, 0.0, 4.5});
  ExpectNear(f.pe.sigmas(0), {3.0, 1.6666666666666667, 2.5, 3.0, 10.0});
  ExpectNear(LogPdf(f.pe, {3, 5, 9}), {-1.976942925205106, -2.21974114815795, -2.9719051979812043});
}

TEST(ParzenEstimatorTest, SteppedFloatMatchesOptuna) {
  // FloatDistribution(0, 1, step=0.25).
  const ParzenDim dim = Range(-0.125, 1.125, 0.25);
  Fit1D f(dim, MidPrior(dim), {0.25, 0.5, 0.5});
  ExpectNear(f.pe.sigmas(0), {0.25, 0.25, 0.25, 1.25});
  ExpectNear(LogPdf(f.pe, {0.5, 1.0}), {-1.1690882253177868, -2.521977535571417});
}

TEST(ParzenEstimatorTest, Optuna31DensityMatchesUnpatchedOptuna) {
  // normalized_density false: continuous kernels as Optuna 3.1.0 itself evaluates them (no
  // -log sigma, the script's "log_pdf_3.1.0"); stepped ones are unchanged.
  TpeEstimatorOptions o;
  o.normalized_density = false;
  const ParzenDim x = Range(-5, 5);
  Fit1D f(x, MidPrior(x), {1.0, -2.0, 3.5, 0.2}, o);
  ExpectNear(LogPdf(f.pe, {0.0, 2.5, -4.9}),
             {-0.7774640223483134, -0.8860087316541038, -1.5092663375435886});
  std::vector<double> obs;  // many components: the blocked path
  for (int i = 0; i < 30; ++i) obs.push_back(std::fmod(i * 0.6180339887498949, 1.0));
  const ParzenDim unit = Range(0, 1);
  Fit1D g(unit, MidPrior(unit), obs, o);
  ExpectNear(LogPdf(g.pe, {0.5, 0.01}), {-2.5558298786429945, -2.9527519639159294}, 1e-11);
  const ParzenDim lr = Range(std::log(1e-4), std::log(1e-1));
  Fit1D h(lr, MidPrior(lr), {std::log(1e-3), std::log(5e-3), std::log(2e-2)}, o);
  ExpectNear(LogPdf(h.pe, {std::log(1e-3), std::log(0.05)}),
             {-0.8570396812164232, -1.0235303802058167});
  const ParzenDim n = Range(-0.5, 9.5, 1);  // IntDistribution(0, 9)
  Fit1D stepped(n, MidPrior(n), {3, 3, 7, 0}, o), normalised(n, MidPrior(n), {3, 3, 7, 0});
  ExpectNear(LogPdf(stepped.pe, {3, 5, 9}), LogPdf(normalised.pe, {3, 5, 9}));
}

TEST(ParzenEstimatorTest, LogFloatAndLogIntMatchOptuna) {
  // FloatDistribution(1e-4, 1e-1, log=True) and IntDistribution(1, 128, log=True), in log
  // coordinates.
  const ParzenDim lr = Range(std::log(1e-4), std::log(1e-1));
  Fit1D f(lr, MidPrior(lr), {std::log(1e-3), std::log(5e-3), std::log(2e-2)});
  ExpectNear(f.pe.centers(0),
             {-6.907755278982137, -5.298317366548036, -3.912023005428146, -5.756462732485113});
  ExpectNear(f.pe.sigmas(0),
             {1.3815510557964275, 1.3862943611198904, 1.3862943611198904, 6.907755278982137});
  ExpectNear(LogPdf(f.pe, {std::log(1e-3), std::log(0.05)}),
             {-1.8432152065279424, -2.115656365999535});

  const ParzenDim units = Range(std::log(0.5), std::log(128.5));
  Fit1D g(units, MidPrior(units), {std::log(4), std::log(16), std::log(100)});
  ExpectNear(g.pe.sigmas(0),
             {1.109815216979044, 1.8325814637483098, 1.8325814637483098, 5.54907608489522});
  ExpectNear(LogPdf(g.pe, {std::log(8), std::log(128)}),
             {-1.5073812883413376, -1.7505638699253612});
}

TEST(ParzenEstimatorTest, CategoricalMatchesOptuna) {
  // CategoricalDistribution(["a", "b", "c"]), observed indices 0, 2, 2.
  ParzenDim dim;
  dim.n_choices = 3;
  Fit1D f(dim, {}, {0, 2, 2});
  const std::vector<std::vector<double>> expected = {
      {0.7142857142857143, 0.14285714285714285, 0.14285714285714285},
      {0.14285714285714285, 0.14285714285714285, 0.7142857142857143},
      {0.14285714285714285, 0.14285714285714285, 0.7142857142857143},
      {1.0 / 3, 1.0 / 3, 1.0 / 3}};
  for (size_t i = 0; i < 4; ++i) {
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_NEAR(f.pe.ChoiceProbability(0, i, c), expected[i][size_t(c)], kTol);
    }
  }
  ExpectNear(LogPdf(f.pe, {0, 1, 2}),
             {-1.0986122886681098, -1.6582280766035324, -0.7419373447293772});
}

TEST(ParzenEstimatorTest, NoObservationsForceThePrior) {
  // consider_prior false with no observation: Optuna still uses the prior alone.
  const ParzenDim dim = Range(-5, 5);
  TpeEstimatorOptions o;
  o.consider_prior = false;
  Fit1D f(dim, MidPrior(dim), {}, o);
  ExpectNear(f.pe.weights(), {1.0});
  ExpectNear(f.pe.sigmas(0), {10.0});
  ExpectNear(LogPdf(f.pe, {1.0}), {-2.266607292503096});
}

// {x: FloatDistribution(-5, 5), n: IntDistribution(0, 9)}, five observations (x, n), row-major.
struct TwoDims {
  const ParzenDim dims[2] = {Range(-5, 5), Range(-0.5, 9.5, 1)};
  const TpePrior priors[2] = {MidPrior(dims[0]), MidPrior(dims[1])};
  const std::vector<double> obs = {1.0, 3, -2.0, 3, 3.5, 7, 0.2, 0, 4.0, 9};
  // A joint (multivariate) fit with these bandwidths.
  ParzenEstimator Fit(TpeBandwidth bandwidth) const {
    TpeEstimatorOptions o;
    o.multivariate = true;
    o.bandwidth = bandwidth;
    ParzenEstimator pe;
    FitTpeEstimator(dims, priors, obs.data(), 5, o, &pe);
    return pe;
  }
};

TEST(ParzenEstimatorTest, MultivariateMatchesOptuna) {
  // Jointly: Scott's bandwidth 0.2 n^(-1/6) (high - low) for every observation.
  const ParzenEstimator pe = TwoDims().Fit(TpeBandwidth::kScott);
  ExpectNear(pe.centers(0), {1.0, -2.0, 3.5, 0.2, 4.0, 0.0});
  ExpectNear(pe.centers(1), {3.0, 3.0, 7.0, 0.0, 9.0, 4.5});
  const double s = 1.5294489826634603;
  ExpectNear(pe.sigmas(0), {s, s, s, s, s, 10.0});
  ExpectNear(pe.sigmas(1), {s, s, s, s, s, 10.0});
  ExpectNear(LogPdf(pe, {0.0, 3, 3.9, 8}), {-3.983130526927212, -3.4422836541615913});
}

TEST(ParzenEstimatorTest, MultivariateHyperoptBandwidthsAreTheUnivariateOnes) {
  // The same observations as MultivariateMatchesOptuna: with bandwidth kHyperopt each
  // component keeps, per dim, the sigma a univariate fit of that dim gives it; the log
  // density is the product kernel's.
  const TwoDims example;
  const ParzenEstimator joint = example.Fit(TpeBandwidth::kHyperopt);
  for (size_t d = 0; d < 2; ++d) {
    std::vector<double> column;
    for (size_t i = 0; i < 5; ++i) column.push_back(example.obs[i * 2 + d]);
    ParzenEstimator alone;
    FitTpeEstimator({&example.dims[d], 1}, {&example.priors[d], 1}, column.data(), 5, {}, &alone);
    ExpectNear(joint.sigmas(d), {alone.sigmas(0).begin(), alone.sigmas(0).end()});
  }
  // x: sorted -2, 0 (the prior), 0.2, 1, 3.5, 4 over [-5, 5]: the larger neighbour gap, the
  // outermost their inner one, the magic clip (10 / 7) raising 0.8 and 0.5; the prior's 10.
  ExpectNear(joint.sigmas(0), {2.5, 2.0, 2.5, 10.0 / 7, 10.0 / 7, 10.0});
  double expected[2];
  for (size_t j = 0; j < 2; ++j) {
    const double point[2] = {j == 0 ? 0.0 : 3.9, j == 0 ? 3.0 : 8.0};
    double sum = 0;
    for (size_t i = 0; i < joint.size(); ++i) {
      double log_kernel = std::log(joint.weights()[i]);
      for (size_t d = 0; d < 2; ++d) {
        const ParzenDim& dim = joint.dim(d);
        const double mu = joint.centers(d)[i], sigma = joint.sigmas(d)[i];
        const double z_norm =
            NormalCdf((dim.high - mu) / sigma) - NormalCdf((dim.low - mu) / sigma);
        const double mass = d == 0 ? std::exp(-0.5 * std::pow((point[d] - mu) / sigma, 2)) /
                                         (sigma * std::sqrt(2 * std::numbers::pi))
                                   : NormalCdf((point[d] + 0.5 - mu) / sigma) -
                                         NormalCdf((point[d] - 0.5 - mu) / sigma);
        log_kernel += std::log(mass / z_norm);
      }
      sum += std::exp(log_kernel);
    }
    expected[j] = std::log(sum);
  }
  ExpectNear(LogPdf(joint, {0.0, 3, 3.9, 8}), {expected[0], expected[1]});
}

TEST(ParzenEstimatorTest, MostLikelyComponentWeighsNormalisedKernels) {
  // A wide heavy component at (0, 0) and a narrow light one at (2, 2): at (2, 2) the narrow
  // one's w k(x) is larger (log 0.4 + 2 log(1/0.5) against log 0.6 - 2 (0.08 + log 5)), also
  // when LogPdf leaves out -log sigma (which would favour the wide one); far out, the wide one.
  for (const bool optuna31 : {false, true}) {
    SCOPED_TRACE(optuna31);
    const ParzenDim dims[] = {ParzenDim{}, ParzenDim{}};
    ParzenEstimator pe;
    pe.Reset(dims, 2);
    pe.set_optuna31_density(optuna31);
    pe.mutable_weights()[0] = 0.6;
    pe.mutable_weights()[1] = 0.4;
    for (size_t d = 0; d < 2; ++d) {
      pe.mutable_centers(d)[0] = 0, pe.mutable_centers(d)[1] = 2;
      pe.mutable_sigmas(d)[0] = 5, pe.mutable_sigmas(d)[1] = 0.5;
    }
    pe.Finalize();
    const double near_narrow[] = {2, 2}, far[] = {-3, -3}, between[] = {1.9, -0.5};
    EXPECT_EQ(pe.MostLikelyComponent(near_narrow), 1u);
    EXPECT_EQ(pe.MostLikelyComponent(far), 0u);
    EXPECT_EQ(pe.MostLikelyComponent(between), 0u);
  }
}

TEST(ParzenEstimatorTest, DefaultWeightsAreOptunas) {
  // default_weights(30): a ramp 1/30 .. 1 over the oldest five, then ones.
  std::vector<double> w(30);
  TpeDefaultWeights(30, w.data());
  EXPECT_NEAR(w[0], 0.03333333333333333, kTol);
  EXPECT_NEAR(w[1], 0.275, kTol);
  EXPECT_NEAR(w[3], 0.7583333333333333, kTol);
  EXPECT_EQ(w[4], 1.0);
  EXPECT_EQ(w[29], 1.0);
  std::vector<double> few(24);
  TpeDefaultWeights(24, few.data());
  for (double x : few) EXPECT_EQ(x, 1.0);
}

TEST(ParzenEstimatorTest, SamplesStayInBoundsAndFollowTheMixture) {
  // Sampling a two-component mixture: every draw inside [low, high], the draws split about in
  // proportion to the weights, and the same rng stream gives the same draws.
  ParzenEstimator pe;
  const ParzenDim dims[] = {Range(0, 10)};
  pe.Reset(dims, 2);
  pe.mutable_weights()[0] = 3;
  pe.mutable_weights()[1] = 1;
  pe.mutable_centers(0)[0] = 1;
  pe.mutable_centers(0)[1] = 9;
  pe.mutable_sigmas(0)[0] = 0.5;
  pe.mutable_sigmas(0)[1] = 0.5;
  pe.Finalize();
  std::vector<double> draws(4000), again(4000);
  SearchRng rng(7, 0), rng2(7, 0);
  pe.Sample(rng, draws.size(), draws.data());
  pe.Sample(rng2, again.size(), again.data());
  EXPECT_EQ(draws, again);
  int low_side = 0;
  for (double x : draws) {
    ASSERT_GE(x, 0);
    ASSERT_LE(x, 10);
    low_side += x < 5;
  }
  EXPECT_NEAR(low_side / 4000.0, 0.75, 0.03);
}

TEST(ParzenEstimatorTest, MergedIntComponentsGiveTheSameDensity) {
  // Many equal integer observations: the merged 1-D evaluation equals a plain sum over
  // components computed with LogNormalMass.
  const ParzenDim dim = Range(-0.5, 99.5, 1);
  std::vector<double> obs;
  for (int i = 0; i < 400; ++i) obs.push_back(double((i * 7) % 13 + 40));
  Fit1D f(dim, MidPrior(dim), obs);
  for (double x : {40.0, 45.0, 52.0, 90.0}) {
    double sum = 0;
    for (size_t i = 0; i < f.pe.size(); ++i) {
      const double mu = f.pe.centers(0)[i], s = f.pe.sigmas(0)[i];
      const double mass = std::exp(LogNormalMass((x - 0.5 - mu) / s, (x + 0.5 - mu) / s) -
                                   LogNormalMass((dim.low - mu) / s, (dim.high - mu) / s));
      sum += f.pe.weights()[i] * mass;
    }
    EXPECT_NEAR(LogPdf(f.pe, {x})[0], std::log(sum), 1e-12) << x;
  }
}

TEST(ParzenEstimatorTest, PresortedFitEqualsSortingFit) {
  // Observations with ties, fitted once sorting them and once given their order: the same
  // sigmas (the prior placed after equal values) and densities.
  const ParzenDim dim = Range(-0.5, 20.5, 1);
  const std::vector<double> obs = {10, 3, 10, 7, 10, 0, 20, 3, 10, 15};
  std::vector<uint32_t> order(obs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return obs[a] < obs[b]; });
  const ParzenDim dims[] = {dim};
  const TpePrior priors[] = {MidPrior(dim)};
  ParzenEstimator sorting, presorted;
  FitTpeEstimator(dims, priors, obs.data(), obs.size(), {}, &sorting);
  FitTpeEstimator(dims, priors, obs.data(), obs.size(), {}, &presorted, order);
  ExpectNear(presorted.sigmas(0),
             std::vector<double>(sorting.sigmas(0).begin(), sorting.sigmas(0).end()), 0);
  EXPECT_EQ(LogPdf(presorted, {10, 4, 19}), LogPdf(sorting, {10, 4, 19}));
}

TEST(ParzenEstimatorTest, PresortedMultivariateFitEqualsSortingFit) {
  // A joint fit with hyperopt's widths over a continuous, a categorical and a stepped dim, with
  // ties: given each dim's order (the categorical part unread) it equals the sorting fit, bit
  // for bit, in sigmas and in densities (bounds pass and exact pass of the stepped dim).
  const ParzenDim continuous = Range(0, 1), stepped = Range(-0.5, 8.5, 1);
  ParzenDim choice;
  choice.n_choices = 3;
  const ParzenDim dims[] = {continuous, choice, stepped};
  const TpePrior priors[] = {MidPrior(continuous), {}, MidPrior(stepped)};
  const size_t n = 7;
  const std::vector<double> obs = {0.5, 0,   3, 0.2, 1,   3, 0.5, 2,   8, 0.9, 0,
                                   0,   0.2, 1, 4,   0.7, 2, 3,   0.1, 0, 5};
  std::vector<uint32_t> order(n * 3);
  for (size_t d = 0; d < 3; ++d) {
    auto dim_order = order.begin() + ptrdiff_t(d * n);
    std::iota(dim_order, dim_order + ptrdiff_t(n), 0u);
    std::stable_sort(dim_order, dim_order + ptrdiff_t(n),
                     [&](uint32_t a, uint32_t b) { return obs[a * 3 + d] < obs[b * 3 + d]; });
  }
  std::fill(order.begin() + ptrdiff_t(n), order.begin() + ptrdiff_t(2 * n), 0u);  // unread
  TpeEstimatorOptions o;
  o.multivariate = true;
  o.bandwidth = TpeBandwidth::kHyperopt;
  ParzenEstimator sorting, presorted;
  FitTpeEstimator(dims, priors, obs.data(), n, o, &sorting);
  FitTpeEstimator(dims, priors, obs.data(), n, o, &presorted, order);
  for (size_t d : {size_t{0}, size_t{2}}) {
    ExpectNear(presorted.sigmas(d),
               std::vector<double>(sorting.sigmas(d).begin(), sorting.sigmas(d).end()), 0);
  }
  // Neighbour gaps, not Scott's one width: the tied 0.5s and 0.2s differ from the 0.9.
  EXPECT_NE(sorting.sigmas(0)[0], sorting.sigmas(0)[3]);
  const std::vector<double> points = {0.5, 0, 3, 0.15, 1, 4, 0.95, 2, 0, 0.3, 1, 8};
  EXPECT_EQ(LogPdf(presorted, points), LogPdf(sorting, points));
}

TEST(NormalDistributionTest, TailsAndQuantilesMatchScipy) {
  // scipy.stats.norm.logcdf / ppf and mpmath for the far tails.
  EXPECT_NEAR(LogNormalCdf(-40.0), -804.6084420137539, 1e-12 * 805);
  EXPECT_NEAR(LogNormalCdf(-5.0), -15.064998393988727, 1e-13 * 15);
  EXPECT_NEAR(LogNormalCdf(3.0), -0.001350809964748193, 1e-15);
  EXPECT_NEAR(LogNormalMass(-37.5, -37.2), -696.4559821179268807, 1e-12 * 696);
  EXPECT_NEAR(LogNormalMass(40, 41), -804.6084420137537882, 1e-12 * 805);
  EXPECT_NEAR(LogNormalMass(-1, 2), -0.20016629432446262, 1e-15);
  EXPECT_NEAR(NormalQuantile(1e-300), -37.0470962993612, 1e-12 * 37);
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(NormalQuantile(0.3), -0.5244005127080409, 1e-14);
  // The truncated quantile is the inverse of the truncated CDF.
  for (double u : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    const double x = TruncatedNormalQuantile(u, -0.3, 2.0);
    EXPECT_NEAR((NormalCdf(x) - NormalCdf(-0.3)) / (NormalCdf(2.0) - NormalCdf(-0.3)), u, 1e-14);
  }
  EXPECT_NEAR(TruncatedNormalQuantile(0.5, 6, 7), -TruncatedNormalQuantile(0.5, -7, -6), 1e-12);
}

TEST(NormalDistributionTest, FastExpIsWithinTwoUlp) {
  // ExpNonPositive against std::exp over [-708, 0].
  for (int i = 0; i <= 70800; ++i) {
    const double x = -i * 0.01 - (i % 7) * 1e-5;
    if (x < -708) break;
    const double want = std::exp(x);
    EXPECT_NEAR(ExpNonPositive(x), want, 4.5e-16 * want) << x;
  }
  EXPECT_EQ(ExpNonPositive(0.0), 1.0);
}

}  // namespace
}  // namespace tunebus
