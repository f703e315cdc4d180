// The dashboard's analysis views' pure parts (services/scheduler/dashboard/views/analysis.hpp,
// dashboard/views/importance.hpp) and the trial scheduler's decision log
// (libs/tune/scheduler_decisions.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "libs/tune/scheduler_decisions.hpp"
#include "services/scheduler/dashboard/views/analysis.hpp"
#include "services/scheduler/dashboard/views/importance.hpp"

namespace tunebus::dashboard {
namespace {

using nlohmann::json;

// n trials: x and noise uniform in [0, 1), metric = f(x) + a little noise.
struct Synthetic {
  std::vector<ParamColumn> params;
  std::vector<double> metric;
};

Synthetic Make(size_t n, uint64_t seed, double noise_scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, noise_scale);
  Synthetic s;
  s.params = {{"x", false, {}, {}}, {"noise", false, {}, {}}, {"optimizer", true, {}, {}}};
  const char* optimizers[] = {"adam", "sgd", "rmsprop"};
  for (size_t i = 0; i < n; ++i) {
    const double x = u(rng);
    s.params[0].numeric.push_back(x);
    s.params[1].numeric.push_back(u(rng));
    s.params[2].labels.push_back(optimizers[rng() % 3]);
    s.metric.push_back(-(x - 0.3) * (x - 0.3) + noise(rng));
  }
  return s;
}

TEST(DashboardImportance, TheDrivingParameterRanksFirstWithMostOfTheImportance) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    for (size_t n : {12u, 40u, 500u}) {
      const Synthetic s = Make(n, seed, 0.002);
      const auto imp = BinnedVarianceImportance(s.params, s.metric);
      ASSERT_EQ(imp.size(), 3u);
      EXPECT_EQ(imp[0].name, "x") << "seed " << seed << " n " << n;
      // Most of the importance; with 12 trials (3 bins) chance leaves the noise some of it.
      EXPECT_GT(imp[0].importance, n < 40 ? 0.5 : 0.8) << "seed " << seed << " n " << n;
      EXPECT_GT(imp[0].variance_explained, 0.5) << "seed " << seed << " n " << n;
      EXPECT_EQ(imp[0].trials, n);
      double sum = 0;
      for (const auto& p : imp) sum += p.importance;
      EXPECT_NEAR(sum, 1.0, 1e-9);
    }
  }
}

TEST(DashboardImportance, NoiseExplainsLittleOfAMetricItDoesNotMove) {
  const Synthetic s = Make(500, 7, 0.002);
  for (const auto& p : BinnedVarianceImportance(s.params, s.metric)) {
    if (p.name != "x") {
      EXPECT_LT(p.variance_explained, 0.05) << p.name;
    }
  }
}

TEST(DashboardImportance, ACategoricalParameterThatDrivesTheMetricRanksFirst) {
  Synthetic s = Make(60, 5, 0.0);
  for (size_t i = 0; i < s.metric.size(); ++i) {  // only the optimizer matters now
    s.metric[i] = s.params[2].labels[i] == "adam"  ? 1.0
                  : s.params[2].labels[i] == "sgd" ? 0.5
                                                   : 0.0;
    s.metric[i] += 0.01 * s.params[1].numeric[i];
  }
  const auto imp = BinnedVarianceImportance(s.params, s.metric);
  EXPECT_EQ(imp[0].name, "optimizer");
  EXPECT_EQ(imp[0].bins, 3u);
  EXPECT_GT(imp[0].importance, 0.9);
}

TEST(DashboardImportance, MissingValuesAreLeftOutAndDegenerateInputsScoreZero) {
  Synthetic s = Make(40, 9, 0.001);
  s.metric[3] = std::nan("");
  s.params[0].numeric[5] = std::nan("");
  auto imp = BinnedVarianceImportance(s.params, s.metric);
  EXPECT_EQ(imp[0].name, "x");
  EXPECT_EQ(imp[0].trials, 38u);
  // A constant metric: nothing to explain.
  std::vector<double> flat(40, 1.0);
  for (const auto& p : BinnedVarianceImportance(s.params, flat)) {
    EXPECT_EQ(p.variance_explained, 0.0);
    EXPECT_EQ(p.importance, 0.0);
  }
  // Too few trials.
  EXPECT_EQ(BinnedVarianceImportance({{"x", false, {0.1, 0.2}, {}}}, {1.0, 2.0})[0].importance,
            0.0);
}

json TrialObject(const std::string& id, const std::string& status, json config, json result) {
  return {{"trial_id", id},
          {"status", status},
          {"config", std::move(config)},
          {"last_result", result},
          {"training_iteration", result.value("training_iteration", 0)},
          {"time_total_s", 1.5}};
}

