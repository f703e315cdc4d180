// Tests for experiment-file parsing: every field, its defaults, and an error that names the
// file, the line and the field for each way a file can be wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/external_searcher.hpp"
#include "libs/tune/variant_generator.hpp"
#include "tests/unit/spec_test_util.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

using namespace spec_test;

TEST(ExperimentSpecTest, MinimalFileGetsRayDefaults) {
  // Only the required fields: everything else takes its documented default.
  Result<ExperimentSpec> spec = Parse(kMinimal);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "e");
  EXPECT_EQ(spec->trainable.builtin, "mock");
  EXPECT_TRUE(spec->trainable.command.empty());
  EXPECT_EQ(spec->trainable.working_dir, "/srv/exp");
  EXPECT_EQ(spec->param_space, json::object());
  EXPECT_EQ(spec->num_samples, 1);
  EXPECT_FALSE(spec->seed.has_value());
  EXPECT_EQ(spec->metric, "");
  EXPECT_EQ(spec->mode, "");
  EXPECT_TRUE(spec->stop.thresholds.empty());
  EXPECT_FALSE(spec->stop.time_budget_s.has_value());
  EXPECT_EQ(spec->resources_per_trial, (std::map<std::string, double>{{"cpu", 1.0}}));
  EXPECT_EQ(spec->max_concurrent_trials, 0);
  EXPECT_EQ(spec->results_dir, "/srv/exp/results");
  EXPECT_EQ(spec->max_failures, 0);
  EXPECT_EQ(spec->fail_fast, FailFast::kOff);
  EXPECT_EQ(spec->checkpoint_failure, CheckpointFailureMode::kContinue);
  EXPECT_EQ(spec->scheduler, "fifo");
  EXPECT_EQ(spec->scheduler_config, json::object());
  EXPECT_EQ(spec->source_yaml, kMinimal);
  EXPECT_EQ(spec->source_path, "exp.yaml");
}

