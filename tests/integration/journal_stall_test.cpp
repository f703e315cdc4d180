// The scheduler's journal reads are asynchronous requests on its own store
// client. With a checkpoint-store whose journal reads stall 5 s (--read-delay-ms, a test seam),
// `tunectl lsx` and a read of a finished experiment that lives only in the store each wait out
// the stall, while a running experiment's results keep being decided: the gap between two
// decisions its trainable receives stays far below the stall. The lsx answer is still correct
// after the stall, and a repeated lsx does only the journal_list round trip (rows are cached by
// journal and length).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kStallMs = 5000;

// A shell trainable that reports score = i for i = 1, 2, ... and writes the wall-clock time it
// received each decision (seconds since the epoch) to <trial dir>/decided.
constexpr const char* kCounter =
    "i=0\n"
    "while :; do\n"
    "  i=$((i + 1))\n"
    "  echo \"{\\\"score\\\": $i}\" >&$TUNEBUS_REPORT_FD\n"
    "  read -r decision <&$TUNEBUS_DECISION_FD\n"
    "  date +%s.%N >> \"$TUNEBUS_TRIAL_DIR/decided\"\n"
    "  [ \"$decision\" = stop ] && exit 0\n"
    "  sleep 0.02\n"
    "done\n";

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The decision times of the only trial under `dir` (its `decided` file).
std::vector<double> DecisionTimes(const fs::path& dir) {
  std::vector<double> times;
  if (!fs::exists(dir)) return times;
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (f.path().filename() != "decided") continue;
    for (const std::string& line : ReadLines(f.path())) {
      if (!line.empty()) times.push_back(std::stod(line));
    }
  }
  std::sort(times.begin(), times.end());
  return times;
}

// The longest wait for a decision within [from, to]: the largest gap between consecutive
// decisions that ends inside it, and the wait from the last one to `to`.
double LongestGap(const std::vector<double>& times, double from, double to) {
  double longest = 0, previous = from;
  for (double t : times) {
    if (t < from) {
      previous = t;
      continue;
    }
    if (t > to) break;
    longest = std::max(longest, t - previous);
    previous = t;
  }
  return std::max(longest, to - previous);
}

