// RetentionPolicy (services/scheduler/core/retention_policy.hpp): which finished experiments
// the count rule (--retain-experiments), the age rule (--retain-days, retention.days) and both
// delete at a given time, why, and what `tunectl lsx` shows for the kept ones.
#include "services/scheduler/core/retention_policy.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace tunebus {
namespace {

constexpr double kDay = 86400;
constexpr double kNow = 1'800'000'000;  // 2027-01-15 08:00 UTC

std::map<std::string, RetentionVerdict> ByJournal(const std::vector<RetentionVerdict>& v) {
  std::map<std::string, RetentionVerdict> out;
  for (const RetentionVerdict& x : v) out[x.journal] = x;
  return out;
}

std::vector<std::string> Deleted(const std::vector<RetentionVerdict>& v) {
  std::vector<std::string> out;
  for (const RetentionVerdict& x : v)
    if (x.delete_now) out.push_back(x.journal);
  return out;
}

TEST(RetentionPolicyTest, NoRuleDeletesNothing) {
  const auto v = JudgeRetention({}, {{"a-00001", kNow - 400 * kDay}, {"b-00002", kNow}}, kNow);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(Deleted(v).empty());
  for (const auto& x : v) EXPECT_EQ(RetentionExpiresText({}, x), "never");
}

TEST(RetentionPolicyTest, CountRuleKeepsTheNewestByEndTime) {
  // Submission order is not end order: c ended first although listed last.
  const std::vector<FinishedExperiment> finished = {{"a-00001", kNow - 3 * kDay},
                                                    {"b-00002", kNow - 1 * kDay},
                                                    {"d-00004", kNow - 2 * kDay},
                                                    {"c-00003", kNow - 5 * kDay}};
  const RetentionRules rules{.keep_newest = 2};
  const auto v = JudgeRetention(rules, finished, kNow);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].journal, "b-00002");  // newest first
  EXPECT_EQ(Deleted(v), (std::vector<std::string>{"a-00001", "c-00003"}));
  auto by = ByJournal(v);
  EXPECT_EQ(by["b-00002"].rank, 1);
  EXPECT_EQ(by["d-00004"].rank, 2);
  EXPECT_EQ(by["a-00001"].rank, 3);
  EXPECT_EQ(by["a-00001"].rule, "--retain-experiments 2: it is the 3rd newest finished experiment");
  EXPECT_EQ(by["c-00003"].rule, "--retain-experiments 2: it is the 4th newest finished experiment");
  EXPECT_EQ(RetentionExpiresText(rules, by["b-00002"]), "keep 2 newest: 1st");
  EXPECT_EQ(RetentionExpiresText(rules, by["d-00004"]), "keep 2 newest: 2nd");
  EXPECT_EQ(RetentionExpiresText(rules, by["a-00001"]), "now");
}

TEST(RetentionPolicyTest, CountRuleTiesAreBrokenByJournalName) {
  const auto v = JudgeRetention({.keep_newest = 1}, {{"x-00002", kNow}, {"x-00001", kNow}}, kNow);
  EXPECT_EQ(Deleted(v), (std::vector<std::string>{"x-00001"}));
}

TEST(RetentionPolicyTest, FewerFinishedThanTheCountKeepsAll) {
  const auto v = JudgeRetention({.keep_newest = 3}, {{"a-00001", 0}, {"b-00002", 1}}, kNow);
  EXPECT_TRUE(Deleted(v).empty());
}

