// The trainable's working_dir shipped to every worker (docs/reference/experiment-file.md,
// docs/how-to/deploy.md): a Python trainable whose folder is deleted right after `tunectl run
// --detach` uploaded it runs from the workers' caches; a scheduler killed mid-run ships it on from
// its journal; a restarted worker reuses its cache; a worker that cannot fetch it fails the trial
// saying why.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <zmq.hpp>

#include "proto/codec.hpp"
#include "proto/store.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Writes <folder>/train.py, a copy of the Python package beside it (CopyTunebusPackage: its
// trainable helper needs only the stdlib, and the trainable nothing outside its folder) and
// <folder>/exp.yaml: `samples` trials of `iters` reports `sleep_s` apart, each reporting its cwd;
// results go to `results` (outside the folder, which the tests delete). `extra` is appended to the
// file. Returns exp.yaml's path.
fs::path WriteShippedExperiment(const fs::path& folder, const fs::path& results, int samples,
                                int iters, double sleep_s, const std::string& extra = "") {
  CopyTunebusPackage(folder);
  WriteFile(folder / "train.py",
            "import os, time\n"
            "import tunebus\n"
            "cfg = tunebus.config()\n"
            "for i in range(" +
                std::to_string(iters) +
                "):\n"
                "    time.sleep(" +
                std::to_string(sleep_s) +
                ")\n"
                "    tunebus.report(score=cfg['x'] * (i + 1), cwd=os.getcwd())\n");
  WriteFile(folder / "data" / "big.ckpt", std::string(1000, 'x'));  // excluded below
  const fs::path file = folder / "exp.yaml";
  WriteFile(file,
            "name: shipped\n"
            "trainable:\n"
            "  command: [python3, train.py]\n"
            "param_space:\n"
            "  x: {randint: [1, 100]}\n"
            "num_samples: " +
                std::to_string(samples) +
                "\n"
                "metric: score\n"
                "mode: max\n"
                "working_dir:\n"
                "  path: .\n"
                "  excludes: ['*.ckpt']\n"
                "results_dir: " +
                results.string() + "\n" + extra);
  return file;
}

// Writes the experiment into <cluster dir>/project (results in <cluster dir>/results) and submits
// it with `tunectl run --detach`.
CommandResult SubmitShipped(Cluster& cluster, int samples, int iters, double sleep_s,
                            const std::string& extra = "") {
  const fs::path file = WriteShippedExperiment(cluster.dir() / "project", cluster.dir() / "results",
                                               samples, iters, sleep_s, extra);
  return cluster.Ctl({"run", "--detach", file.string()});
}

json Trials(Cluster& cluster) { return cluster.Ctl({"-o", "json", "ls"}).Json(); }

// Waits until the experiment is no longer RUNNING; returns its summary.
json WaitFinished(Cluster& cluster, std::chrono::seconds timeout) {
  json summary;
  WaitFor(
      [&] {
        summary = cluster.Ctl({"-o", "json", "status"}, 5s).Json();
        return summary.is_object() && summary.value("status", "") != "RUNNING" &&
               summary.value("status", "") != "";
      },
      timeout, 200ms);
  return summary;
}

// The digest tunectl printed ("... sha256 <12 hex digits>").
std::string ShortDigest(const std::string& tunectl_err) {
  const auto at = tunectl_err.find("sha256 ");
  return at == std::string::npos ? "" : tunectl_err.substr(at + 7, 12);
}

bool HavePython() { return std::system("command -v python3 >/dev/null 2>&1") == 0; }

TEST(WorkingDirTest, DeletedFolderRunsFromTheStoreAndSurvivesASchedulerKill) {
  // 4 trials on 2 one-cpu workers; the folder is deleted as soon as tunectl has submitted it, and
  // the scheduler is SIGKILLed and restarted once the first trials report: the later trials
  // start from the restarted scheduler, which knows the digest only from its journal.
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH";
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const fs::path folder = cluster.dir() / "project";
  auto submit = SubmitShipped(cluster, 4, 6, 0.3);
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  EXPECT_NE(submit.err.find("Shipping working_dir " + folder.string()), std::string::npos)
      << submit.err;
  const std::string digest12 = ShortDigest(submit.err);
  ASSERT_EQ(digest12.size(), 12u) << submit.err;
  fs::remove_all(folder);

  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = Trials(cluster);
        return ls.is_array() && !ls.empty() && ls[0].value("training_iteration", 0) >= 1;
      },
      30s, 100ms));
  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json summary = WaitFinished(cluster, 90s);
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump(1);
  const json ls = Trials(cluster);
  ASSERT_EQ(ls.size(), 4u) << ls.dump(1);
  for (const json& t : ls) {
    SCOPED_TRACE(t.dump());
    EXPECT_EQ(t.value("status", ""), "TERMINATED");
    EXPECT_EQ(t.value("training_iteration", 0), 6);
    // It ran in a worker's cache folder named by the digest, not the deleted folder.
    const std::string cwd = t["last_result"].value("cwd", "");
    EXPECT_NE(cwd.find((cluster.dir() / "cache").string()), std::string::npos);
    EXPECT_NE(cwd.find("/" + digest12), std::string::npos);
  }
  // The excluded file was not shipped; the helper module was.
  for (const std::string w : {"w1", "w2"}) {
    for (const auto& entry : fs::directory_iterator(cluster.dir() / "cache" / w)) {
      if (entry.path().filename().string().starts_with(".tmp-")) continue;
      EXPECT_TRUE(fs::exists(entry.path() / "tunebus" / "__init__.py")) << entry.path();
      EXPECT_TRUE(fs::exists(entry.path() / "data")) << entry.path();  // empty: *.ckpt left out
      EXPECT_FALSE(fs::exists(entry.path() / "data" / "big.ckpt")) << entry.path();
    }
  }
}

