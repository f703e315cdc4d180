// A finished experiment's state leaves the scheduler's memory once it has ended and nothing of it
// is in flight for --release-after-ms (the scheduler's metrics count it released), and a
// read-only copy of it goes to the finished cache (--finished-cache-mb); every read then answers
// from that copy as it did before (ls, show, best, export, lsx, resume's refusal and the
// dashboard's API), and exactly as a replay of its journal answers (after a restart). And reading a
// finished 2,000-trial experiment back from its journal leaves the scheduler's resident memory
// within the cache's budget (plus a margin) of where it was. An experiment with a searcher link
// (a socket on the scheduler's loop) is released while the scheduler runs on.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  auto res = client.Get("/metrics");
  return res && res->status == 200 ? res->body : std::string();
}

// The value of metric line `name` (e.g. "tunebus_experiments_resident"), or -1.
double Metric(const std::string& text, const std::string& name) {
  std::smatch m;
  const std::regex line("(^|\n)" + name + " ([0-9.e+-]+)");
  return std::regex_search(text, m, line) ? std::stod(m[2].str()) : -1;
}

// Resident bytes of process `pid` (/proc/<pid>/statm's second field, in pages).
int64_t ResidentBytes(pid_t pid) {
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  int64_t size = 0, resident = -1;
  statm >> size >> resident;
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

fs::path WriteAsha(const fs::path& dir, const std::string& name, int trials) {
  const fs::path file = dir / (name + ".yaml");
  WriteFile(file, "name: " + name +
                      "\n"
                      "trainable: {builtin: mock}\n"
                      "param_space:\n"
                      "  lr: {loguniform: [0.001, 0.1]}\n"
                      "  mock_iterations: 9\n"
                      "  sleep_s: 0.0\n"
                      "num_samples: " +
                      std::to_string(trials) +
                      "\n"
                      "seed: 3\n"
                      "metric: mean_accuracy\n"
                      "mode: max\n"
                      "scheduler: {type: asha, time_attr: training_iteration, max_t: 9, "
                      "grace_period: 1, reduction_factor: 3}\n"
                      "max_concurrent_trials: 4\n"
                      "results_dir: " +
                      (dir / "results").string() + "\n");
  return file;
}

// What the read commands and the dashboard answer about experiment `name`.
struct Answers {
  json ls, best, show, lsx_row, api_experiment_counts, api_trials, status;
  std::string csv, resume_error;
};

Answers Read(Cluster& cluster, const std::string& name) {
  Answers a;
  a.ls = cluster.Ctl({"-o", "json", "ls", "-e", name}).Json();
  a.best = cluster.Ctl({"-o", "json", "best", "-e", name}).Json();
  a.show = cluster.Ctl({"-o", "json", "show", a.best.value("trial_id", ""), "-e", name}).Json();
  a.csv = cluster.Ctl({"export", "-e", name, "--format", "csv"}).out;
  a.status = cluster.Ctl({"-o", "json", "status", "-e", name}).Json();
  for (const json& row : cluster.Ctl({"-o", "json", "lsx"}).Json()) {
    if (row.value("name", "") == name) {
      // What lsx says of every experiment (a live one has its fair-share fields besides).
      for (const char* key : {"name", "journal", "status", "counts", "total", "submitted_at"})
        a.lsx_row[key] = row[key];
    }
  }
  a.resume_error = cluster.Ctl({"resume", name}).err;
  std::smatch m;
  const std::string url = cluster.http();
  if (std::regex_match(url, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/)"))) {
    httplib::Client client("127.0.0.1", std::stoi(m[1].str()));
    client.set_read_timeout(20, 0);
    if (auto r = client.Get("/api/experiments/" + name); r && r->status == 200)
      a.api_experiment_counts = json::parse(r->body, nullptr, false)["counts"];
    if (auto r = client.Get("/api/experiments/" + name + "/trials"); r && r->status == 200)
      a.api_trials = json::parse(r->body, nullptr, false);
  }
  return a;
}

TEST(FinishedMemoryTest, AReleasedExperimentAnswersEveryReadAsBefore) {
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 4;
  o.metrics = true;
  o.scheduler_args = {"--release-after-ms", "11000", "--http", "127.0.0.1:0"};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int port = cluster.metrics_port("scheduler");
  ASSERT_FALSE(SubmitDetached(cluster, WriteAsha(cluster.dir(), "rel", 60), "rel").empty());
  ASSERT_FALSE(WaitFinished(cluster, 120s, "rel").empty()) << cluster.LogTails();

  // Still in memory: the answers of the live experiment.
  const Answers live = Read(cluster, "rel");
  // The figures are rendered every second: wait for a render that has seen its end.
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = Scrape(port);
        return text.find("tunebus_trials{status=\"TERMINATED\"} 60") != std::string::npos;
      },
      5s, 100ms))
      << text;
  ASSERT_EQ(Metric(text, "tunebus_experiments_resident"), 1) << text;
  EXPECT_EQ(Metric(text, "tunebus_experiments_released_total"), 0) << text;
  ASSERT_EQ(live.ls.size(), 60u) << live.ls.dump();
  ASSERT_FALSE(live.best.value("trial_id", "").empty()) << live.best.dump();
  ASSERT_EQ(std::count(live.csv.begin(), live.csv.end(), '\n'), 61) << live.csv;
  ASSERT_NE(live.resume_error.find("is finished"), std::string::npos) << live.resume_error;
  ASSERT_FALSE(live.api_trials.is_null()) << cluster.LogTails();

  // Released once nothing of it was in flight for --release-after-ms.
  EXPECT_TRUE(WaitFor(
      [&] {
        text = Scrape(port);
        return Metric(text, "tunebus_experiments_released_total") == 1;
      },
      40s, 500ms))
      << text << cluster.LogTails();
  EXPECT_EQ(Metric(text, "tunebus_experiments_resident"), 0) << text;
  // Its trials still count in the scheduler's figures.
  EXPECT_NE(text.find("tunebus_trials{status=\"TERMINATED\"} 60"), std::string::npos) << text;
  // Its read-only copy is in the finished cache before anything read it (the figures are
  // rendered every second).
  EXPECT_TRUE(WaitFor(
      [&] {
        text = Scrape(port);
        return Metric(text, "tunebus_finished_cache_entries") == 1;
      },
      5s, 200ms))
      << text << cluster.LogTails();
  const double released_bytes = Metric(text, "tunebus_finished_cache_bytes");
  EXPECT_GT(released_bytes, 60 * 200) << text;

  const Answers released = Read(cluster, "rel");
  EXPECT_EQ(released.status.value("read_only", false), true) << released.status.dump();
  EXPECT_EQ(released.status["counts"].value("TERMINATED", -1), 60) << released.status.dump();
  EXPECT_EQ(released.ls, live.ls);
  EXPECT_EQ(released.best, live.best);
  EXPECT_EQ(released.show, live.show);
  EXPECT_EQ(released.csv, live.csv);
  EXPECT_EQ(released.lsx_row, live.lsx_row);
  EXPECT_EQ(released.resume_error, live.resume_error);
  EXPECT_EQ(released.api_experiment_counts, live.api_experiment_counts);
  EXPECT_EQ(released.api_trials, live.api_trials);
  // The figures are rendered every second.
  EXPECT_TRUE(WaitFor(
      [&] {
        text = Scrape(port);
        return Metric(text, "tunebus_finished_cache_entries") == 1;
      },
      5s, 200ms))
      << text;
  // The reads were answered from the copy made at the release: nothing was loaded since.
  EXPECT_EQ(Metric(text, "tunebus_finished_cache_bytes"), released_bytes) << text;
  EXPECT_EQ(cluster.process("scheduler")->Output().find("Loaded experiment rel"), std::string::npos)
      << cluster.LogTails();

  // `tunectl resume --rerun-errored` of it replays its journal in full, as before.
  auto rerun = cluster.Ctl({"resume", "rel", "--rerun-errored", "restart"});
  EXPECT_NE(rerun.err.find("is finished"), std::string::npos) << rerun.Describe();
  EXPECT_TRUE(cluster.Dead().empty()) << cluster.LogTails();

  // A restarted scheduler has nothing in its cache: the same reads replay the journal, and
  // answer byte for byte what the copy made at the release answered.
  ASSERT_TRUE(cluster.Restart("scheduler"));
  const Answers replayed = Read(cluster, "rel");
  EXPECT_EQ(replayed.ls.dump(), released.ls.dump());
  EXPECT_EQ(replayed.best.dump(), released.best.dump());
  EXPECT_EQ(replayed.show.dump(), released.show.dump());
  EXPECT_EQ(replayed.csv, released.csv);
  EXPECT_EQ(replayed.lsx_row.dump(), released.lsx_row.dump());
  EXPECT_EQ(replayed.status.dump(), released.status.dump());
  EXPECT_EQ(replayed.resume_error, released.resume_error);
  EXPECT_EQ(replayed.api_experiment_counts.dump(), released.api_experiment_counts.dump());
  EXPECT_EQ(replayed.api_trials.dump(), released.api_trials.dump());
  const int restarted_port = cluster.metrics_port("scheduler");
  EXPECT_TRUE(WaitFor(
      [&] {
        text = Scrape(restarted_port);
        return Metric(text, "tunebus_finished_cache_entries") == 1;
      },
      5s, 200ms))
      << text;
  // The same estimate within the searcher state's form (whole, or a state and its deltas).
  const double replayed_bytes = Metric(text, "tunebus_finished_cache_bytes");
  EXPECT_NEAR(replayed_bytes, released_bytes, 0.1 * released_bytes) << text;
  std::printf("finished cache bytes: copy made at the release %g, replayed %g\n", released_bytes,
              replayed_bytes);
}