TEST(ExperimentSpecTest, AMisspelledSamplingFunctionIsAnErrorThatNamesTheOneMeant) {
  // `lr: {logunifrom: [...]}` is an error, not a constant map passed to the trainable.
  Result<ExperimentSpec> spec = Parse(
      "name: e\ntrainable: {builtin: mock}\nparam_space:\n  lr: {logunifrom: [1.0e-4, 0.1]}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("exp.yaml:4"), std::string::npos)
      << spec.status().message();
  EXPECT_NE(spec.status().message().find(
                "param_space.lr.logunifrom: not a sampling function; did you mean loguniform?"),
            std::string::npos)
      << spec.status().message();
  // A constant map whose key is nothing like a sampler stays a constant.
  EXPECT_TRUE(
      Parse("name: e\ntrainable: {builtin: mock}\nparam_space:\n  opt: {momentum: 0.9}\n").ok());
}

TEST(ExperimentSpecTest, FullFileParsesEveryField) {
  // tests/unit/data/spec/full.yaml sets every field; the file's folder anchors relative paths.
  fs::path file =
      fs::path(TUNEBUS_TEST_SOURCE_DIR) / "tests" / "unit" / "data" / "spec" / "full.yaml";
  Result<ExperimentSpec> spec = ParseExperimentFile(file.string());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const std::string dir = file.parent_path().lexically_normal().string();
  EXPECT_EQ(spec->name, "digits-svm_v1.2");
  EXPECT_EQ(spec->trainable.command,
            (std::vector<std::string>{"python3", "train.py", "--data", "digits"}));
  EXPECT_EQ(spec->trainable.builtin, "");
  EXPECT_EQ(spec->trainable.working_dir, dir);
  EXPECT_EQ(spec->trainable.env, json({{"OMP_NUM_THREADS", "1"}, {"MODE", "fast"}}));
  EXPECT_EQ(spec->param_space,
            json::parse(R"({"lr": {"loguniform": [1e-4, 0.1]}, "penalty": {"choice": ["l1", "l2"]},
                            "kernel": {"grid_search": ["linear", "rbf"]},
                            "model": {"depth": {"randint": [2, 8]}, "dropout": 0.1},
                            "verbose": false})"));
  EXPECT_EQ(spec->num_samples, 4);
  EXPECT_EQ(spec->seed, 42u);
  EXPECT_EQ(spec->metric, "mean_accuracy");
  EXPECT_EQ(spec->mode, "max");
  EXPECT_EQ(spec->stop.thresholds,
            (std::map<std::string, double>{{"training_iteration", 20}, {"mean_accuracy", 0.99}}));
  EXPECT_EQ(spec->stop.time_budget_s, 600.0);
  EXPECT_EQ(
      spec->resources_per_trial,
      (std::map<std::string, double>{{"cpu", 2}, {"gpu", 0.5}, {"memory", 2e9}, {"accel_x", 1}}));
  EXPECT_EQ(spec->max_concurrent_trials, 3);
  EXPECT_EQ(spec->results_dir, dir + "/out/results");
  EXPECT_EQ(spec->max_failures, 2);
  EXPECT_EQ(spec->fail_fast, FailFast::kStopExperiment);
  EXPECT_EQ(spec->scheduler, "fifo");
  EXPECT_EQ(spec->scheduler_config, json::object());
  EXPECT_EQ(spec->source_path, file.string());
  EXPECT_NE(spec->source_yaml.find("name: digits-svm_v1.2"), std::string::npos);
}

TEST(ExperimentSpecTest, ParsedParamSpaceDrivesTheVariantGenerator) {
  // The parsed full file feeds VariantGenerator: 2 grid points x 4 samples, ints stay ints.
  fs::path file =
      fs::path(TUNEBUS_TEST_SOURCE_DIR) / "tests" / "unit" / "data" / "spec" / "full.yaml";
  Result<ExperimentSpec> spec = ParseExperimentFile(file.string());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  VariantGenerator gen(spec->param_space, spec->num_samples, *spec->seed);
  EXPECT_EQ(gen.Total(), 8);
  Variant v = gen.Next();
  EXPECT_TRUE(v.config["model"]["depth"].is_number_integer());
  EXPECT_EQ(v.config["model"]["dropout"], 0.1);
  EXPECT_EQ(v.config["kernel"], "linear");
  EXPECT_EQ(v.tag.find("kernel=linear,lr="), 0u) << v.tag;
}

TEST(ExperimentSpecTest, ScalarsAreTypedByTheYamlCoreSchema) {
  // 1e-4 is a float, l2 a string, quoted "3" a string, true a bool, 0x10 an int, ~ a null.
  Result<ExperimentSpec> spec = Parse(Yaml(R"(
name: e
trainable: {builtin: noop}
param_space: {a: 1e-4, b: l2, c: "3", d: true, e: 0x10, f: ~, g: -7, h: .5, i: 1.0, j: yes}
)"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const json& p = spec->param_space;
  EXPECT_TRUE(p["a"].is_number_float());
  EXPECT_DOUBLE_EQ(p["a"].get<double>(), 1e-4);
  EXPECT_EQ(p["b"], "l2");
  EXPECT_EQ(p["c"], "3");
  EXPECT_EQ(p["d"], true);
  EXPECT_EQ(p["e"], 16);
  EXPECT_TRUE(p["f"].is_null());
  EXPECT_EQ(p["g"], -7);
  EXPECT_TRUE(p["g"].is_number_integer());
  EXPECT_EQ(p["h"], 0.5);
  EXPECT_TRUE(p["i"].is_number_float());
  EXPECT_EQ(p["j"], "yes");
}

TEST(ExperimentSpecTest, CommandStringIsSplitOnSpaces) {
  // `command: "python train.py --fast"` becomes a three-word argv.
  Result<ExperimentSpec> spec = Parse("name: e\ntrainable:\n  command: python  train.py --fast\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->trainable.command, (std::vector<std::string>{"python", "train.py", "--fast"}));
}

TEST(ExperimentSpecTest, ResourcesWithoutCpuDefaultCpuToOne) {
  // As Ray: asking for a GPU alone still asks for one CPU.
  Result<ExperimentSpec> spec = Parse(std::string(kMinimal) + "resources_per_trial: {gpu: 1}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->resources_per_trial, (std::map<std::string, double>{{"cpu", 1.0}, {"gpu", 1.0}}));
}

TEST(ExperimentSpecTest, UnboundedSamplesWithTimeBudgetAreAccepted) {
  // num_samples -1 is fine once the experiment has a way to end.
  Result<ExperimentSpec> spec =
      Parse(std::string(kMinimal) + "num_samples: -1\nstop: {time_budget_s: 60}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->num_samples, -1);
  EXPECT_EQ(spec->stop.time_budget_s, 60.0);
}

TEST(ExperimentSpecTest, AbsoluteResultsDirIsKeptAndNullMapsAreEmpty) {
  // An absolute results_dir is used as written; `param_space:` with no value means {}.
  Result<ExperimentSpec> spec =
      Parse(std::string(kMinimal) + "results_dir: /data/runs/\nparam_space:\nstop:\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->results_dir, "/data/runs");
  EXPECT_EQ(spec->param_space, json::object());
}

TEST(ExperimentSpecTest, MissingFileIsNotFound) {
  // An unreadable path is NotFound and names the path.
  Result<ExperimentSpec> spec = ParseExperimentFile("/nonexistent/dir/exp.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_NE(spec.status().message().find("/nonexistent/dir/exp.yaml"), std::string::npos);
  EXPECT_EQ(ParseExperimentFile(testing::TempDir()).status().code(), StatusCode::kNotFound);
}

TEST(ExperimentSpecTest, FileErrorsNameThePathAsGiven) {
  // Errors from ParseExperimentFile use the path as given as the file name.
  fs::path file = fs::path(testing::TempDir()) / "spec_test_bad.yaml";
  { std::ofstream(file) << "name: e\ntrainable: {builtin: mock}\nnum_samples: 0\n"; }
  Result<ExperimentSpec> spec = ParseExperimentFile(file.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            file.string() + ":3: num_samples: must be >= 1, or -1 for unbounded, got 0");
  fs::remove(file);
}

TEST(ExperimentSpecTest, MissingNameIsRejected) {
  // name is required.
  ExpectInvalid("trainable: {builtin: mock}\n", "exp.yaml:1: name: required field is missing");
}

TEST(ExperimentSpecTest, MissingTrainableIsRejected) {
  // trainable is required.
  ExpectInvalid("name: e\n", "exp.yaml:1: trainable: required field is missing");
}

TEST(ExperimentSpecTest, NameWithSpacesIsRejectedWithLine) {
  // The name becomes a folder, so it is restricted to [A-Za-z0-9_.-]+.
  ExpectInvalid("trainable: {builtin: mock}\nname: my exp\n",
                "exp.yaml:2: name: must match [A-Za-z0-9_.-]+ (it names the results folder), "
                "got 'my exp'");
}

TEST(ExperimentSpecTest, BadModeIsRejectedWithLine) {
  // mode is max or min.
  ExpectInvalid(std::string(kMinimal) + "metric: acc\nmode: maximize\n",
                "exp.yaml:4: mode: expected 'max' or 'min', got 'maximize'");
}

TEST(ExperimentSpecTest, ModeWithoutMetricIsRejected) {
  // mode alone has nothing to optimise.
  ExpectInvalid(std::string(kMinimal) + "mode: min\n", "exp.yaml:3: mode: needs 'metric' as well");
}

TEST(ExperimentSpecTest, MetricWithoutModeIsRejected) {
  // metric alone does not say which way is better.
  ExpectInvalid(std::string(kMinimal) + "\nmetric: loss\n",
                "exp.yaml:4: metric: needs 'mode' (max or min) as well");
}

TEST(ExperimentSpecTest, UnknownTopLevelFieldListsExpectedFields) {
  // A typo in a field name is an error, not silently ignored.
  ExpectInvalid(std::string(kMinimal) + "num_sample: 3\n",
                "exp.yaml:3: unknown field 'num_sample'; expected one of name, trainable, "
                "param_space, num_samples, seed, metric, mode, stop, resources_per_trial, "
                "max_concurrent_trials, weight, preemptible, results_dir, max_failures, "
                "max_worker_losses, fail_fast, "
                "scheduler, search, queue_trials, checkpoint_freq, checkpoint_at_end, "
                "keep_checkpoints_num, checkpoint_score_attr, checkpoint_failure, restore_from, "
                "report_timeout_s, driver, working_dir, retention");
}

TEST(ExperimentSpecTest, CheckpointFailureTakesContinuePauseOrFail) {
  // What a trial does when the store refuses a checkpoint: each of the three words (the default,
  // continue, is checked with the minimal file above).
  for (const auto& [word, mode] : {std::pair{"continue", CheckpointFailureMode::kContinue},
                                   std::pair{"pause", CheckpointFailureMode::kPause},
                                   std::pair{"fail", CheckpointFailureMode::kFail}}) {
    auto spec =
        Parse(std::string(kMinimal) + "checkpoint_freq: 1\ncheckpoint_failure: " + word + "\n");
    ASSERT_TRUE(spec.ok()) << word << ": " << spec.status().ToString();
    EXPECT_EQ(spec->checkpoint_failure, mode) << word;
  }
}

TEST(ExperimentSpecTest, CheckpointFailureTypoNamesTheFileLineFieldAndTheNearMiss) {
  // A misspelt value names the file, the line and the field, the three words, and the one
  // meant; a value that is not a word, and a misspelt field name, are errors as well.
  ExpectInvalid(std::string(kMinimal) + "seed: 1\ncheckpoint_failure: pasue\n",
                "exp.yaml:4: checkpoint_failure: expected continue, pause or fail, got 'pasue'; "
                "did you mean pause?");
  ExpectInvalid(std::string(kMinimal) + "checkpoint_failure: stop\n",
                "exp.yaml:3: checkpoint_failure: expected continue, pause or fail, got 'stop'");
  ExpectInvalid(std::string(kMinimal) + "checkpoint_failure: [fail]\n",
                "exp.yaml:3: checkpoint_failure: expected a string, got a list");
  auto typo = Parse(std::string(kMinimal) + "checkpoint_failures: fail\n");
  ASSERT_FALSE(typo.ok());
  EXPECT_TRUE(typo.status().message().starts_with(
      "exp.yaml:3: unknown field 'checkpoint_failures'; expected one of "))
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("checkpoint_failure,"), std::string::npos);
}

TEST(ExperimentSpecTest, ReportTimeoutIsSecondsAndZeroIsOff) {
  auto spec = Parse(std::string(kMinimal) + "report_timeout_s: 2.5\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_DOUBLE_EQ(spec->report_timeout_s, 2.5);
  auto off = Parse(kMinimal);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->report_timeout_s, 0);
  ExpectInvalid(std::string(kMinimal) + "report_timeout_s: -1\n",
                "exp.yaml:3: report_timeout_s: must be >= 0 seconds (0 = off), got -1");
}

TEST(ExperimentSpecTest, DuplicateFieldIsRejected) {
  // YAML would silently keep one of two equal keys; we refuse.
  ExpectInvalid(std::string(kMinimal) + "name: f\n",
                "exp.yaml:3: name: duplicate field (first set on line 1)");
}

TEST(ExperimentSpecTest, NumSamplesOfWrongTypeIsRejected) {
  // num_samples must be an integer.
  ExpectInvalid(std::string(kMinimal) + "num_samples: abc\n",
                "exp.yaml:3: num_samples: expected an integer, got 'abc'");
  ExpectInvalid(std::string(kMinimal) + "num_samples: 2.5\n",
                "exp.yaml:3: num_samples: expected an integer, got '2.5'");
  ExpectInvalid(std::string(kMinimal) + "num_samples: [1]\n",
                "exp.yaml:3: num_samples: expected an integer, got a list");
}

TEST(ExperimentSpecTest, UnboundedSamplesWithoutStopAreRejected) {
  // num_samples -1 with nothing to end the experiment would run forever.
  ExpectInvalid(std::string(kMinimal) + "num_samples: -1\n",
                "exp.yaml:3: num_samples: -1 (unbounded) needs stop.time_budget_s or a stop "
                "threshold");
  ExpectInvalid(std::string(kMinimal) + "num_samples: -2\n",
                "exp.yaml:3: num_samples: must be >= 1, or -1 for unbounded, got -2");
}

TEST(ExperimentSpecTest, NegativeSeedIsRejected) {
  // The seed is a non-negative integer.
  ExpectInvalid(std::string(kMinimal) + "seed: -3\n", "exp.yaml:3: seed: must be >= 0, got '-3'");
}

TEST(ExperimentSpecTest, LoguniformWithNonPositiveLowIsRejectedWithLine) {
  // The sampler's validation error carries the line of the sampler inside param_space.
  ExpectInvalid(Yaml(R"(
name: e
trainable:
  builtin: mock
param_space:
  penalty: {choice: [l1, l2]}
  lr:
    loguniform: [-1, 0.1]
)"),
                "exp.yaml:7: param_space.lr.loguniform: low must be > 0, got -1");
}

TEST(ExperimentSpecTest, SamplerWithWrongArityIsRejectedWithLine) {
  // Too many arguments for uniform, nested two levels deep in flow style.
  ExpectInvalid(Yaml(R"(
name: e
trainable: {builtin: mock}
param_space:
  model:
    opt: {momentum: {uniform: [0, 1, 2]}}
)"),
                "exp.yaml:5: param_space.model.opt.momentum.uniform: expects 2 arguments "
                "[low, high], got 3");
}

TEST(ExperimentSpecTest, IntegerSamplerWithFloatBoundIsRejectedWithLine) {
  // randint bounds must be integers: 2.0 is a float in YAML.
  ExpectInvalid(std::string(kMinimal) + "param_space:\n  k: {randint: [2.0, 5]}\n",
                "exp.yaml:4: param_space.k.randint: low must be an integer, got 2.0");
}

TEST(ExperimentSpecTest, EmptyChoiceIsRejectedWithLine) {
  // choice needs values.
  ExpectInvalid(std::string(kMinimal) + "param_space:\n  a: 1\n  p:\n    choice: []\n",
                "exp.yaml:6: param_space.p.choice: needs at least one value, got an empty list");
}

TEST(ExperimentSpecTest, ParamSpaceThatIsNotAMapIsRejected) {
  // param_space holds config keys.
  ExpectInvalid(std::string(kMinimal) + "param_space: [1, 2]\n",
                "exp.yaml:3: param_space: expected a map of config keys, got a list");
}

TEST(ExperimentSpecTest, NegativeResourceIsRejected) {
  // Resource amounts are non-negative numbers.
  ExpectInvalid(std::string(kMinimal) + "resources_per_trial:\n  cpu: 1\n  gpu: -1\n",
                "exp.yaml:5: resources_per_trial.gpu: must be >= 0, got -1");
}

TEST(ExperimentSpecTest, NonNumericResourceIsRejected) {
  // "two" is not an amount.
  ExpectInvalid(std::string(kMinimal) + "resources_per_trial: {cpu: two}\n",
                "exp.yaml:3: resources_per_trial.cpu: expected a number, got 'two'");
}

TEST(ExperimentSpecTest, UpperCaseResourceNameGetsAHint) {
  // Ray's placement-group spelling "GPU" would be a custom resource nobody offers.
  ExpectInvalid(std::string(kMinimal) + "resources_per_trial:\n  GPU: 1\n",
                "exp.yaml:4: resources_per_trial.GPU: resource names are lower case; did you "
                "mean 'gpu'?");
}

TEST(ExperimentSpecTest, UnknownBuiltinIsRejected) {
  // Only the compiled-in trainables exist.
  ExpectInvalid("name: e\ntrainable:\n  builtin: magic\n",
                "exp.yaml:3: trainable.builtin: unknown builtin 'magic'; expected one of mock, "
                "noop");
}

TEST(ExperimentSpecTest, CommandAndBuiltinTogetherAreRejected) {
  // A trainable is one or the other.
  ExpectInvalid("name: e\ntrainable:\n  builtin: mock\n  command: [python, t.py]\n",
                "exp.yaml:4: trainable.command: set either 'command' or 'builtin', not both");
}

TEST(ExperimentSpecTest, TrainableWithoutProgramIsRejected) {
  // env alone does not say what to run; a scalar trainable is not a map.
  ExpectInvalid("name: e\ntrainable:\n  env: {A: b}\n",
                "exp.yaml:3: trainable: needs 'command' or 'builtin'");
  ExpectInvalid("name: e\ntrainable: python t.py\n",
                "exp.yaml:2: trainable: expected a map with 'command' or 'builtin', got "
                "'python t.py'");
}

TEST(ExperimentSpecTest, EmptyOrMalformedCommandIsRejected) {
  // An empty argv or a non-string element is an error naming the element.
  ExpectInvalid("name: e\ntrainable:\n  command: []\n",
                "exp.yaml:3: trainable.command: is empty; name a program");
  ExpectInvalid("name: e\ntrainable:\n  command:\n    - python\n    - {a: 1}\n",
                "exp.yaml:5: trainable.command[1]: expected a string, got a map");
}

TEST(ExperimentSpecTest, UnknownTrainableFieldIsRejected) {
  // Typos inside trainable are caught too.
  ExpectInvalid("name: e\ntrainable:\n  builtin: mock\n  cmd: x\n",
                "exp.yaml:4: trainable: unknown field 'cmd'; expected one of command, builtin, "
                "env");
}

TEST(ExperimentSpecTest, ReservedEnvironmentVariableIsRejected) {
  // TUNEBUS_* variables are set by the worker and may not be overridden.
  ExpectInvalid("name: e\ntrainable:\n  builtin: mock\n  env:\n    TUNEBUS_CONFIG: x\n",
                "exp.yaml:5: trainable.env.TUNEBUS_CONFIG: names starting with TUNEBUS_ are "
                "reserved");
}

TEST(ExperimentSpecTest, YamlSyntaxErrorReportsItsLine) {
  // An unclosed flow sequence: yaml-cpp's position is reported.
  Result<ExperimentSpec> spec = Parse(
      "name: e\ntrainable: {builtin: mock}\nparam_space:\n"
      "  a: [1, 2\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(spec.status().message().starts_with("exp.yaml:5: YAML syntax error: "))
      << spec.status().message();
  ExpectInvalid("name: e\n  bad: indentation\n",
                "exp.yaml:2: YAML syntax error: illegal map value");
}

TEST(ExperimentSpecTest, StopThresholdThatIsNotANumberIsRejected) {
  // Stop thresholds compare against numeric results.
  ExpectInvalid(std::string(kMinimal) + "stop:\n  training_iteration: many\n",
                "exp.yaml:4: stop.training_iteration: expected a number, got 'many'");
}

TEST(ExperimentSpecTest, NonPositiveTimeBudgetIsRejected) {
  // A zero time budget would end the experiment before it starts.
  ExpectInvalid(std::string(kMinimal) + "stop: {time_budget_s: 0}\n",
                "exp.yaml:3: stop.time_budget_s: must be > 0 seconds, got 0");
}

TEST(ExperimentSpecTest, SchedulerParametersAreCheckedWithTheirLine) {
  // Each trial scheduler checks its parameters; the error names the parameter and its line.
  const std::string metric = std::string(kMinimal) + "metric: loss\nmode: min\n";
  ExpectInvalid(
      std::string(kMinimal) + "scheduler: asha\n",
      "exp.yaml:3: scheduler.metric: the asha scheduler needs a metric: set `metric` and `mode` in "
      "the experiment (or in the scheduler)");
  ExpectInvalid(metric + "scheduler:\n  type: asha\n  grace_period: 0\n",
                "exp.yaml:7: scheduler.grace_period: must be > 0, got 0");
  ExpectInvalid(metric + "scheduler:\n  type: hyperband\n  reduction_factor: 1\n",
                "exp.yaml:7: scheduler.reduction_factor: must be > 1, got 1");
  ExpectInvalid(metric + "scheduler:\n  type: hyperband_bohb\n  max_t: 0\n",
                "exp.yaml:7: scheduler.max_t: must be >= 1, got 0");
  ExpectInvalid(metric + "scheduler:\n  type: hyperband_bohb\n  eta: 3\n",
                "exp.yaml:7: scheduler.eta: unknown parameter of the hyperband_bohb scheduler "
                "(known: time_attr, max_t, reduction_factor, stop_last_trials)");
  ExpectInvalid(metric + "scheduler:\n  type: median_stopping\n  hard_stop: maybe\n",
                "exp.yaml:7: scheduler.hard_stop: must be true or false, got \"maybe\"");
  ExpectInvalid(metric + "scheduler:\n  type: pbt\n  quantile_fraction: 0.3\n",
                "exp.yaml:6: scheduler.hyperparam_mutations: the pbt scheduler needs the config "
                "keys to explore");
  ExpectInvalid(
      metric + "scheduler:\n  type: pbt\n  hyperparam_mutations:\n    lr: {uniform: [1, 0]}\n",
      "exp.yaml:7: scheduler.hyperparam_mutations.lr.uniform: low must be < high, got low=1, "
      "high=0");
  ExpectInvalid(metric + "scheduler:\n  type: asha\n  grace: 3\n",
                "exp.yaml:7: scheduler.grace: unknown parameter of the asha scheduler (known: "
                "time_attr, max_t, "
                "grace_period, reduction_factor, brackets, stop_last_trials)");
  Result<ExperimentSpec> ok =
      Parse(metric + "scheduler:\n  type: asha\n  max_t: 20\n  grace_period: 2\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->scheduler, "asha");
  EXPECT_EQ(ok->scheduler_config.value("max_t", 0), 20);
}

TEST(ExperimentSpecTest, SearchIsRandomByDefaultOrNamedOrAMap) {
  // `search:` (docs/reference/search.md): absent means random; a name; or a map whose type defaults
  // to random, with the generic keys kept for MakeSearcher.
  Result<ExperimentSpec> none = Parse(kMinimal);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(none->search, "random");
  EXPECT_EQ(none->search_config, json::object());
  Result<ExperimentSpec> named = Parse(std::string(kMinimal) + "search: random\n");
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->search, "random");
  Result<ExperimentSpec> map = Parse(std::string(kMinimal) +
                                     "param_space:\n  lr: {loguniform: [0.0001, 0.1]}\n"
                                     "  opt: {choice: [sgd, adam]}\n"
                                     "num_samples: 8\n"
                                     "metric: acc\nmode: max\n"
                                     "search:\n"
                                     "  max_concurrent: 2\n"
                                     "  points_to_evaluate:\n"
                                     "    - {lr: 0.01}\n"
                                     "    - {lr: 0.001, opt: sgd}\n");
  ASSERT_TRUE(map.ok()) << map.status().message();
  EXPECT_EQ(map->search, "random");
  EXPECT_EQ(map->search_config["max_concurrent"], 2);
  EXPECT_EQ(map->search_config["points_to_evaluate"][1], (json{{"lr", 0.001}, {"opt", "sgd"}}));
  Result<ExperimentSpec> rewards = Parse(std::string(kMinimal) +
                                         "param_space: {x: {uniform: [0, 1]}}\n"
                                         "metric: acc\nmode: max\n"
                                         "search: {type: random, points_to_evaluate: [{x: 0.5}], "
                                         "evaluated_rewards: [0.9]}\n");
  ASSERT_TRUE(rewards.ok()) << rewards.status().message();
  EXPECT_EQ(rewards->search_config["evaluated_rewards"], json::array({0.9}));
}

TEST(ExperimentSpecTest, SearchErrorsNameTheFieldAndItsLine) {
  // Like the scheduler section: the error names the file, the line of the parameter (or of the
  // point's key) and the field.
  const std::string base = std::string(kMinimal) +
                           "param_space:\n"
                           "  lr: {loguniform: [0.0001, 0.1]}\n"
                           "  opt: {choice: [sgd, adam]}\n"
                           "metric: acc\n"
                           "mode: max\n";  // lines 1-7
  ExpectInvalid(base + "search: grid\n",
                "exp.yaml:8: search.type: unknown search type 'grid'; expected one of random, "
                "tpe, bohb, external, nsga2, motpe");
  ExpectInvalid(base + "search:\n  type: tpee\n",
                "exp.yaml:9: search.type: unknown search type 'tpee'; did you mean tpe?; expected "
                "one of random, tpe, bohb, external, nsga2, motpe");
  ExpectInvalid(base + "search:\n  type: random\n  n_startup_trials: 5\n",
                "exp.yaml:10: search.n_startup_trials: unknown parameter of the random searcher "
                "(known: max_concurrent, points_to_evaluate, evaluated_rewards)");
  ExpectInvalid(base + "search:\n  max_concurrent: 0\n",
                "exp.yaml:9: search.max_concurrent: must be an integer >= 1, got 0");
  ExpectInvalid(base + "search:\n  max_concurrent: two\n",
                "exp.yaml:9: search.max_concurrent: must be an integer >= 1, got \"two\"");
  ExpectInvalid(base + "search:\n  points_to_evaluate: {lr: 0.01}\n",
                "exp.yaml:9: search.points_to_evaluate: must be a list of configs (maps), got "
                "{\"lr\":0.01}");
  ExpectInvalid(base +
                    "search:\n"
                    "  points_to_evaluate:\n"
                    "    - {lr: 0.01}\n"
                    "    - lr: 0.001\n"
                    "      optimizer: sgd\n",
                "exp.yaml:12: search.points_to_evaluate[1].optimizer: not in the param space (its "
                "keys: lr, opt)");
  ExpectInvalid(base +
                    "search:\n"
                    "  points_to_evaluate:\n"
                    "    - {lr: 0.5}\n",
                "exp.yaml:10: search.points_to_evaluate[0].lr: 0.5 is outside [0.0001, 0.1] "
                "(loguniform)");
  ExpectInvalid(base +
                    "search:\n"
                    "  points_to_evaluate:\n"
                    "    - {lr: 0.01, opt: sgd}\n"
                    "    - {lr: 0.02, opt: adam}\n"
                    "  evaluated_rewards: [0.9]\n",
                "exp.yaml:12: search.evaluated_rewards: has 1 values for 2 points_to_evaluate (one "
                "reward per point)");
  ExpectInvalid(base +
                    "search:\n"
                    "  points_to_evaluate: [{lr: 0.01}]\n"
                    "  evaluated_rewards: [0.9]\n",
                "exp.yaml:9: search.points_to_evaluate[0]: a point with a reward "
                "(evaluated_rewards) gives every sampled key; it lacks opt");
  ExpectInvalid(base +
                    "search:\n"
                    "  type: tpe\n"
                    "  n_startup_trials: -1\n",
                "exp.yaml:10: search.n_startup_trials: must be >= 0, got -1");
  ExpectInvalid(base + "search:\n  type: external\n",
                "exp.yaml:9: search.endpoint: search: external needs the searcher's endpoint "
                "(e.g. tcp://127.0.0.1:5600), or a command that the scheduler starts");
  ExpectInvalid(base +
                    "search:\n"
                    "  type: external\n"
                    "  endpoint: 127.0.0.1:5600\n",
                "exp.yaml:10: search.endpoint: '127.0.0.1:5600' is not a ZeroMQ endpoint "
                "(tcp://host:port, ipc://path)");
  ExpectInvalid(base +
                    "search:\n"
                    "  type: external\n"
                    "  endpoint: tcp://127.0.0.1:5600\n"
                    "  timeout_s: 0\n",
                "exp.yaml:11: search.timeout_s: must be > 0, got 0");
  ExpectInvalid(base +
                    "search:\n"
                    "  type: external\n"
                    "  endpoint: tcp://127.0.0.1:5600\n"
                    "  sampler: cmaes\n",
                "exp.yaml:11: search.sampler: unknown parameter of external (known: endpoint, "
                "command, server_key, timeout_s, backoff_initial_s, backoff_max_s, options)");
}

TEST(ExperimentSpecTest, UnknownSchedulerIsRejected) {
  // A name that is no scheduler at all lists the known ones; a near miss is named.
  ExpectInvalid(std::string(kMinimal) + "scheduler: random\n",
                "exp.yaml:3: scheduler: unknown scheduler 'random'; expected one of fifo, asha, "
                "hyperband, hyperband_bohb, median_stopping, pbt");
  ExpectInvalid(std::string(kMinimal) + "scheduler: hyperband_bohbb\n",
                "exp.yaml:3: scheduler: unknown scheduler 'hyperband_bohbb'; did you mean "
                "hyperband_bohb?; expected one of fifo, asha, hyperband, hyperband_bohb, "
                "median_stopping, pbt");
}

TEST(ExperimentSpecTest, SchedulerMapNeedsTypeAndFifoTakesNoParameters) {
  // The map form needs `type`; fifo has no parameters to set.
  ExpectInvalid(std::string(kMinimal) + "scheduler: {max_t: 10}\n",
                "exp.yaml:3: scheduler: needs a 'type', one of fifo, asha, hyperband, "
                "hyperband_bohb, median_stopping, pbt");
  ExpectInvalid(std::string(kMinimal) + "scheduler:\n  type: fifo\n  max_t: 10\n",
                "exp.yaml:5: scheduler.max_t: the fifo scheduler takes no parameters");
}

TEST(ExperimentSpecTest, OutOfRangeCountsAreRejected) {
  // max_failures >= -1, max_concurrent_trials >= 0.
  ExpectInvalid(std::string(kMinimal) + "max_failures: -2\n",
                "exp.yaml:3: max_failures: must be >= 0, or -1 to retry forever, got -2");
  ExpectInvalid(std::string(kMinimal) + "max_concurrent_trials: -1\n",
                "exp.yaml:3: max_concurrent_trials: must be >= 0 (0 = no limit), got -1");
}

TEST(ExperimentSpecTest, WeightIsAPositiveNumber) {
  // The fair-share weight (docs/explanation/fair-share.md): any number > 0, 1 when absent.
  ExpectInvalid(std::string(kMinimal) + "weight: 0\n",
                "exp.yaml:3: weight: must be a number > 0 (the experiment's fair-share weight), "
                "got 0");
  ExpectInvalid(std::string(kMinimal) + "weight: -2\n",
                "exp.yaml:3: weight: must be a number > 0 (the experiment's fair-share weight), "
                "got -2");
  const Result<ExperimentSpec> word = Parse(std::string(kMinimal) + "weight: heavy\n");
  ASSERT_FALSE(word.ok());
  EXPECT_EQ(word.status().message().rfind("exp.yaml:3: weight: ", 0), 0u)
      << word.status().message();
  const Result<ExperimentSpec> heavier = Parse(std::string(kMinimal) + "weight: 2.5\n");
  ASSERT_TRUE(heavier.ok()) << heavier.status().ToString();
  EXPECT_EQ(heavier->weight, 2.5);
  EXPECT_EQ(Parse(kMinimal)->weight, 1.0);
}

TEST(ExperimentSpecTest, FailFastMustBeABoolean) {
  // Only true/false; YAML 1.1's "yes" is a string here.
  ExpectInvalid(std::string(kMinimal) + "fail_fast: yes\n",
                "exp.yaml:3: fail_fast: expected true, false or raise");
}

TEST(ExperimentSpecTest, EmptyOrNonMapDocumentIsRejected) {
  // The top level must be a map of fields, and there is one document.
  ExpectInvalid("",
                "exp.yaml:1: the experiment file is empty; expected a map with 'name' and "
                "'trainable'");
  ExpectInvalid("# only a comment\n",
                "exp.yaml:1: the experiment file is empty; expected a "
                "map with 'name' and 'trainable'");
  ExpectInvalid("- name\n", "exp.yaml:1: expected a map of experiment fields, got a list");
  ExpectInvalid(std::string(kMinimal) + "---\nname: f\n",
                "exp.yaml:4: expected one YAML document, found another one");
}

}  // namespace
}  // namespace tunebus
