// TpeSearcher: options, param-space checks, the startup phase, convergence on a simple
// quadratic, determinism, journaling (snapshot and delta replay in the middle of a run), the
// constant liar, and the domain and JSON type of every sampling function.
#include "libs/tune/tpe_searcher.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "libs/tune/search_space.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

TrainingResult Result(double loss) {
  TrainingResult r;
  r.SetDouble("loss", loss);
  r.SetInt("training_iteration", 1);
  return r;
}

std::string Id(int i) { return "t" + std::to_string(i); }

TpeSearcher Make(const json& space, TpeOptions options = {}, uint64_t seed = 1,
                 int64_t num_samples = -1, const std::string& mode = "min") {
  TpeSearcher s(options, num_samples, seed);
  Status st = s.SetSearchProperties("loss", mode, space);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

// Suggests trial i and completes it with objective(config) at once.
json Step(TpeSearcher& s, int i, const std::function<double(const json&)>& objective) {
  Suggestion g = s.Suggest(Id(i));
  EXPECT_EQ(g.kind, Suggestion::Kind::kConfig);
  TrainingResult r = Result(objective(g.config));
  s.OnTrialComplete(Id(i), &r, false);
  return g.config;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const json kQuadraticSpace = {{"x", {{"uniform", {-10, 10}}}}};
double Quadratic(const json& c) { return std::pow(c["x"].get<double>() - 3, 2); }

TEST(TpeSearcherTest, GammaIsOptunasDefaultGamma) {
  // Optuna 3.1.0 default_gamma(n) = min(ceil(0.1 n), 25).
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {0, 0}, {1, 1}, {10, 1}, {11, 2}, {100, 10}, {249, 25}, {250, 25}, {251, 25}, {1000, 25}};
  for (auto [n, gamma] : cases) EXPECT_EQ(TpeDefaultGamma(n), gamma) << n;
}

TEST(TpeSearcherTest, OptionsParseDefaultsAndNameTheBadField) {
  // Defaults are Optuna 3.1.0's but the constant liar and Watanabe 2023's multivariate kernel
  // with hyperopt's widths and EI weights (tpe_searcher.hpp); the runner's keys pass; a bad
  // value or an unknown key is an error naming the key.
  auto o = TpeOptions::Parse(json::object());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->n_startup_trials, 10);
  EXPECT_EQ(o->n_ei_candidates, 24);
  EXPECT_EQ(o->prior_weight, 1.0);
  EXPECT_TRUE(o->consider_magic_clip);
  EXPECT_FALSE(o->consider_endpoints);
  EXPECT_TRUE(o->multivariate);
  EXPECT_EQ(o->weight_strategy, TpeWeights::kExpectedImprovement);
  EXPECT_EQ(o->gamma_strategy, TpeGamma::kLinear);
  EXPECT_EQ(o->gamma_beta, 0.1);
  EXPECT_EQ(o->min_bandwidth_factor, 0.01);
  EXPECT_TRUE(o->constant_liar);
  EXPECT_FALSE(o->normalized_density);  // Optuna 3.1.0's density (tpe_searcher.hpp)
  auto normalized = TpeOptions::Parse({{"normalized_density", true}});
  ASSERT_TRUE(normalized.ok());
  EXPECT_TRUE(normalized->normalized_density);

  auto runner_keys = TpeOptions::Parse({{"type", "tpe"},
                                        {"metric", "loss"},
                                        {"mode", "min"},
                                        {"max_concurrent", 4},
                                        {"points_to_evaluate", json::array()},
                                        {"evaluated_rewards", json::array()},
                                        {"n_startup_trials", 5},
                                        {"multivariate", true},
                                        {"group", true}});
  ASSERT_TRUE(runner_keys.ok()) << runner_keys.status().ToString();
  EXPECT_EQ(runner_keys->n_startup_trials, 5);
  EXPECT_TRUE(runner_keys->group);

  auto unknown = TpeOptions::Parse({{"n_startup", 5}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message().rfind(
                "n_startup: unknown parameter of tpe (known: n_startup_trials, ", 0),
            0u)
      << unknown.status().message();

  auto zero = TpeOptions::Parse({{"n_ei_candidates", 0}});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "n_ei_candidates: must be >= 1, got 0");
  auto weight = TpeOptions::Parse({{"prior_weight", "heavy"}});
  ASSERT_FALSE(weight.ok());
  EXPECT_EQ(weight.status().message().rfind("prior_weight: must be a number", 0), 0u);
  auto liar = TpeOptions::Parse({{"constant_liar", 1}});
  ASSERT_FALSE(liar.ok());
  EXPECT_EQ(liar.status().message().rfind("constant_liar: ", 0), 0u);
  auto group = TpeOptions::Parse({{"group", true}, {"multivariate", false}});
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().message().rfind("group: needs multivariate", 0), 0u);

  EXPECT_EQ(o->bandwidth, TpeBandwidth::kHyperopt);  // each kernel's own widths
  auto scott = TpeOptions::Parse({{"bandwidth", "scott"}});
  ASSERT_TRUE(scott.ok()) << scott.status().ToString();
  EXPECT_EQ(scott->bandwidth, TpeBandwidth::kScott);  // Optuna's multivariate rule
  auto univariate = TpeOptions::Parse({{"multivariate", false}, {"bandwidth", "scott"}});
  ASSERT_FALSE(univariate.ok());
  EXPECT_EQ(univariate.status().message().rfind("bandwidth: scott needs multivariate: true", 0),
            0u);
  EXPECT_TRUE(TpeOptions::Parse({{"multivariate", false}, {"bandwidth", "hyperopt"}}).ok());
  auto typo = TpeOptions::Parse({{"bandwidth", "hyperop"}});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().message().rfind("bandwidth: ", 0), 0u) << typo.status().message();

  EXPECT_EQ(o->liar_kernel, TpeLiarKernel::kObservation);  // Optuna's lie
  auto widths = TpeOptions::Parse({{"liar_kernel", "source_widths"}});
  ASSERT_TRUE(widths.ok()) << widths.status().ToString();
  EXPECT_EQ(widths->liar_kernel, TpeLiarKernel::kSourceWidths);
  auto source = TpeOptions::Parse({{"liar_kernel", "source"}});
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ(source->liar_kernel, TpeLiarKernel::kSource);
  auto kernel = TpeOptions::Parse({{"liar_kernel", "wide"}});
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().message().rfind("liar_kernel: ", 0), 0u) << kernel.status().message();
}