// Experiments whose searcher runs in its own process (`search: {type: external, command}`) end
// and are released one after another: each release frees the link's socket, which the loop
// polled, and the scheduler answers every request on and runs the next experiment to its end.
// Skipped when /usr/bin/python3 cannot import zmq, msgpack and optuna.
TEST(FinishedMemoryTest, ExperimentsWithSearcherLinksAreReleasedWhileTheSchedulerRuns) {
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 4;
  o.metrics = true;
  o.scheduler_args = {"--release-after-ms", "11000"};  // the least it takes
  Cluster cluster(o);
  if (!PythonImports(cluster.dir() / "logs", "zmq, msgpack, optuna"))
    GTEST_SKIP() << "/usr/bin/python3 cannot import zmq, msgpack and optuna";
  ASSERT_TRUE(cluster.Start());
  const int port = cluster.metrics_port("scheduler");
  const fs::path folder = cluster.dir() / "exp";
  fs::create_directories(folder);
  const std::string script =
      fs::relative(SourceDir() / "clients/python/tunebus/searcher.py", folder).string();
  std::string text;
  for (int n = 1; n <= 2; ++n) {
    const std::string name = "linked" + std::to_string(n);
    const fs::path file = folder / (name + ".yaml");
    WriteFile(file, ExternalSearchExperiment(name, 3,
                                             "  type: external\n"
                                             "  command: [/usr/bin/python3, " +
                                                 script + ", --sampler, tpe, --seed, '1']\n",
                                             cluster.dir() / "results"));
    ASSERT_FALSE(SubmitDetached(cluster, file, name).empty()) << cluster.LogTails();
    const json summary = WaitFinished(cluster, 120s, name);
    ASSERT_EQ(summary.value("status", ""), "FINISHED") << summary.dump() << cluster.LogTails();
    ASSERT_TRUE(WaitFor(
        [&] {
          text = Scrape(port);
          return Metric(text, "tunebus_experiments_released_total") == n;
        },
        40s, 200ms))
        << text << cluster.LogTails();
    // Rounds of the loop after the release: every request is answered.
    for (int i = 0; i < 10; ++i) {
      const json status = cluster.Ctl({"-o", "json", "status", "-e", name}, 10s).Json();
      ASSERT_EQ(status["counts"].value("TERMINATED", -1), 3) << status.dump() << cluster.LogTails();
    }
  }
  EXPECT_TRUE(cluster.Dead().empty()) << cluster.LogTails();
}