TEST(JournalStallTest, LsxDuringAFiveSecondStoreStallDelaysNoDecision) {
  ClusterOptions options;
  options.workers = 1;
  options.service_args["checkpoint-store"] = {"--read-delay-ms", std::to_string(kStallMs)};
  options.ready_timeout = 40s;  // the scheduler serves once its resume read the journals
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  const fs::path results = cluster.dir() / "results";

  // A finished experiment that, after the restart, lives only in the store's journal.
  const fs::path done_file = cluster.dir() / "stalldone.yaml";
  WriteFile(done_file,
            "name: stalldone\n"
            "trainable: {builtin: mock}\n"
            "param_space:\n"
            "  mock_iterations: 2\n"
            "results_dir: " +
                results.string() + "\n");
  auto run = cluster.Ctl({"run", done_file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  ASSERT_TRUE(cluster.Restart("scheduler"));
  // Serving again once its resume read the journals (two stalls); `workers` reads none.
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"workers"}, 2s).exit_code == 0; }, 40s, 200ms))
      << cluster.LogTails();

  // A running experiment whose every result waits for the scheduler's decision.
  const fs::path counter_dir = cluster.dir() / "counter";
  fs::create_directories(counter_dir);
  WriteFile(counter_dir / "count.sh", kCounter);
  const fs::path counting_file = counter_dir / "counting.yaml";
  WriteFile(counting_file,
            "name: counting\n"
            "trainable: {command: [sh, " +
                (counter_dir / "count.sh").string() +
                "]}\n"
                "working_dir: false\n"
                "param_space:\n"
                "  x: {grid_search: [1]}\n"
                "metric: score\n"
                "mode: max\n"
                "stop: {training_iteration: 1000000}\n"
                "results_dir: " +
                results.string() + "\n");
  ASSERT_NE(SubmitDetached(cluster, counting_file, "counting"), "");
  ASSERT_TRUE(WaitFor([&] { return DecisionTimes(results / "counting").size() >= 20; }, 30s))
      << cluster.LogTails();

  // A read of the finished experiment (journal_list, the changed journal's summary, the replay)
  // while lsx runs: both wait for the stalled store, the running trial does not.
  const std::vector<std::string> lsx = {"--timeout-ms", "60000", "-o", "json", "lsx"};
  CommandResult status_done;
  std::thread reader([&] {
    status_done =
        cluster.Ctl({"--timeout-ms", "60000", "-o", "json", "status", "-e", "stalldone"}, 90s);
  });
  const double started = WallNow();
  auto first = cluster.Ctl(lsx, 90s);
  const double answered = WallNow();
  reader.join();
  const double reader_done = WallNow();
  ASSERT_EQ(first.exit_code, 0) << first.Describe();
  ASSERT_EQ(status_done.exit_code, 0) << status_done.Describe();

  // The journals' names come from the list the resume read (JournalReader::RecentLengths: its
  // refresh goes on in the background); the replay of stalldone's journal waits: one stall.
  const double lsx_s = answered - started;
  EXPECT_GE(lsx_s, kStallMs / 1000.0 - 0.5);
  EXPECT_LT(lsx_s, 2 * kStallMs / 1000.0 - 0.5) << "lsx waited for a journal_list";
  const std::vector<double> times = DecisionTimes(results / "counting");
  const double longest = LongestGap(times, started, std::max(answered, reader_done));
  int64_t decided_meanwhile = 0;
  for (double t : times) decided_meanwhile += t >= started && t <= answered ? 1 : 0;
  RecordProperty("lsx_s", std::to_string(lsx_s));
  RecordProperty("longest_decision_gap_ms", std::to_string(longest * 1000));
  RecordProperty("decisions_during_lsx", std::to_string(decided_meanwhile));
  std::printf("lsx took %.2f s; %lld decisions meanwhile, the longest wait for one %.0f ms\n",
              lsx_s, static_cast<long long>(decided_meanwhile), longest * 1000);
  EXPECT_LT(longest, 1.0) << "a decision waited for the stalled journal read";
  EXPECT_GE(decided_meanwhile, 20);

  // The answers, correct after the stall.
  const json rows = first.Json();
  ASSERT_TRUE(rows.is_array()) << first.Describe();
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0].value("name", ""), "stalldone");
  EXPECT_EQ(rows[0].value("status", ""), "FINISHED") << rows[0].dump();
  EXPECT_EQ(rows[0].value("total", 0), 1);
  EXPECT_EQ(rows[0]["counts"].value("TERMINATED", 0), 1) << rows[0].dump();
  EXPECT_EQ(rows[1].value("name", ""), "counting");
  EXPECT_EQ(rows[1].value("status", ""), "RUNNING") << rows[1].dump();
  EXPECT_EQ(rows[1]["counts"].value("RUNNING", 0), 1) << rows[1].dump();
  const json done = status_done.Json();
  EXPECT_EQ(done.value("read_only", false), true) << status_done.Describe();
  EXPECT_EQ(done.value("name", ""), "stalldone") << status_done.Describe();

  // Again: stalldone's row is cached by its journal's length, so only journal_list stalls.
  const double again_started = WallNow();
  auto again = cluster.Ctl(lsx, 90s);
  const double again_s = WallNow() - again_started;
  ASSERT_EQ(again.exit_code, 0) << again.Describe();
  RecordProperty("repeated_lsx_s", std::to_string(again_s));
  std::printf("the repeated lsx took %.2f s\n", again_s);
  EXPECT_LT(again_s, 2 * kStallMs / 1000.0 - 2) << "the repeated lsx replayed a journal again";
  const json again_rows = again.Json();
  ASSERT_TRUE(again_rows.is_array()) << again.Describe();
  ASSERT_EQ(again_rows.size(), 2u);
  EXPECT_EQ(again_rows[0], rows[0]);
}

}  // namespace
}  // namespace tunebus::testing
