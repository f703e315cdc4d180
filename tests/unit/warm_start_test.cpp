// Tests for warm start (`search: {type: tpe, warm_start: [earlier-experiment]}`): the
// observations an earlier experiment gives (WarmStartSource) and its checks, the `search:`
// section's errors, the WarmStart wrapper feeding tpe and bohb once before the first suggestion,
// skipping points outside the param space, and a resume from the journaled deltas that feeds
// nothing twice.
#include "libs/tune/warm_start.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "libs/tune/bohb_searcher.hpp"
#include "libs/tune/make_searcher.hpp"
#include "libs/tune/warm_start_source.hpp"
#include "tests/unit/spec_test_util.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

const json kSpace = {{"x", {{"uniform", {0, 1}}}}, {"opt", {{"choice", {"sgd", "adam"}}}}};

Trial Finished(const std::string& id, double x, const std::string& opt, json last_result,
               TrialStatus status = TrialStatus::kTerminated) {
  Trial t;
  t.trial_id = id;
  t.config = {{"x", x}, {"opt", opt}};
  t.status = status;
  if (!last_result.is_null()) t.SetLastResult(last_result);
  return t;
}

// Ten finished trials of `loss` = (x - 0.3)², at budget 4, plus one ERROR, one RUNNING and one
// without the metric (none of the three gives an observation).
std::vector<Trial> EarlierTrials() {
  std::vector<Trial> trials;
  for (int i = 0; i < 10; ++i) {
    const double x = (i + 0.5) / 10;
    trials.push_back(Finished("a_" + std::to_string(i), x, i % 2 ? "adam" : "sgd",
                              {{"loss", (x - 0.3) * (x - 0.3)}, {"training_iteration", 4}}));
  }
  trials.push_back(Finished("a_err", 0.1, "sgd", {{"loss", 0.0}}, TrialStatus::kError));
  trials.push_back(Finished("a_run", 0.1, "sgd", {{"loss", 0.0}}, TrialStatus::kRunning));
  trials.push_back(Finished("a_nometric", 0.1, "sgd", {{"other", 1.0}}));
  return trials;
}

WarmStartExperiment Earlier(const std::vector<Trial>& trials, json space = kSpace,
                            std::string metric = "loss", bool ended = true) {
  return {.name = "exp-a",
          .journal = "exp-a-1f2e3",
          .param_space = std::move(space),
          .metric = std::move(metric),
          .ended = ended,
          .trials = &trials};
}

json Sources(const std::vector<Trial>& trials) {
  auto source = CollectWarmStart(Earlier(trials), {kSpace, "loss"}, 0);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  return json::array({*source});
}

SearchSetup WarmSetup(json sources, int64_t num_samples = 20) {
  SearchSetup s;
  s.param_space = kSpace;
  s.num_samples = num_samples;
  s.metric = "loss";
  s.mode = "min";
  s.seed = 11;
  s.warm_start = std::move(sources);
  return s;
}

std::unique_ptr<Searcher> Make(const std::string& type, json config, const SearchSetup& s) {
  auto made = MakeSearcher(type, config, s);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(made).value() : nullptr;
}

std::string MakeError(const std::string& type, const json& config, const SearchSetup& s) {
  auto made = MakeSearcher(type, config, s);
  return made.ok() ? "(built)" : made.status().message();
}

TEST(WarmStartSourceTest, FinishedTrialsWithTheMetricAreTheObservations) {
  const std::vector<Trial> trials = EarlierTrials();
  auto source = CollectWarmStart(Earlier(trials), {kSpace, "loss"}, 0);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)["experiment"], "exp-a");
  EXPECT_EQ((*source)["journal"], "exp-a-1f2e3");
  const json& observations = (*source)["observations"];
  ASSERT_EQ(observations.size(), 10u);
  EXPECT_EQ(observations[0]["config"], json({{"x", 0.05}, {"opt", "sgd"}}));
  EXPECT_DOUBLE_EQ(observations[0]["value"].get<double>(), 0.25 * 0.25);
  EXPECT_EQ(observations[0]["budget"], 4);
}

