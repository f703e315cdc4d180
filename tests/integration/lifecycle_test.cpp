// Trials on real processes: placement on workers of different sizes, checkpoints through the
// checkpoint-store, restore on another worker, large chunked checkpoints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"
#include "tests/integration/message_filter.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// An experiment file in the cluster's folder; `body` holds everything after name/results_dir.
// The file sits among the cluster's data (the store's, the logs), so its folder is not shipped:
// the trainables are scripts named by absolute paths.
fs::path WriteExperiment(Cluster& cluster, const std::string& name, const std::string& body) {
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, "name: " + name + "\nresults_dir: " + (cluster.dir() / "results").string() +
                      "\nworking_dir: false\n" + body);
  return file;
}

// Two workers of different sizes: w1 with 1 CPU, w2 with 2.
ClusterOptions MixedSizes() {
  ClusterOptions o;
  o.worker_args = {{"w1", {"--cpus", "1"}}, {"w2", {"--cpus", "2"}}};
  return o;
}

json Trials(Cluster& cluster) { return cluster.Ctl({"-o", "json", "ls"}).Json(); }

json ResultLines(const fs::path& trial_dir) {
  json out = json::array();
  for (const std::string& line : ReadLines(trial_dir / "result.json"))
    out.push_back(json::parse(line, nullptr, false));
  return out;
}

TEST(LifecycleTest, HandedOverSlotsKeepTheResourceManagerInStep) {
  // 40 short trials on two 1-CPU workers: each finished trial hands its slot to the next one
  // (one group commit, no resource-manager round trip). Throughout, the resource-manager holds
  // at most one trial per worker, and nothing once the experiment ends.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const fs::path file = WriteExperiment(cluster, "slots",
                                        "trainable: {builtin: mock}\n"
                                        "param_space: {mock_iterations: 3, sleep_s: 0.02}\n"
                                        "num_samples: 40\n");
  ASSERT_EQ(cluster.Ctl({"run", "--detach", file.string()}).exit_code, 0);
  int polls = 0;
  json workers;
  bool finished = false;
  for (auto deadline = std::chrono::steady_clock::now() + 60s;
       !finished && std::chrono::steady_clock::now() < deadline;) {
    workers = cluster.Workers();
    ASSERT_TRUE(workers.is_array()) << cluster.LogTails();
    for (const json& w : workers) EXPECT_LE(w["trials"].size(), 1u) << workers.dump();
    ++polls;
    finished = cluster.Ctl({"-o", "json", "status"}).Json().value("status", "") != "RUNNING";
  }
  ASSERT_TRUE(finished) << cluster.LogTails();
  EXPECT_GT(polls, 1);
  const json ls = Trials(cluster);
  ASSERT_EQ(ls.size(), 40u);
  for (const json& t : ls) EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
  EXPECT_TRUE(WaitFor(
      [&] {
        workers = cluster.Workers();
        for (const json& w : workers) {
          if (!w["committed"].empty() || !w["trials"].empty()) return false;
        }
        return workers.is_array();
      },
      5s, 100ms))
      << workers.dump();
}