TEST(DashboardAnalysis, ColumnsHoldOneEntryPerTrialAndOnlyTheParametersThatVary) {
  const json trials = json::array({
      TrialObject("t0", "TERMINATED",
                  {{"lr", 0.1}, {"opt", "adam"}, {"dir", "/tmp/a"}, {"model", {{"depth", 2}}}},
                  {{"score", 0.5}, {"training_iteration", 4}}),
      TrialObject("t1", "RUNNING",
                  {{"lr", 0.01}, {"opt", "sgd"}, {"dir", "/tmp/a"}, {"model", {{"depth", 3}}}},
                  {{"training_iteration", 1}}),
      TrialObject("t2", "ERROR",
                  {{"lr", 0.001}, {"opt", "adam"}, {"dir", "/tmp/a"}, {"model", {{"depth", 2}}}},
                  {{"score", 0.25}, {"training_iteration", 2}}),
  });
  const json c = AnalysisColumns(trials, "score");
  EXPECT_EQ(c["n"], 3);
  EXPECT_EQ(c["trial_id"], json({"t0", "t1", "t2"}));
  EXPECT_EQ(c["value"], json({0.5, nullptr, 0.25}));
  EXPECT_EQ(c["training_iteration"], json({4, 1, 2}));
  const json& st = c["statuses"];
  EXPECT_EQ(st[c["status"][0].get<size_t>()], "TERMINATED");
  EXPECT_EQ(st[c["status"][1].get<size_t>()], "RUNNING");
  EXPECT_EQ(st[c["status"][2].get<size_t>()], "ERROR");
  // "dir" is the same in every trial: not a searched parameter.
  ASSERT_EQ(c["params"].size(), 3u) << c["params"].dump();
  EXPECT_EQ(c["params"][0]["name"], "lr");
  EXPECT_EQ(c["params"][0]["kind"], "numeric");
  EXPECT_EQ(c["params"][0]["values"], json({0.1, 0.01, 0.001}));
  EXPECT_EQ(c["params"][0]["min"], 0.001);
  EXPECT_EQ(c["params"][0]["max"], 0.1);
  EXPECT_EQ(c["params"][1]["name"], "model/depth");
  EXPECT_EQ(c["params"][2]["name"], "opt");
  EXPECT_EQ(c["params"][2]["kind"], "categorical");
  EXPECT_EQ(c["params"][2]["categories"], json({"adam", "sgd"}));
  EXPECT_EQ(c["params"][2]["values"], json({0, 1, 0}));

  // Numbers travel with 6 significant digits.
  const json rounded = AnalysisColumns(
      json::array({TrialObject("a", "RUNNING", {{"lr", 0.123456789}}, {{"score", 2.0 / 3}}),
                   TrialObject("b", "RUNNING", {{"lr", 1}}, {{"score", 1}})}),
      "score");
  EXPECT_EQ(rounded["value"][0].dump(), "0.666667");
  EXPECT_EQ(rounded["params"][0]["values"].dump(), "[0.123457,1]");

  const json imp = ImportanceJson(c);
  EXPECT_EQ(imp["trials"], 2);
  EXPECT_EQ(imp["params"].size(), 3u);
}

TEST(DashboardAnalysis, ImportanceOfColumnsRanksTheDrivingConfigKeyFirst) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  json trials = json::array();
  for (int i = 0; i < 30; ++i) {
    const double x = u(rng), y = u(rng);
    trials.push_back(TrialObject("t" + std::to_string(i), "TERMINATED", {{"x", x}, {"y", y}},
                                 {{"score", 3 * x}, {"training_iteration", 1}}));
  }
  const json imp = ImportanceJson(AnalysisColumns(trials, "score"));
  EXPECT_EQ(imp["params"][0]["name"], "x") << imp.dump();
  EXPECT_GT(imp["params"][0]["importance"].get<double>(), 0.8) << imp.dump();
}

TEST(DashboardAnalysis, ProgressOfTrialsEstimatesTheRemainingTimeFromTheFinishRate) {
  const json row = {{"status", "RUNNING"},
                    {"total", 10},
                    {"counts", {{"TERMINATED", 3}, {"ERROR", 1}, {"RUNNING", 2}}}};
  const json summary = {{"total", 10}, {"elapsed_s", 120.0}, {"finished", false}};
  const json p = Progress(row, summary);
  EXPECT_EQ(p["basis"], "trials");
  EXPECT_DOUBLE_EQ(p["fraction"].get<double>(), 0.4);
  EXPECT_EQ(p["finished"], 4);
  // 6 remaining trials at 4 trials per 120 s.
  EXPECT_DOUBLE_EQ(p["eta_s"].get<double>(), 180.0);
  // Before a trial finished there is no rate.
  EXPECT_TRUE(
      Progress({{"status", "RUNNING"}, {"total", 10}, {"counts", json::object()}}, summary)["eta_s"]
          .is_null());
}