TEST(WarmStartSourceTest, ErrorsNameTheEntryTheExperimentAndWhatDiffers) {
  const std::vector<Trial> trials = EarlierTrials();
  const json other = {{"x", {{"uniform", {0, 1}}}}, {"width", {{"randint", {1, 4}}}}};
  auto keys = CollectWarmStart(Earlier(trials, other), {kSpace, "loss"}, 1);
  EXPECT_EQ(keys.status().message(),
            "warm_start[1]: experiment 'exp-a' has keys width, x; this param space has opt, x");
  auto metric = CollectWarmStart(Earlier(trials, kSpace, "accuracy"), {kSpace, "loss"}, 0);
  EXPECT_EQ(metric.status().message(),
            "warm_start[0]: experiment 'exp-a' has metric 'accuracy'; this experiment's metric is "
            "'loss' (warm start feeds values of the same metric)");
  auto running = CollectWarmStart(Earlier(trials, kSpace, "loss", false), {kSpace, "loss"}, 0);
  EXPECT_EQ(running.status().message(),
            "warm_start[0]: experiment 'exp-a' has not finished; warm start reads finished "
            "experiments (wait for it, or stop it with `tunectl stop -e exp-a`)");
  // Nested keys are compared by their paths; constants count as keys.
  EXPECT_EQ(ParamSpaceKeys({{"opt", {{"lr", {{"uniform", {0, 1}}}}, {"m", 0.9}}}, {"bs", 32}}),
            (std::vector<std::string>{"bs", "opt.lr", "opt.m"}));
}

