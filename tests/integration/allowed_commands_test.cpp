// Workers run only what they are allowed to (docs/explanation/security.md "Workers: allowed
// commands and trainable environment"): a trial-worker started with --allow-command fails a trial
// whose program matches none of its patterns, naming the list, and runs an allowed one; a trainable
// never sees the worker's keys or other TUNEBUS_* configuration in its environment.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A shell trainable: one report, then it waits for the decision.
constexpr char kShellTrainable[] =
    "#!/bin/sh\n"
    "printf '{\"score\": 1}\\n' >&3\n"
    "read decision <&4\n";

void WriteExecutable(const fs::path& path, const std::string& text) {
  WriteFile(path, text);
  ::chmod(path.c_str(), 0755);
}

// Writes <folder>/exp-<name>.yaml: one trial of `command` (its folder is shipped), results in
// `results`. Returns its path.
fs::path WriteExperiment(const fs::path& folder, const std::string& name,
                         const std::string& command, const fs::path& results,
                         const std::string& extra = "") {
  const fs::path file = folder / ("exp-" + name + ".yaml");
  WriteFile(file, "name: " + name + "\ntrainable: {command: " + command +
                      "}\nparam_space: {x: 3}\nmetric: score\nmode: max\nresults_dir: " +
                      results.string() + "\n" + extra);
  return file;
}

