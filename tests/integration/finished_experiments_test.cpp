// Finished experiments stay reachable. After a restart of the suite, the read
// commands answer for a finished experiment from its journal (-e NAME; without it the newest
// one), `tunectl checkpoint export` writes a trial's checkpoint (the bytes its trainable saved)
// into a folder with clear errors, the journal of a finished experiment gets nothing appended by
// reads, and trial folders keep no empty checkpoint_tmp/.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/journal/records.hpp"
#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A shell trainable: reports score = lr * i for i = 1..3; on "checkpoint" it saves model.txt and
// weights/w.bin into TUNEBUS_CHECKPOINT_DIR and a copy of both into <trial dir>/saved/<i>, so the
// test can compare an exported checkpoint with what the trainable saved.
constexpr const char* kTrainable =
    "lr=$(echo \"$TUNEBUS_CONFIG\" | sed 's/.*\"lr\":\\([0-9.e-]*\\).*/\\1/')\n"
    "for i in 1 2 3; do\n"
    "  echo \"{\\\"score\\\": $(awk \"BEGIN{print $lr * $i}\")}\" >&$TUNEBUS_REPORT_FD\n"
    "  read -r decision <&$TUNEBUS_DECISION_FD\n"
    "  if [ \"$decision\" = checkpoint ]; then\n"
    "    for d in \"$TUNEBUS_CHECKPOINT_DIR\" \"$TUNEBUS_TRIAL_DIR/saved/$i\"; do\n"
    "      mkdir -p \"$d/weights\"\n"
    "      echo \"lr=$lr iteration=$i trial=$TUNEBUS_TRIAL_ID\" > \"$d/model.txt\"\n"
    "      printf 'w\\000\\001\\377%s' \"$lr$i\" > \"$d/weights/w.bin\"\n"
    "    done\n"
    "  fi\n"
    "  [ \"$decision\" = stop ] && exit 0\n"
    "done\n"
    "exit 0\n";

fs::path WriteExperiment(const fs::path& dir, const std::string& name, bool checkpoints) {
  WriteFile(dir / "train.sh", kTrainable);
  const fs::path file = dir / (name + ".yaml");
  WriteFile(file,
            "name: " + name +
                "\n"
                "trainable: {command: [sh, train.sh]}\n"
                "working_dir: false\n"  // the file sits beside the suite's data
                "param_space:\n"
                "  lr: {grid_search: [0.1, 0.3, 0.2]}\n"
                "metric: score\n"
                "mode: max\n"
                "stop: {training_iteration: 3}\n" +
                std::string(checkpoints ? "checkpoint_freq: 2\ncheckpoint_at_end: true\n" : "") +
                "results_dir: " + (dir / "results").string() + "\n");
  return file;
}

// Every file under `dir` (relative path -> bytes).
std::map<std::string, std::string> FilesIn(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (f.is_regular_file()) files[fs::relative(f.path(), dir).string()] = ReadFile(f.path());
  }
  return files;
}

