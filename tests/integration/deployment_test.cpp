// A deployment across hosts, tested as processes on loopback: the scheduler's
// --results-dir (TUNEBUS_RESULTS_DIR=/results in the compose deployment) is where experiments
// without an absolute results_dir write; a worker that cannot see the trainable's files fails the
// trial saying so and how to fix it; the healthcheck the compose file runs (`<binary>
// --healthcheck`) passes against a live service and fails against a dead or frozen one.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// `binary --healthcheck args...`: its exit code and output.
std::pair<int, std::string> Healthcheck(const fs::path& log_dir, const std::string& binary,
                                        std::vector<std::string> args) {
  Process::Options o;
  o.name = binary + "-healthcheck";
  o.binary = BinDir() / binary;
  o.args = {"--healthcheck"};
  o.args.insert(o.args.end(), args.begin(), args.end());
  o.log_dir = log_dir;
  auto p = Process::Spawn(o);
  const auto code = p->Wait(10s);
  return {code.value_or(-1), p->Output()};
}

// The only trial of the current experiment, once it is ERROR (an empty object after 30 s).
json ErroredTrial(Cluster& cluster) {
  json trial = json::object();
  WaitFor(
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls"}).Json();
        if (!ls.is_array() || ls.size() != 1 || ls[0].value("status", "") != "ERROR") return false;
        trial = ls[0];
        return true;
      },
      30s, 200ms);
  return trial;
}

TEST(DeploymentTest, TheHealthcheckPassesAgainstALiveServiceAndFailsAgainstADeadOrFrozenOne) {
  // Every service's healthcheck asks /healthz on its metrics port, from the same flags or
  // TUNEBUS_* variables as the service (the compose file sets TUNEBUS_METRICS_HOST=0.0.0.0 and
  // TUNEBUS_METRICS_PORT=9100). /healthz is ok only while the service's loop publishes.
  ClusterOptions o;
  o.workers = 1;
  o.metrics = true;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int rm = cluster.metrics_port("resource-manager"),
            sched = cluster.metrics_port("scheduler");
  const fs::path logs = cluster.dir() / "healthchecks";
  for (const std::string name : {"checkpoint-store", "resource-manager", "scheduler", "w1"}) {
    const int port = cluster.metrics_port(name);
    ASSERT_GT(port, 0) << name;
    const std::string binary = name == "w1" ? "trial-worker" : name;
    auto [code, out] = Healthcheck(
        logs, binary, {"--metrics-host", "0.0.0.0", "--metrics-port", std::to_string(port)});
    EXPECT_EQ(code, 0) << binary << ": " << out;
    EXPECT_EQ(out, "ok\n") << binary;
  }
  // A frozen service (SIGSTOP: its loop and its HTTP thread stand still) does not answer in time.
  cluster.process("resource-manager")->Signal(SIGSTOP);
  auto [frozen, frozen_out] =
      Healthcheck(logs, "resource-manager", {"--metrics-port", std::to_string(rm)});
  cluster.process("resource-manager")->Signal(SIGCONT);
  EXPECT_EQ(frozen, 1) << frozen_out;
  EXPECT_NE(frozen_out.find("unhealthy: no answer from http://127.0.0.1:" + std::to_string(rm) +
                            "/healthz"),
            std::string::npos)
      << frozen_out;
  // A dead one.
  cluster.process("scheduler")->Kill();
  auto [dead, dead_out] = Healthcheck(logs, "scheduler", {"--metrics-port", std::to_string(sched)});
  EXPECT_EQ(dead, 1) << dead_out;
  EXPECT_NE(dead_out.find("unhealthy: no answer from http://127.0.0.1:" + std::to_string(sched) +
                          "/healthz"),
            std::string::npos)
      << dead_out;
  // Without a metrics port there is nothing to ask: unhealthy, not a hang.
  auto [none, none_out] = Healthcheck(logs, "trial-worker", {});
  EXPECT_EQ(none, 1) << none_out;
  EXPECT_NE(none_out.find("unhealthy: no metrics port"), std::string::npos) << none_out;
  // Nor with `*` (any port: the one a service bound is in its ready file).
  auto [any, any_out] = Healthcheck(logs, "trial-worker", {"--metrics-port", "*"});
  EXPECT_EQ(any, 1) << any_out;
  EXPECT_NE(any_out.find("unhealthy: --metrics-port * names no port to ask"), std::string::npos)
      << any_out;
}