TEST(LifecycleTest, FractionalGpuTrialsRunOnlyOnTheGpuWorkerWithCudaVisibleDevices) {
  // Two workers: w1 has 2 CPUs and no GPU, w2 2 CPUs and 1 GPU. Trials asking gpu: 0.5 run only
  // on w2, two at a time at most, and see CUDA_VISIBLE_DEVICES=0, their allocation in
  // TUNEBUS_RESOURCES and w2 in TUNEBUS_WORKER_ID.
  ClusterOptions o;
  o.worker_args = {{"w1", {"--cpus", "2"}}, {"w2", {"--cpus", "2", "--gpus", "1"}}};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  WriteFile(cluster.dir() / "gpu.sh",
            "echo \"{\\\"gpu\\\": \\\"$CUDA_VISIBLE_DEVICES\\\", \\\"resources\\\": "
            "$TUNEBUS_RESOURCES, \\\"worker\\\": \\\"$TUNEBUS_WORKER_ID\\\"}\" >&3\n"
            "read d <&4\nsleep 0.3\n");
  const fs::path file =
      WriteExperiment(cluster, "gpu",
                      "trainable:\n  command: [sh, " + (cluster.dir() / "gpu.sh").string() +
                          "]\n"
                          "param_space:\n  i: {grid_search: [1, 2, 3, 4]}\n"
                          "resources_per_trial: {cpu: 0.5, gpu: 0.5}\n");
  auto run = cluster.Ctl({"-o", "json", "run", file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  const json trials = Trials(cluster);
  ASSERT_EQ(trials.size(), 4u) << trials.dump();
  for (const json& t : trials) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    EXPECT_EQ(t["last_result"].value("gpu", ""), "0") << t.dump();
    EXPECT_EQ(t["last_result"]["resources"], json({{"cpu", 0.5}, {"gpu", 0.5}})) << t.dump();
    EXPECT_EQ(t["last_result"].value("worker", ""), "w2") << t.dump();
    const json results = ResultLines(t.value("dir", ""));
    ASSERT_FALSE(results.empty());
  }
  // Every trial ran on w2: its log names each start.
  const std::string w2_log = cluster.process("w2")->Output();
  for (const json& t : trials)
    EXPECT_NE(w2_log.find("Started trial " + t.value("trial_id", "")), std::string::npos);
  EXPECT_EQ(cluster.process("w1")->Output().find("Started trial"), std::string::npos);
}

TEST(LifecycleTest, TrialThatFitsNoWorkerErrorsNamingWhatItAskedAndTheLargestWorker) {
  ClusterOptions o;
  o.worker_args = {{"w1", {"--cpus", "1"}}, {"w2", {"--cpus", "2"}}};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = WriteExperiment(cluster, "big",
                                        "trainable: {builtin: mock}\n"
                                        "param_space: {mock_iterations: 2}\n"
                                        "resources_per_trial: {cpu: 4}\n");
  auto run = cluster.Ctl({"run", file.string()}, 30s);
  EXPECT_EQ(run.exit_code, 1) << run.Describe();
  const json trials = Trials(cluster);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].value("status", ""), "ERROR");
  const std::string error = trials[0].value("error", "");
  EXPECT_NE(error.find("cpu=4"), std::string::npos) << error;
  EXPECT_NE(error.find("w2"), std::string::npos) << error;  // the largest worker
  // Every ERROR trial has the error.txt that tunectl points to.
  const fs::path error_file = fs::path(trials[0].value("dir", "")) / "error.txt";
  EXPECT_NE(run.out.find(error_file.string()), std::string::npos) << run.Describe();
  EXPECT_NE(ReadFile(error_file).find(error), std::string::npos) << error_file;
}

