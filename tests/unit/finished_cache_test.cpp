// FinishedCache (services/scheduler/core/finished_cache.hpp) on fake entries: least recently
// used first out, the budget in bytes after each Put and Trim, versions, and the byte estimates
// of JSON values and trials.
#include "services/scheduler/core/finished_cache.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace tunebus {
namespace {

using nlohmann::json;

// A fake entry: its name only; its size is what Put is told.
struct Fake {
  std::string name;
};

std::unique_ptr<Fake> Make(const std::string& name) { return std::make_unique<Fake>(Fake{name}); }

TEST(FinishedCacheTest, KeepsEntriesWhileTheyFitAndFindsThemByKeyAndVersion) {
  FinishedCache<Fake> cache(100);
  Fake* a = cache.Put("a", 7, Make("a"), 40);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "a");
  cache.Put("b", 3, Make("b"), 50);
  EXPECT_EQ(cache.bytes(), 90u);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("a", 7), a);
  // The journal grew since: the entry read at the old length does not answer.
  EXPECT_EQ(cache.Find("a", 8), nullptr);
  EXPECT_EQ(cache.Find("zz", 7), nullptr);
  EXPECT_EQ(cache.Trim(), 0u);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(FinishedCacheTest, DropsTheLeastRecentlyUsedFirstToFitTheBudget) {
  FinishedCache<Fake> cache(100);
  cache.Put("a", 1, Make("a"), 30);
  cache.Put("b", 1, Make("b"), 30);
  cache.Put("c", 1, Make("c"), 30);
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"c", "b", "a"}));
  // Reading "a" makes it the most recent: "b" is now the first out.
  ASSERT_NE(cache.Find("a", 1), nullptr);
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"a", "c", "b"}));
  cache.Put("d", 1, Make("d"), 30);  // 120 > 100: "b" goes
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"d", "a", "c"}));
  EXPECT_EQ(cache.bytes(), 90u);
  cache.Put("e", 1, Make("e"), 70);  // 160: "c" then "a" go
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"e", "d"}));
  EXPECT_EQ(cache.bytes(), 100u);
  EXPECT_LE(cache.bytes(), cache.capacity_bytes());
}

TEST(FinishedCacheTest, AnEntryOverTheBudgetStaysUntilTheNextTrim) {
  FinishedCache<Fake> cache(100);
  cache.Put("small", 1, Make("small"), 20);
  Fake* big = cache.Put("big", 1, Make("big"), 250);
  // The others go at once; the big one answers the read that loaded it.
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"big"}));
  EXPECT_EQ(big->name, "big");
  EXPECT_EQ(cache.Find("big", 1), big);
  EXPECT_EQ(cache.Trim(), 1u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.Find("big", 1), nullptr);
}

TEST(FinishedCacheTest, ANewerReadOfAKeyReplacesTheOlderOne) {
  FinishedCache<Fake> cache(100);
  cache.Put("a", 1, Make("old"), 60);
  cache.Put("b", 1, Make("b"), 30);
  Fake* newer = cache.Put("a", 2, Make("new"), 50);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.bytes(), 80u);
  EXPECT_EQ(cache.Find("a", 1), nullptr);
  EXPECT_EQ(cache.Find("a", 2), newer);
  EXPECT_EQ(newer->name, "new");
  EXPECT_TRUE(cache.Erase("a"));
  EXPECT_FALSE(cache.Erase("a"));
  EXPECT_EQ(cache.bytes(), 30u);
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"b"}));
}

TEST(FinishedCacheTest, ABudgetOfZeroKeepsNothingPastATrim) {
  FinishedCache<Fake> cache(0);
  Fake* a = cache.Put("a", 1, Make("a"), 1);
  EXPECT_EQ(cache.Find("a", 1), a);
  EXPECT_EQ(cache.Trim(), 1u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(FinishedCacheTest, JsonBytesCountsStringsAndElements) {
  const size_t scalar = JsonBytes(json(1.5));
  EXPECT_EQ(scalar, sizeof(json));
  EXPECT_EQ(JsonBytes(json(nullptr)), sizeof(json));
  // A short string fits its inline buffer; a long one holds its characters on the heap.
  EXPECT_EQ(JsonBytes(json("short")), sizeof(json) + sizeof(std::string));
  EXPECT_GE(JsonBytes(json(std::string(1000, 'x'))), sizeof(json) + 1000);
  const json array = json::array({1, 2, 3});
  EXPECT_EQ(JsonBytes(array), sizeof(json) + sizeof(json::array_t) + 3 * sizeof(json));
  const json object = {{"lr", 0.1}, {"layers", json::array({64, 64})}};
  EXPECT_GT(JsonBytes(object), JsonBytes(json::array({64, 64})) + 2 * sizeof(json));
}

TEST(FinishedCacheTest, TrialBytesGrowWithWhatTheTrialHolds) {
  Trial t;
  t.trial_id = "1a956_00001";
  t.config = {{"lr", 0.01}, {"mock_iterations", 27}};
  const size_t bare = TrialBytes(t);
  EXPECT_GE(bare, sizeof(Trial));
  t.last_result_msgpack = std::string(500, '\x01');
  t.error = std::string(200, 'e');
  t.failures.push_back({1, std::string(300, 'f')});
  CheckpointRef c;
  c.checkpoint_id = std::string(64, 'c');
  t.checkpoints.push_back(c);
  EXPECT_GE(TrialBytes(t), bare + 500 + 200 + 300 + 64 + sizeof(TrialFailure) + sizeof(c));
}

}  // namespace
}  // namespace tunebus