TEST(AllowedCommandsTest, AWorkerFailsATrialWhoseCommandIsNotAllowedAndRunsAnAllowedOne) {
  // Worker w1 allows */allowed/* and /opt/ml/*. An experiment running ./other/train.sh (shipped
  // into w1's cache) fails both its attempts (max_failures 1) without running the script: ERROR,
  // with the refusal naming the program and the whole pattern list, logged by the worker at
  // warn. Then ./allowed/train.sh on the same worker runs and ends TERMINATED.
  ClusterOptions options;
  options.workers = 1;
  options.worker_args["w1"] = {"--allow-command", "*/allowed/*", "--allow-command", "/opt/ml/*"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  const fs::path project = cluster.dir() / "project";
  WriteExecutable(project / "allowed" / "train.sh", kShellTrainable);
  WriteExecutable(project / "other" / "train.sh",
                  std::string(kShellTrainable) + "touch \"$TUNEBUS_TRIAL_DIR/ran\"\n");
  const fs::path results = cluster.dir() / "results";

  auto refused = cluster.Ctl({"run", WriteExperiment(project, "refused", "[./other/train.sh]",
                                                     results, "max_failures: 1\n")
                                         .string()},
                             60s);
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  const json trials = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_EQ(trials.size(), 1u) << trials.dump(1);
  EXPECT_EQ(trials[0].value("status", ""), "ERROR") << trials.dump(1);
  const std::string error = trials[0].value("error", "");
  EXPECT_NE(error.find("/other/train.sh is not allowed on this worker (--allow-command: "
                       "*/allowed/*, /opt/ml/*) (worker w1 on host "),
            std::string::npos)
      << error;
  EXPECT_EQ(trials[0].value("num_failures", 0), 2) << trials.dump(1);
  EXPECT_NE(error.find(fs::canonical(cluster.dir() / "cache" / "w1").string()), std::string::npos)
      << "the refusal names the resolved program: " << error;
  EXPECT_FALSE(fs::exists(fs::path(trials[0].value("dir", "")) / "ran"));
  const std::string worker_log = cluster.process("w1")->Output();
  EXPECT_NE(worker_log.find("runs only commands matching --allow-command: */allowed/*, /opt/ml/*"),
            std::string::npos)
      << worker_log;
  EXPECT_NE(worker_log.find("[warning] Trial " + trials[0].value("trial_id", "") +
                            " attempt 2 could not start: command "),
            std::string::npos)
      << worker_log;

  auto allowed = cluster.Ctl(
      {"run", WriteExperiment(project, "allowed", "[./allowed/train.sh]", results).string()}, 60s);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.Describe();
  const json ok = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_EQ(ok.size(), 1u) << ok.dump(1);
  EXPECT_EQ(ok[0].value("status", ""), "TERMINATED") << ok.dump(1);
  EXPECT_TRUE(cluster.Dead().empty());
}

TEST(AllowedCommandsTest, ATrainablesEnvironmentHoldsNoneOfTheWorkersKeysOrSecrets) {
  // The worker runs with TUNEBUS_KEYS_DIR, TUNEBUS_KEY_NAME, TUNEBUS_SECRET_TEST and its
  // --allow-command list in TUNEBUS_ALLOW_COMMANDS (comma-separated). A Python trainable using
  // tunebus's helper dumps its environment: none of those names and no value holding the keys
  // folder is there, the trial's own variables are, and the helper's report ends it TERMINATED.
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 is not on PATH";
  }
  // The suite runs with CURVE keys; the worker's keys folder must show up nowhere in the
  // trainable.
  TempDir keys;
  auto keygen = RunTunectl({"keygen", "--suite", "--dir", keys.path().string()});
  ASSERT_EQ(keygen.exit_code, 0) << keygen.Describe();
  ClusterOptions options;
  options.workers = 1;
  options.keys_dir = keys.path().string();
  options.worker_env["w1"] = {{"TUNEBUS_KEYS_DIR", keys.path().string()},
                              {"TUNEBUS_KEY_NAME", "worker"},
                              {"TUNEBUS_SECRET_TEST", "x"},
                              {"TUNEBUS_ALLOW_COMMANDS", "/opt/ml/*,*python*"}};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  const fs::path project = cluster.dir() / "project";
  CopyTunebusPackage(project);
  WriteFile(project / "dump_env.py",
            "import json, os\n"
            "import tunebus\n"
            "with open(os.path.join(os.environ['TUNEBUS_TRIAL_DIR'], 'env.json'), 'w') as f:\n"
            "    json.dump(dict(os.environ), f)\n"
            "tunebus.report(score=tunebus.config()['x'])\n");
  auto run = cluster.Ctl(
      {"run", WriteExperiment(project, "env", "[python3, dump_env.py]", cluster.dir() / "results")
                  .string()},
      60s);
  EXPECT_EQ(run.exit_code, 0) << run.Describe();
  const json trials = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_EQ(trials.size(), 1u) << trials.dump(1);
  EXPECT_EQ(trials[0].value("status", ""), "TERMINATED") << trials.dump(1);
  EXPECT_EQ(trials[0]["last_result"].value("score", 0), 3) << trials.dump(1);
  const fs::path trial_dir = trials[0].value("dir", "");
  const json env = json::parse(ReadFile(trial_dir / "env.json"), nullptr, false);
  ASSERT_TRUE(env.is_object()) << ReadFile(trial_dir / "env.json");
  for (const char* name :
       {"TUNEBUS_KEYS_DIR", "TUNEBUS_KEY_NAME", "TUNEBUS_SECRET_TEST", "TUNEBUS_ALLOW_COMMANDS",
        "TUNEBUS_SCHEDULER_WORKER_ENDPOINT", "TUNEBUS_RECONNECT_MS"}) {
    EXPECT_FALSE(env.contains(name)) << name << " in " << env.dump(1);
  }
  for (const auto& [name, value] : env.items()) {
    EXPECT_EQ(value.get<std::string>().find(keys.path().string()), std::string::npos)
        << name << "=" << value;
  }
  EXPECT_EQ(env.value("TUNEBUS_TRIAL_ID", ""), trials[0].value("trial_id", "")) << env.dump(1);
  EXPECT_EQ(env.value("TUNEBUS_TRIAL_DIR", ""), trial_dir.string()) << env.dump(1);
  EXPECT_EQ(json::parse(env.value("TUNEBUS_CONFIG", "null"), nullptr, false), json({{"x", 3}}))
      << env.dump(1);
  for (const char* name :
       {"TUNEBUS_EXPERIMENT", "TUNEBUS_ATTEMPT", "TUNEBUS_CHECKPOINT_DIR",
        "TUNEBUS_START_ITERATION", "TUNEBUS_REPORT_FD", "TUNEBUS_DECISION_FD", "PATH"}) {
    EXPECT_TRUE(env.contains(name)) << name << " missing from " << env.dump(1);
  }
  const std::string worker_log = cluster.process("w1")->Output();
  EXPECT_NE(worker_log.find("runs only commands matching --allow-command: /opt/ml/*, *python*"),
            std::string::npos)
      << worker_log;
}

}  // namespace
}  // namespace tunebus::testing
