// The experiment file's `retention:` section (ExperimentSpec::retention): days and keep_results,
// and errors naming file, line and field.
#include <gtest/gtest.h>

#include <string>

#include "libs/spec/experiment_spec.hpp"
#include "tests/unit/spec_test_util.hpp"

namespace tunebus {
namespace {

using namespace spec_test;

TEST(SpecRetentionTest, AbsentMeansNoSection) {
  auto spec = Parse(kMinimal);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_FALSE(spec->retention.has_value());
}

TEST(SpecRetentionTest, DaysAndKeepResultsAreRead) {
  auto both = Parse(std::string(kMinimal) + "retention: {days: 7, keep_results: true}\n");
  ASSERT_TRUE(both.ok()) << both.status().message();
  ASSERT_TRUE(both->retention.has_value());
  EXPECT_EQ(both->retention->days, 7.0);
  EXPECT_TRUE(both->retention->keep_results);

  auto days = Parse(std::string(kMinimal) + "retention:\n  days: 0.5\n");
  ASSERT_TRUE(days.ok()) << days.status().message();
  EXPECT_EQ(days->retention->days, 0.5);
  EXPECT_FALSE(days->retention->keep_results);

  auto keep = Parse(std::string(kMinimal) + "retention: {keep_results: true}\n");
  ASSERT_TRUE(keep.ok()) << keep.status().message();
  EXPECT_FALSE(keep->retention->days.has_value());
  EXPECT_TRUE(keep->retention->keep_results);
}

TEST(SpecRetentionTest, BadSectionsNameTheField) {
  const std::string base = kMinimal;
  ExpectInvalid(base + "retention: 7\n",
                "exp.yaml:3: retention: expected a map such as {days: 7, keep_results: true}, "
                "got '7'");
  ExpectInvalid(base + "retention: {}\n",
                "exp.yaml:3: retention: give days, keep_results or both (or leave it out)");
  ExpectInvalid(base + "retention:\n  days: 0\n",
                "exp.yaml:4: retention.days: must be a number of days > 0 (fractions allowed), "
                "got 0");
  ExpectInvalid(base + "retention:\n  days: -3\n",
                "exp.yaml:4: retention.days: must be a number of days > 0 (fractions allowed), "
                "got -3");
  ExpectInvalid(base + "retention:\n  days: 7\n  keep_results: maybe\n",
                "exp.yaml:5: retention.keep_results: expected true or false, got 'maybe'");
  ExpectInvalid(base + "retention:\n  keep: 3\n",
                "exp.yaml:4: retention: unknown field 'keep'; expected one of days, "
                "keep_results");
}

}  // namespace
}  // namespace tunebus
