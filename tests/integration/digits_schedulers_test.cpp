// On real worker processes: the digits example (scikit-learn SGDClassifier, a Python
// trainable that pickles its model on a "checkpoint" decision) runs with ASHA and with PBT on
// two trial-worker processes, from the experiment files users run (examples/digits/asha.yaml,
// examples/digits/pbt.yaml). Skipped, saying why, where no Python can import scikit-learn.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool HavePythonWithSklearn() {
  const fs::path probe = SourceDir() / "examples/digits/run_trainable.sh";
  const std::string cmd =
      "for py in \"${TUNEBUS_PYTHON:-}\" /usr/bin/python3 python3; do [ -n \"$py\" ] && "
      "\"$py\" -c 'import sklearn' >/dev/null 2>&1 && exit 0; done; exit 1";
  return fs::exists(probe) && std::system(cmd.c_str()) == 0;
}

/// examples/digits/<name> with the trainable command and results_dir made absolute, written into
/// the cluster's folder (among its data, so not shipped: `working_dir: false`).
fs::path ExampleFile(Cluster& cluster, const std::string& name) {
  std::string yaml = ReadFile(SourceDir() / "examples/digits" / name);
  const std::string script = "run_trainable.sh", results = "results_dir: results";
  yaml.replace(yaml.find(script), script.size(),
               (SourceDir() / "examples/digits" / script).string());
  yaml.replace(yaml.find(results), results.size(),
               "results_dir: " + (cluster.dir() / "results").string());
  const fs::path file = cluster.dir() / name;
  WriteFile(file, yaml + "working_dir: false\n");
  return file;
}

/// Every result line of every trial of the experiment (results_dir/<name>/<trial>/result.json).
std::vector<json> AllResults(Cluster& cluster, const std::string& experiment) {
  std::vector<json> out;
  for (const auto& trial_dir : fs::directory_iterator(cluster.dir() / "results" / experiment)) {
    if (!fs::exists(trial_dir.path() / "result.json")) continue;
    for (const std::string& line : ReadLines(trial_dir.path() / "result.json")) {
      if (!line.empty()) out.push_back(json::parse(line));
    }
  }
  return out;
}

class DigitsSchedulersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePythonWithSklearn())
      GTEST_SKIP() << "no Python with scikit-learn ($TUNEBUS_PYTHON, /usr/bin/python3, python3)";
    ClusterOptions o;
    o.cpus_per_worker = 2;
    cluster_ = std::make_unique<Cluster>(o);
    ASSERT_TRUE(cluster_->Start());
  }
  /// Runs the example to its end through `tunectl run --connect`; returns `ls -o json`.
  json Run(const std::string& name) {
    const CommandResult run = cluster_->Ctl({"run", ExampleFile(*cluster_, name).string()}, 180s);
    EXPECT_EQ(run.exit_code, 0) << run.Describe() << cluster_->LogTails();
    return cluster_->Ctl({"-o", "json", "ls"}).Json();
  }
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(DigitsSchedulersTest, AshaStopsWeakModelsAtRungsAndTrainsTheBestToMaxT) {
  const json trials = Run("asha.yaml");
  ASSERT_EQ(trials.size(), 16u) << trials.dump();
  int early = 0, full = 0;
  double best = 0;
  for (const json& t : trials) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    const int64_t it = t["last_result"].value("training_iteration", 0);
    if (it < 27) {
      EXPECT_TRUE(it == 1 || it == 3 || it == 9) << "stopped between rungs: " << t.dump();
      ++early;
    } else {
      ++full;
    }
    best = std::max(best, t["last_result"].value("val_accuracy", 0.0));
  }
  // With reduction factor 3, a third of a rung goes on: most of the 16 stop early.
  EXPECT_GE(early, 8);
  EXPECT_GE(full, 1);
  EXPECT_GE(best, 0.9);
}

TEST_F(DigitsSchedulersTest, PbtWeakModelsExploitTheCheckpointsOfStrongOnes) {
  const json trials = Run("pbt.yaml");
  ASSERT_EQ(trials.size(), 6u) << trials.dump();
  double best = 0;
  for (const json& t : trials) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    EXPECT_EQ(t["last_result"].value("training_iteration", 0), 16) << t.dump();
    best = std::max(best, t["last_result"].value("val_accuracy", 0.0));
  }
  EXPECT_GE(best, 0.9);
  int exploits = 0;
  for (const json& r : AllResults(*cluster_, "digits-pbt")) {
    if (!r.contains("pbt_exploit")) continue;
    ++exploits;
    const json& e = r["pbt_exploit"];
    EXPECT_NE(e.value("donor", ""), r.value("trial_id", "")) << r.dump();
    // Explore touches only hyperparam_mutations' keys. (new_config may equal old_config: a trial
    // that exploits the same donor twice with the same perturbation draws gets it back, as in
    // Ray Tune.)
    for (const char* key : {"loss", "learning_rate", "epochs"}) {
      EXPECT_EQ(e["new_config"][key], e["old_config"][key]) << key << " " << r.dump();
    }
    for (const char* key : {"alpha", "eta0"})
      EXPECT_GT(e["new_config"].value(key, 0.0), 0.0) << r.dump();
    // The first result after the exploit continues the donor's training: the iteration goes on
    // from the donor's checkpoint (a multiple of perturbation_interval 4), not from 1.
    EXPECT_EQ(r.value("iterations_since_restore", 0), 1) << r.dump();
    EXPECT_GT(r.value("training_iteration", 0), 4) << r.dump();
  }
  EXPECT_GE(exploits, 1) << "no trial exploited another";
}

}  // namespace
}  // namespace tunebus::testing
