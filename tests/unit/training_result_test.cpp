// Tests for TrainingResult: the trainable's JSON text becomes the same result nlohmann's parser
// gives (nested values, every scalar kind, escapes), keys set later win, the encoded map is
// canonical (unique keys, sorted), and what is not a JSON object is refused with the reason.
#include "libs/tune/training_result.hpp"

#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tunebus {
namespace {

using json = nlohmann::json;

json Parsed(const std::string& text) {
  auto r = TrainingResult::FromJsonText(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? r->ToJson() : json();
}

TEST(TrainingResultTest, JsonTextGivesWhatNlohmannParses) {
  // Every kind of value a trainable may report, nested containers of every header size
  // (fixmap/fixarray, 16-bit counts) and escapes: the decoded result equals nlohmann's parse.
  json many_keys = json::object();
  json long_array = json::array();
  for (int i = 0; i < 40; ++i) {
    many_keys["k" + std::to_string(i)] = i;
    long_array.push_back(i * 0.5);
  }
  const std::vector<std::string> texts = {
      R"({})",
      R"({"loss": 0.25, "acc": 1, "neg": -7, "big": 18446744073709551615, "tiny": -9223372036854775808})",
      R"({"ok": true, "bad": false, "none": null, "name": "r\u00e9sultat \"q\" \\ \n", "e": 1e-300})",
      R"({"info": {"lr": 0.1, "layers": [64, 32, {"act": "relu"}], "empty": {}, "none": []}})",
      R"({"deep": [[[[{"x": [1, [2, [3]]]}]]]]})",
      json{{"many", many_keys}, {"long", long_array}, {"n", 3}}.dump(),
  };
  for (const std::string& text : texts) EXPECT_EQ(Parsed(text), json::parse(text)) << text;
}

TEST(TrainingResultTest, NumbersTruthinessAndLookupsFollowTheValues) {
  auto r = TrainingResult::FromJsonText(
      R"({"loss": 0.5, "step": 3, "zero": 0, "s": "", "t": "x", "l": [], "m": {"a": 1}, "n": null, "done": true})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Number("loss"), 0.5);
  EXPECT_EQ(r->Number("step"), 3.0);
  EXPECT_EQ(r->Number("t"), std::nullopt);
  EXPECT_EQ(r->Number("missing"), std::nullopt);
  EXPECT_TRUE(r->Has("n"));
  EXPECT_FALSE(r->Has("missing"));
  for (const char* k : {"loss", "step", "t", "m", "done"}) EXPECT_TRUE(r->Truthy(k)) << k;
  for (const char* k : {"zero", "s", "l", "n", "missing"}) EXPECT_FALSE(r->Truthy(k)) << k;
}

TEST(TrainingResultTest, TheLaterValueOfAKeyWinsAndTheMapIsSortedAndUnique) {
  // The trainable reports training_iteration and a repeated key; the runner's Set* override.
  auto r = TrainingResult::FromJsonText(R"({"zeta": 1, "training_iteration": 99, "alpha": "a", "zeta": 2})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Number("zeta"), 2.0);
  r->SetInt("training_iteration", int64_t{5});
  r->SetBool("done", false);
  r->SetJson("note", json{{"from", "t1"}});
  r->SetDouble("time_total_s", 1.5);
  r->SetString("trial_id", "t_00001");
  EXPECT_EQ(r->Number("training_iteration"), 5.0);
  const std::vector<std::string> keys = {"alpha", "done", "note", "time_total_s", "training_iteration", "trial_id", "zeta"};
  EXPECT_EQ(r->Keys(), keys);
  EXPECT_EQ(r->ToJson(), (json{{"alpha", "a"}, {"done", false}, {"note", {{"from", "t1"}}}, {"time_total_s", 1.5},
                               {"training_iteration", 5}, {"trial_id", "t_00001"}, {"zeta", 2}}));

  // The encoded bytes are one map with the keys in that order (what the file writer formats).
  const std::string bytes = r->Encode();
  msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
  ASSERT_EQ(oh.get().type, msgpack::type::MAP);
  std::vector<std::string> encoded_keys;
  for (const auto& kv : oh.get().via.map) encoded_keys.push_back(kv.key.as<std::string>());
  EXPECT_EQ(encoded_keys, keys);
}

TEST(TrainingResultTest, FromJsonKeepsTheObjectAndTreatsOtherValuesAsEmpty) {
  const json object = {{"loss", 0.5}, {"info", {{"a", {1, 2}}}}, {"name", "x"}};
  EXPECT_EQ(TrainingResult::FromJson(object).ToJson(), object);
  EXPECT_EQ(TrainingResult::FromJson(object).Number("loss"), 0.5);
  EXPECT_EQ(TrainingResult::FromJson(nullptr).ToJson(), json::object());
  EXPECT_TRUE(TrainingResult::FromJson(json::array({1})).Keys().empty());
}

TEST(TrainingResultTest, TextThatIsNotAJsonObjectIsRefusedWithTheReason) {
  for (const char* text : {"[1, 2]", "3", "\"loss\"", "null"}) {
    auto r = TrainingResult::FromJsonText(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "is not a JSON object") << text;
  }
  for (const char* text : {"", "{", R"({"a": })", R"({"a": 1} trailing)", R"({"a": NaN})", "{'a': 1}"}) {
    auto r = TrainingResult::FromJsonText(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("parse error"), std::string::npos) << text << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace tunebus
