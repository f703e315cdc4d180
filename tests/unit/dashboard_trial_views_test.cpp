// The trial page's views (services/scheduler/dashboard/views/trial_views.hpp): result pages of
// result.json text, checkpoint rows, export file names, and the tails of the output files, on
// hand-made text and JSON.
#include <gtest/gtest.h>

#include <string>

#include "services/scheduler/dashboard/views/trial_views.hpp"

namespace tunebus::dashboard {
namespace {

using nlohmann::json;

// n result lines (training_iteration 1..n, score i/10, config on every row, "note" from row 3),
// and a torn last line as the writer may leave it mid-append.
std::string ResultLines(int n, bool torn = true) {
  std::string text;
  for (int i = 1; i <= n; ++i) {
    json row = {{"training_iteration", i},
                {"score", i / 10.0},
                {"time_total_s", i * 0.5},
                {"timestamp", 1000 + i},
                {"config", {{"lr", 0.1}}}};
    if (i >= 3) row["note"] = "r" + std::to_string(i);
    text += row.dump() + "\n";
  }
  if (torn) text += R"({"training_iteration": )";
  return text;
}

TEST(DashboardTrialViewsTest, ResultsQueriesAreChecked) {
  EXPECT_TRUE(CheckResultsQuery({std::nullopt, 100}).ok());
  EXPECT_TRUE(CheckResultsQuery({0, ResultsQuery::kMaxLimit}).ok());
  EXPECT_FALSE(CheckResultsQuery({-1, 10}).ok());
  EXPECT_FALSE(CheckResultsQuery({0, 0}).ok());
  EXPECT_FALSE(CheckResultsQuery({0, ResultsQuery::kMaxLimit + 1}).ok());
}

// Without an offset the page is the tail; rows are as written; a torn line is no row.
TEST(DashboardTrialViewsTest, TheDefaultPageIsTheLastRows) {
  const json page = ResultPage(ResultLines(7), {std::nullopt, 3}, "score");
  EXPECT_EQ(page["total"], 7);
  EXPECT_EQ(page["offset"], 4);
  EXPECT_EQ(page["limit"], 3);
  ASSERT_EQ(page["rows"].size(), 3u);
  EXPECT_EQ(page["rows"][0]["training_iteration"], 5);
  EXPECT_EQ(page["rows"][2]["training_iteration"], 7);
  EXPECT_EQ(page["rows"][2]["note"], "r7");
  EXPECT_EQ(page["rows"][2]["config"]["lr"], 0.1);
  // Fewer rows than the limit: all of them from 0.
  const json all = ResultPage(ResultLines(2), {std::nullopt, 100}, "score");
  EXPECT_EQ(all["offset"], 0);
  EXPECT_EQ(all["rows"].size(), 2u);
}

TEST(DashboardTrialViewsTest, AnOffsetPagesFromTheStart) {
  const json page = ResultPage(ResultLines(7), {2, 3}, "score");
  EXPECT_EQ(page["offset"], 2);
  ASSERT_EQ(page["rows"].size(), 3u);
  EXPECT_EQ(page["rows"][0]["training_iteration"], 3);
  const json end = ResultPage(ResultLines(7), {5, 3}, "score");
  ASSERT_EQ(end["rows"].size(), 2u);
  EXPECT_EQ(end["rows"][1]["training_iteration"], 7);
  EXPECT_TRUE(ResultPage(ResultLines(7), {9, 3}, "score")["rows"].empty());
  const json empty = ResultPage("", {std::nullopt, 10}, "score");
  EXPECT_EQ(empty["total"], 0);
  EXPECT_TRUE(empty["rows"].empty());
  EXPECT_TRUE(empty["columns"].empty());
}

// The columns are every row's keys (a key only later rows have too, even off the page):
// training_iteration, the metric, time_total_s first, config last, the others by name.
TEST(DashboardTrialViewsTest, ColumnsAreEveryRowsKeysInAStableOrder) {
  const json page = ResultPage(ResultLines(7), {0, 2}, "score");
  EXPECT_EQ(page["columns"],
            json({"training_iteration", "score", "time_total_s", "note", "timestamp", "config"}));
  const json no_metric = ResultPage(ResultLines(1, false), {0, 2}, "loss");
  EXPECT_EQ(no_metric["columns"],
            json({"training_iteration", "time_total_s", "score", "timestamp", "config"}));
}

TEST(DashboardTrialViewsTest, CheckpointRowsTakeTheirResultsTimestamp) {
  const json trial = {
      {"trial_id", "t1"},
      {"checkpoints",
       {{{"checkpoint_id", "exp-1/t1/00000002-a1"},
         {"training_iteration", 2},
         {"time_total_s", 1.0},
         {"score", nullptr},
         {"size_bytes", 2048}},
        {{"checkpoint_id", "exp-1/t1/00000009-a2"},
         {"training_iteration", 9},
         {"time_total_s", 4.5},
         {"score", 0.9},
         {"size_bytes", 10}}}},
      {"checkpoints_not_stored", {{{"training_iteration", 4}, {"reason", "io_error: full"}}}}};
  const json rows = CheckpointRows(trial, ResultLines(7));
  ASSERT_EQ(rows["checkpoints"].size(), 2u);
  const json& first = rows["checkpoints"][0];
  EXPECT_EQ(first["checkpoint_id"], "exp-1/t1/00000002-a1");
  EXPECT_EQ(first["name"], "00000002-a1");
  EXPECT_EQ(first["training_iteration"], 2);
  EXPECT_EQ(first["size_bytes"], 2048);
  EXPECT_EQ(first["timestamp"], 1002);
  EXPECT_TRUE(first["score"].is_null());
  // No result row at iteration 9 in the file.
  EXPECT_TRUE(rows["checkpoints"][1]["timestamp"].is_null());
  EXPECT_EQ(rows["checkpoints"][1]["score"], 0.9);
  EXPECT_EQ(rows["not_stored"][0]["reason"], "io_error: full");
  // A trial without checkpoints.
  const json none = CheckpointRows(json{{"trial_id", "t2"}}, "");
  EXPECT_TRUE(none["checkpoints"].empty());
  EXPECT_TRUE(none["not_stored"].empty());
}

TEST(DashboardTrialViewsTest, ExportFileNamesAreSafeInAHeader) {
  EXPECT_EQ(CheckpointName("exp-1/t1/00000002-a1"), "00000002-a1");
  EXPECT_EQ(CheckpointName("00000002-a1"), "00000002-a1");
  EXPECT_EQ(ExportFileName("t1", "exp-1/t1/00000002-a1"), "t1_checkpoint_00000002-a1.tar");
  EXPECT_EQ(ExportFileName("a\"b;c d", "x/y\r\n"), "a_b_c_d_checkpoint_y__.tar");
}

TEST(DashboardTrialViewsTest, LogStreamsAndTailSizesAreChecked) {
  EXPECT_EQ(*LogFileName(""), "stdout");
  EXPECT_EQ(*LogFileName("stdout"), "stdout");
  EXPECT_EQ(*LogFileName("stderr"), "stderr");
  EXPECT_FALSE(LogFileName("error.txt").ok());
  EXPECT_FALSE(LogFileName("../stdout").ok());
  EXPECT_TRUE(CheckTailBytes(kDefaultTailBytes).ok());
  EXPECT_TRUE(CheckTailBytes(1).ok());
  EXPECT_FALSE(CheckTailBytes(0).ok());
  EXPECT_FALSE(CheckTailBytes(-1).ok());
  EXPECT_FALSE(CheckTailBytes(kMaxTailBytes + 1).ok());
}

TEST(DashboardTrialViewsTest, TailsStartAtAWholeLine) {
  const TailWindow small = TailOf(100, 64 << 10);
  EXPECT_EQ(small.offset, 0);
  EXPECT_EQ(small.length, 100);
  const TailWindow big = TailOf(100000, 65536);
  EXPECT_EQ(big.offset, 100000 - 65536);
  EXPECT_EQ(big.length, 65536);
  EXPECT_EQ(TailOf(0, 10).length, 0);
  // From the start of the file: as is; from the middle: after the first newline.
  EXPECT_EQ(WholeLines("ab\ncd\n", 0), "ab\ncd\n");
  EXPECT_EQ(WholeLines("ab\ncd\n", 5), "cd\n");
  EXPECT_EQ(WholeLines("no newline", 5), "no newline");
}

}  // namespace
}  // namespace tunebus::dashboard