// `tunectl up` on one data folder, started again by Restart() on the endpoints its first start
// bound (on ports it picked).
class Suite {
 public:
  explicit Suite(const fs::path& dir)
      : dir_(dir),
        options_{"up",
                 BinDir() / "tunectl",
                 {"up", "--control", kAnyLoopback, "--events", kAnyLoopback, "--data-dir",
                  (dir_ / "store").string(), "--cpus", "2"},
                 {},
                 dir_ / "logs",
                 dir_} {}
  ::testing::AssertionResult Start() {
    options_.name = "up-" + std::to_string(++starts_);
    Ready ready;
    if (auto r = SpawnReady(options_, dir_ / "up.json", up_, ready); !r) return r;
    control_ = ready.endpoint("control");
    if (!WaitFor([&] { return Ctl({"lsx"}, 2s).exit_code == 0; }, 20s, 100ms)) {
      return ::testing::AssertionFailure() << "tunectl up did not answer: " << up_->Output();
    }
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult Restart() {
    const int code = up_->Stop();
    if (code != 0)
      return ::testing::AssertionFailure() << "tunectl up exited " << code << ": " << up_->Output();
    return Start();
  }
  CommandResult Ctl(std::vector<std::string> args, Millis timeout = 30s, const fs::path& cwd = {}) {
    args.insert(args.begin(), {"--connect", control_});
    return RunTunectl(args, timeout, {}, cwd);
  }
  std::string Output() const { return up_->Output(); }

 private:
  fs::path dir_;
  Process::Options options_;  // the ports pinned after the first start
  std::string control_;
  int starts_ = 0;
  std::unique_ptr<Process> up_;
};

TEST(FinishedExperimentsTest, ReadCommandsAndCheckpointExportAnswerFromTheJournalAfterARestart) {
  // Two experiments run to the end on `tunectl up` (one saves checkpoints, one does not); the
  // suite restarts, so both live only in the store's journals. Every read command answers with
  // -e, `best` without -e answers for the newest, an unknown name lists the known ones, and
  // `checkpoint export` writes the bytes the trainable saved.
  TempDir dir;
  Suite suite(dir.path());
  ASSERT_TRUE(suite.Start());
  auto plain = suite.Ctl({"run", WriteExperiment(dir.path(), "plain", false).string()}, 60s);
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe() << suite.Output();
  auto run = suite.Ctl({"run", WriteExperiment(dir.path(), "models", true).string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe() << suite.Output();
  auto before = suite.Ctl({"-o", "json", "best"});
  ASSERT_EQ(before.exit_code, 0) << before.Describe();
  const std::string best_id = before.Json().value("trial_id", "");
  const fs::path best_dir = before.Json().value("dir", "");
  ASSERT_FALSE(best_id.empty()) << before.out;
  ASSERT_TRUE(suite.Restart());

  // No empty checkpoint_tmp/ stays in any trial folder (it held checkpoints of both kinds).
  for (const auto& experiment : {"plain", "models"}) {
    for (const auto& trial : fs::directory_iterator(dir.path() / "results" / experiment)) {
      if (trial.is_directory()) {
        EXPECT_FALSE(fs::exists(trial.path() / "checkpoint_tmp")) << trial.path();
      }
    }
  }

  auto lsx = suite.Ctl({"-o", "json", "lsx"});
  ASSERT_EQ(lsx.exit_code, 0) << lsx.Describe();
  ASSERT_EQ(lsx.Json().size(), 2u) << lsx.out;

  // best: -e NAME, and without -e the newest experiment (models), read-only from its journal.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-o", "json", "best", "-e", "models"},
        std::vector<std::string>{"-o", "json", "best"}}) {
    auto best = suite.Ctl(args);
    ASSERT_EQ(best.exit_code, 0) << best.Describe() << suite.Output();
    EXPECT_EQ(best.Json().value("trial_id", ""), best_id) << best.out;
    EXPECT_DOUBLE_EQ(best.Json()["config"].value("lr", 0.0), 0.3) << best.out;
    EXPECT_FALSE(best.Json()["checkpoints"].empty()) << best.out;
  }
  auto best_text = suite.Ctl({"best", "-e", "models"});
  EXPECT_NE(best_text.out.find("metric:     score = 0.9 (mode max)"), std::string::npos)
      << best_text.out;
  EXPECT_EQ(suite.Ctl({"-o", "json", "status"}).Json().value("read_only", false), true);
  auto status = suite.Ctl({"-o", "json", "status", "-e", "plain"});
  ASSERT_EQ(status.exit_code, 0) << status.Describe();
  EXPECT_EQ(status.Json().value("name", ""), "plain") << status.out;
  EXPECT_EQ(status.Json().value("status", ""), "FINISHED") << status.out;
  EXPECT_EQ(status.Json().value("read_only", false), true) << status.out;
  EXPECT_EQ(status.Json()["counts"].value("TERMINATED", -1), 3) << status.out;
  auto ls = suite.Ctl({"-o", "json", "ls", "-e", "plain"});
  ASSERT_EQ(ls.exit_code, 0) << ls.Describe();
  ASSERT_EQ(ls.Json().size(), 3u) << ls.out;
  const std::string plain_id = ls.Json()[0].value("trial_id", "");
  EXPECT_EQ(suite.Ctl({"-o", "json", "ls", "-e", "plain", "--sort", "-score", "--limit", "1"})
                .Json()[0]["config"]
                .value("lr", 0.0),
            0.3);
  auto show = suite.Ctl({"-o", "json", "show", best_id, "-e", "models"});
  ASSERT_EQ(show.exit_code, 0) << show.Describe();
  EXPECT_EQ(show.Json().value("status", ""), "TERMINATED") << show.out;
  auto csv = suite.Ctl({"export", "-e", "models", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.Describe();
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 4) << csv.out;
  auto logs = suite.Ctl({"logs", plain_id, "-e", "plain"});
  EXPECT_EQ(logs.exit_code, 0) << logs.Describe();
  auto watch =
      suite.Ctl({"watch", "-e", "plain"}, 10s);  // a finished experiment: the table, then exit
  EXPECT_EQ(watch.exit_code, 0) << watch.Describe();

  // Unknown experiment or trial: clear errors, exit 1.
  auto unknown = suite.Ctl({"best", "-e", "nosuch"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.Describe();
  EXPECT_NE(unknown.err.find("no experiment named nosuch; known experiments: models, plain"),
            std::string::npos)
      << unknown.Describe();
  auto no_trial = suite.Ctl({"show", "nosuch", "-e", "models"});
  EXPECT_EQ(no_trial.exit_code, 1) << no_trial.Describe();
  EXPECT_NE(no_trial.err.find("no trial nosuch in experiment models-"), std::string::npos)
      << no_trial.Describe();

  // checkpoint export: the newest checkpoint (iteration 3, checkpoint_at_end) into --to, byte for
  // byte what the trainable saved.
  const fs::path out = dir.path() / "exported" / "best";
  auto exported = suite.Ctl(
      {"-o", "json", "checkpoint", "export", best_id, "-e", "models", "--to", out.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.Describe() << suite.Output();
  EXPECT_EQ(exported.Json().value("training_iteration", -1), 3) << exported.out;
  EXPECT_EQ(exported.Json().value("dir", ""), out.string()) << exported.out;
  EXPECT_EQ(exported.Json()["files"], json({"model.txt", "weights/w.bin"})) << exported.out;
  EXPECT_EQ(FilesIn(out), FilesIn(best_dir / "saved" / "3"));
  EXPECT_NE(ReadFile(out / "model.txt").find("lr=0.3 iteration=3"), std::string::npos);
  // An older one by its short id, into the default folder in the working directory.
  const fs::path cwd = dir.path() / "cwd";
  fs::create_directories(cwd);
  auto older = suite.Ctl(
      {"checkpoint", "export", best_id, "--checkpoint", "00000002-a1", "-e", "models"}, 30s, cwd);
  ASSERT_EQ(older.exit_code, 0) << older.Describe();
  const fs::path default_dir = cwd / (best_id + "_checkpoint_00000002-a1");
  EXPECT_NE(older.out.find(default_dir.string()), std::string::npos) << older.out;
  EXPECT_EQ(FilesIn(default_dir), FilesIn(best_dir / "saved" / "2"));
  EXPECT_EQ(std::distance(fs::directory_iterator(cwd), fs::directory_iterator()), 1)
      << "nothing else is left";

  // Export errors: clear messages, exit codes, nothing written.
  auto not_empty =
      suite.Ctl({"checkpoint", "export", best_id, "-e", "models", "--to", out.string()});
  EXPECT_EQ(not_empty.exit_code, 2) << not_empty.Describe();
  EXPECT_NE(not_empty.err.find("exists and is not empty"), std::string::npos)
      << not_empty.Describe();
  WriteFile(dir.path() / "a-file", "x");
  auto unwritable = suite.Ctl({"checkpoint", "export", best_id, "-e", "models", "--to",
                               (dir.path() / "a-file" / "sub").string()});
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.Describe();
  EXPECT_NE(unwritable.err.find("cannot create"), std::string::npos) << unwritable.Describe();
  auto no_checkpoint = suite.Ctl(
      {"checkpoint", "export", plain_id, "-e", "plain", "--to", (dir.path() / "none").string()});
  EXPECT_EQ(no_checkpoint.exit_code, 1) << no_checkpoint.Describe();
  EXPECT_NE(no_checkpoint.err.find("has no stored checkpoint"), std::string::npos)
      << no_checkpoint.Describe();
  auto bad_id = suite.Ctl({"checkpoint", "export", best_id, "--checkpoint", "nosuch", "-e",
                           "models", "--to", (dir.path() / "none").string()});
  EXPECT_EQ(bad_id.exit_code, 1) << bad_id.Describe();
  EXPECT_NE(bad_id.err.find("keeps no checkpoint nosuch; it keeps"), std::string::npos)
      << bad_id.Describe();
  auto bad_trial = suite.Ctl(
      {"checkpoint", "export", "nosuch", "-e", "models", "--to", (dir.path() / "none").string()});
  EXPECT_EQ(bad_trial.exit_code, 1) << bad_trial.Describe();
  EXPECT_NE(bad_trial.err.find("no trial nosuch"), std::string::npos) << bad_trial.Describe();
  EXPECT_FALSE(fs::exists(dir.path() / "none"));
  for (const auto& f : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(f.path().filename().string().find(".partial"), std::string::npos) << f.path();
  }
}

// Runs experiment `name` (the mock trainable, metric mean_accuracy, `yaml` added) on `cluster`
// to FINISHED and until its journal's last record is experiment_ended. Returns its journal's
// name, or "" after adding a test failure.
std::string RunToTheEnd(Cluster& cluster, const std::string& name, const std::string& yaml) {
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, "name: " + name + "\ntrainable: {builtin: mock}\n" + yaml +
                      "metric: mean_accuracy\nmode: max\nresults_dir: " +
                      (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, name);
  if (journal.empty()) return "";
  EXPECT_EQ(WaitFinished(cluster, 60s).value("status", ""), "FINISHED");
  const bool ended = WaitFor(
      [&] {
        return ReadJournal(cluster.store(), journal).back().value("kind", "") == "experiment_ended";
      },
      10s, 100ms);
  EXPECT_TRUE(ended) << journal;
  return ended ? journal : "";
}

TEST(FinishedExperimentsTest, ReadingAFinishedExperimentAppendsNothingToItsJournal) {
  // A finished experiment read after a scheduler restart is loaded read-only: its journal (read
  // straight from the checkpoint-store) has the same records after ls, show, best, status and a
  // checkpoint export, and it does not become the current experiment of a resume.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const std::string journal =
      RunToTheEnd(cluster, "ro",
                  "param_space: {lr: {grid_search: [0.01, 0.1]}, mock_iterations: 5}\n"
                  "stop: {training_iteration: 3}\ncheckpoint_at_end: true\n");
  ASSERT_FALSE(journal.empty());
  ASSERT_TRUE(cluster.Restart("scheduler"));
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"lsx"}, 2s).exit_code == 0; }, 20s, 100ms));
  const size_t records = ReadJournal(cluster.store(), journal).size();
  ASSERT_GT(records, 0u);

  auto best = cluster.Ctl({"-o", "json", "best", "-e", journal});  // the journal name works too
  ASSERT_EQ(best.exit_code, 0) << best.Describe();
  const std::string id = best.Json().value("trial_id", "");
  EXPECT_EQ(cluster.Ctl({"-o", "json", "ls", "-e", "ro"}).Json().size(), 2u);
  EXPECT_EQ(cluster.Ctl({"show", id, "-e", "ro"}).exit_code, 0);
  auto status = cluster.Ctl({"-o", "json", "status"});  // no -e: the newest journaled experiment
  ASSERT_EQ(status.exit_code, 0) << status.Describe();
  EXPECT_EQ(status.Json().value("read_only", false), true) << status.out;
  EXPECT_EQ(status.Json().value("journal", ""), journal) << status.out;
  auto exported =
      cluster.Ctl({"checkpoint", "export", id, "--to", (cluster.dir() / "ckpt").string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.Describe();
  EXPECT_NE(ReadFile(cluster.dir() / "ckpt" / "checkpoint.json").find("\"iteration\":3"),
            std::string::npos);

  EXPECT_EQ(ReadJournal(cluster.store(), journal).size(), records);
  // Not current: stopping "it" finds nothing to stop.
  auto stopx = cluster.Ctl({"stop-experiment"});
  EXPECT_EQ(stopx.exit_code, 1) << stopx.Describe();
  EXPECT_EQ(ReadJournal(cluster.store(), journal).size(), records);
  for (const auto& trial : fs::directory_iterator(cluster.dir() / "results" / "ro")) {
    if (trial.is_directory()) {
      EXPECT_FALSE(fs::exists(trial.path() / "checkpoint_tmp")) << trial.path();
    }
  }
}

TEST(FinishedExperimentsTest, ALateCheckpointAfterTheEndLeavesTheExperimentFinished) {
  // An experiment ended, then a checkpoint_saved is journaled after experiment_ended (an upload
  // the store committed is answered late). A restarted scheduler does not resume it: it stays
  // finished and read-only (no experiment_resumed record), and the late checkpoint is adopted
  // (listed on its trial).
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const std::string journal = RunToTheEnd(cluster, "late", "param_space: {mock_iterations: 3}\n");
  ASSERT_FALSE(journal.empty());
  const std::string trial_id = journal.substr(journal.size() - 5) + "_00000";
  Trial t;
  t.trial_id = trial_id;
  t.attempt = 1;
  const std::string late_id = journal + "/" + trial_id + "/00000003-a1";
  ASSERT_GT(AppendJournal(cluster.store(), journal,
                          {journal::CheckpointSavedRecord(t, {late_id, 3, 0.3, std::nullopt, 10})}),
            0u);
  const size_t records = ReadJournal(cluster.store(), journal).size();

  ASSERT_TRUE(cluster.Restart("scheduler"));
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"lsx"}, 2s).exit_code == 0; }, 20s, 100ms));
  auto status = cluster.Ctl({"-o", "json", "status"});
  ASSERT_EQ(status.exit_code, 0) << status.Describe();
  EXPECT_EQ(status.Json().value("read_only", false), true) << status.out;
  EXPECT_EQ(status.Json().value("status", ""), "FINISHED") << status.out;
  auto show = cluster.Ctl({"-o", "json", "show", trial_id, "-e", "late"});
  ASSERT_EQ(show.exit_code, 0) << show.Describe();
  ASSERT_EQ(show.Json()["checkpoints"].size(), 1u) << show.out;
  EXPECT_EQ(show.Json()["checkpoints"][0].value("checkpoint_id", ""), late_id);
  const auto after = ReadJournal(cluster.store(), journal);
  EXPECT_EQ(after.size(), records);
  for (const json& r : after) EXPECT_NE(r.value("kind", ""), "experiment_resumed") << r.dump();
}

