// Tests for the searchers' plumbing (libs/tune): the variant generator as a Searcher, the
// ConcurrencyLimiter and PointsToEvaluate wrappers, their journaling (deltas rebuild the state),
// and MakeSearcher's checks of the `search:` section.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libs/tune/concurrency_limiter.hpp"
#include "libs/tune/make_searcher.hpp"
#include "libs/tune/points_to_evaluate.hpp"
#include "libs/tune/variant_generator.hpp"
#include "tests/unit/test_searchers.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

const json kSpace = {{"a", {{"uniform", {0, 1}}}}, {"b", {{"choice", {"x", "y"}}}}};

SearchSetup SetupFor(json space, int64_t num_samples, std::string metric = "") {
  SearchSetup s;
  s.param_space = std::move(space);
  s.num_samples = num_samples;
  s.metric = metric;
  s.mode = metric.empty() ? "" : "max";
  s.seed = 7;
  return s;
}

std::unique_ptr<Searcher> Make(const std::string& type, const json& config, const SearchSetup& s) {
  auto made = MakeSearcher(type, config, s);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(made).value() : nullptr;
}

std::string MakeError(const std::string& type, const json& config, const SearchSetup& s) {
  auto made = MakeSearcher(type, config, s);
  return made.ok() ? "(built)" : made.status().message();
}

TEST(SearcherTest, VariantGeneratorSuggestsItsVariantsThenFinished) {
  // `search: random` is the variant generator: the same configs and tags as Next(), then
  // Finished; its window is max(32, 2 * max_concurrent_trials).
  VariantGenerator reference(kSpace, 3, 7);
  SearchSetup s = SetupFor(kSpace, 3);
  s.max_concurrent_trials = 20;
  auto searcher = Make("random", json::object(), s);
  ASSERT_NE(searcher, nullptr);
  EXPECT_STREQ(searcher->name(), "random");
  EXPECT_EQ(searcher->MaxPendingSuggestions(), 40);
  EXPECT_EQ(searcher->Total(), 3);
  for (int i = 0; i < 3; ++i) {
    Variant v = reference.Next();
    Suggestion got = searcher->Suggest("t" + std::to_string(i));
    ASSERT_EQ(got.kind, Suggestion::Kind::kConfig);
    EXPECT_EQ(got.config, v.config);
    EXPECT_EQ(got.tag, v.tag);
  }
  EXPECT_EQ(searcher->Suggest("t3").kind, Suggestion::Kind::kFinished);
  EXPECT_EQ(searcher->Describe(), (json{{"searcher", "random"}, {"suggested", 3}, {"total", 3}}));
  EXPECT_TRUE(searcher->TakeStateDelta().is_null());  // journaled by whole state
  ASSERT_TRUE(searcher->RestoreState(nullptr).ok());  // null: the seed's initial state
  EXPECT_EQ(searcher->suggested(), 0);
  EXPECT_EQ(searcher->Suggest("t0").config, VariantGenerator(kSpace, 3, 7).Next().config);
}