TEST(WorkingDirTest, RestartedWorkerReusesItsCacheAndTheSameFolderIsNotUploadedAgain) {
  // One worker runs an experiment, is SIGKILLed and restarted; the same folder, written again,
  // packs to the same digest (tunectl finds it stored), and the restarted worker starts its
  // trial without fetching.
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH";
  ClusterOptions options;
  options.workers = 1;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  auto first = SubmitShipped(cluster, 1, 2, 0.05);
  ASSERT_EQ(first.exit_code, 0) << first.Describe();
  EXPECT_EQ(WaitFinished(cluster, 60s).value("status", ""), "FINISHED");
  EXPECT_NE(cluster.process("w1")->Output().find("Fetching working_dir"), std::string::npos);
  fs::remove_all(cluster.dir() / "project");

  ASSERT_TRUE(cluster.Restart("w1"));
  auto second = SubmitShipped(cluster, 1, 2, 0.05);
  ASSERT_EQ(second.exit_code, 0) << second.Describe();
  EXPECT_NE(second.err.find("already in the checkpoint-store"), std::string::npos) << second.err;
  EXPECT_EQ(ShortDigest(second.err), ShortDigest(first.err));
  const json summary = WaitFinished(cluster, 60s);
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump(1);
  EXPECT_EQ(summary["counts"].value("TERMINATED", 0), 1) << summary.dump(1);
  const std::string restarted = cluster.process("w1")->Output();
  EXPECT_NE(restarted.find("Started trial"), std::string::npos) << restarted;
  EXPECT_EQ(restarted.find("Fetching working_dir"), std::string::npos) << restarted;
}

// Sends `request` to the checkpoint-store at `endpoint` and returns its reply of type Reply.
template <typename Reply, typename M>
Result<Reply> AskStore(const std::string& endpoint, M request) {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 10000);
  s.connect(endpoint);
  request.id = 1;
  const std::string bytes = proto::Encode(request);
  s.send(zmq::buffer(bytes), zmq::send_flags::none);
  zmq::message_t reply;
  if (!s.recv(reply)) return Status::Unavailable("the checkpoint-store did not answer");
  auto d = proto::Decode(reply.data(), reply.size());
  if (!d.ok()) return d.status();
  return d->As<Reply>();
}

TEST(WorkingDirTest, WorkerThatCannotFetchItFailsTheTrialSayingWhy) {
  // The trial needs a resource only a later worker has (queue_trials keeps it PENDING); the
  // archive is deleted from the store before that worker comes: its fetch finds nothing, and
  // the trial fails naming the digest and the store's answer.
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH";
  ClusterOptions options;
  options.workers = 1;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  auto submit = SubmitShipped(cluster, 1, 2, 0.05,
                              "resources_per_trial: {cpu: 1, fetchtest: 1}\nqueue_trials: true\n");
  ASSERT_EQ(submit.exit_code, 0) << submit.Describe();
  const auto at = submit.err.find("sha256 ");
  ASSERT_NE(at, std::string::npos) << submit.err;
  const std::string digest12 = submit.err.substr(at + 7, 12);
  // tunectl prints 12 digits: the store's list of `working_dirs/<those>` names the whole digest.
  proto::CheckpointList list;
  list.prefix = "working_dirs/" + digest12;
  auto listed = AskStore<proto::CheckpointListReply>(cluster.store(), list);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->checkpoints.size(), 1u);
  const std::string id = listed->checkpoints[0].checkpoint_id;
  const std::string digest = id.substr(std::string("working_dirs/").size());
  proto::CheckpointDelete del;
  del.checkpoint_id = id;
  auto deleted = AskStore<proto::CheckpointDeleteAck>(cluster.store(), del);
  ASSERT_TRUE(deleted.ok() && deleted->deleted) << deleted.status().ToString();
  ASSERT_TRUE(cluster.AddWorker("w2", {"--resource", "fetchtest=1"}));
  const json summary = WaitFinished(cluster, 60s);
  const json ls = Trials(cluster);
  ASSERT_EQ(ls.size(), 1u) << ls.dump(1);
  EXPECT_EQ(ls[0].value("status", ""), "ERROR") << ls.dump(1);
  const std::string error = ls[0].value("error", "");
  EXPECT_NE(error.find("cannot fetch working_dir " + digest12 + " from the checkpoint-store: "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(cluster.dir() / "cache" / "w2" / digest));
}

TEST(WorkingDirTest, TunectlRefusesAFolderOverTheCapNamingTheLargestFiles) {
  // Packing happens before anything is submitted: an over-cap folder is an error naming the
  // file's line, the size, the cap and the largest files, and nothing runs.
  TempDir dir;
  const fs::path project = dir.path() / "project";
  WriteFile(project / "weights.bin", std::string(300 * 1024, 'w'));
  WriteFile(project / "train.py", "print(1)\n");
  WriteFile(project / "exp.yaml",
            "name: big\n"
            "trainable: {command: [python3, train.py]}\n"
            "working_dir: {path: ., max_size_mb: 0.1}\n");
  auto run = RunTunectl({"run", (project / "exp.yaml").string()}, 30s, dir.path() / "tunectl");
  EXPECT_EQ(run.exit_code, 2) << run.Describe();
  EXPECT_NE(run.err.find("exp.yaml:3: working_dir: " + project.string() +
                         " holds 300.1 KiB to ship, over the cap of 102.4 KiB (max_size_mb); "
                         "the largest files: weights.bin (300.0 KiB), exp.yaml (93 B), train.py "
                         "(9 B); exclude them"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(fs::exists(project / "results")) << "nothing ran";
}

}  // namespace
}  // namespace tunebus::testing