TEST(WarmStartSpecTest, SearchSectionErrorsPointAtTheLine) {
  using namespace spec_test;
  const std::string base = std::string(kMinimal) +
                           "param_space:\n"
                           "  x: {uniform: [0, 1]}\n"
                           "metric: loss\n"
                           "mode: min\n";  // lines 1-6
  ExpectInvalid(base + "search:\n  type: random\n  warm_start: [exp-a]\n",
                "exp.yaml:9: search.warm_start: the random searcher does not learn from "
                "observations; warm start a searcher that does (type: tpe or bohb)");
  ExpectInvalid(base + "search:\n  type: tpe\n  warm_start: exp-a\n",
                "exp.yaml:9: search.warm_start: must be a list of names of finished experiments, "
                "got \"exp-a\"");
  ExpectInvalid(
      base + "search:\n  type: tpe\n  warm_start: [exp-a, 3]\n",
      "exp.yaml:9: search.warm_start[1]: must be the name of a finished experiment, got 3");
  ExpectInvalid(base + "search:\n  type: tpe\n  warm_start: [exp-a, exp-a]\n",
                "exp.yaml:9: search.warm_start[1]: 'exp-a' is named twice");
  // A well-formed list parses (the names are read at submission, by the scheduler).
  auto spec = Parse(base + "search:\n  type: bohb\n  warm_start: [exp-a, exp-b]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->search_config["warm_start"], json({"exp-a", "exp-b"}));
}

TEST(WarmStartTest, TpeIsFedOnceBeforeItsFirstSuggestionAndSkipsPointsOutsideTheSpace) {
  std::vector<Trial> trials = EarlierTrials();
  trials.push_back(Finished("a_out", 1.5, "sgd", {{"loss", 1.44}}));      // x beyond [0, 1]
  trials.push_back(Finished("a_opt", 0.5, "rmsprop", {{"loss", 0.04}}));  // not a choice here
  json sources = Sources(trials);
  ASSERT_EQ(sources[0]["observations"].size(), 12u);
  auto warm = Make("tpe", {{"warm_start", {"exp-a"}}, {"n_startup_trials", 5}}, WarmSetup(sources));
  ASSERT_NE(warm, nullptr);
  EXPECT_EQ(warm->Describe()["warm_start"],
            json({{"experiments", {"exp-a"}}, {"observations", 0}, {"skipped", 0}}));
  EXPECT_EQ(warm->Describe()["observations"], 0);
  ASSERT_EQ(warm->Suggest("t0").kind, Suggestion::Kind::kConfig);
  const json d = warm->Describe();
  EXPECT_EQ(d["warm_start"]["observations"], 10);
  EXPECT_EQ(d["warm_start"]["skipped"], 2);
  EXPECT_EQ(d["observations"], 10);  // tpe's own count: the fed points are observations
  EXPECT_EQ(d["phase"], "model");    // 10 >= n_startup_trials: the model from the first trial
  EXPECT_EQ(warm->suggested(), 1);   // the observations are not trials of this experiment
  ASSERT_EQ(warm->Suggest("t1").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(warm->Describe()["observations"], 10);  // not fed again

  // Without sources (a spec check), nothing is fed and the searcher starts cold.
  auto cold = Make("tpe", {{"warm_start", {"exp-a"}}, {"n_startup_trials", 5}}, WarmSetup(nullptr));
  ASSERT_EQ(cold->Suggest("t0").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(cold->Describe()["observations"], 0);
  EXPECT_EQ(cold->Describe()["phase"], "startup");
}

TEST(WarmStartTest, ResumeFromTheDeltasDoesNotFeedTwiceAndSuggestsAsTheUninterruptedOne) {
  const json sources = Sources(EarlierTrials());
  const json config = {{"warm_start", {"exp-a"}}, {"n_startup_trials", 5}};
  auto live = Make("tpe", config, WarmSetup(sources));
  std::vector<json> deltas;
  auto take = [&] {
    json d = live->TakeStateDelta();
    if (!d.is_null()) deltas.push_back(std::move(d));
  };
  ASSERT_EQ(live->Suggest("t0").kind, Suggestion::Kind::kConfig);
  take();
  const TrainingResult r = TrainingResult::FromJson({{"loss", 0.5}, {"training_iteration", 1}});
  live->OnTrialResult("t0", r);
  live->OnTrialComplete("t0", &r, false);
  take();
  ASSERT_FALSE(deltas.empty());
  EXPECT_NE(deltas[0].dump().find("\"fed\":10"), std::string::npos) << deltas[0].dump();

  // The resumed searcher: the same setup (the sources from the experiment's own record), the
  // deltas replayed; its first suggestion feeds nothing.
  auto resumed = Make("tpe", config, WarmSetup(sources));
  ASSERT_TRUE(resumed->RestoreState(nullptr).ok());
  for (const json& d : deltas) ASSERT_TRUE(resumed->ApplyStateDelta(d).ok()) << d.dump();
  EXPECT_EQ(resumed->Describe()["observations"], 11);
  EXPECT_EQ(resumed->Describe()["warm_start"]["observations"], 10);
  const Suggestion a = live->Suggest("t1");
  const Suggestion b = resumed->Suggest("t1");
  ASSERT_EQ(b.kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(resumed->Describe()["observations"], 11);
  const json after = resumed->TakeStateDelta();
  EXPECT_EQ(after.dump().find("\"fed\""), std::string::npos) << after.dump();
  EXPECT_EQ(after.dump().find("evaluated"), std::string::npos) << after.dump();

  // A snapshot (SaveState) restores the same: fed, with the counts.
  auto from_snapshot = Make("tpe", config, WarmSetup(sources));
  ASSERT_TRUE(from_snapshot->RestoreState(live->SaveState()).ok());
  EXPECT_EQ(from_snapshot->Describe()["warm_start"], live->Describe()["warm_start"]);
  ASSERT_EQ(from_snapshot->Suggest("t2").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(from_snapshot->Describe()["observations"], 11);
}

TEST(WarmStartTest, BohbKeepsEachObservationAtItsBudget) {
  const json sources = Sources(EarlierTrials());
  const json config = {{"warm_start", {"exp-a"}}};
  auto warm = Make("bohb", config, WarmSetup(sources));
  ASSERT_EQ(warm->Suggest("t0").kind, Suggestion::Kind::kConfig);
  const json d = warm->Describe();
  EXPECT_EQ(d["warm_start"]["observations"], 10);
  EXPECT_EQ(d["observations"], 10);
  EXPECT_EQ(d["model_budget"], 4);  // 10 observations at budget 4 fit a 2-d model
  EXPECT_EQ(warm->suggested(), 1);
  EXPECT_EQ(warm->Total(), 20);

  // Its state round-trips, evaluated points included; both then suggest the same.
  auto restored = Make("bohb", config, WarmSetup(sources));
  ASSERT_TRUE(restored->RestoreState(warm->SaveState()).ok());
  EXPECT_EQ(restored->SaveState(), warm->SaveState());
  EXPECT_EQ(restored->suggested(), 1);
  EXPECT_EQ(restored->Suggest("t1").config, warm->Suggest("t1").config);

  // An evaluated point needs a finite budget and a config of the space.
  BohbSearcher bohb(BohbOptions{}, 5, 1);
  ASSERT_TRUE(bohb.SetSearchProperties("loss", "min", kSpace).ok());
  EXPECT_FALSE(bohb.AddEvaluatedPointAtBudget({{"x", 0.5}, {"opt", "sgd"}}, 1.0, NAN).ok());
  EXPECT_FALSE(bohb.AddEvaluatedPointAtBudget({{"x", 0.5}}, 1.0, 3).ok());
  EXPECT_TRUE(bohb.AddEvaluatedPointAtBudget({{"x", 0.5}, {"opt", "sgd"}}, 1.0, 3).ok());
  EXPECT_EQ(bohb.num_observations(), 1);
  EXPECT_EQ(bohb.suggested(), 0);
}

TEST(WarmStartTest, NeedsAMetric) {
  SearchSetup s = WarmSetup(nullptr);
  s.metric = "";
  s.mode = "";
  EXPECT_EQ(MakeError("tpe", {{"warm_start", {"exp-a"}}}, s),
            "warm_start: observations are values of the experiment's metric; set `metric` and "
            "`mode`");
}

}  // namespace
}  // namespace tunebus