TEST(FinishedExperimentsTest, ANewRunOfAFinishedExperimentWritesToAFreshFolder) {
  // The same file run three times, embedded: the first run writes results/fresh, each later run
  // (new trial ids) a folder of its own, results/fresh-<experiment id>, said on stderr and in
  // the run's results_dir; the earlier runs' folders are left as they were.
  TempDir dir;
  const fs::path file = dir.path() / "fresh.yaml";
  WriteFile(file,
            "name: fresh\ntrainable: {builtin: mock}\nparam_space: {mock_iterations: 2}\n"
            "num_samples: 2\nresults_dir: results\n");
  const fs::path results = dir.path() / "results";
  std::vector<fs::path> folders;
  std::map<std::string, std::string> first_files;
  for (int run_no = 1; run_no <= 3; ++run_no) {
    SCOPED_TRACE(run_no);
    auto run = RunTunectl({"-o", "json", "run", "--cpus", "2", file.string()}, 60s,
                          dir.path() / ("tunectl" + std::to_string(run_no)), dir.path());
    ASSERT_EQ(run.exit_code, 0) << run.Describe();
    const json summary = run.Json();
    ASSERT_TRUE(summary.is_object()) << run.out;
    const std::string id = summary.value("experiment_id", "");
    const fs::path folder = summary.value("results_dir", "");
    EXPECT_EQ(folder, run_no == 1 ? results / "fresh" : results / ("fresh-" + id)) << run.out;
    if (run_no > 1) {
      EXPECT_NE(run.err.find("fresh holds an earlier run; this run writes to " + folder.string()),
                std::string::npos)
          << run.Describe();
      EXPECT_EQ(FilesIn(results / "fresh"), first_files);  // untouched
    } else {
      first_files = FilesIn(results / "fresh");
    }
    int trial_folders = 0;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (!entry.is_directory()) continue;
      ++trial_folders;
      EXPECT_EQ(entry.path().filename().string().rfind(id + "_", 0), 0u) << entry.path();
    }
    EXPECT_EQ(trial_folders, 2);
    folders.push_back(folder);
  }
  EXPECT_NE(folders[1], folders[2]);
}

}  // namespace
}  // namespace tunebus::testing