TEST(TpeSearcherTest, WatanabeComponentsParseAndSplit) {
  // gamma_strategy / gamma_beta, weight_strategy, min_bandwidth_factor, b_magic_exponent
  // (Watanabe 2023's names in OptunaHub's tpe_tutorial sampler).
  auto o = TpeOptions::Parse({{"gamma_strategy", "sqrt"},
                              {"gamma_beta", 0.25},
                              {"weight_strategy", "EI"},
                              {"min_bandwidth_factor", 0.03},
                              {"b_magic_exponent", 2.0}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->gamma_strategy, TpeGamma::kSqrt);
  EXPECT_EQ(o->gamma_beta, 0.25);
  EXPECT_EQ(o->weight_strategy, TpeWeights::kExpectedImprovement);
  EXPECT_EQ(o->min_bandwidth_factor, 0.03);
  EXPECT_EQ(o->b_magic_exponent, 2.0);
  auto bad = TpeOptions::Parse({{"weight_strategy", "ei"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("weight_strategy: ", 0), 0u) << bad.status().message();
  auto wide = TpeOptions::Parse({{"min_bandwidth_factor", 2}});
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().message(), "min_bandwidth_factor: must be <= 1 (of the range), got 2");
  // hyperopt's gamma: ceil(0.25 sqrt(n)), at most 25 and n; linear 0.1 is Optuna's.
  EXPECT_EQ(TpeGammaOf(TpeGamma::kSqrt, 0.25, 100), 3);
  EXPECT_EQ(TpeGammaOf(TpeGamma::kSqrt, 0.25, 1), 1);
  EXPECT_EQ(TpeGammaOf(TpeGamma::kLinear, 0.15, 100), 15);
  EXPECT_EQ(TpeGammaOf(TpeGamma::kLinear, 0.1, 251), 25);
  EXPECT_EQ(TpeGammaOf(TpeGamma::kLinear, 2.0, 3), 3);
}

TEST(TpeSearcherTest, EveryWeightingAndGammaConverges) {
  // The quadratic with each weighting, the sqrt split (beta 1) and a wider clip: the last 20 of 80
  // suggestions are near the optimum (random search: about 5 away).
  for (TpeWeights w : {TpeWeights::kUniform, TpeWeights::kExpectedImprovement}) {
    for (TpeGamma g : {TpeGamma::kLinear, TpeGamma::kSqrt}) {
      TpeOptions o;
      o.weight_strategy = w;
      o.gamma_strategy = g;
      o.gamma_beta = g == TpeGamma::kSqrt ? 1.0 : 0.1;  // ceil(sqrt n): 8 of 60
      o.min_bandwidth_factor = 0.03;
      TpeSearcher s = Make(kQuadraticSpace, o, 7);
      std::vector<double> last;
      for (int i = 0; i < 80; ++i) {
        const json c = Step(s, i, Quadratic);
        if (i >= 60) last.push_back(std::abs(c["x"].get<double>() - 3));
      }
      EXPECT_LT(Median(last), 1.5) << int(w) << " " << int(g);
    }
  }
}

TEST(TpeSearcherTest, GridSearchIsRejectedNamingTheKey) {
  // grid_search has no place in a model's space: the error names the dotted key.
  TpeSearcher s({}, 10, 1);
  Status st = s.SetSearchProperties(
      "loss", "min",
      {{"lr", {{"uniform", {0, 1}}}}, {"model", {{"opt", {{"grid_search", {"adam", "sgd"}}}}}}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "param_space.model.opt: grid_search cannot be combined with search: tpe; use "
            "search: random");
  EXPECT_EQ(s.Suggest("t0").kind, Suggestion::Kind::kFinished);
}

TEST(TpeSearcherTest, MetricAndModeAreRequired) {
  // Without a metric, or with a mode that is not max / min, SetSearchProperties names the field.
  TpeSearcher s({}, 10, 1);
  Status no_metric = s.SetSearchProperties("", "min", kQuadraticSpace);
  EXPECT_EQ(no_metric.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(no_metric.message().rfind("metric: ", 0), 0u);
  Status bad_mode = s.SetSearchProperties("loss", "lowest", kQuadraticSpace);
  EXPECT_EQ(bad_mode.message().rfind("mode: ", 0), 0u);
  Status bad_space = s.SetSearchProperties("loss", "min", {{"x", {{"uniform", {1, 0}}}}});
  EXPECT_EQ(bad_space.message().rfind("param_space.x.uniform: ", 0), 0u) << bad_space.message();
}

TEST(TpeSearcherTest, StartupIsRandomAndIgnoresObservations) {
  // Two searchers with the same seed fed opposite objectives: the first n_startup_trials configs
  // are the same (random, not modelled), the next one differs; Describe shows the phase.
  TpeSearcher a = Make(kQuadraticSpace), b = Make(kQuadraticSpace);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(a.Describe()["phase"], "startup");
    const json ca = Step(a, i, Quadratic);
    const json cb = Step(b, i, [](const json& c) { return -Quadratic(c); });
    EXPECT_EQ(ca, cb) << i;
  }
  EXPECT_EQ(a.Describe(),
            json({{"searcher", "tpe"}, {"phase", "model"}, {"observations", 10}, {"running", 0}}));
  EXPECT_NE(Step(a, 10, Quadratic), Step(b, 10, Quadratic));
}

TEST(TpeSearcherTest, ConvergesNearTheOptimumOfAQuadratic) {
  // Minimising (x - 3)^2 on [-10, 10] over 80 sequential trials: the median distance to 3 of
  // the last 20 suggestions is far below that of random search (the same searcher never
  // leaving startup; about 5 in expectation). Optuna 3.1.0's TPESampler gets 0.84 .. 1.06 on
  // this problem (seeds 0-9), 0.89 .. 1.26 with its logpdf fix (optuna/optuna#5110).
  auto last20 = [](uint64_t seed, int64_t startup) {
    TpeOptions o;
    o.n_startup_trials = startup;
    TpeSearcher s = Make(kQuadraticSpace, o, seed);
    std::vector<double> last;
    for (int i = 0; i < 80; ++i) {
      const json c = Step(s, i, Quadratic);
      if (i >= 60) last.push_back(std::abs(c["x"].get<double>() - 3));
    }
    return Median(last);
  };
  for (uint64_t seed : {1, 2, 3}) {
    const double tpe = last20(seed, 10), random = last20(seed, 1000);
    EXPECT_GT(random, 2.5) << "seed " << seed;
    EXPECT_LT(tpe, 1.5) << "seed " << seed;
    EXPECT_LT(tpe, random / 3) << "seed " << seed;
  }
}

TEST(TpeSearcherTest, ModeMaxAndMultivariateConvergeToo) {
  // Maximising -((x - 3)^2 + (log10 lr + 3)^2) with a log param, univariate and multivariate:
  // the regret of the last 20 of 100 trials is a small fraction of random search's.
  const json space = {{"x", {{"uniform", {-10, 10}}}}, {"lr", {{"loguniform", {1e-6, 1}}}}};
  auto objective = [](const json& c) {
    return -(std::pow(c["x"].get<double>() - 3, 2) +
             std::pow(std::log10(c["lr"].get<double>()) + 3, 2));
  };
  auto regret = [&](bool multivariate, int64_t startup) {
    TpeOptions o;
    o.multivariate = multivariate;
    o.n_startup_trials = startup;
    TpeSearcher s = Make(space, o, 5, -1, "max");
    std::vector<double> last;
    for (int i = 0; i < 100; ++i) {
      const json c = Step(s, i, objective);
      if (i >= 80) last.push_back(-objective(c));
    }
    return Median(last);
  };
  const double random = regret(false, 1000);
  EXPECT_GT(random, 15);
  for (bool multivariate : {false, true}) {
    EXPECT_LT(regret(multivariate, 10), random / 5) << "multivariate " << multivariate;
  }
}

TEST(TpeSearcherTest, SameSeedSameSequenceOtherSeedOther) {
  // Determinism: the same seed and observations give the same 40 configs; another seed not.
  auto run = [](uint64_t seed) {
    TpeSearcher s = Make(kQuadraticSpace, {}, seed);
    std::vector<json> configs;
    for (int i = 0; i < 40; ++i) configs.push_back(Step(s, i, Quadratic));
    return configs;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

TEST(TpeSearcherTest, ResumeFromSnapshotOrDeltasSuggestsTheSame) {
  // A run interrupted after 25 trials (3 still running): a searcher restored from SaveState and
  // one that replays every delta make the same next 15 suggestions as the uninterrupted one.
  const json space = {{"x", {{"uniform", {-10, 10}}}}, {"n", {{"randint", {0, 20}}}}};
  auto objective = [](const json& c) { return Quadratic(c) + std::abs(c["n"].get<int64_t>() - 7); };
  TpeSearcher live = Make(space, {}, 9);
  json deltas = json::array();
  auto take = [&] {
    json d = live.TakeStateDelta();
    if (!d.is_null()) deltas.push_back(d);
  };
  std::vector<json> running;
  for (int i = 0; i < 25; ++i) {
    Suggestion g = live.Suggest(Id(i));
    take();
    if (i >= 22) {
      running.push_back(g.config);
      continue;  // still running at the interruption
    }
    TrainingResult r = Result(objective(g.config));
    live.OnTrialComplete(Id(i), &r, false);
    take();
  }
  EXPECT_TRUE(live.TakeStateDelta().is_null());

  TpeSearcher snapshot = Make(space, {}, 9);
  ASSERT_TRUE(snapshot.RestoreState(live.SaveState()).ok());
  EXPECT_EQ(snapshot.SaveState(), live.SaveState());
  TpeSearcher replay = Make(space, {}, 9);
  for (const json& d : deltas) ASSERT_TRUE(replay.ApplyStateDelta(d).ok());
  EXPECT_EQ(replay.SaveState(), live.SaveState());
  EXPECT_EQ(replay.Describe(), live.Describe());
  EXPECT_EQ(live.num_running(), 3);

  for (int i = 25; i < 40; ++i) {
    const json c = Step(live, i, objective);
    EXPECT_EQ(Step(snapshot, i, objective), c) << i;
    EXPECT_EQ(Step(replay, i, objective), c) << i;
  }
}

TEST(TpeSearcherTest, DeltasAreTheEvents) {
  // What is journaled: one suggest event per suggestion, one complete event per completion
  // (value null for an errored trial), nothing for an unknown trial or a repeated completion.
  TpeSearcher s = Make(kQuadraticSpace);
  Suggestion g = s.Suggest("a");
  json d = s.TakeStateDelta();
  ASSERT_TRUE(d.is_array());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0]["suggest"], "a");
  EXPECT_EQ(d[0]["config"], g.config);
  EXPECT_TRUE(s.TakeStateDelta().is_null());
  // The same trial id again: the same config, no event.
  EXPECT_EQ(s.Suggest("a").config, g.config);
  EXPECT_TRUE(s.TakeStateDelta().is_null());
  TrainingResult r = Result(2.5);
  s.OnTrialComplete("a", &r, /*error=*/true);
  EXPECT_EQ(s.TakeStateDelta(), json::parse(R"([{"complete": "a", "value": null}])"));
  s.OnTrialComplete("a", &r, false);
  s.OnTrialComplete("nobody", &r, false);
  EXPECT_TRUE(s.TakeStateDelta().is_null());

  EXPECT_EQ(s.ApplyStateDelta(json::parse(R"([{"complete": "ghost", "value": 1}])")).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(s.ApplyStateDelta(json::parse(R"([{"pause": "a"}])")).code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ApplyStateDelta(json::object()).code(), StatusCode::kCorruption);
  EXPECT_EQ(s.RestoreState(json::parse(R"({"trials": 3})")).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.RestoreState(nullptr).ok());
  EXPECT_EQ(s.suggested(), 0);
}

TEST(TpeSearcherTest, ErroredAndMetriclessTrialsAreNotObservations) {
  // A trial ending in ERROR, one whose last result lacks the metric, one without a result and
  // one with a NaN metric are no observation; each stops counting as running.
  TpeSearcher s = Make(kQuadraticSpace);
  for (int i = 0; i < 5; ++i) (void)s.Suggest(Id(i));
  EXPECT_EQ(s.num_running(), 5);
  TrainingResult good = Result(1.0), nan = Result(std::nan("")), other;
  other.SetDouble("accuracy", 0.9);
  s.OnTrialComplete(Id(0), &good, /*error=*/true);
  s.OnTrialComplete(Id(1), &other, false);
  s.OnTrialComplete(Id(2), nullptr, false);
  s.OnTrialComplete(Id(3), &nan, false);
  s.OnTrialComplete(Id(4), &good, false);
  EXPECT_EQ(s.num_observations(), 1);
  EXPECT_EQ(s.num_running(), 0);
  EXPECT_EQ(s.Describe()["observations"], 1);
}

TEST(TpeSearcherTest, ConstantLiarSpreadsParallelSuggestions) {
  // After 20 completed trials, 16 suggestions made while none completes: with the constant liar
  // each running trial pushes the next suggestion away, so they are distinct and spread wider
  // than without it.
  auto spread = [](bool liar) {
    TpeOptions o;
    o.constant_liar = liar;
    TpeSearcher s = Make(kQuadraticSpace, o, 3);
    for (int i = 0; i < 20; ++i) Step(s, i, Quadratic);
    std::vector<double> xs;
    for (int i = 20; i < 36; ++i) xs.push_back(s.Suggest(Id(i)).config["x"].get<double>());
    EXPECT_EQ(s.num_running(), 16);
    EXPECT_EQ(std::set<double>(xs.begin(), xs.end()).size(), xs.size());
    const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / double(xs.size());
    double var = 0;
    for (double x : xs) var += (x - mean) * (x - mean);
    return std::sqrt(var / double(xs.size()));
  };
  const double with_liar = spread(true), without = spread(false);
  EXPECT_GT(with_liar, 0.2);
  EXPECT_GT(with_liar, without);
}

TEST(TpeSearcherTest, JointLiesActOnlyWithTheirSourceKernel) {
  // A 5-param joint model after 30 trials, 8 of its suggestions running. Optuna's lie (one more
  // observation of g(x), as narrow as its neighbour gaps in every param) changes no
  // suggestion: the next ones are those without the constant liar. A lie as wide as the l(x)
  // component that drew it (liar_kernel source_widths), or also as heavy (source), changes
  // them. The same trials through RestoreState, so only the options differ.
  json space = json::object();
  for (int k = 0; k < 5; ++k) space["x" + std::to_string(k)] = {{"uniform", {0, 1}}};
  auto objective = [](const json& c) {
    double loss = 0;
    for (const auto& [key, v] : c.items()) loss += std::pow(v.get<double>() - 0.3, 2);
    return loss;
  };
  TpeSearcher start = Make(space, {}, 5);
  for (int i = 0; i < 30; ++i) Step(start, i, objective);
  for (int i = 30; i < 38; ++i) start.Suggest(Id(i));
  ASSERT_EQ(start.num_running(), 8);
  const json state = start.SaveState();
  auto next = [&](bool liar, TpeLiarKernel kernel) {
    TpeOptions o;
    o.constant_liar = liar;
    o.liar_kernel = kernel;
    TpeSearcher s = Make(space, o, 5);
    EXPECT_TRUE(s.RestoreState(state).ok());
    std::vector<json> configs;
    for (int i = 38; i < 42; ++i) configs.push_back(s.Suggest(Id(i)).config);
    return configs;
  };
  const auto no_liar = next(false, TpeLiarKernel::kObservation);
  EXPECT_EQ(next(true, TpeLiarKernel::kObservation), no_liar);
  EXPECT_NE(next(true, TpeLiarKernel::kSourceWidths), no_liar);
  EXPECT_NE(next(true, TpeLiarKernel::kSource), no_liar);
  // Without running trials every kernel suggests the same.
  TpeOptions source;
  source.liar_kernel = TpeLiarKernel::kSource;
  TpeSearcher a = Make(space, {}, 6), b = Make(space, source, 6);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(Step(a, i, objective), Step(b, i, objective));
}

TEST(TpeSearcherTest, MultivariateParallelChoosesTheModelWhileTrialsRun) {
  // multivariate_parallel false models each param on its own while other trials run, so the
  // sequential suggestions are those of multivariate_parallel true and the parallel ones not.
  const json space = {{"x", {{"uniform", {-10, 10}}}}, {"y", {{"uniform", {-10, 10}}}}};
  auto objective = [](const json& c) {
    return std::pow(c["x"].get<double>() - 3, 2) + std::pow(c["y"].get<double>() + 1, 2);
  };
  auto run = [&](bool multivariate_parallel) {
    TpeOptions o;
    o.multivariate_parallel = multivariate_parallel;
    TpeSearcher s = Make(space, o, 9);
    std::vector<json> sequential, parallel;
    for (int i = 0; i < 20; ++i) sequential.push_back(Step(s, i, objective));
    for (int i = 20; i < 26; ++i) parallel.push_back(s.Suggest(Id(i)).config);
    return std::make_pair(sequential, parallel);
  };
  auto joint = run(true), per_param = run(false);
  EXPECT_EQ(joint.first, per_param.first);
  EXPECT_EQ(joint.second[0], per_param.second[0]);  // nothing runs yet at the first
  EXPECT_NE(joint.second, per_param.second);
  auto o = TpeOptions::Parse({{"multivariate_parallel", false}});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->multivariate_parallel);
}

// Checks that `v` is a value of sampler `spec` ({"name": args}) with the right JSON type.
void ExpectInDomain(const json& v, const json& spec, const std::string& where) {
  const std::string name = spec.begin().key();
  const json& a = spec.begin().value();
  SCOPED_TRACE(where + " " + name + " " + v.dump());
  if (name == "choice") {
    EXPECT_NE(std::find(a.begin(), a.end(), v), a.end());
    return;
  }
  const bool is_int = name.find("randint") != std::string::npos;
  ASSERT_TRUE(is_int ? v.is_number_integer() : v.is_number_float());
  const double x = v.get<double>();
  const bool has_q = name[0] == 'q';
  if (name == "randn" || name == "qrandn") {
    EXPECT_LE(std::abs(x - a[0].get<double>()), 5 * a[1].get<double>() + 1e-9);
  } else {
    const double high = a[1].get<double>() - (is_int && !has_q ? 1 : 0);
    EXPECT_GE(x, a[0].get<double>());
    EXPECT_LE(x, high);
  }
  if (has_q) {
    const double q = a[2].get<double>(), k = x / q;
    EXPECT_NEAR(k, std::round(k), 1e-6);
  }
}

TEST(TpeSearcherTest, EverySamplerGivesValuesInItsDomainWithTheRightType) {
  // Every sampling function, nested maps and constants, through startup and the model: values
  // inside their domains, ints as JSON integers, floats as doubles, choices their literals, and
  // constants passed through.
  const json samplers = {
      {"u", {{"uniform", {-1, 1}}}},
      {"qu", {{"quniform", {0.05, 1, 0.1}}}},
      {"lu", {{"loguniform", {1e-4, 1e-1}}}},
      {"lu2", {{"loguniform", {1, 1024, 2}}}},
      {"qlu", {{"qloguniform", {1, 1000, 5}}}},
      {"rn", {{"randn", {10, 2}}}},
      {"qrn", {{"qrandn", {0, 1, 0.5}}}},
      {"ri", {{"randint", {-3, 4}}}},
      {"qri", {{"qrandint", {0, 100, 25}}}},
      {"lri", {{"lograndint", {1, 1000}}}},
      {"qlri", {{"qlograndint", {2, 512, 2}}}},
      {"c", {{"choice", {"adam", 3, true, json::array({1, 2}), nullptr}}}},
  };
  json space = samplers;
  space["model"] = {{"depth", {{"randint", {1, 9}}}},
                    {"opt", {{"name", {{"choice", {"sgd", "a/b"}}}}, {"momentum", 0.9}}}};
  space["epochs"] = 3;
  space["tags"] = json::array({"x", "y"});
  TpeSearcher s = Make(space, {}, 4);
  auto objective = [](const json& c) {
    return std::abs(c["u"].get<double>()) + c["model"]["depth"].get<double>() +
           (c["c"] == "adam" ? 0.0 : 1.0);
  };
  for (int i = 0; i < 40; ++i) {
    Suggestion g = s.Suggest(Id(i));
    ASSERT_EQ(g.kind, Suggestion::Kind::kConfig);
    const json& c = g.config;
    for (const auto& [key, spec] : samplers.items()) ExpectInDomain(c[key], spec, Id(i));
    ExpectInDomain(c["model"]["depth"], space["model"]["depth"], Id(i));
    ExpectInDomain(c["model"]["opt"]["name"], space["model"]["opt"]["name"], Id(i));
    EXPECT_EQ(c["model"]["opt"]["momentum"], 0.9);
    EXPECT_EQ(c["epochs"], 3);
    EXPECT_EQ(c["tags"], json::array({"x", "y"}));
    EXPECT_NE(g.tag.find("model.opt.name="), std::string::npos) << g.tag;
    TrainingResult r = Result(objective(c));
    s.OnTrialComplete(Id(i), &r, false);
  }
  EXPECT_EQ(s.Describe()["phase"], "model");
}

TEST(TpeSearcherTest, EvaluatedPointsAreObservations) {
  // evaluated_rewards: ten points evaluated elsewhere end the startup phase without a suggestion,
  // survive a snapshot, and do not count as suggested; a point outside the space is an error
  // naming the param.
  TpeSearcher s = Make(kQuadraticSpace);
  for (int i = 0; i < 10; ++i) {
    const json config = {{"x", -9.0 + 2 * i}};
    ASSERT_TRUE(s.AddEvaluatedPoint(config, Quadratic(config)).ok());
  }
  EXPECT_TRUE(s.AddEvaluatedPoint({{"x", 1.0}}, std::nan("")).ok());  // ignored
  EXPECT_EQ(s.Describe()["phase"], "model");
  EXPECT_EQ(s.num_observations(), 10);
  EXPECT_EQ(s.suggested(), 0);
  const Status bad = s.AddEvaluatedPoint({{"y", 1.0}}, 1.0);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message().rfind("x: ", 0), 0u) << bad.message();
  TpeSearcher restored = Make(kQuadraticSpace);
  ASSERT_TRUE(restored.RestoreState(s.SaveState()).ok());
  EXPECT_EQ(restored.SaveState(), s.SaveState());
  EXPECT_EQ(restored.Suggest("a").config, s.Suggest("a").config);
  EXPECT_EQ(s.suggested(), 1);
  EXPECT_EQ(s.Suggest("").kind, Suggestion::Kind::kNotNow);
}

// An optimizer choice over conditional branches (VariantGenerator): adam's best is 0 at lr 1e-3,
// beta1 0.9; sgd's 1; "none" 2; wd adds (wd - 0.2)^2.
const json kConditionalSpace = json::parse(R"({
  "opt": {"choice": [{"name": "sgd", "lr": {"loguniform": [1e-4, 1]}},
                     {"name": "adam", "lr": {"loguniform": [1e-5, 1e-1]},
                      "beta1": {"uniform": [0.5, 0.999]}},
                     "none"]},
  "wd": {"uniform": [0, 1]}})");

double ConditionalLoss(const json& c) {
  const double wd = std::pow(c["wd"].get<double>() - 0.2, 2);
  if (c["opt"] == "none") return 2 + wd;
  const double dl = std::log10(c["opt"]["lr"].get<double>()) + 3;
  if (c["opt"]["name"] == "sgd") return 1 + dl * dl + wd;
  return dl * dl + std::pow(c["opt"]["beta1"].get<double>() - 0.9, 2) + wd;
}

TEST(TpeSearcherTest, ConditionalSpacesAreGroupedByBranch) {
  // SearchSpace orders the dims by group: the unconditional ones, then each branch's; a dim of
  // a branch its choice did not pick has no model coordinate, and Config fills only the picked
  // branch. Searchers that model a fixed set of params refuse the space, naming the choice.
  auto space = SearchSpace::Create(kConditionalSpace, "tpe");
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  std::vector<std::string> names;
  for (const SearchDim& dim : space->dims()) names.push_back(dim.name);
  EXPECT_EQ(names, (std::vector<std::string>{"opt", "wd", "opt.lr", "opt.beta1", "opt.lr"}));
  ASSERT_EQ(space->groups().size(), 3u);
  EXPECT_EQ(space->groups()[0].count, 2u);
  EXPECT_EQ(space->groups()[1].begin, 2u);
  EXPECT_EQ(space->groups()[1].branch, 0);
  EXPECT_EQ(space->groups()[2].begin, 3u);
  EXPECT_EQ(space->groups()[2].count, 2u);
  EXPECT_EQ(space->groups()[2].parent, 0);
  EXPECT_TRUE(space->conditional());
  double row[5];
  space->Encode(json::parse(R"({"opt": {"name": "sgd", "lr": 0.01}, "wd": 0.5})"), row);
  EXPECT_EQ(row[0], 0);
  EXPECT_EQ(row[1], 0.5);
  EXPECT_NEAR(row[2], std::log(0.01), 1e-12);
  EXPECT_TRUE(std::isnan(row[3]) && std::isnan(row[4]));
  const double nan = std::nan("");
  const double values[5] = {1, 0.5, nan, 0.9, 0.001};
  const json config = space->Config(values);
  EXPECT_EQ(config, json::parse(R"({"opt": {"name": "adam", "beta1": 0.9, "lr": 0.001},
                                    "wd": 0.5})"));
  EXPECT_EQ(space->Tag(config), "opt=adam,opt.beta1=0.9,opt.lr=0.001,wd=0.5");
  const double none[5] = {2, 0.25, nan, nan, nan};
  EXPECT_EQ(space->Config(none), json::parse(R"({"opt": "none", "wd": 0.25})"));
  for (const char* searcher : {"bohb", "nsga2", "external"}) {
    auto refused = SearchSpace::Create(kConditionalSpace, searcher);
    ASSERT_FALSE(refused.ok()) << searcher;
    EXPECT_EQ(refused.status().message().rfind("param_space.opt.choice: conditional branches", 0),
              0u)
        << refused.status().message();
  }
}

TEST(TpeSearcherTest, ConditionalSpacesConvergeOnTheBestBranch) {
  // Each suggestion is a config of the space (only the picked branch's params); the model finds
  // adam and its lr, one at a time and with 8 trials running; an evaluated point of one branch is
  // an observation (the other branches' params are not asked for).
  for (const int running : {1, 8}) {
    TpeSearcher s = Make(kConditionalSpace);
    ASSERT_TRUE(s.AddEvaluatedPoint(json::parse(R"({"opt": {"name": "sgd", "lr": 0.1},
                                                    "wd": 0.2})"),
                                    1.0)
                    .ok());
    std::vector<double> late;
    int next = 0;
    std::vector<std::pair<std::string, json>> pending;
    while (next < 150) {
      while (int(pending.size()) < running) {
        Suggestion g = s.Suggest(Id(next));
        ASSERT_EQ(g.kind, Suggestion::Kind::kConfig);
        ASSERT_TRUE(VariantGenerator::ValidatePoint(kConditionalSpace, g.config).ok())
            << g.config.dump();
        pending.emplace_back(Id(next++), g.config);
      }
      const auto [id, config] = pending.front();
      pending.erase(pending.begin());
      TrainingResult r = Result(ConditionalLoss(config));
      s.OnTrialComplete(id, &r, false);
      if (next > 110) late.push_back(ConditionalLoss(config));
    }
    EXPECT_LT(Median(late), 0.1) << "running " << running;
  }
}

TEST(TpeSearcherTest, FinishesAfterNumSamples) {
  // num_samples bounds the suggestions; Total and suggested report it.
  TpeSearcher s = Make(kQuadraticSpace, {}, 1, 3);
  EXPECT_EQ(s.Total(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.Suggest(Id(i)).kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(s.Suggest(Id(3)).kind, Suggestion::Kind::kFinished);
  EXPECT_EQ(s.suggested(), 3);
  EXPECT_EQ(s.MaxPendingSuggestions(), 1);
}

}  // namespace
}  // namespace tunebus
