// Tests for ResultFiles (services/scheduler/results/result_files.hpp): the writer thread produces
// Ray Tune's per-trial files, keeps a reopened trial's CSV header, and Backlog() counts what is not
// written yet, and the writer thread runs at the lowest priority.
#include "services/scheduler/results/result_files.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/wait_until.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Msgpack(const json& j) {
  std::string bytes;
  json::to_msgpack(j, bytes);
  return bytes;
}

std::vector<std::string> Lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class ResultFilesTest : public ::testing::Test {
 protected:
  ResultFilesTest()
      : dir_(fs::temp_directory_path() /
             ("tunebus-result-files-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {}
  ~ResultFilesTest() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ResultFilesTest, WritesRayTuneFilesAndKeepsTheHeaderWhenATrialReopens) {
  // Two results, the trial closes (paused), then reopens with a result of other keys: the CSV
  // keeps its first header (a new key is left out, a missing one is empty), as Ray Tune's logger.
  const fs::path trial = dir_ / "t_00000_0";
  {
    ResultFiles files;
    files.WriteParams(0, trial.string(), {{"lr", 0.1}});
    files.AppendResult(0, trial.string(), Msgpack({{"acc", 0.5}, {"training_iteration", 1}}));
    EXPECT_TRUE(files.IsOpen(0));
    files.AppendResult(0, "", Msgpack({{"acc", 0.75}, {"training_iteration", 2}}));
    files.Close(0);
    EXPECT_FALSE(files.IsOpen(0));
    files.Drain();
    EXPECT_EQ(files.Backlog(), 0u);
  }
  EXPECT_EQ(json::parse(std::ifstream(trial / "params.json")), (json{{"lr", 0.1}}));
  EXPECT_EQ(Lines(trial / "progress.csv"),
            (std::vector<std::string>{"acc,training_iteration", "0.5,1", "0.75,2"}));
  {
    ResultFiles files;  // a new scheduler process resuming the trial
    files.AppendResult(0, trial.string(), Msgpack({{"new", "x"}, {"training_iteration", 3}}));
    files.Drain();
  }
  const auto lines = Lines(trial / "result.json");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json::parse(lines[2]), (json{{"new", "x"}, {"training_iteration", 3}}));
  EXPECT_EQ(Lines(trial / "progress.csv"),
            (std::vector<std::string>{"acc,training_iteration", "0.5,1", "0.75,2", ",3"}));
}

TEST_F(ResultFilesTest, BacklogCountsWorkUntilItIsWritten) {
  // Staged work counts until the writer has written it; Drain returns with nothing left.
  ResultFiles files;
  for (int i = 0; i < 10; ++i) {
    files.AppendResult(i, (dir_ / ("t" + std::to_string(i))).string(), Msgpack({{"i", i}}));
  }
  EXPECT_EQ(files.Backlog(), 10u);
  files.Drain();
  EXPECT_EQ(files.Backlog(), 0u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(Lines(dir_ / ("t" + std::to_string(i)) / "result.json").size(), 1u) << i;
}

TEST_F(ResultFilesTest, RowsWaitForTheirJournalRecordAndReachTheFileWithoutAClose) {
  // A row staged after journal record 5 stays staged while only record 4 is durable; once 5 is,
  // it is handed over, and the writer flushes it to the kernel within kFileFlushInterval while
  // the file stays open (no Close, no Drain): what `tail -f` and a killed process see.
  ResultFiles files;
  const fs::path trial = dir_ / "t0";
  files.AppendResult(0, trial.string(), Msgpack({{"training_iteration", 1}}), /*after_record=*/5);
  files.Flush(4);
  EXPECT_EQ(files.Backlog(), 1u);
  files.Flush(5);
  EXPECT_TRUE(test_support::WaitUntil(
      "result.json gets its row without a Close",
      [&] { return Lines(trial / "result.json").size() >= 1; }, std::chrono::seconds(5)));
  EXPECT_EQ(Lines(trial / "result.json"),
            (std::vector<std::string>{R"({"training_iteration":1})"}));
  EXPECT_EQ(Lines(trial / "progress.csv"), (std::vector<std::string>{"training_iteration", "1"}));
  EXPECT_TRUE(files.IsOpen(0));
}

TEST_F(ResultFilesTest, UngatedWorkStagedBehindAGatedTaskKeepsItsOrder) {
  // Tasks leave in staging order: one staged after a task that waits for record 9 waits too.
  ResultFiles files;
  const fs::path trial = dir_ / "t0";
  files.AppendResult(0, trial.string(), Msgpack({{"i", 1}}), 9);
  files.AppendResult(0, "", Msgpack({{"i", 2}}));
  files.Flush(8);
  EXPECT_EQ(files.Backlog(), 2u);
  files.Flush(9);
  files.Drain();
  EXPECT_EQ(Lines(trial / "result.json"), (std::vector<std::string>{R"({"i":1})", R"({"i":2})"}));
}

TEST_F(ResultFilesTest, ExperimentsShareOneWriterAndOneLeavesWithoutClosingTheOthersFiles) {
  // Two experiments' ResultFiles on one writer thread: each one's tasks keep their order, one
  // destroyed mid-run leaves its files complete and closed, and the other's open file still
  // reaches the kernel within kFileFlushInterval with no Close or Drain.
  ResultFileWriter writer;
  const fs::path a = dir_ / "a" / "t0", b = dir_ / "b" / "t0";
  auto first = std::make_unique<ResultFiles>(writer);
  ResultFiles second(writer);
  first->AppendResult(0, a.string(), Msgpack({{"i", 1}}));
  second.AppendResult(0, b.string(), Msgpack({{"i", 10}}));
  first->AppendResult(0, "", Msgpack({{"i", 2}}));
  second.Flush(0);
  first.reset();  // hands over its two rows, waits for them, closes its files
  EXPECT_EQ(Lines(a / "result.json"), (std::vector<std::string>{R"({"i":1})", R"({"i":2})"}));
  EXPECT_EQ(Lines(a / "progress.csv"), (std::vector<std::string>{"i", "1", "2"}));
  second.AppendResult(0, "", Msgpack({{"i", 11}}));
  second.Flush(0);
  EXPECT_TRUE(test_support::WaitUntil(
      "b's result.json gets both rows without a Close",
      [&] { return Lines(b / "result.json").size() >= 2; }, std::chrono::seconds(5)));
  EXPECT_EQ(Lines(b / "result.json"), (std::vector<std::string>{R"({"i":10})", R"({"i":11})"}));
  EXPECT_TRUE(second.IsOpen(0));
  EXPECT_EQ(second.Backlog(), 0u);
}

// The nice value of thread `tid` of this process (field 19 of /proc/self/task/<tid>/stat).
int NiceOf(const std::string& tid) {
  std::ifstream in("/proc/self/task/" + tid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3 (state) on
  std::string field;
  for (int i = 3; i <= 19; ++i) fields >> field;
  return std::stoi(field);
}

TEST_F(ResultFilesTest, WriterThreadRunsAtTheLowestPriorityAndTheCallerKeepsItsOwn) {
  // The files yield the CPU to the loop's decisions: the writer thread alone is at nice 19.
  // Threads at nice 19 before it (the writer of a Scheduler another test keeps, such as the
  // control fuzz target's) are not counted.
  const int caller_nice = getpriority(PRIO_PROCESS, id_t(gettid()));
  const auto threads_at_writer_nice = [] {
    std::set<std::string> tids;
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
      const std::string tid = task.path().filename().string();
      if (tid != std::to_string(gettid()) && NiceOf(tid) == ResultFiles::kWriterNice)
        tids.insert(tid);
    }
    return tids;
  };
  const std::set<std::string> before = threads_at_writer_nice();
  std::vector<std::string> writer_threads;
  {
    ResultFiles files;
    files.AppendResult(0, (dir_ / "t0").string(), Msgpack({{"i", 0}}));
    files.Drain();  // the writer thread has run
    for (const std::string& tid : threads_at_writer_nice())
      if (!before.contains(tid)) writer_threads.push_back(tid);
  }
  EXPECT_EQ(writer_threads.size(), 1u);
  EXPECT_EQ(getpriority(PRIO_PROCESS, id_t(gettid())), caller_nice);
  EXPECT_EQ(NiceOf(std::to_string(gettid())), caller_nice);
}

}  // namespace
}  // namespace tunebus