TEST(LifecycleTest, QueueTrialsKeepsATrialPendingUntilABigEnoughWorkerRegisters) {
  // The resource-manager answers the trial's placements "infeasible" (no worker has big=1) and
  // the scheduler asks again each round; a filter between the two counts the asks. After the
  // third (so two answers were taken as "wait", not as a failure) the trial is PENDING; once a
  // big enough worker registers it runs to its end.
  MessageFilter rm_link("scheduler-rm");
  ClusterOptions o;
  o.workers = 1;
  o.filters = {{"scheduler", "--rm", &rm_link}};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = WriteExperiment(cluster, "queued",
                                        "trainable: {builtin: mock}\n"
                                        "param_space: {mock_iterations: 2}\n"
                                        "resources_per_trial: {cpu: 3, big: 1}\n"
                                        "queue_trials: true\n");
  auto submit = cluster.Ctl({"run", "--detach", file.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  ASSERT_TRUE(WaitUntil("three placement asks", [&] {
    return rm_link.Count(FilterDirection::kToService, "allocate_batch") >= 3;
  })) << cluster.LogTails();
  json trials = Trials(cluster);
  ASSERT_EQ(trials.size(), 1u) << trials.dump();
  EXPECT_EQ(trials[0].value("status", ""), "PENDING") << trials.dump();
  ASSERT_TRUE(cluster.AddWorker("big", {"--cpus", "4", "--resource", "big=1"}));
  EXPECT_TRUE(
      WaitFor([&] { return Trials(cluster)[0].value("status", "") == "TERMINATED"; }, 20s, 100ms))
      << Trials(cluster).dump();
}

TEST(LifecycleTest, FailedTrialContinuesFromItsLatestCheckpoint) {
  // The mock fails at iteration 3 of its first attempt; it checkpoints every iteration. The
  // second attempt restores the iteration-2 checkpoint from the store (on whichever worker has
  // room) and goes on from training_iteration 3: no iteration is lost, 1..5 are all reported.
  Cluster cluster(MixedSizes());
  ASSERT_TRUE(cluster.Start());
  const fs::path file = WriteExperiment(
      cluster, "restore",
      "trainable: {builtin: mock}\n"
      "param_space: {mock_iterations: 5, mock_error: true, mock_error_iteration: 3, "
      "sleep_s: 0.02}\n"
      "checkpoint_freq: 1\n"
      "max_failures: 1\n");
  auto run = cluster.Ctl({"-o", "json", "run", file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  const json t = Trials(cluster)[0];
  EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
  EXPECT_EQ(t.value("num_failures", -1), 1);
  EXPECT_EQ(t.value("attempt", -1), 2);
  const std::string restored = t.value("restored_checkpoint_id", "");
  EXPECT_NE(restored.find("00000002-a1"), std::string::npos) << t.dump();
  const json results = ResultLines(t.value("dir", ""));
  std::vector<int> iterations, since_restore;
  for (const json& r : results) {
    iterations.push_back(r.value("training_iteration", -1));
    since_restore.push_back(r.value("iterations_since_restore", -1));
  }
  EXPECT_EQ(iterations, (std::vector<int>{1, 2, 3, 4, 5})) << results.dump();
  EXPECT_EQ(since_restore, (std::vector<int>{1, 2, 1, 2, 3})) << results.dump();
  EXPECT_GE(t["checkpoints"].size(), 1u) << t.dump();
}

TEST(LifecycleTest, LargeCheckpointTravelsInChunksThroughTheStore) {
  // A 100 MiB checkpoint saved by a worker, restored after a failure: the worker deletes its
  // local copy once stored, so the restore comes from the checkpoint-store (as it would on any
  // other worker); the bytes arrive intact (same sha256), and no worker ever held it whole in
  // memory.
  ClusterOptions o;
  o.workers = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  WriteFile(cluster.dir() / "big.sh",
            "if [ -n \"$TUNEBUS_RESTORE_DIR\" ]; then\n"
            "  sum=$(sha256sum \"$TUNEBUS_RESTORE_DIR/blob\" | cut -c1-64)\n"
            "  echo \"{\\\"restored_sha\\\": \\\"$sum\\\", \\\"done\\\": true}\" >&3\n"
            "  read d <&4\n"
            "  exit 0\n"
            "fi\n"
            "echo '{\"step\": 1}' >&3\n"
            "read d <&4\n"
            "if [ \"$d\" = checkpoint ]; then\n"
            "  head -c 104857600 /dev/urandom > \"$TUNEBUS_CHECKPOINT_DIR/blob\"\n"
            "  sha256sum \"$TUNEBUS_CHECKPOINT_DIR/blob\" | cut -c1-64 > "
            "\"$TUNEBUS_TRIAL_DIR/saved_sha\"\n"
            "fi\n"
            "exit 3\n");
  const fs::path file =
      WriteExperiment(cluster, "large",
                      "trainable:\n  command: [sh, " + (cluster.dir() / "big.sh").string() +
                          "]\n"
                          "checkpoint_freq: 1\n"
                          "max_failures: 1\n");
  auto run = cluster.Ctl({"-o", "json", "run", file.string()}, 120s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  const json t = Trials(cluster)[0];
  ASSERT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
  ASSERT_EQ(t["checkpoints"].size(), 1u) << t.dump();
  EXPECT_GE(t["checkpoints"][0].value("size_bytes", int64_t(0)), int64_t(100) << 20);
  const fs::path dir = t.value("dir", "");
  std::string saved = ReadFile(dir / "saved_sha");
  saved.erase(saved.find_last_not_of('\n') + 1);
  EXPECT_EQ(saved.size(), 64u);
  EXPECT_EQ(t["last_result"].value("restored_sha", ""), saved);
  // The restore folder the worker fetched the checkpoint into is gone once the attempt exited.
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_NE(entry.path().filename().string().rfind("restore_a", 0), 0u) << entry.path();
  }
  // Peak resident memory of each worker stays well below the checkpoint's size.
  for (const char* w : {"w1", "w2"}) {
    const std::string status =
        ReadFile("/proc/" + std::to_string(cluster.process(w)->pid()) + "/status");
    const auto at = status.find("VmHWM:");
    ASSERT_NE(at, std::string::npos);
    const long kib = std::stol(status.substr(at + 6));
    EXPECT_LT(kib, 60 * 1024) << w << " peak RSS " << kib << " KiB";
  }
}

}  // namespace
}  // namespace tunebus::testing

namespace tunebus::testing {
namespace {

TEST(LifecycleTest, RestoreFromStartsNewTrialsFromAStoredCheckpoint) {
  // Experiment A keeps its end checkpoint (iteration 4); experiment B names it in restore_from:
  // its trials continue at training_iteration 5 with iterations_since_restore counting from 1
  // and time_total_s from the checkpoint's (as Ray Tune's restore carries it).
  Cluster cluster(MixedSizes());
  ASSERT_TRUE(cluster.Start());
  const fs::path a = WriteExperiment(cluster, "first",
                                     "trainable: {builtin: mock}\n"
                                     "param_space: {mock_iterations: 4, sleep_s: 0.05}\n"
                                     "checkpoint_at_end: true\n");
  auto run_a = cluster.Ctl({"-o", "json", "run", a.string()}, 60s);
  ASSERT_EQ(run_a.exit_code, 0) << run_a.Describe();
  const json first = Trials(cluster)[0];
  ASSERT_EQ(first["checkpoints"].size(), 1u) << first.dump();
  const std::string id = first["checkpoints"][0].value("checkpoint_id", "");
  EXPECT_EQ(first["checkpoints"][0].value("training_iteration", -1), 4);
  const double trained_s = first.value("time_total_s", 0.0);
  EXPECT_GE(trained_s, 0.2);

  const fs::path b = WriteExperiment(cluster, "second",
                                     "trainable: {builtin: mock}\n"
                                     "param_space: {mock_iterations: 6}\n"
                                     "restore_from: " +
                                         id + "\n");
  auto run_b = cluster.Ctl({"-o", "json", "run", b.string()}, 60s);
  ASSERT_EQ(run_b.exit_code, 0) << run_b.Describe();
  const json second = Trials(cluster)[0];
  EXPECT_EQ(second.value("restored_checkpoint_id", ""), id) << second.dump();
  std::vector<int> iterations, since_restore;
  const json rows = ResultLines(second.value("dir", ""));
  for (const json& r : rows) {
    iterations.push_back(r.value("training_iteration", -1));
    since_restore.push_back(r.value("iterations_since_restore", -1));
  }
  ASSERT_FALSE(rows.empty());
  EXPECT_NEAR(rows[0].value("time_total_s", 0.0),
              trained_s + rows[0].value("time_this_iter_s", 0.0), 1e-6)
      << rows[0].dump();
  EXPECT_EQ(iterations, (std::vector<int>{5, 6}));
  EXPECT_EQ(since_restore, (std::vector<int>{1, 2}));

  const fs::path missing = WriteExperiment(cluster, "third",
                                           "trainable: {builtin: mock}\n"
                                           "restore_from: no/such/checkpoint\n");
  auto run_c = cluster.Ctl({"run", missing.string()}, 30s);
  EXPECT_NE(run_c.exit_code, 0) << run_c.Describe();
  EXPECT_NE(run_c.err.find("no/such/checkpoint"), std::string::npos) << run_c.Describe();
}

TEST(LifecycleTest, FailFastStopsTheOthersAndRaiseLeavesThemAsTheyWere) {
  // fail_fast: true -> the first ERROR stops every unfinished trial (TERMINATED), exit 1.
  // fail_fast: raise -> the experiment ends at once; the slow trial keeps its status.
  Cluster cluster(MixedSizes());
  ASSERT_TRUE(cluster.Start());
  const std::string trials =
      "trainable: {builtin: mock}\n"
      "param_space:\n"
      "  mock_error: {grid_search: [true, false]}\n"
      "  persistent_error: true\n"
      "  mock_error_iteration: 2\n"
      "  mock_iterations: 1000\n"
      "  sleep_s: 0.05\n";
  auto run_true = cluster.Ctl(
      {"run", WriteExperiment(cluster, "ff", trials + "fail_fast: true\n").string()}, 60s);
  EXPECT_EQ(run_true.exit_code, 1) << run_true.Describe();
  json ls = Trials(cluster);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].value("status", ""), "ERROR");
  EXPECT_EQ(ls[1].value("status", ""), "TERMINATED");

  auto run_raise = cluster.Ctl(
      {"run", WriteExperiment(cluster, "ffr", trials + "fail_fast: raise\n").string()}, 60s);
  EXPECT_EQ(run_raise.exit_code, 1) << run_raise.Describe();
  ls = Trials(cluster);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].value("status", ""), "ERROR");
  EXPECT_EQ(ls[1].value("status", ""), "RUNNING");  // as it was when the experiment aborted
  // Its trainable was stopped and its resources returned all the same.
  json workers;
  EXPECT_TRUE(WaitFor(
      [&] {
        workers = cluster.Workers();
        for (const json& w : workers) {
          if (!w["committed"].empty()) return false;
        }
        return workers.is_array();
      },
      5s, 100ms))
      << workers.dump();
}

}  // namespace
}  // namespace tunebus::testing

