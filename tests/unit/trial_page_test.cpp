// A page of trials in a sort order, cut on the scheduler
// (services/scheduler/control/trial_page.hpp): its rows are the ones the dashboard's reference
// order (dashboard::SortRows over every trial's table row) puts on that page, for every key the
// table offers, both directions, filters and offsets.
#include "services/scheduler/control/trial_page.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "libs/core/trial_view.hpp"
#include "services/scheduler/dashboard/views/views.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

// `n` trials with ties and gaps: some without a result, a config value that is a string in some
// trials, a metric shared by several.
std::vector<Trial> MakeTrials(int n) {
  std::mt19937 rng(7);
  std::vector<Trial> trials(static_cast<size_t>(n));
  constexpr TrialStatus kStatuses[] = {TrialStatus::kPending, TrialStatus::kRunning,
                                       TrialStatus::kTerminated, TrialStatus::kError};
  for (int i = 0; i < n; ++i) {
    Trial& t = trials[size_t(i)];
    t.index = i;
    t.trial_id = fmt::format("abc_{:05}", i);
    t.status = kStatuses[rng() % 4];
    t.config = {{"lr", double(rng() % 50) / 100}, {"layers", int(rng() % 4)}};
    if (i % 7 == 0) t.config["layers"] = "deep";  // another kind: after the numbers
    if (t.status == TrialStatus::kPending) continue;
    t.training_iteration = int64_t(rng() % 10);
    t.time_total_s = double(rng() % 1000) / 10;
    const double acc = double(rng() % 20) / 20;  // ties
    json result = {{"acc", acc}, {"loss", 1 - acc}, {"training_iteration", t.training_iteration}};
    if (i % 5 == 0) result["tag"] = fmt::format("r{}", rng() % 3);
    t.SetLastResult(result);
    t.last_metric = acc;
  }
  return trials;
}

std::vector<std::string> Expected(const std::vector<Trial>& trials, const std::string& status,
                                  const std::string& sort, int64_t offset, int64_t limit) {
  std::vector<json> rows;
  for (const Trial& t : trials) {
    if (status.empty() || TrialStatusName(t.status) == status) {
      rows.push_back(dashboard::TrialRow(TrialToJson(t, "/results")));
    }
  }
  dashboard::SortRows(rows, sort, "acc");
  std::vector<std::string> ids;
  for (int64_t i = offset; i < int64_t(rows.size()) && i < offset + limit; ++i) {
    ids.push_back(rows[size_t(i)]["trial_id"].get<std::string>());
  }
  return ids;
}

TEST(TrialPageTest, PagesMatchTheDashboardsOrderForEveryKey) {
  const std::vector<Trial> trials = MakeTrials(500);
  for (std::string key :
       {"trial_id", "status", "training_iteration", "time_total_s", "metric", "config.lr",
        "config.layers", "config.none", "result.loss", "result.tag"}) {
    for (const std::string& sort : {key, "-" + key}) {
      for (const std::string status : {"", "TERMINATED"}) {
        for (const auto& [offset, limit] : {std::pair<int64_t, int64_t>{0, 25},
                                            {100, 25},
                                            {480, 25},
                                            {0, 0},
                                            {490, 0},
                                            {1000, 25}}) {
          auto parsed = ParseTrialSort(sort);
          ASSERT_TRUE(parsed.ok()) << sort;
          size_t matching = 0;
          std::vector<std::string> got;
          for (size_t i : TrialPageIndices(trials, ParseTrialStatus(status), *parsed, offset, limit,
                                           &matching)) {
            got.push_back(trials[i].trial_id);
          }
          EXPECT_EQ(got, Expected(trials, status, sort, offset, limit ? limit : 1 << 20))
              << sort << " status=" << status << " offset=" << offset << " limit=" << limit;
          EXPECT_EQ(matching, size_t(Expected(trials, status, "", 0, 1 << 20).size()));
        }
      }
    }
  }
}

// Descending puts the largest first, trials without a value still last; ties keep creation order.
TEST(TrialPageTest, MissingValuesComeLastAndTiesKeepCreationOrder) {
  std::vector<Trial> trials(4);
  const double metric[] = {0.5, -1, 0.9, 0.5};
  for (size_t i = 0; i < trials.size(); ++i) {
    trials[i].trial_id = fmt::format("t{}", i);
    if (metric[i] >= 0) trials[i].last_metric = metric[i];
  }
  auto ids = [&](const std::string& sort) {
    std::vector<std::string> out;
    for (size_t i : TrialPageIndices(trials, std::nullopt, *ParseTrialSort(sort), 0, 0)) {
      out.push_back(trials[i].trial_id);
    }
    return out;
  };
  EXPECT_EQ(ids("-metric"), (std::vector<std::string>{"t2", "t0", "t3", "t1"}));
  EXPECT_EQ(ids("metric"), (std::vector<std::string>{"t0", "t3", "t2", "t1"}));
}

TEST(TrialPageTest, UnknownKeysAreRefused) {
  for (const char* bad : {"", "-", "config.", "result.", "metric2", "lr", "--metric"}) {
    EXPECT_FALSE(ParseTrialSort(bad).ok()) << bad;
  }
  auto lr = ParseTrialSort("-config.lr");
  ASSERT_TRUE(lr.ok());
  EXPECT_TRUE(lr->descending);
  EXPECT_EQ(lr->key, TrialSort::Key::kConfig);
  EXPECT_EQ(lr->name, "lr");
}

}  // namespace
}  // namespace tunebus
