// Tests for an experiment of several objectives as the experiment file gives it (`metric:` and
// `mode:` lists, docs/reference/search.md "Many objectives"): what the spec holds, the errors that
// name the file, line and field, and the rules for searchers and trial schedulers written for one
// metric (libs/tune/objective_rules.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "libs/tune/objective_rules.hpp"
#include "tests/unit/spec_test_util.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;
using spec_test::ExpectInvalid;
using spec_test::kMinimal;
using spec_test::Parse;

// Lines 1-4: name, trainable, metric, mode.
const std::string kTwo = std::string(kMinimal) +
                         "metric: [val_accuracy, latency_ms]\n"
                         "mode: [max, min]\n";

TEST(MultiObjectiveSpecTest, ListsGiveTheObjectivesAndLeaveTheSingleMetricEmpty) {
  // Two lists of equal length: the objectives in the file's order; metric and mode (the single
  // objective every one-metric reader uses) are empty.
  Result<ExperimentSpec> spec = Parse(kTwo);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->objectives.size(), 2u);
  EXPECT_EQ(spec->objectives[0].metric, "val_accuracy");
  EXPECT_EQ(spec->objectives[0].mode, "max");
  EXPECT_EQ(spec->objectives[1].metric, "latency_ms");
  EXPECT_EQ(spec->objectives[1].mode, "min");
  EXPECT_EQ(spec->metric, "");
  EXPECT_EQ(spec->mode, "");

  // Block lists and three objectives read the same way.
  Result<ExperimentSpec> three = Parse(std::string(kMinimal) +
                                       "metric:\n  - a\n  - b\n  - c\nmode:\n  - min\n  - min\n"
                                       "  - max\n");
  ASSERT_TRUE(three.ok()) << three.status().message();
  ASSERT_EQ(three->objectives.size(), 3u);
  EXPECT_EQ(three->objectives[2].metric, "c");
  EXPECT_EQ(three->objectives[2].mode, "max");

  // A string stays one objective, as before.
  Result<ExperimentSpec> one = Parse(std::string(kMinimal) + "metric: acc\nmode: max\n");
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->objectives.empty());
  EXPECT_EQ(one->metric, "acc");
  EXPECT_EQ(one->mode, "max");
}

TEST(MultiObjectiveSpecTest, MismatchedOrMalformedListsNameTheirLine) {
  ExpectInvalid(std::string(kMinimal) + "metric: [val_accuracy, latency_ms]\nmode: max\n",
                "exp.yaml:4: mode: has 1 entry for 2 metrics");
  ExpectInvalid(std::string(kMinimal) + "metric: acc\nmode: [max, min]\n",
                "exp.yaml:4: mode: has 2 entries for 1 metric");
  ExpectInvalid(std::string(kMinimal) + "metric: [a, b, c]\nmode: [max, min]\n",
                "exp.yaml:4: mode: has 2 entries for 3 metrics");
  ExpectInvalid(std::string(kMinimal) + "metric: [a, b]\nmode: [max, maximize]\n",
                "exp.yaml:4: mode[1]: expected 'max' or 'min', got 'maximize'");
  ExpectInvalid(std::string(kMinimal) + "metric:\n  - a\n  - a\nmode: [max, min]\n",
                "exp.yaml:5: metric[1]: 'a' is named twice (each objective once)");
  ExpectInvalid(std::string(kMinimal) + "metric: [a]\nmode: [max]\n",
                "exp.yaml:3: metric: a list names 2 or more objectives, got 1; for one write "
                "`metric: val_accuracy`");
  ExpectInvalid(std::string(kMinimal) + "metric: [a, {b: 1}]\nmode: [max, min]\n",
                "exp.yaml:3: metric[1]: expected a string, got a map");
  ExpectInvalid(std::string(kMinimal) + "metric: [a, b]\n",
                "exp.yaml:3: metric: needs 'mode' as well: a list of max or min, one per metric");
  ExpectInvalid(std::string(kMinimal) + "mode: [max, min]\n",
                "exp.yaml:3: mode: needs 'metric' as well");
}

