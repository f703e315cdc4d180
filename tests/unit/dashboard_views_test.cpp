// The dashboard's views (services/scheduler/dashboard/views/views.hpp): the --http flag, the trial
// table's queries, sorting and pages, curves from result.json text, experiment rows and event
// frames, on hand-made JSON.
#include <gtest/gtest.h>

#include "services/scheduler/dashboard/views/views.hpp"

namespace tunebus::dashboard {
namespace {

using nlohmann::json;

// --http 8265 listens on loopback; a host is taken as given; bad ports and hosts are refused.
TEST(DashboardViewsTest, HttpAddressIsLoopbackUnlessAHostIsGiven) {
  auto port_only = ParseHttpAddress("8265");
  ASSERT_TRUE(port_only.ok());
  EXPECT_EQ(port_only->host, "127.0.0.1");
  EXPECT_EQ(port_only->port, 8265);
  auto any = ParseHttpAddress("0.0.0.0:0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 0);
  auto v6 = ParseHttpAddress("[::1]:8265");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  for (const char* bad : {"", "http", "70000", "-1", ":8265", "host:", "::1:8265", "1.2.3.4:x"}) {
    EXPECT_FALSE(ParseHttpAddress(bad).ok()) << bad;
  }
}

// The dashboard connects to a wildcard bind through loopback.
TEST(DashboardViewsTest, WildcardBindsAreReachedThroughLoopback) {
  EXPECT_EQ(LocalConnectEndpoint("tcp://0.0.0.0:5555"), "tcp://127.0.0.1:5555");
  EXPECT_EQ(LocalConnectEndpoint("tcp://[::]:5555"), "tcp://[::1]:5555");
  EXPECT_EQ(LocalConnectEndpoint("tcp://10.0.0.2:5555"), "tcp://10.0.0.2:5555");
  EXPECT_EQ(LocalConnectEndpoint("inproc://tunebus-control"), "inproc://tunebus-control");
}

TEST(DashboardViewsTest, TrialQueriesAreChecked) {
  auto ok = CheckTrialQuery({"running", 10, 25, "-config.lr"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, "RUNNING");
  EXPECT_FALSE(CheckTrialQuery({"DONE", 0, 25, ""}).ok());
  EXPECT_FALSE(CheckTrialQuery({"", -1, 25, ""}).ok());
  EXPECT_FALSE(CheckTrialQuery({"", 0, 0, ""}).ok());
  EXPECT_FALSE(CheckTrialQuery({"", 0, TrialQuery::kMaxLimit + 1, ""}).ok());
  EXPECT_FALSE(CheckTrialQuery({"", 0, 25, "config."}).ok());
  EXPECT_FALSE(CheckTrialQuery({"", 0, 25, "dir"}).ok());
}

json Trial(const std::string& id, json metric, double lr) {
  json result = json::object();
  if (!metric.is_null()) result["acc"] = metric;
  return {{"trial_id", id},
          {"status", "RUNNING"},
          {"config", {{"lr", lr}}},
          {"dir", "/x"},
          {"last_result", result},
          {"training_iteration", 3},
          {"checkpoints", json::array()}};
}

// Sorted by the metric, descending, a trial without it last; the page is cut after sorting, and
// rows carry only the table's fields.
TEST(DashboardViewsTest, SortedPagesSortByTheMetricWithMissingValuesLast) {
  const json trials = json::array({Trial("t0", 0.5, 0.1), Trial("t1", nullptr, 0.2),
                                   Trial("t2", 0.9, 0.3), Trial("t3", 0.7, 0.4)});
  const json page = SortedPage(trials, {"", 0, 3, "-metric"}, "acc");
  EXPECT_EQ(page["total"], 4);
  ASSERT_EQ(page["trials"].size(), 3u);
  EXPECT_EQ(page["trials"][0]["trial_id"], "t2");
  EXPECT_EQ(page["trials"][1]["trial_id"], "t3");
  EXPECT_EQ(page["trials"][2]["trial_id"], "t0");
  EXPECT_FALSE(page["trials"][0].contains("dir"));
  EXPECT_FALSE(page["trials"][0].contains("checkpoints"));
  const json ascending = SortedPage(trials, {"", 2, 10, "metric"}, "acc");
  ASSERT_EQ(ascending["trials"].size(), 2u);
  EXPECT_EQ(ascending["trials"][0]["trial_id"], "t2");
  EXPECT_EQ(ascending["trials"][1]["trial_id"], "t1");  // missing: last in both directions
  const json by_lr = SortedPage(trials, {"", 0, 1, "-config.lr"}, "acc");
  EXPECT_EQ(by_lr["trials"][0]["trial_id"], "t3");
}

// result.json lines become points of numeric keys; a torn last line is skipped; a long file is
// thinned to the limit, keeping its last row.
TEST(DashboardViewsTest, CurvesComeFromResultLines) {
  std::string text;
  for (int i = 1; i <= 10; ++i) {
    text +=
        json{{"training_iteration", i}, {"acc", 0.1 * i}, {"config", {{"lr", 1}}}, {"date", "x"}}
            .dump() +
        "\n";
  }
  text += "{\"training_iteration\": 11, \"ac";  // the writer is appending
  const json all = CurveFromResultLines(text, 100);
  EXPECT_EQ(all["rows"], 10);
  EXPECT_FALSE(all["truncated"]);
  ASSERT_EQ(all["points"].size(), 10u);
  EXPECT_EQ(all["points"][9]["training_iteration"], 10);
  EXPECT_FALSE(all["points"][0].contains("config"));
  EXPECT_FALSE(all["points"][0].contains("date"));
  const json thin = CurveFromResultLines(text, 4);
  EXPECT_TRUE(thin["truncated"]);
  ASSERT_LE(thin["points"].size(), 4u);
  EXPECT_EQ(thin["points"].back()["training_iteration"], 10);
}

TEST(DashboardViewsTest, ExperimentRowsNameTheBestTrialAndItsMetric) {
  const json lsx = {{"name", "m"}, {"journal", "m-1"}, {"status", "RUNNING"}, {"total", 4}};
  const json summary = {
      {"metric", "acc"}, {"mode", "max"}, {"created", 2}, {"best", Trial("t2", 0.9, 0.3)}};
  const json row = ExperimentRow(lsx, summary);
  EXPECT_EQ(row["best_trial_id"], "t2");
  EXPECT_EQ(row["best_metric"], 0.9);
  EXPECT_EQ(row["journal"], "m-1");
  const json unread = ExperimentRow(lsx, nullptr);
  EXPECT_TRUE(unread["best_metric"].is_null());
  EXPECT_EQ(unread["name"], "m");
}

TEST(DashboardViewsTest, EventsBecomeServerSentEventFrames) {
  const json data = EventData("trial_result", "m", "t2", Trial("t2", 0.9, 0.3).dump());
  EXPECT_EQ(data["trial"]["last_result"]["acc"], 0.9);
  EXPECT_FALSE(data["trial"].contains("dir"));
  const json ended = EventData("experiment_ended", "m", "", R"({"status":"FINISHED"})");
  EXPECT_EQ(ended["summary"]["status"], "FINISHED");
  EXPECT_EQ(SseFrame("trial_result", "{}"), "event: trial_result\ndata: {}\n\n");
}

}  // namespace
}  // namespace tunebus::dashboard
