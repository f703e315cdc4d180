// Tests for the Pareto front of a multi-objective experiment's trials (ParetoTrials) and how
// tunectl shows it (services/tunectl/pareto_view.hpp, the progress table's "pareto" column).
#include "libs/tune/pareto_trials.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "libs/core/trial_view.hpp"
#include "services/scheduler/dashboard/views/pareto.hpp"
#include "services/tunectl/pareto_view.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

const std::vector<Objective> kObjectives = {{"acc", "max"}, {"latency", "min"}};

Trial Finished(int64_t index, json result, TrialStatus status = TrialStatus::kTerminated) {
  Trial t;
  t.index = index;
  t.trial_id = fmt::format("e_{:05}", index);
  t.status = status;
  t.config = {{"x", index}};
  if (!result.is_null()) t.SetLastResult(result);
  return t;
}

std::vector<std::string> Ids(const std::vector<const Trial*>& trials) {
  std::vector<std::string> ids;
  for (const Trial* t : trials) ids.push_back(t->trial_id);
  return ids;
}

TEST(ParetoTrialsTest, FrontHoldsFinishedNonDominatedTrialsBestFirst) {
  // acc is maximised, latency minimised. Trial 1 dominates trial 0; 2 and 3 trade off with 1;
  // 4 is ERROR and 5 RUNNING (their results do not count); 6 lacks latency; 7 has a NaN.
  std::vector<Trial> trials;
  trials.push_back(Finished(0, {{"acc", 0.80}, {"latency", 12.0}}));
  trials.push_back(Finished(1, {{"acc", 0.85}, {"latency", 10.0}}));
  trials.push_back(Finished(2, {{"acc", 0.95}, {"latency", 30.0}}));
  trials.push_back(Finished(3, {{"acc", 0.70}, {"latency", 2.0}}));
  trials.push_back(Finished(4, {{"acc", 0.99}, {"latency", 1.0}}, TrialStatus::kError));
  trials.push_back(Finished(5, {{"acc", 0.99}, {"latency", 1.0}}, TrialStatus::kRunning));
  trials.push_back(Finished(6, {{"acc", 0.99}}));
  trials.push_back(Finished(7, {{"acc", std::nan("")}, {"latency", 0.5}}));
  trials.push_back(Finished(8, nullptr));
  EXPECT_EQ(Ids(ParetoTrials(trials, kObjectives)),
            (std::vector<std::string>{"e_00002", "e_00001", "e_00003"}));
  EXPECT_TRUE(ParetoTrials(trials, {{"acc", "max"}}).empty());  // one objective: no front
}

TEST(ParetoTrialsTest, FrontMatchesABruteForceDefinitionOnRandomTrials) {
  // 200 random trials with ties on a coarse grid, three objectives of mixed modes: a trial is on
  // the front iff no other is at least as good on every objective and better on one.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> grid(0, 9);
  const std::vector<Objective> three = {{"a", "max"}, {"b", "min"}, {"c", "min"}};
  std::vector<Trial> trials;
  for (int i = 0; i < 200; ++i) {
    trials.push_back(Finished(i, {{"a", grid(rng)}, {"b", grid(rng)}, {"c", grid(rng)}}));
  }
  std::vector<std::string> expected;
  for (const Trial& t : trials) {
    const json r = t.LastResult();
    bool dominated = false;
    for (const Trial& u : trials) {
      const json s = u.LastResult();
      const bool no_worse = s["a"] >= r["a"] && s["b"] <= r["b"] && s["c"] <= r["c"];
      const bool better = s["a"] > r["a"] || s["b"] < r["b"] || s["c"] < r["c"];
      dominated = dominated || (no_worse && better);
    }
    if (!dominated) expected.push_back(t.trial_id);
  }
  std::vector<const Trial*> front = ParetoTrials(trials, three);
  std::vector<std::string> got = Ids(front);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()),
            std::set<std::string>(expected.begin(), expected.end()));
  for (size_t i = 1; i < front.size(); ++i) {  // best first by a (max), ties by b (min)
    const json prev = front[i - 1]->LastResult(), here = front[i]->LastResult();
    EXPECT_TRUE(prev["a"] > here["a"] || (prev["a"] == here["a"] && prev["b"] <= here["b"]));
  }
}

