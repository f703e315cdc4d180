// The multi-objective searchers nsga2 (Nsga2Searcher) and motpe (MotpeSearcher): options,
// NSGA-II's generations (children from the previous population's members, elitism keeping the
// front), MOTPE's split and weights against hand-computed values, observations, every sampling
// function, and resume (the journal cut after every delta gives the same configs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "libs/tune/make_searcher.hpp"
#include "libs/tune/motpe_searcher.hpp"
#include "libs/tune/nsga2_searcher.hpp"

namespace tunebus {
namespace {

using nlohmann::json;
using Objectives = std::vector<Objective>;
using Losses2 = std::vector<std::vector<double>>;

const Objectives kTwo = {{"f1", "min"}, {"f2", "min"}};

std::string TrialId(int i) { return "t" + std::to_string(i); }

TrainingResult TwoResults(double f1, double f2) {
  TrainingResult r;
  r.SetDouble("f1", f1);
  r.SetDouble("f2", f2);
  r.SetInt("training_iteration", 1);
  return r;
}

// f1 = x + y, f2 = 1 - x + y over x, y in [0, 1]: the Pareto set is y = 0.
const json kPlaneSpace = {{"x", {{"uniform", {0, 1}}}}, {"y", {{"uniform", {0, 1}}}}};
std::vector<double> Plane(const json& c) {
  const double x = c["x"].get<double>(), y = c["y"].get<double>();
  return {x + y, 1 - x + y};
}

template <typename S>
void Prepare(S& s, const json& space) {
  Status st = s.SetSearchProperties("", "", space);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// Suggests trial i and completes it with the objective's values at once.
template <typename S>
json Step(S& s, int i, const std::function<std::vector<double>(const json&)>& objective) {
  Suggestion g = s.Suggest(TrialId(i));
  EXPECT_EQ(g.kind, Suggestion::Kind::kConfig);
  const std::vector<double> f = objective(g.config);
  TrainingResult r = TwoResults(f[0], f[1]);
  s.OnTrialComplete(TrialId(i), &r, false);
  return g.config;
}

Nsga2Options SmallPopulation(int64_t size) {
  Nsga2Options o;
  o.population_size = size;
  return o;
}

TEST(Nsga2SearcherTest, OptionsParseDefaultsAndNameTheBadField) {
  // Defaults are Optuna 3.1.0's NSGAIISampler's but the tournament (the paper's); errors name
  // the key.
  auto o = Nsga2Options::Parse(json::object());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->population_size, 50);
  EXPECT_LT(o->mutation_prob, 0);  // 1 / number of params
  EXPECT_EQ(o->crossover_prob, 0.9);
  EXPECT_EQ(o->swapping_prob, 0.5);
  EXPECT_EQ(o->tournament, Nsga2Options::Tournament::kCrowded);
  EXPECT_EQ(o->crossover, Nsga2Options::Crossover::kUniform);
  auto set = Nsga2Options::Parse({{"population_size", 8},
                                  {"mutation_prob", 0.25},
                                  {"tournament", "dominance"},
                                  {"crossover", "sbx"},
                                  {"metric", "ignored"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->population_size, 8);
  EXPECT_EQ(set->mutation_prob, 0.25);
  EXPECT_EQ(set->tournament, Nsga2Options::Tournament::kDominance);
  EXPECT_EQ(set->crossover, Nsga2Options::Crossover::kSbx);
  EXPECT_EQ(set->sbx_eta, 20);
  EXPECT_EQ(Nsga2Options::Parse({{"sbx_eta", 0}}).status().message().rfind("sbx_eta: ", 0), 0u);
  EXPECT_TRUE(Nsga2Options::Parse({{"mutation_prob", nullptr}}).ok());
  EXPECT_EQ(Nsga2Options::Parse({{"population_size", 1}}).status().message(),
            "population_size: must be >= 2, got 1");
  EXPECT_EQ(Nsga2Options::Parse({{"crossover_prob", 1.5}}).status().message(),
            "crossover_prob: must be a probability in [0, 1], got 1.5");
  EXPECT_EQ(
      Nsga2Options::Parse({{"swapping_prob", -1}}).status().message().rfind("swapping_prob: ", 0),
      0u);
  EXPECT_EQ(
      Nsga2Options::Parse({{"tournament", "roulette"}}).status().message().rfind("tournament: ", 0),
      0u);
  EXPECT_EQ(Nsga2Options::Parse({{"populaton_size", 4}})
                .status()
                .message()
                .rfind("populaton_size: unknown parameter of nsga2", 0),
            0u);
}

TEST(Nsga2SearcherTest, ChildrenAreMadeOfTheParentPopulationsValues) {
  // Population 6, no mutation: generation 0 is random; every later child takes each param from
  // a member of the previous generation's parent population (values over a range of 10^6, so a
  // random draw would not hit one by chance).
  const json space = {{"a", {{"randint", {0, 1000000}}}},
                      {"b", {{"randint", {0, 1000000}}}},
                      {"c", {{"choice", {"p", "q", "r", "s", "t", "u", "v", "w"}}}}};
  Nsga2Options options = SmallPopulation(6);
  options.mutation_prob = 0;
  Nsga2Searcher s(options, kTwo, -1, 11);
  Prepare(s, space);
  auto objective = [](const json& c) {
    const double a = c["a"].get<double>() / 1e6, b = c["b"].get<double>() / 1e6;
    return std::vector<double>{a + b, 1 - a + b};
  };
  for (int i = 0; i < 6; ++i) Step(s, i, objective);
  for (int gen = 1; gen <= 3; ++gen) {
    const Nsga2Searcher::Population parents = s.ParentPopulation();
    ASSERT_EQ(parents.generation, gen - 1);
    ASSERT_EQ(parents.members.size(), 6u);
    std::set<json> values[3];
    for (size_t m : parents.members) {
      const json& c = s.trials()[m].config;
      values[0].insert(c["a"]);
      values[1].insert(c["b"]);
      values[2].insert(c["c"]);
    }
    for (int i = 6 * gen; i < 6 * gen + 6; ++i) {
      const json c = Step(s, i, objective);
      EXPECT_EQ(s.trials().back().generation, gen);
      EXPECT_EQ(values[0].count(c["a"]), 1u) << c.dump();
      EXPECT_EQ(values[1].count(c["b"]), 1u) << c.dump();
      EXPECT_EQ(values[2].count(c["c"]), 1u) << c.dump();
    }
  }
  EXPECT_EQ(s.Describe()["generation"], 3);
}

TEST(Nsga2SearcherTest, ElitismKeepsTheFrontOfParentsAndChildren) {
  // After each generation the parent population holds every member of the Pareto front of the
  // previous population and the new children when that front fits (else it is all front).
  Nsga2Searcher s(SmallPopulation(8), kTwo, -1, 5);
  Prepare(s, kPlaneSpace);
  std::vector<size_t> previous;
  for (int i = 0; i < 8 * 6; ++i) {
    Step(s, i, Plane);
    if ((i + 1) % 8 != 0) continue;
    const Nsga2Searcher::Population population = s.ParentPopulation();
    ASSERT_EQ(population.generation, (i + 1) / 8 - 1);
    ASSERT_EQ(population.members.size(), 8u);
    std::vector<size_t> candidates = previous;
    for (int j = i - 7; j <= i; ++j) candidates.push_back(size_t(j));
    Losses2 losses;
    for (size_t c : candidates) losses.push_back(s.trials()[c].losses);
    const std::vector<size_t> front = ParetoFront(losses);
    const std::set<size_t> members(population.members.begin(), population.members.end());
    for (size_t f : front) {
      if (front.size() <= 8) {
        EXPECT_EQ(members.count(candidates[f]), 1u) << "generation " << population.generation;
      }
    }
    if (front.size() > 8) {
      for (size_t m : population.members) {
        const auto at = std::find(candidates.begin(), candidates.end(), m) - candidates.begin();
        EXPECT_NE(std::find(front.begin(), front.end(), size_t(at)), front.end());
      }
    }
    previous = population.members;
  }
  // The search moved toward y = 0: the population's worst y is below random search's median.
  double worst_y = 0;
  for (size_t m : previous) worst_y = std::max(worst_y, s.trials()[m].config["y"].get<double>());
  EXPECT_LT(worst_y, 0.5);
}

TEST(Nsga2SearcherTest, CrowdedEliteCutKeepsTheFrontsExtremes) {
  // Ten trials all on one front (y = 0) with population 4: the cut by crowding distance keeps
  // the two extremes of the front (infinite crowding distance).
  const json space = {{"x", {{"choice", {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}}}},
                      {"y", 0.0}};
  Nsga2Searcher s(SmallPopulation(4), kTwo, -1, 3);
  Prepare(s, space);
  // All ten are suggested before any ends, so all are generation 0.
  std::vector<json> configs;
  for (int i = 0; i < 10; ++i) configs.push_back(s.Suggest(TrialId(i)).config);
  for (int i = 0; i < 10; ++i) {
    const std::vector<double> f = Plane(configs[size_t(i)]);
    TrainingResult r = TwoResults(f[0], f[1]);
    s.OnTrialComplete(TrialId(i), &r, false);
  }
  Losses2 losses;
  for (const auto& t : s.trials()) losses.push_back(t.losses);
  const auto population = s.ParentPopulation();
  ASSERT_EQ(population.generation, 0);
  size_t lowest = 0, highest = 0;
  for (size_t i = 0; i < losses.size(); ++i) {
    if (losses[i][0] < losses[lowest][0]) lowest = i;
    if (losses[i][0] > losses[highest][0]) highest = i;
  }
  const std::set<size_t> members(population.members.begin(), population.members.end());
  EXPECT_EQ(members.size(), 4u);
  EXPECT_EQ(members.count(lowest), 1u);
  EXPECT_EQ(members.count(highest), 1u);
}

TEST(MotpeSearcherTest, BelowIsWholeFrontsThenTheGreedyHypervolumeSubset) {
  // Front 0: indices 1, 3, 4 ((0,1), (0.5,0.5), (1,0)); front 1: 0 and 2; front 2: 5.
  const Losses2 losses = {{0.2, 1.2}, {0, 1}, {1.2, 0.2}, {0.5, 0.5}, {1, 0}, {2, 2}};
  EXPECT_EQ(MotpeBelow(losses, 3), (std::vector<size_t>{1, 3, 4}));  // the front exactly
  EXPECT_EQ(MotpeBelow(losses, 5), (std::vector<size_t>{0, 1, 2, 3, 4}));
  // Two of the front: reference (1.1, 1.1); alone (0.5,0.5) adds 0.36, the others 0.11 each;
  // after it neither adds more, and the first of equals, (0,1), wins.
  EXPECT_EQ(MotpeBelow(losses, 2), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(MotpeBelow(losses, 1), (std::vector<size_t>{3}));
  EXPECT_TRUE(MotpeBelow(losses, 0).empty());
}

TEST(MotpeSearcherTest, WeightsAreHypervolumeContributionsOverTheLargest) {
  // Reference (1.1, 1.1); total 0.46; without (0,1) or (1,0) 0.41, without (0.5,0.5) 0.21:
  // contributions 0.05, 0.25, 0.05 -> 0.2, 1, 0.2.
  const auto w = MotpeWeights({{0, 1}, {0.5, 0.5}, {1, 0}});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NEAR(w[0], 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(w[1], 1.0);
  EXPECT_NEAR(w[2], 0.2, 1e-9);
  EXPECT_EQ(MotpeWeights({{3, 4}}), (std::vector<double>{1.0}));
  // A point dominated inside the set adds nothing: it keeps only the tiny epsilon.
  const auto dominated = MotpeWeights({{0, 0}, {0.5, 0.5}});
  EXPECT_DOUBLE_EQ(dominated[0], 1.0);
  EXPECT_LT(dominated[1], 1e-9);
}

TEST(MotpeSearcherTest, StartupIsRandomThenTheModelFindsTheParetoSet) {
  // 10 random suggestions, then the model: the last 30 suggestions lie much nearer the Pareto
  // set y = 0 than random ones (median y 0.5).
  MotpeSearcher s({}, kTwo, -1, 2);
  Prepare(s, kPlaneSpace);
  std::vector<double> ys;
  for (int i = 0; i < 70; ++i) {
    EXPECT_EQ(s.Describe()["phase"], i < 10 ? "startup" : "model");
    const json c = Step(s, i, Plane);
    if (i >= 40) ys.push_back(c["y"].get<double>());
  }
  std::sort(ys.begin(), ys.end());
  EXPECT_LT(ys[ys.size() / 2], 0.15);
}

TEST(MotpeSearcherTest, OptionsParseDefaultsAndNameTheBadField) {
  auto o = MotpeOptions::Parse(json::object());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->n_startup_trials, 10);
  EXPECT_EQ(o->n_ei_candidates, 24);
  EXPECT_FALSE(o->consider_endpoints);
  EXPECT_EQ(MotpeOptions::Parse({{"n_ei_candidates", 0}}).status().message(),
            "n_ei_candidates: must be >= 1, got 0");
  EXPECT_EQ(MotpeOptions::Parse({{"gamma", 3}})
                .status()
                .message()
                .rfind("gamma: unknown parameter of motpe", 0),
            0u);
}

// Checks that `v` is a value of sampler `spec` ({"name": args}) with the right JSON type.
void ExpectValueOfSampler(const json& v, const json& spec, const std::string& where) {
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
    EXPECT_GE(x, a[0].get<double>());
    EXPECT_LE(x, a[1].get<double>() - (is_int && !has_q ? 1 : 0));
  }
  if (has_q) {
    const double q = a[2].get<double>(), k = x / q;
    EXPECT_NEAR(k, std::round(k), 1e-6);
  }
}

const json kSamplers = {
    {"u", {{"uniform", {-1, 1}}}},
    {"qu", {{"quniform", {0.05, 1, 0.1}}}},
    {"lu", {{"loguniform", {1e-4, 1e-1}}}},
    {"qlu", {{"qloguniform", {1, 1000, 5}}}},
    {"rn", {{"randn", {10, 2}}}},
    {"qrn", {{"qrandn", {0, 1, 0.5}}}},
    {"ri", {{"randint", {-3, 4}}}},
    {"qri", {{"qrandint", {0, 100, 25}}}},
    {"lri", {{"lograndint", {1, 1000}}}},
    {"qlri", {{"qlograndint", {2, 512, 2}}}},
    {"c", {{"choice", {"adam", 3, true, json::array({1, 2}), nullptr}}}},
};

json SamplerSpace() {
  json space = kSamplers;
  space["model"] = {{"depth", {{"randint", {1, 9}}}}, {"opt", {{"momentum", 0.9}}}};
  space["epochs"] = 3;
  return space;
}

std::vector<double> SamplerObjective(const json& c) {
  const double u = c["u"].get<double>(), d = c["model"]["depth"].get<double>();
  return {u + d + (c["c"] == "adam" ? 0.0 : 1.0), -u + d};
}

template <typename S>
void ExpectEverySamplerInDomain(S& s) {
  for (int i = 0; i < 40; ++i) {
    Suggestion g = s.Suggest(TrialId(i));
    ASSERT_EQ(g.kind, Suggestion::Kind::kConfig);
    const json& c = g.config;
    for (const auto& [key, spec] : kSamplers.items()) ExpectValueOfSampler(c[key], spec, key);
    ExpectValueOfSampler(c["model"]["depth"], {{"randint", {1, 9}}}, "model.depth");
    EXPECT_EQ(c["model"]["opt"]["momentum"], 0.9);
    EXPECT_EQ(c["epochs"], 3);
    const std::vector<double> f = SamplerObjective(c);
    TrainingResult r = TwoResults(f[0], f[1]);
    s.OnTrialComplete(TrialId(i), &r, false);
  }
}

TEST(MultiObjectiveSearcherTest, EverySamplerGivesValuesInItsDomainWithTheRightType) {
  // Through random suggestions and the model (nsga2: 4 generations of 8, with uniform and with
  // simulated binary crossover; motpe: 30 model suggestions), with nested keys and constants.
  Nsga2Searcher nsga2(SmallPopulation(8), kTwo, -1, 4);
  Prepare(nsga2, SamplerSpace());
  ExpectEverySamplerInDomain(nsga2);
  EXPECT_GE(nsga2.Describe()["generation"].get<int64_t>(), 3);
  Nsga2Options sbx = SmallPopulation(8);
  sbx.crossover = Nsga2Options::Crossover::kSbx;
  Nsga2Searcher nsga2_sbx(sbx, kTwo, -1, 4);
  Prepare(nsga2_sbx, SamplerSpace());
  ExpectEverySamplerInDomain(nsga2_sbx);
  MotpeSearcher motpe({}, kTwo, -1, 4);
  Prepare(motpe, SamplerSpace());
  ExpectEverySamplerInDomain(motpe);
  EXPECT_EQ(motpe.Describe()["phase"], "model");
}

TEST(MultiObjectiveSearcherTest, ErroredAndMetriclessTrialsAreNotObservations) {
  // A max objective is negated; an errored trial, one missing a metric and one without a
  // result are dropped, and a repeated end changes nothing.
  MotpeSearcher s({}, {{"acc", "max"}, {"ms", "min"}}, -1, 1);
  Prepare(s, kPlaneSpace);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(s.Suggest(TrialId(i)).kind, Suggestion::Kind::kConfig);
  TrainingResult good;
  good.SetDouble("acc", 0.9);
  good.SetInt("ms", 12);
  TrainingResult partial;
  partial.SetDouble("acc", 0.8);
  s.OnTrialComplete(TrialId(0), &good, false);
  s.OnTrialComplete(TrialId(1), &good, true);
  s.OnTrialComplete(TrialId(2), &partial, false);
  s.OnTrialComplete(TrialId(3), nullptr, false);
  s.OnTrialComplete(TrialId(0), &partial, false);  // ended already
  s.OnTrialComplete("never-suggested", &good, false);
  EXPECT_EQ(s.num_observations(), 1);
  EXPECT_EQ(s.num_running(), 1);
  EXPECT_EQ(s.trials()[0].losses, (std::vector<double>{-0.9, 12.0}));
  const json state = s.SaveState();
  EXPECT_EQ(state["trials"][1]["state"], "dropped");
  EXPECT_EQ(state["trials"][4]["state"], "running");
  // One number cannot be a point of two objectives.
  EXPECT_EQ(
      s.AddEvaluatedPoint({{"x", 0.5}, {"y", 0.5}}, 1.0).message().rfind("evaluated_rewards: ", 0),
      0u);
}

TEST(MultiObjectiveSearcherTest, OneObjectiveFromSearchPropertiesAndEvaluatedPoints) {
  // Without objectives the searcher takes SetSearchProperties' metric and mode (and needs
  // them); an evaluated point is then an observation.
  Nsga2Searcher s({}, {}, -1, 1);
  EXPECT_EQ(s.SetSearchProperties("", "", kPlaneSpace).message().rfind("metric: ", 0), 0u);
  ASSERT_TRUE(s.SetSearchProperties("score", "max", kPlaneSpace).ok());
  ASSERT_TRUE(s.AddEvaluatedPoint({{"x", 0.5}, {"y", 0.25}}, 3.0).ok());
  EXPECT_EQ(s.num_observations(), 1);
  EXPECT_EQ(s.trials()[0].losses, (std::vector<double>{-3.0}));
  EXPECT_EQ(s.AddEvaluatedPoint({{"x", 0.5}}, 1.0).message().rfind("y: ", 0), 0u);
}

// A run's script: the live searcher's events (suggest i / complete i), with trials 3 at a time
// in flight, and every delta it leaves. A fresh searcher that replays the deltas up to any
// point and then follows the script makes the same suggestions.
template <typename Make>
void ExpectResumeAfterEveryDelta(Make make, int trials) {
  auto live = make();
  struct Action {
    bool suggest;
    int trial;
  };
  std::vector<Action> script;
  for (int i = 0; i < trials; ++i) {
    script.push_back({true, i});
    if (i >= 2) script.push_back({false, i - 2});
  }
  script.push_back({false, trials - 2});
  std::vector<json> configs(static_cast<size_t>(trials), json());
  std::vector<json> deltas;  // deltas[a]: what action a left (null: none)
  auto run = [&](auto& s, const Action& a) -> json {
    if (a.suggest) return s.Suggest(TrialId(a.trial)).config;
    const std::vector<double> f = Plane(configs[size_t(a.trial)]);
    TrainingResult r = TwoResults(f[0], f[1]);
    s.OnTrialComplete(TrialId(a.trial), &r, a.trial % 7 == 3);  // some errors
    return nullptr;
  };
  for (const Action& a : script) {
    json c = run(live, a);
    if (a.suggest) configs[size_t(a.trial)] = c;
    deltas.push_back(live.TakeStateDelta());
  }
  for (size_t cut = 0; cut <= script.size(); cut += 1) {
    auto resumed = make();
    for (size_t a = 0; a < cut; ++a) {
      if (!deltas[a].is_null()) {
        ASSERT_TRUE(resumed.ApplyStateDelta(deltas[a]).ok());
      }
    }
    for (size_t a = cut; a < script.size(); ++a) {
      const json c = run(resumed, script[a]);
      if (script[a].suggest) {
        ASSERT_EQ(c, configs[size_t(script[a].trial)]) << "cut " << cut << " action " << a;
      }
    }
    EXPECT_EQ(resumed.SaveState(), live.SaveState()) << "cut " << cut;
  }
  // And from a snapshot.
  auto restored = make();
  ASSERT_TRUE(restored.RestoreState(live.SaveState()).ok());
  EXPECT_EQ(restored.SaveState(), live.SaveState());
  EXPECT_EQ(restored.Describe(), live.Describe());
}

TEST(MultiObjectiveSearcherTest, Nsga2ResumedAfterAnyDeltaSuggestsTheSame) {
  ExpectResumeAfterEveryDelta(
      [] {
        Nsga2Searcher s(SmallPopulation(5), kTwo, -1, 21);
        EXPECT_TRUE(s.SetSearchProperties("", "", kPlaneSpace).ok());
        return s;
      },
      30);
}

TEST(MultiObjectiveSearcherTest, MotpeResumedAfterAnyDeltaSuggestsTheSame) {
  ExpectResumeAfterEveryDelta(
      [] {
        MotpeOptions o;
        o.n_startup_trials = 5;
        MotpeSearcher s(o, kTwo, -1, 21);
        EXPECT_TRUE(s.SetSearchProperties("", "", kPlaneSpace).ok());
        return s;
      },
      24);
}

TEST(MultiObjectiveSearcherTest, SameSeedSameSequenceOtherSeedOther) {
  auto run = [](uint64_t seed) {
    std::vector<json> configs;
    MotpeSearcher s({}, kTwo, -1, seed);
    Prepare(s, kPlaneSpace);
    for (int i = 0; i < 15; ++i) configs.push_back(Step(s, i, Plane));
    return configs;
  };
  EXPECT_EQ(run(3), run(3));
  EXPECT_NE(run(3), run(4));
}

TEST(MultiObjectiveSearcherTest, MakeSearcherBuildsThemFromTheObjectives) {
  // nsga2 and motpe are built from setup.objectives (or one metric); a single-objective
  // searcher refuses two objectives; parameter errors name the parameter.
  SearchSetup setup;
  setup.param_space = kPlaneSpace;
  setup.num_samples = 10;
  setup.objectives = {{"acc", "max"}, {"ms", "min"}};
  auto nsga2 = MakeSearcher("nsga2", {{"population_size", 4}}, setup);
  ASSERT_TRUE(nsga2.ok()) << nsga2.status().ToString();
  EXPECT_STREQ((*nsga2)->name(), "nsga2");
  auto motpe = MakeSearcher("motpe", json::object(), setup);
  ASSERT_TRUE(motpe.ok()) << motpe.status().ToString();
  EXPECT_EQ((*motpe)->Total(), 10);
  auto bad = MakeSearcher("nsga2", {{"population_size", 1}}, setup);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "population_size: must be >= 2, got 1");
  auto tpe = MakeSearcher("tpe", json::object(), setup);
  ASSERT_FALSE(tpe.ok());
  EXPECT_EQ(tpe.status().message().rfind("type: tpe optimises one metric", 0), 0u);
  SearchSetup single = setup;
  single.objectives.clear();
  single.metric = "acc";
  single.mode = "max";
  EXPECT_TRUE(MakeSearcher("motpe", json::object(), single).ok());
}

}  // namespace
}  // namespace tunebus