TEST(MultiObjectiveSpecTest, OneMetricSearchersAreRefusedRandomIsNot) {
  // tpe and bohb optimise one metric: refused at search.type's line, naming nsga2 and motpe.
  const std::string space = "param_space:\n  x: {uniform: [0, 1]}\n";  // lines 5-6
  ExpectInvalid(kTwo + space + "search: tpe\n",
                "exp.yaml:7: search.type: tpe optimises one metric, and the experiment has 2 "
                "objectives (val_accuracy max, latency_ms min): use search: nsga2 or motpe (or "
                "random)");
  ExpectInvalid(kTwo + space + "search:\n  type: bohb\n",
                "exp.yaml:8: search.type: bohb optimises one metric, and the experiment has 2 "
                "objectives (val_accuracy max, latency_ms min): use search: nsga2 or motpe (or "
                "random)");
  // evaluated_rewards hold one value per point: one metric's.
  ExpectInvalid(
      kTwo + space + "search:\n  points_to_evaluate: [{x: 0.5}]\n  evaluated_rewards: [0.9]\n",
      "exp.yaml:9: search.evaluated_rewards: one reward per point is one metric's, "
      "and the experiment has 2 objectives (val_accuracy max, latency_ms min): leave "
      "evaluated_rewards out (the points then run as trials)");
  Result<ExperimentSpec> random =
      Parse(kTwo + space + "search:\n  type: random\n  points_to_evaluate: [{x: 0.5}]\n");
  EXPECT_TRUE(random.ok()) << random.status().message();
}

TEST(MultiObjectiveSpecTest, ATrialSchedulerComparesTheObjectiveItNames) {
  // Ray Tune's rule: the scheduler's own metric, which must be one of the objectives; without
  // it the choice is ambiguous and refused, saying how to name one.
  ExpectInvalid(kTwo + "scheduler: asha\n",
                "exp.yaml:5: scheduler.metric: the experiment has 2 objectives (val_accuracy "
                "max, latency_ms min); asha compares one: set scheduler.metric to one of them");
  for (const char* name : {"hyperband", "hyperband_bohb", "median_stopping"}) {
    ExpectInvalid(kTwo + "scheduler:\n  type: " + name + "\n",
                  fmt::format("exp.yaml:6: scheduler.metric: the experiment has 2 objectives "
                              "(val_accuracy max, latency_ms min); {} compares one: set "
                              "scheduler.metric to one of them",
                              name));
  }
  ExpectInvalid(kTwo + "scheduler:\n  type: asha\n  metric: loss\n",
                "exp.yaml:7: scheduler.metric: 'loss' is not one of the experiment's objectives "
                "(val_accuracy max, latency_ms min); asha compares one of them");
  ExpectInvalid(kTwo + "scheduler:\n  type: asha\n  metric: latency_ms\n  mode: max\n",
                "exp.yaml:8: scheduler.mode: 'max' contradicts the experiment's mode for "
                "latency_ms (min); leave scheduler.mode out");
  // Named: the scheduler gets that objective's mode.
  Result<ExperimentSpec> asha =
      Parse(kTwo + "scheduler:\n  type: asha\n  metric: latency_ms\n  grace_period: 2\n");
  ASSERT_TRUE(asha.ok()) << asha.status().message();
  EXPECT_EQ(asha->scheduler_config.value("metric", ""), "latency_ms");
  EXPECT_EQ(asha->scheduler_config.value("mode", ""), "min");
  Result<ExperimentSpec> pbt = Parse(kTwo +
                                     "scheduler:\n  type: pbt\n  metric: val_accuracy\n"
                                     "  hyperparam_mutations:\n    lr: {uniform: [0, 1]}\n");
  ASSERT_TRUE(pbt.ok()) << pbt.status().message();
  EXPECT_EQ(pbt->scheduler_config.value("mode", ""), "max");
  // fifo compares nothing.
  EXPECT_TRUE(Parse(kTwo + "scheduler: fifo\n").ok());
}

TEST(MultiObjectiveSpecTest, RulesLeaveOneObjectiveAlone) {
  // With fewer than two objectives the rules change nothing.
  EXPECT_TRUE(CheckSearchObjectives("tpe", true, {}).ok());
  EXPECT_TRUE(CheckSearchObjectives("tpe", false, {Objective{"a", "max"}}).ok());
  const json config = {{"grace_period", 2}};
  auto same = SchedulerConfigForObjectives("asha", config, {Objective{"a", "max"}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, config);
  EXPECT_TRUE(SearchesManyObjectives("nsga2"));
  EXPECT_TRUE(SearchesManyObjectives("motpe"));
  EXPECT_FALSE(SearchesManyObjectives("external"));
}

}  // namespace
}  // namespace tunebus