TEST(FinishedMemoryTest, ReadingAFinishedExperimentLeavesMemoryWithinTheCacheBudget) {
  constexpr int64_t kCacheMb = 4;
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 4;
  o.metrics = true;
  o.scheduler_args = {"--release-after-ms", "11000", "--finished-cache-mb",
                      std::to_string(kCacheMb)};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int port = cluster.metrics_port("scheduler");
  ASSERT_FALSE(SubmitDetached(cluster, WriteAsha(cluster.dir(), "big", 2000), "big").empty());
  ASSERT_FALSE(WaitFinished(cluster, 300s, "big").empty()) << cluster.LogTails();
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = Scrape(port);
        return Metric(text, "tunebus_experiments_released_total") == 1;
      },
      40s, 500ms))
      << text << cluster.LogTails();
  const pid_t scheduler = cluster.process("scheduler")->pid();
  std::this_thread::sleep_for(1s);
  const int64_t before = ResidentBytes(scheduler);
  ASSERT_GT(before, 0);
  for (int i = 0; i < 2; ++i) {
    auto ls = cluster.Ctl({"-o", "json", "ls", "-e", "big"}, 60s);
    ASSERT_EQ(ls.exit_code, 0) << ls.Describe();
    ASSERT_EQ(ls.Json().size(), 2000u);
    ASSERT_EQ(cluster.Ctl({"-o", "json", "best", "-e", "big"}, 60s).exit_code, 0);
  }
  std::this_thread::sleep_for(1500ms);  // the figures are rendered every second
  const int64_t after = ResidentBytes(scheduler);
  text = Scrape(port);
  EXPECT_GT(Metric(text, "tunebus_finished_cache_entries"), -1) << text;
  EXPECT_LE(Metric(text, "tunebus_finished_cache_bytes"), double(kCacheMb << 20)) << text;
  // The cache's budget plus a margin for what malloc keeps of the replay's pages (measured: a
  // few MB; 40 MB stayed resident before the finished cache and the release of malloc's memory).
  constexpr int64_t kMargin = 12 << 20;
  EXPECT_LE(after - before, (kCacheMb << 20) + kMargin)
      << "resident before the reads " << before << " bytes, after " << after;
  std::printf("scheduler RSS before the reads %lld bytes, after %lld (cache %g bytes)\n",
              static_cast<long long>(before), static_cast<long long>(after),
              Metric(text, "tunebus_finished_cache_bytes"));
}

}  // namespace
}  // namespace tunebus::testing