TEST(ParetoViewTest, TunectlShowsTheFrontAndMarksItsTrials) {
  // get_experiment's body of a multi-objective experiment, as trial_json.cpp writes it.
  std::vector<Trial> trials;
  trials.push_back(Finished(0, {{"acc", 0.8}, {"latency", 12.0}}));
  trials.push_back(Finished(1, {{"acc", 0.9}, {"latency", 3.5}}));
  json e = {{"name", "mo"},
            {"metric", ""},
            {"objectives",
             {{{"metric", "acc"}, {"mode", "max"}}, {{"metric", "latency"}, {"mode", "min"}}}},
            {"pareto_front", {TrialToJson(trials[1], "/r")}}};
  EXPECT_EQ(ObjectiveMetrics(e), (std::vector<std::string>{"acc", "latency"}));
  EXPECT_EQ(DescribeObjectivesOf(e), "acc max, latency min");
  EXPECT_EQ(ParetoTrialIds(e), (std::set<std::string>{"e_00001"}));
  const std::vector<std::string> front = RenderParetoFront(e);
  ASSERT_EQ(front.size(), 3u);
  EXPECT_EQ(front[0], "Pareto front (acc max, latency min): 1 trial");
  EXPECT_EQ(front[1], "  trial    acc  latency  config");
  EXPECT_EQ(front[2], "  e_00001  0.9  3.5      {\"x\":1}");

  json rows = json::array({TrialToJson(trials[0], "/r"), TrialToJson(trials[1], "/r")});
  const std::vector<std::string> table = RenderProgressTable(e, rows, 10);
  EXPECT_NE(table[0].find("| Pareto front 1 trial"), std::string::npos) << table[0];
  EXPECT_NE(table[1].find("| acc | latency |"), std::string::npos) << table[1];
  EXPECT_NE(table[1].find("| pareto"), std::string::npos) << table[1];
  auto last_cell = [](const std::string& line) {
    const std::string cell = line.substr(line.rfind('|') + 1);
    return cell.substr(0, cell.find_last_not_of(' ') + 1);
  };
  EXPECT_EQ(last_cell(table[2]), "") << table[2];    // e_00000: not on the front
  EXPECT_EQ(last_cell(table[3]), " *") << table[3];  // e_00001: on it
}

TEST(ParetoViewTest, DashboardPointsHoldEveryTrialWithTheObjectivesAndMarkTheFront) {
  // The dashboard's panel data: trials with both objectives (any status), the front's marked
  // in the summary's order; a trial without one objective, or with a non-number, is no point.
  json summary = {
      {"objectives",
       {{{"metric", "acc"}, {"mode", "max"}}, {{"metric", "latency"}, {"mode", "min"}}}},
      {"pareto_front", {{{"trial_id", "t2"}}, {{"trial_id", "t1"}}}}};
  json trials = {
      {{"trial_id", "t0"}, {"status", "RUNNING"}, {"last_result", {{"acc", 0.5}, {"latency", 9}}}},
      {{"trial_id", "t1"},
       {"status", "TERMINATED"},
       {"last_result", {{"acc", 0.7}, {"latency", 2}}}},
      {{"trial_id", "t2"},
       {"status", "TERMINATED"},
       {"last_result", {{"acc", 0.9}, {"latency", 5}}}},
      {{"trial_id", "t3"}, {"status", "TERMINATED"}, {"last_result", {{"acc", 0.99}}}},
      {{"trial_id", "t4"},
       {"status", "TERMINATED"},
       {"last_result", {{"acc", "high"}, {"latency", 1}}}},
      {{"trial_id", "t5"}, {"status", "PENDING"}}};
  const json view = dashboard::ParetoView(summary, trials);
  EXPECT_EQ(view["front"], json({"t2", "t1"}));
  ASSERT_EQ(view["points"].size(), 3u) << view.dump();
  EXPECT_EQ(
      view["points"][0],
      json({{"trial_id", "t0"}, {"status", "RUNNING"}, {"values", {0.5, 9}}, {"front", false}}));
  EXPECT_TRUE(view["points"][1]["front"].get<bool>());
  EXPECT_TRUE(view["points"][2]["front"].get<bool>());
  // One objective (no "objectives"): nothing to draw. Any shape is taken.
  EXPECT_TRUE(dashboard::ParetoView({{"metric", "acc"}}, trials)["points"].empty());
  EXPECT_TRUE(dashboard::ParetoView(json::array(), json("x"))["objectives"].empty());
}

}  // namespace
}  // namespace tunebus
