// Tests for ResultText (services/scheduler/results/result_text.hpp): the result.json line and the
// progress.csv row it formats from a result's msgpack bytes say what nlohmann::json says of the
// same result (the file writer's previous form).
#include "services/scheduler/results/result_text.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/csv.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

std::string Msgpack(const json& j) {
  std::string bytes;
  json::to_msgpack(j, bytes);
  return bytes;
}

TEST(ResultTextTest, JsonLineParsesToTheSameResultAsNlohmannsDump) {
  // Every JSON type a trainable can report, escapes and UTF-8 included.
  const json result = {
      {"training_iteration", 3},
      {"neg", -42},
      {"big", uint64_t(1) << 63},
      {"acc", 0.912345678901234},
      {"tiny", 1e-300},
      {"whole", 2.0},
      {"huge", 1.5e300},
      {"done", false},
      {"none", nullptr},
      {"name", "quote\" back\\ nl\n tab\t ctl\x01 é"},
      {"nested", {{"a", json::array({1, 2.5, "x", json::object()})}, {"b", json::array()}}}};
  ResultText text;
  const std::string bytes = Msgpack(result);  // the strings point into these
  ASSERT_TRUE(text.Decode(bytes));
  std::string line;
  text.AppendJsonLine(line);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  EXPECT_EQ(json::parse(line), result) << line;
  // Same bytes as nlohmann for the usual values (integral floats keep ".0").
  const json usual = {
      {"done", true}, {"mean_accuracy", 0.25}, {"time_total_s", 2.0}, {"trial_id", "ab_00001"}};
  const std::string usual_bytes = Msgpack(usual);
  ASSERT_TRUE(text.Decode(usual_bytes));
  line.clear();
  text.AppendJsonLine(line);
  EXPECT_EQ(line, usual.dump() + "\n");
}

TEST(ResultTextTest, NonFiniteFloatsBecomeNullAsNlohmannWritesThem) {
  const json result = {{"inf", std::numeric_limits<double>::infinity()},
                       {"nan", std::numeric_limits<double>::quiet_NaN()}};
  ResultText text;
  const std::string bytes = Msgpack(result);
  ASSERT_TRUE(text.Decode(bytes));
  std::string line;
  text.AppendJsonLine(line);
  EXPECT_EQ(line, result.dump() + "\n");
}

TEST(ResultTextTest, CsvRowFollowsTheGivenColumnsWithQuotingAndGaps) {
  // Columns of an earlier result: a key missing now stays empty, a new key is left out.
  const json result = {
      {"a", 1}, {"c", "x,y"}, {"d", "say \"hi\""}, {"e", json::array({1, 2})}, {"new", 5}};
  ResultText text;
  const std::string bytes = Msgpack(result);
  ASSERT_TRUE(text.Decode(bytes));
  std::string row;
  text.AppendCsvRow({"e", "a", "b", "c", "d"}, row);
  EXPECT_EQ(row,
            CsvQuote("[1,2]") + ",1,," + CsvQuote("x,y") + "," + CsvQuote("say \"hi\"") + "\n");
  EXPECT_EQ(text.Keys(), (std::vector<std::string>{"a", "c", "d", "e", "new"}));
}

TEST(ResultTextTest, RowsShowTheTrialsConfigAndFlattenNestedMetricsWithSlashes) {
  // Ray Tune 2.x: result.json holds the trial's config as `config` (replacing a reported one),
  // and the CSV columns are the result flattened with '/': `info/a`, `config/lr`,
  // `config/model/depth`; an empty object gives no column.
  const json result = {{"acc", 0.5},
                       {"config", "reported"},
                       {"info", {{"a", 1}, {"deep", {{"b", "x"}}}, {"none", json::object()}}},
                       {"training_iteration", 2}};
  const ConfigText config(json{{"lr", 0.01}, {"model", {{"depth", 3}, {"kind", "mlp"}}}});
  ResultText text;
  const std::string bytes = Msgpack(result);
  ASSERT_TRUE(text.Decode(bytes, &config));
  std::string line;
  text.AppendJsonLine(line);
  json expected = result;
  expected["config"] = {{"lr", 0.01}, {"model", {{"depth", 3}, {"kind", "mlp"}}}};
  EXPECT_EQ(json::parse(line), expected) << line;
  EXPECT_EQ(text.Keys(),
            (std::vector<std::string>{"acc", "config/lr", "config/model/depth", "config/model/kind",
                                      "info/a", "info/deep/b", "training_iteration"}));
  std::string row;
  text.AppendCsvRow(text.Keys(), row);
  EXPECT_EQ(row, "0.5,0.01,3,mlp,1,x,2\n");
  EXPECT_EQ(text.Number("training_iteration"), 2.0);
  EXPECT_EQ(text.Number("info/a"), 1.0);
  EXPECT_EQ(text.Number("config/lr"), std::nullopt);  // config cells are not metrics
  // Without a config the result is shown as it is (its own `config` key included).
  ASSERT_TRUE(text.Decode(bytes));
  line.clear();
  text.AppendJsonLine(line);
  EXPECT_EQ(json::parse(line), result);
}

TEST(ResultTextTest, BytesThatAreNotAMapAreRefused) {
  ResultText text;
  EXPECT_FALSE(text.Decode(Msgpack(json::array({1, 2}))));
  EXPECT_FALSE(text.Decode(std::string("\xc1", 1)));  // never used in msgpack
  EXPECT_FALSE(text.Decode(""));
}

}  // namespace
}  // namespace tunebus