TEST(DeploymentTest, TheSchedulersResultsDirHoldsExperimentsWithoutAnAbsoluteOne) {
  // The scheduler runs with --results-dir R (compose: TUNEBUS_RESULTS_DIR=/results). An experiment
  // file with a relative results_dir (a folder beside the file on the submitting host) or none
  // writes to R/<name> on the scheduler's host; an absolute results_dir is kept.
  ClusterOptions o;
  o.workers = 1;
  TempDir results;
  o.scheduler_args = {"--results-dir", results.path().string()};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "client" / "exp.yaml";
  fs::create_directories(file.parent_path());
  WriteFile(file, "name: relative\ntrainable: {builtin: noop}\nresults_dir: results\n");
  auto run = cluster.Ctl({"run", file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  EXPECT_NE(run.out.find("Results directory: " + (results.path() / "relative").string()),
            std::string::npos)
      << run.Describe();
  EXPECT_TRUE(fs::exists(results.path() / "relative" / "experiment_state.json"));
  EXPECT_FALSE(fs::exists(file.parent_path() / "results"))
      << "written beside the file on the client's host";

  const fs::path absolute = cluster.dir() / "absolute";
  WriteFile(file,
            "name: kept\ntrainable: {builtin: noop}\nresults_dir: " + absolute.string() + "\n");
  run = cluster.Ctl({"run", file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  EXPECT_TRUE(fs::exists(absolute / "kept" / "experiment_state.json"));
}

TEST(DeploymentTest, AWorkerThatCannotSeeTheTrainablesFilesFailsTheTrialSayingHowToFixIt) {
  // A command trainable runs in the experiment file's folder, at the path it has on the host that
  // submitted it. A worker on another host without that folder (or without the script in it)
  // fails the trial at its start with a message naming what is missing, the worker, and the fix.
  Cluster cluster(ClusterOptions{.workers = 1});
  ASSERT_TRUE(cluster.Start());
  const fs::path results = cluster.dir() / "results";

  // 1. The folder exists on the client's host only: a submission from there, sent as tunectl does.
  proto::SubmitExperiment submit;
  submit.id = 1;
  submit.spec_yaml =
      "name: elsewhere\ntrainable: {command: [sh, run_trainable.sh]}\nresults_dir: " +
      results.string() + "\n";
  submit.base_dir = "/home/someone/tunebus-client-only/examples/digits";
  submit.source_name = "experiment.yaml";
  DealerClient control(cluster.control());
  control.Send(proto::Encode(submit));
  ASSERT_TRUE(control.Receive(10s).has_value());
  json t = ErroredTrial(cluster);
  std::string error = t.value("error", "");
  EXPECT_NE(error.find("cannot start command [sh run_trainable.sh]: the trainable's folder " +
                       submit.base_dir + " does not exist on this worker"),
            std::string::npos)
      << t.dump();
  EXPECT_NE(error.find("mount that folder at the same path on every worker"), std::string::npos)
      << error;
  EXPECT_NE(error.find("(worker w1 on host"), std::string::npos) << error;
  EXPECT_EQ(t.value("attempt", 0), 1) << "a start failure is not retried: " << t.dump();

  // 2. The folder is there, the script is not (an image without it; not shipped).
  const fs::path file = cluster.dir() / "client" / "exp.yaml";
  fs::create_directories(file.parent_path());
  WriteFile(file,
            "name: noscript\ntrainable: {command: [python3, -u, train.py]}\nworking_dir: false\n"
            "results_dir: " +
                results.string() + "\n");
  auto run = cluster.Ctl({"run", file.string()}, 60s);
  EXPECT_EQ(run.exit_code, 1) << run.Describe();
  t = ErroredTrial(cluster);
  error = t.value("error", "");
  EXPECT_NE(error.find("cannot start command [python3 -u train.py]: train.py does not exist in " +
                       file.parent_path().string() + " on this worker"),
            std::string::npos)
      << t.dump();
  EXPECT_NE(error.find("ship it (leave `working_dir` out, or name the folder)"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace tunebus::testing
