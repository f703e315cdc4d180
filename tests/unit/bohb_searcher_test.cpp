// BohbSearcher: options, the budget whose model is used, the random fraction, observations per
// result, determinism and journaling (snapshot and delta replay in the middle of a run).
#include "libs/tune/bohb_searcher.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace tunebus {
namespace {

using nlohmann::json;

const json kSpace = {{"x", {{"uniform", {-10, 10}}}}, {"opt", {{"choice", {"adam", "sgd"}}}}};

std::string Id(int i) { return "t" + std::to_string(i); }

TrainingResult Result(double loss, int64_t iteration) {
  TrainingResult r;
  r.SetDouble("loss", loss);
  r.SetInt("training_iteration", iteration);
  return r;
}

BohbSearcher Make(BohbOptions options = {}, uint64_t seed = 1, int64_t num_samples = -1) {
  BohbSearcher s(options, num_samples, seed);
  Status st = s.SetSearchProperties("loss", "min", kSpace);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

double Loss(const json& c, int64_t iteration) {
  return std::pow(c["x"].get<double>() - 3, 2) + (c["opt"] == "adam" ? 0 : 4) + 10.0 / iteration;
}

// Suggests trial i, reports iterations 1..iterations and completes it.
json RunTrial(BohbSearcher& s, int i, int iterations) {
  Suggestion g = s.Suggest(Id(i));
  EXPECT_EQ(g.kind, Suggestion::Kind::kConfig);
  TrainingResult r;
  for (int t = 1; t <= iterations; ++t) {
    r = Result(Loss(g.config, t), t);
    s.OnTrialResult(Id(i), r);
  }
  s.OnTrialComplete(Id(i), &r, false);
  return g.config;
}

TEST(BohbSearcherTest, OptionsParseDefaultsAndNameTheBadField) {
  // HpBandSter's defaults; errors name search.<key>.
  auto o = BohbOptions::Parse({{"type", "bohb"}, {"max_concurrent", 2}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->min_points_in_model, 0);
  EXPECT_EQ(o->top_n_percent, 15);
  EXPECT_EQ(o->num_samples, 64);
  EXPECT_NEAR(o->random_fraction, 1.0 / 3, 1e-15);
  EXPECT_EQ(o->bandwidth_factor, 3);
  EXPECT_EQ(o->min_bandwidth, 1e-3);
  EXPECT_EQ(o->time_attr, "training_iteration");

  auto top = BohbOptions::Parse({{"top_n_percent", 150}});
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().message(), "top_n_percent: must be < 100, got 150");
  auto fraction = BohbOptions::Parse({{"random_fraction", 1.5}});
  ASSERT_FALSE(fraction.ok());
  EXPECT_EQ(fraction.status().message(), "random_fraction: must be <= 1, got 1.5");
  auto bandwidth = BohbOptions::Parse({{"min_bandwidth", 0}});
  ASSERT_FALSE(bandwidth.ok());
  EXPECT_EQ(bandwidth.status().message().rfind("min_bandwidth: must be > 0", 0), 0u);
  auto unknown = BohbOptions::Parse({{"eta", 3}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message().rfind(
                "eta: unknown parameter of bohb (known: min_points_in_model, ", 0),
            0u);
}

TEST(BohbSearcherTest, GridSearchIsRejected) {
  // As TPE: grid_search in the param space is an error naming the key.
  BohbSearcher s({}, -1, 1);
  Status st = s.SetSearchProperties("loss", "min", {{"a", {{"grid_search", {1, 2}}}}});
  EXPECT_EQ(st.message(),
            "param_space.a: grid_search cannot be combined with search: bohb; use search: random");
}

TEST(BohbSearcherTest, ModelIsAtTheLargestBudgetWithEnoughPoints) {
  // d = 2, so a budget needs 6 observations (3 good, 3 bad). Ten trials reach budget 1, five
  // budget 3, two budget 9: the model is at 1; a sixth at budget 3 moves it there; budget 9
  // with two points never counts.
  BohbSearcher s = Make();
  EXPECT_EQ(s.Describe(), json({{"searcher", "bohb"},
                                {"phase", "startup"},
                                {"model_budget", nullptr},
                                {"observations", 0},
                                {"running", 0}}));
  for (int i = 0; i < 10; ++i) {
    const json c = s.Suggest(Id(i)).config;
    for (int t : {1, 3, 9}) {
      if ((t == 3 && i >= 5) || (t == 9 && i >= 2)) break;
      s.OnTrialResult(Id(i), Result(Loss(c, t), t));
    }
    if (i == 4) {
      EXPECT_EQ(s.ModelBudget(), std::nullopt) << "5 points at budget 1";
    }
  }
  EXPECT_EQ(s.ModelBudget(), 1.0);
  EXPECT_EQ(s.num_observations(), 17);
  const json c = s.Suggest(Id(10)).config;
  s.OnTrialResult(Id(10), Result(Loss(c, 1), 1));
  EXPECT_EQ(s.ModelBudget(), 1.0);
  s.OnTrialResult(Id(10), Result(Loss(c, 3), 3));
  EXPECT_EQ(s.ModelBudget(), 3.0);
  EXPECT_EQ(s.Describe()["phase"], "model");
  EXPECT_EQ(s.Describe()["model_budget"], 3.0);
  EXPECT_EQ(s.Describe()["running"], 11);
}

TEST(BohbSearcherTest, RandomFractionMixesRandomConfigs) {
  // A model whose good configs sit near x = 3 with adam: with random_fraction 0 nearly every
  // suggestion is near them, with 1 about as many as uniform draws (10%), with 1/3 in between.
  auto near_share = [](double random_fraction) {
    BohbOptions o;
    o.random_fraction = random_fraction;
    BohbSearcher s = Make(o, 2);
    for (int i = 0; i < 40; ++i) {  // a fixed history: x spread evenly over [-10, 10]
      const std::string id = "h" + std::to_string(i);
      const json config = {{"x", -10 + 0.5 * i}, {"opt", i % 2 ? "sgd" : "adam"}};
      EXPECT_TRUE(s.ApplyStateDelta(
                       json::array({{{"suggest", id}, {"config", config}},
                                    {{"result", id}, {"budget", 1}, {"value", Loss(config, 1)}}}))
                      .ok());
    }
    int near = 0;
    for (int i = 0; i < 300; ++i) {
      const json c = s.Suggest(Id(i)).config;
      near += std::abs(c["x"].get<double>() - 3) < 1 && c["opt"] == "adam";
    }
    return near / 300.0;
  };
  const double model = near_share(0), random = near_share(1), mixed = near_share(1.0 / 3);
  EXPECT_GT(model, 0.6);
  EXPECT_LT(random, 0.1);
  EXPECT_GT(mixed, random + 0.2);
  EXPECT_LT(mixed, model - 0.1);
}

TEST(BohbSearcherTest, ResultsAreObservationsPerBudget) {
  // A result without the metric or the budget, or of an unknown trial, is none; a non-finite
  // metric is the worst loss (journaled as null); the same budget again replaces the value.
  BohbSearcher s = Make();
  (void)s.Suggest("a");
  (void)s.TakeStateDelta();
  TrainingResult no_metric;
  no_metric.SetInt("training_iteration", 1);
  s.OnTrialResult("a", no_metric);
  TrainingResult no_budget;
  no_budget.SetDouble("loss", 1);
  s.OnTrialResult("a", no_budget);
  s.OnTrialResult("ghost", Result(1, 1));
  EXPECT_TRUE(s.TakeStateDelta().is_null());
  s.OnTrialResult("a", Result(std::nan(""), 1));
  EXPECT_EQ(s.TakeStateDelta(), json::parse(R"([{"result": "a", "budget": 1.0, "value": null}])"));
  s.OnTrialResult("a", Result(2.0, 1));
  EXPECT_EQ(s.num_observations(), 1);
  EXPECT_EQ(s.SaveState()["observations"], json::parse("[[0, 1.0, 2.0]]"));
  s.OnTrialComplete("a", nullptr, /*error=*/true);
  EXPECT_EQ(s.TakeStateDelta().back(), json({{"complete", "a"}}));
  EXPECT_EQ(s.Describe()["running"], 0);
}

TEST(BohbSearcherTest, DeterministicAndResumable) {
  // The same seed gives the same run; a searcher restored from a snapshot after 30 trials, and
  // one replaying every delta, make the same next 20 suggestions as the uninterrupted one.
  BohbSearcher live = Make({}, 7);
  json deltas = json::array();
  for (int i = 0; i < 30; ++i) {
    RunTrial(live, i, 1 + i % 3);
    deltas.push_back(live.TakeStateDelta());
  }
  ASSERT_TRUE(live.ModelBudget().has_value());
  BohbSearcher snapshot = Make({}, 7), replay = Make({}, 7), again = Make({}, 7);
  ASSERT_TRUE(snapshot.RestoreState(live.SaveState()).ok());
  for (const json& d : deltas) ASSERT_TRUE(replay.ApplyStateDelta(d).ok());
  EXPECT_EQ(replay.SaveState(), live.SaveState());
  for (int i = 0; i < 30; ++i) RunTrial(again, i, 1 + i % 3);
  EXPECT_EQ(again.SaveState(), live.SaveState());
  for (int i = 30; i < 50; ++i) {
    const json c = RunTrial(live, i, 1 + i % 3);
    EXPECT_EQ(RunTrial(snapshot, i, 1 + i % 3), c) << i;
    EXPECT_EQ(RunTrial(replay, i, 1 + i % 3), c) << i;
  }
  BohbSearcher other = Make({}, 8);
  std::vector<json> a, b;
  for (int i = 0; i < 30; ++i) a.push_back(RunTrial(other, i, 1 + i % 3));
  BohbSearcher first = Make({}, 7);
  for (int i = 0; i < 30; ++i) b.push_back(RunTrial(first, i, 1 + i % 3));
  EXPECT_NE(a, b);
  EXPECT_EQ(first.RestoreState(json::parse(R"({"trials": []})")).code(),
            StatusCode::kInvalidArgument);
}

TEST(BohbSearcherTest, ModelSuggestionsStayInTheDomain) {
  // Every sampler kind through BOHB's normalised coordinates: values inside their domains with
  // the right JSON types.
  const json space = {{"i", {{"randint", {0, 10}}}},
                      {"q", {{"qloguniform", {1, 100, 1}}}},
                      {"n", {{"randn", {0, 1}}}},
                      {"c", {{"choice", {1, "two", false}}}}};
  BohbSearcher s({}, -1, 3);
  ASSERT_TRUE(s.SetSearchProperties("loss", "max", space).ok());
  for (int i = 0; i < 60; ++i) {
    const json c = s.Suggest(Id(i)).config;
    ASSERT_TRUE(c["i"].is_number_integer());
    EXPECT_GE(c["i"].get<int64_t>(), 0);
    EXPECT_LE(c["i"].get<int64_t>(), 9);
    ASSERT_TRUE(c["q"].is_number_float());
    EXPECT_GE(c["q"].get<double>(), 1);
    EXPECT_LE(c["q"].get<double>(), 100);
    EXPECT_EQ(c["q"].get<double>(), std::round(c["q"].get<double>()));
    ASSERT_TRUE(c["n"].is_number_float());
    const json& choice = c["c"];
    EXPECT_TRUE(choice == 1 || choice == "two" || choice == false) << choice;
    s.OnTrialResult(Id(i), Result(c["i"].get<double>() - std::abs(c["n"].get<double>()), 1));
    s.OnTrialComplete(Id(i), nullptr, false);
  }
  EXPECT_EQ(s.Describe()["phase"], "model");
}

}  // namespace
}  // namespace tunebus