namespace tunebus::testing {
namespace {

json Show(Cluster& cluster, const std::string& id) {
  return cluster.Ctl({"-o", "json", "show", id}).Json();
}

TEST(LifecycleTest, PauseResumeAddAndSetResourcesFromTunectl) {
  // tunectl pause checkpoints a RUNNING trial and frees its CPU; resume continues it from that
  // checkpoint; set-resources is refused while a trial runs; add puts a new trial in the queue.
  Cluster cluster(MixedSizes());
  ASSERT_TRUE(cluster.Start());
  const fs::path file = WriteExperiment(cluster, "control",
                                        "trainable: {builtin: mock}\n"
                                        "param_space:\n  lr: {grid_search: [0.1, 0.2]}\n"
                                        "  mock_iterations: 1000\n  sleep_s: 0.05\n");
  ASSERT_EQ(cluster.Ctl({"run", "--detach", file.string()}).exit_code, 0);
  std::string a, b;
  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = Trials(cluster);
        if (!ls.is_array() || ls.size() != 2) return false;
        a = ls[0].value("trial_id", "");
        b = ls[1].value("trial_id", "");
        return ls[0].value("training_iteration", 0) >= 3 && ls[1].value("status", "") == "RUNNING";
      },
      15s, 50ms));

  auto pause = cluster.Ctl({"pause", a});
  ASSERT_EQ(pause.exit_code, 0) << pause.Describe();
  // PAUSED only once the checkpoint is stored and the trainable has exited: until then show
  // says RUNNING, pausing (Ray Tune saves before the trial is PAUSED).
  json paused;
  std::vector<std::string> premature;
  ASSERT_TRUE(WaitFor(
      [&] {
        paused = Show(cluster, a);
        if (paused.value("status", "") != "PAUSED") return false;
        if (paused["checkpoints"].empty() || !paused["worker"].is_null())
          premature.push_back(paused.dump());
        return !paused["checkpoints"].empty();
      },
      10s, 10ms))
      << paused.dump();
  EXPECT_TRUE(premature.empty()) << "PAUSED before its checkpoint was stored: "
                                 << premature.front();
  const int at = paused.value("training_iteration", -1);
  EXPECT_EQ(paused["checkpoints"].back().value("training_iteration", -2), at);
  // Its CPU is free again: one trial runs, one CPU of the three is committed.
  json resources;
  EXPECT_TRUE(WaitFor(
      [&] {
        resources = cluster.Ctl({"-o", "json", "resources"}).Json();
        return resources.is_object() && resources["total"]["capacity"].value("cpu", -1.0) == 3.0 &&
               resources["total"]["committed"].value("cpu", -1.0) == 1.0 &&
               resources["total"]["free"].value("cpu", -1.0) == 2.0;
      },
      5s, 50ms))
      << resources.dump();

  auto refused = cluster.Ctl({"set-resources", b, "cpu=2"});
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  EXPECT_NE(refused.err.find("running"), std::string::npos) << refused.Describe();
  auto bad_pair = cluster.Ctl({"set-resources", a, "cpu"});
  EXPECT_EQ(bad_pair.exit_code, 2) << bad_pair.Describe();
  auto set = cluster.Ctl({"-o", "json", "set-resources", a, "cpu=1", "gpu=0"});
  ASSERT_EQ(set.exit_code, 0) << set.Describe();
  EXPECT_EQ(set.Json()["resources"].value("cpu", -1.0), 1.0) << set.out;

  auto resume = cluster.Ctl({"resume", a});
  ASSERT_EQ(resume.exit_code, 0) << resume.Describe();
  json resumed;
  ASSERT_TRUE(WaitFor(
      [&] {
        resumed = Show(cluster, a);
        return resumed.value("status", "") == "RUNNING" &&
               resumed.value("training_iteration", 0) >= at + 2;
      },
      10s, 50ms))
      << resumed.dump();
  EXPECT_EQ(resumed.value("attempt", -1), 2);
  auto add = cluster.Ctl({"-o", "json", "add", "--config", R"({"lr": 0.3, "mock_iterations": 2})"});
  ASSERT_EQ(add.exit_code, 0) << add.Describe();
  const std::string c = add.Json().value("trial_id", "");
  EXPECT_EQ(add.Json().value("status", ""), "PENDING") << add.out;
  ASSERT_EQ(cluster.Ctl({"stop", b}).exit_code, 0);  // frees a CPU for the added trial
  EXPECT_TRUE(
      WaitFor([&] { return Show(cluster, c).value("status", "") == "TERMINATED"; }, 10s, 50ms))
      << Show(cluster, c).dump();

  ASSERT_EQ(cluster.Ctl({"stop-experiment"}).exit_code, 0);
  // (Result files are flushed when a trial finishes.) The result after the pause is iteration at+1,
  // the first since the restore.
  bool found = false;
  for (const json& r : ResultLines(resumed.value("dir", ""))) {
    if (r.value("training_iteration", -1) == at + 1) {
      EXPECT_EQ(r.value("iterations_since_restore", -1), 1) << r.dump();
      found = true;
    }
  }
  EXPECT_TRUE(found);

  auto late = cluster.Ctl({"pause", a});
  EXPECT_EQ(late.exit_code, 1) << late.Describe();
  EXPECT_NE(late.err.find("TERMINATED"), std::string::npos) << late.Describe();
}

}  // namespace
}  // namespace tunebus::testing