TEST(SearcherTest, ConcurrencyLimiterSaysNotNowWhileMaxConcurrentAreLive) {
  // Ray's ConcurrencyLimiter: two live trials at most; an end frees a place; results and ends of
  // trials it did not suggest are not passed on.
  auto inner = std::make_unique<MeanSearcher>(-1, 1);
  MeanSearcher* mean = inner.get();
  ConcurrencyLimiter limiter(std::move(inner), 2);
  EXPECT_EQ(limiter.Suggest("t0").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(limiter.Suggest("t1").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(limiter.Suggest("t2").kind, Suggestion::Kind::kNotNow);
  EXPECT_EQ(limiter.Suggest("t1").kind, Suggestion::Kind::kConfig);  // asked again: answered
  limiter.OnTrialComplete("added", nullptr, false);                  // not one of its trials
  EXPECT_EQ(limiter.Suggest("t2").kind, Suggestion::Kind::kNotNow);
  limiter.OnTrialComplete("t0", nullptr, false);
  EXPECT_EQ(limiter.Suggest("t2").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(limiter.live_trials(), (std::set<std::string>{"t1", "t2"}));
  EXPECT_EQ(
      std::count(mean->calls.begin(), mean->calls.end(), "complete added error=false value=none"),
      0);
  EXPECT_EQ(limiter.Describe()["max_concurrent"], 2);
  EXPECT_EQ(limiter.Describe()["live_trials"], 2);
  EXPECT_EQ(limiter.Describe()["searcher"], "mean");
}

TEST(SearcherTest, MaxConcurrentTrialsLimitsAModelSearcherAsRaysTunerDoes) {
  // `max_concurrent_trials: 1` with TPE: one live trial at a time, the next suggested only after
  // it ended (Ray 2.x wraps the searcher in ConcurrencyLimiter(max_concurrent_trials)), without
  // `search.max_concurrent`. Both set: the smaller. Random is not wrapped.
  SearchSetup s = SetupFor(kSpace, 10, "score");
  s.max_concurrent_trials = 1;
  auto tpe = Make("tpe", json::object(), s);
  ASSERT_NE(tpe, nullptr);
  EXPECT_EQ(tpe->Describe().value("max_concurrent", 0), 1) << tpe->Describe();
  EXPECT_EQ(tpe->Suggest("t0").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(tpe->Suggest("t1").kind, Suggestion::Kind::kNotNow);
  tpe->OnTrialComplete("t0", nullptr, false);
  EXPECT_EQ(tpe->Suggest("t1").kind, Suggestion::Kind::kConfig);

  s.max_concurrent_trials = 4;
  EXPECT_EQ(Make("tpe", {{"max_concurrent", 2}}, s)->Describe().value("max_concurrent", 0), 2);
  EXPECT_EQ(Make("tpe", {{"max_concurrent", 8}}, s)->Describe().value("max_concurrent", 0), 4);
  EXPECT_FALSE(Make("random", json::object(), s)->Describe().contains("max_concurrent"));
  s.max_concurrent_trials = 0;  // no limit
  EXPECT_FALSE(Make("tpe", json::object(), s)->Describe().contains("max_concurrent"));
}

TEST(SearcherTest, WrapperDeltasRebuildTheWholeState) {
  // What a resume relies on: a fresh limiter over points over a delta-journaled searcher,
  // brought up from null and the deltas alone, holds the state of the one that made them.
  auto build = [] {
    auto points = std::make_unique<PointsToEvaluate>(std::make_unique<MeanSearcher>(6, 3),
                                                     std::vector<json>{{{"x", 0.5}}},
                                                     std::vector<double>{}, 9);
    auto limiter = std::make_unique<ConcurrencyLimiter>(std::move(points), 2);
    EXPECT_TRUE(limiter->SetSearchProperties("score", "max", {{"x", {{"uniform", {-5, 5}}}}}).ok());
    return limiter;
  };
  auto live = build();
  std::vector<json> deltas;
  auto take = [&] {
    if (json d = live->TakeStateDelta(); !d.is_null()) deltas.push_back(d);
  };
  TrainingResult r = TrainingResult::FromJson({{"score", 2.0}});
  EXPECT_EQ(live->Suggest("t0").config, (json{{"x", 0.5}}));  // the point first
  take();
  live->Suggest("t1");
  take();
  live->OnTrialComplete("t0", &r, false);  // the point's end: an evaluated point for the inner
  take();
  live->Suggest("t2");
  take();
  live->OnTrialComplete("t1", &r, false);
  take();
  auto fresh = build();
  ASSERT_TRUE(fresh->RestoreState(nullptr).ok());
  for (const json& d : deltas) ASSERT_TRUE(fresh->ApplyStateDelta(d).ok()) << d.dump();
  EXPECT_EQ(fresh->SaveState(), live->SaveState());
  EXPECT_EQ(fresh->Suggest("t3").config, live->Suggest("t3").config);
  auto again = build();
  ASSERT_TRUE(again->RestoreState(live->SaveState()).ok());
  EXPECT_EQ(again->SaveState(), live->SaveState());
}

TEST(SearcherTest, PointsToEvaluateRunFirstAndTakeThePlaceOfSamples) {
  // Ray's BasicVariantGenerator(points_to_evaluate): the points first, keys they leave out
  // sampled; each point takes the place of one of num_samples.
  auto searcher =
      Make("random", {{"points_to_evaluate", {{{"a", 0.5}}, {{"a", 0.25}, {"b", "y"}}}}},
           SetupFor(kSpace, 4));
  ASSERT_NE(searcher, nullptr);
  EXPECT_EQ(searcher->Total(), 4);
  Suggestion first = searcher->Suggest("t0");
  EXPECT_EQ(first.config["a"], 0.5);
  EXPECT_TRUE(first.config["b"] == "x" || first.config["b"] == "y");
  EXPECT_EQ(searcher->Suggest("t1").config, (json{{"a", 0.25}, {"b", "y"}}));
  EXPECT_EQ(searcher->Suggest("t2").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(searcher->Suggest("t3").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(searcher->Suggest("t4").kind, Suggestion::Kind::kFinished);
  EXPECT_EQ(searcher->suggested(), 4);
  EXPECT_EQ(searcher->Describe()["points_served"], 2);
}

TEST(SearcherTest, PointsExpandOverGridKeysTheyLeaveOut) {
  // Ray's count_variants: a point that fixes no grid_search key runs once per grid value.
  const json space = {{"g", {{"grid_search", {1, 2, 3}}}}, {"a", {{"uniform", {0, 1}}}}};
  auto searcher = Make("random", {{"points_to_evaluate", {{{"a", 0.5}}}}}, SetupFor(space, 2));
  ASSERT_NE(searcher, nullptr);
  EXPECT_EQ(searcher->Total(), 6);  // the point over 3 grid values + 1 sample over 3
  for (int g = 1; g <= 3; ++g) {
    EXPECT_EQ(searcher->Suggest("p" + std::to_string(g)).config, (json{{"a", 0.5}, {"g", g}}));
  }
  for (int g = 1; g <= 3; ++g) {
    Suggestion s = searcher->Suggest("s" + std::to_string(g));
    EXPECT_EQ(s.config["g"], g);
    EXPECT_NE(s.config["a"], 0.5);
  }
  EXPECT_EQ(searcher->Suggest("end").kind, Suggestion::Kind::kFinished);
}

TEST(SearcherTest, EndedPointTrialsAreEvaluatedPointsOfTheInnerSearcher) {
  // The inner searcher did not suggest a point's trial: it hears of its result as
  // AddEvaluatedPoint(config, metric), never of its results one by one.
  auto inner = std::make_unique<MeanSearcher>(2, 1);
  MeanSearcher* mean = inner.get();
  PointsToEvaluate points(std::move(inner), {{{"x", 1.5}}}, {}, 5);
  ASSERT_TRUE(points.SetSearchProperties("score", "max", {{"x", {{"uniform", {-5, 5}}}}}).ok());
  EXPECT_EQ(points.Suggest("p").config, (json{{"x", 1.5}}));
  TrainingResult r = TrainingResult::FromJson({{"score", 4.0}, {"training_iteration", 1}});
  points.OnTrialResult("p", r);
  points.OnTrialComplete("p", &r, false);
  points.OnTrialComplete("p", &r, false);  // told twice (a resume): no longer a point trial,
                                           // passed on, and the inner searcher ignores it
  EXPECT_EQ(mean->calls,
            (std::vector<std::string>{"point {\"x\":1.5} 4", "complete p error=false value=4"}));
  EXPECT_EQ(mean->Describe()["observations"], 1);
  EXPECT_EQ(points.Total(), 3);
}

TEST(SearcherTest, EvaluatedRewardsAreFedBeforeTheFirstSuggestionAndNotRun) {
  // Ray's OptunaSearch(points_to_evaluate, evaluated_rewards): known results, fed first; the
  // points are not trials and do not count against num_samples.
  auto inner = std::make_unique<MeanSearcher>(2, 1);
  MeanSearcher* mean = inner.get();
  PointsToEvaluate points(std::move(inner), {{{"x", 1.0}}, {{"x", 3.0}}}, {0.5, 0.7}, 5);
  ASSERT_TRUE(points.SetSearchProperties("score", "max", {{"x", {{"uniform", {-5, 5}}}}}).ok());
  EXPECT_EQ(points.Total(), 2);
  Suggestion s = points.Suggest("t0");
  ASSERT_EQ(mean->calls.size(), 3u);
  EXPECT_EQ(mean->calls[0], "point {\"x\":1.0} 0.5");
  EXPECT_EQ(mean->calls[1], "point {\"x\":3.0} 0.7");
  EXPECT_EQ(mean->calls[2], "suggest t0");
  EXPECT_NEAR(s.config["x"].get<double>(), 2.0, 1.0);  // the mean of the points, plus [-1, 1)
  points.Suggest("t1");
  EXPECT_EQ(std::count_if(mean->calls.begin(), mean->calls.end(),
                          [](const std::string& c) { return c.starts_with("point"); }),
            2);  // fed once
  EXPECT_EQ(points.Describe()["evaluated_rewards"], 2);
}

TEST(SearcherTest, MakeSearcherNamesTheParameterThatIsWrong) {
  // Each error reads "<param>: <why>" so the spec parser can point at its line.
  const SearchSetup s = SetupFor(kSpace, 4, "score");
  EXPECT_EQ(MakeError("randon", {}, s),
            "type: unknown search type 'randon'; did you mean random?; expected one of random, "
            "tpe, bohb, external, nsga2, motpe");
  EXPECT_EQ(MakeError("tpe", {{"n_ei_candidates", 0}}, s), "n_ei_candidates: must be >= 1, got 0");
  EXPECT_EQ(MakeError("bohb", {{"random_fraction", 2}}, s).rfind("random_fraction: ", 0), 0u);
  EXPECT_EQ(MakeError("random", {{"max_concurrent", 0}}, s),
            "max_concurrent: must be an integer >= 1, got 0");
  EXPECT_EQ(MakeError("random", {{"n_startup_trials", 5}}, s),
            "n_startup_trials: unknown parameter of the random searcher (known: max_concurrent, "
            "points_to_evaluate, evaluated_rewards)");
  EXPECT_EQ(MakeError("random", {{"points_to_evaluate", {{{"c", 1}}}}}, s),
            "points_to_evaluate[0].c: not in the param space; did you mean a? (its keys: a, b)");
  EXPECT_EQ(MakeError("random", {{"points_to_evaluate", {{{"a", 2}}}}}, s),
            "points_to_evaluate[0].a: 2 is outside [0, 1] (uniform)");
  EXPECT_EQ(MakeError("random", {{"points_to_evaluate", {{{"b", "z"}}}}}, s),
            "points_to_evaluate[0].b: \"z\" is not one of the choice values [\"x\", \"y\"]");
  EXPECT_EQ(MakeError("random", {{"points_to_evaluate", {3}}}, s),
            "points_to_evaluate[0]: a point is a map of config keys to values, got 3");
  EXPECT_EQ(
      MakeError(
          "random",
          {{"points_to_evaluate", {{{"a", 0.5}}, {{"a", 0.1}}}}, {"evaluated_rewards", {1.0}}}, s),
      "evaluated_rewards: has 1 values for 2 points_to_evaluate (one reward per point)");
  EXPECT_EQ(
      MakeError("random", {{"points_to_evaluate", {{{"a", 0.5}}}}, {"evaluated_rewards", {1.0}}},
                s),
      "points_to_evaluate[0]: a point with a reward (evaluated_rewards) gives every sampled key; "
      "it lacks b");
  EXPECT_EQ(
      MakeError("random",
                {{"points_to_evaluate", {{{"a", 0.5}, {"b", "x"}}}}, {"evaluated_rewards", {1.0}}},
                SetupFor(kSpace, 4)),
      "evaluated_rewards: rewards are values of the experiment's metric; set `metric` and "
      "`mode`");
}

}  // namespace
}  // namespace tunebus