TEST(RetentionPolicyTest, AgeRuleDeletesThoseEndedMoreThanDaysAgo) {
  const RetentionRules rules{.max_age_days = 7};
  const std::vector<FinishedExperiment> finished = {{"old-00001", kNow - 8 * kDay},
                                                    {"edge-00002", kNow - 7 * kDay},
                                                    {"new-00003", kNow - 1 * kDay}};
  const auto v = JudgeRetention(rules, finished, kNow);
  // Exactly 7 days ago is not "more than" 7 days ago.
  EXPECT_EQ(Deleted(v), (std::vector<std::string>{"old-00001"}));
  auto by = ByJournal(v);
  EXPECT_EQ(by["old-00001"].rule, "--retain-days 7: it ended 2027-01-07 08:00 UTC, 8.00 days ago");
  ASSERT_TRUE(by["new-00003"].expires_at_s.has_value());
  EXPECT_DOUBLE_EQ(*by["new-00003"].expires_at_s, kNow + 6 * kDay);
  EXPECT_EQ(RetentionExpiresText(rules, by["new-00003"]), "2027-01-21 08:00 UTC");
  EXPECT_EQ(by["new-00003"].rank, 0);  // no count rule
  // One second later the edge goes too.
  EXPECT_EQ(Deleted(JudgeRetention(rules, finished, kNow + 1)),
            (std::vector<std::string>{"edge-00002", "old-00001"}));
}

TEST(RetentionPolicyTest, AnExperimentsDaysReplaceTheSchedulers) {
  const RetentionRules rules{.max_age_days = 30};
  std::vector<FinishedExperiment> finished = {{"short-00001", kNow - 2 * kDay, 1.0, true},
                                              {"long-00002", kNow - 40 * kDay, 60.0, false},
                                              {"plain-00003", kNow - 40 * kDay}};
  const auto v = JudgeRetention(rules, finished, kNow);
  EXPECT_EQ(Deleted(v), (std::vector<std::string>{"short-00001", "plain-00003"}));
  auto by = ByJournal(v);
  EXPECT_TRUE(by["short-00001"].keep_results);
  EXPECT_FALSE(by["plain-00003"].keep_results);
  EXPECT_EQ(by["short-00001"].rule.rfind("retention.days 1: it ended ", 0), 0u)
      << by["short-00001"].rule;
  // Without any scheduler rule, an experiment's own days still apply.
  EXPECT_EQ(Deleted(JudgeRetention({}, finished, kNow)), (std::vector<std::string>{"short-00001"}));
}

TEST(RetentionPolicyTest, BothRulesTogether) {
  const RetentionRules rules{.keep_newest = 2, .max_age_days = 10};
  const std::vector<FinishedExperiment> finished = {{"a-00001", kNow - 20 * kDay},
                                                    {"b-00002", kNow - 3 * kDay},
                                                    {"c-00003", kNow - 2 * kDay},
                                                    {"d-00004", kNow - 1 * kDay}};
  const auto v = JudgeRetention(rules, finished, kNow);
  EXPECT_EQ(Deleted(v), (std::vector<std::string>{"b-00002", "a-00001"}));
  auto by = ByJournal(v);
  // a is over both rules: the count rule is named.
  EXPECT_EQ(by["a-00001"].rule.rfind("--retain-experiments 2", 0), 0u);
  EXPECT_EQ(RetentionExpiresText(rules, by["d-00004"]), "2027-01-24 08:00 UTC, keep 2 newest: 1st");
  // The age rule alone deletes the newest once it is old enough.
  EXPECT_EQ(Deleted(JudgeRetention(rules, finished, kNow + 30 * kDay)).size(), 4u);
}

TEST(RetentionPolicyTest, Ordinals) {
  EXPECT_EQ(Ordinal(1), "1st");
  EXPECT_EQ(Ordinal(2), "2nd");
  EXPECT_EQ(Ordinal(3), "3rd");
  EXPECT_EQ(Ordinal(4), "4th");
  EXPECT_EQ(Ordinal(11), "11th");
  EXPECT_EQ(Ordinal(12), "12th");
  EXPECT_EQ(Ordinal(13), "13th");
  EXPECT_EQ(Ordinal(21), "21st");
  EXPECT_EQ(Ordinal(102), "102nd");
  EXPECT_EQ(Ordinal(111), "111th");
}

}  // namespace
}  // namespace tunebus