TEST(DashboardAnalysis, ProgressOfATimeBudgetIsTheElapsedShareOfTheBudget) {
  const json row = {{"status", "RUNNING"}, {"total", -1}, {"counts", {{"TERMINATED", 5}}}};
  json summary = {
      {"total", -1}, {"elapsed_s", 30.0}, {"time_budget_s", 120.0}, {"finished", false}};
  json p = Progress(row, summary);
  EXPECT_EQ(p["basis"], "time_budget");
  EXPECT_DOUBLE_EQ(p["fraction"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(p["eta_s"].get<double>(), 90.0);
  // With a known total the budget counts when it ends first.
  summary["total"] = 100;
  p = Progress({{"status", "RUNNING"}, {"total", 100}, {"counts", {{"TERMINATED", 5}}}}, summary);
  EXPECT_EQ(p["basis"], "time_budget");  // 95 trials x 6 s > 90 s
  summary["time_budget_s"] = 10000.0;
  p = Progress({{"status", "RUNNING"}, {"total", 100}, {"counts", {{"TERMINATED", 5}}}}, summary);
  EXPECT_EQ(p["basis"], "trials");
  EXPECT_DOUBLE_EQ(p["eta_s"].get<double>(), 570.0);
}

TEST(DashboardAnalysis, AFinishedExperimentHasNoTimeLeft) {
  const json row = {{"status", "FINISHED"}, {"total", 4}, {"counts", {{"TERMINATED", 4}}}};
  const json p = Progress(row, {{"total", 4}, {"elapsed_s", 12.0}, {"finished", true}});
  EXPECT_DOUBLE_EQ(p["fraction"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(p["eta_s"].get<double>(), 0.0);
  // No summary (could not be read): the lsx row alone.
  const json q =
      Progress({{"status", "RUNNING"}, {"total", 4}, {"counts", {{"TERMINATED", 1}}}}, nullptr);
  EXPECT_DOUBLE_EQ(q["fraction"].get<double>(), 0.25);
  EXPECT_TRUE(q["eta_s"].is_null());
}

TEST(DashboardAnalysis, SearcherPhaseSaysWhatTheSearcherKnows) {
  json tpe = SearcherPhase(
      {{"created", 5},
       {"total", 20},
       {"searcher", {{"searcher", "tpe"}, {"phase", "startup"}, {"observations", 3}}}});
  EXPECT_EQ(tpe["phase"], "startup");
  EXPECT_EQ(tpe["text"], "tpe: startup phase (3 observations)");
  EXPECT_EQ(tpe["observations"], 3);
  json grid =
      SearcherPhase({{"created", 12},
                     {"total", 12},
                     {"searcher", {{"searcher", "random"}, {"suggested", 12}, {"total", 12}}}});
  EXPECT_EQ(grid["phase"], "exhausted");
  EXPECT_EQ(grid["text"], "random: exhausted (12 of 12 suggested)");
  json sampling =
      SearcherPhase({{"created", 7},
                     {"total", 12},
                     {"searcher", {{"searcher", "random"}, {"suggested", 7}, {"total", 12}}}});
  EXPECT_EQ(sampling["phase"], "sampling");
  EXPECT_EQ(sampling["text"], "random: 7 of 12 suggested");
  EXPECT_EQ(SearcherPhase(nullptr)["searcher"], "unknown");
}

TEST(SchedulerDecisionLog, KeepsTheNewestEntriesAndCountsAll) {
  SchedulerDecisionLog log;
  const size_t n = SchedulerDecisionLog::kMaxEntries + 5;
  for (size_t i = 0; i < n; ++i) {
    SchedulerDecision d;
    d.kind = "stop";
    d.trial_id = "t" + std::to_string(i);
    d.scheduler = "asha";
    d.training_iteration = 4;
    d.detail = {{"rung", 4}};
    log.Add(d);
  }
  const json j = log.ToJson();
  EXPECT_EQ(j["total"], n);
  EXPECT_EQ(j["dropped"], 5);
  ASSERT_EQ(j["decisions"].size(), SchedulerDecisionLog::kMaxEntries);
  EXPECT_EQ(j["decisions"][0]["trial_id"], "t5");
  EXPECT_EQ(j["decisions"].back()["detail"]["rung"], 4);
  EXPECT_EQ(j["decisions"].back()["kind"], "stop");
}

}  // namespace
}  // namespace tunebus::dashboard
