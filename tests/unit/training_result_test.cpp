// Tests for TrainingResult: the trainable's JSON text becomes the same result nlohmann's parser
// gives (nested values, every scalar kind, escapes), keys set later win, the encoded map is
// canonical (unique keys, sorted), and what is not a JSON object is refused with the reason. A
// trial-worker's msgpack map gives the same result as the JSON text of the same object.
#include "libs/tune/training_result.hpp"

#include <gtest/gtest.h>

#include <map>
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
  auto r = TrainingResult::FromJsonText(
      R"({"zeta": 1, "training_iteration": 99, "alpha": "a", "zeta": 2})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Number("zeta"), 2.0);
  r->SetInt("training_iteration", int64_t{5});
  r->SetBool("done", false);
  r->SetJson("note", json{{"from", "t1"}});
  r->SetDouble("time_total_s", 1.5);
  r->SetString("trial_id", "t_00001");
  EXPECT_EQ(r->Number("training_iteration"), 5.0);
  const std::vector<std::string> keys = {
      "alpha", "done", "note", "time_total_s", "training_iteration", "trial_id", "zeta"};
  EXPECT_EQ(r->Keys(), keys);
  EXPECT_EQ(r->ToJson(), (json{{"alpha", "a"},
                               {"done", false},
                               {"note", {{"from", "t1"}}},
                               {"time_total_s", 1.5},
                               {"training_iteration", 5},
                               {"trial_id", "t_00001"},
                               {"zeta", 2}}));

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
  for (const char* text :
       {"", "{", R"({"a": })", R"({"a": 1} trailing)", R"({"a": NaN})", "{'a': 1}"}) {
    auto r = TrainingResult::FromJsonText(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("parse error"), std::string::npos)
        << text << ": " << r.status().message();
  }
}

TEST(TrainingResultTest, MsgpackMapGivesTheSameResultAsTheJsonTextOfTheSameObject) {
  // A trial-worker sends the report nlohmann holds as msgpack (to_msgpack): every value kind,
  // nested containers and big integers decode, encode and look up as from the JSON text.
  const std::vector<std::string> texts = {
      R"({})",
      R"({"loss": 0.25, "acc": 1, "neg": -7, "big": 18446744073709551615, "tiny": -9223372036854775808})",
      R"({"ok": true, "bad": false, "none": null, "name": "r\u00e9sultat \"q\"", "zero": 0, "s": "", "l": []})",
      R"({"info": {"lr": 0.1, "layers": [64, 32, {"act": "relu"}], "empty": {}}, "deep": [[[{"x": [1]}]]]})",
  };
  for (const std::string& text : texts) {
    const json object = json::parse(text);
    std::string bytes;
    json::to_msgpack(object, bytes);
    auto from_msgpack = TrainingResult::FromMsgpack(bytes);
    auto from_text = TrainingResult::FromJsonText(text);
    ASSERT_TRUE(from_msgpack.ok()) << text << ": " << from_msgpack.status().ToString();
    ASSERT_TRUE(from_text.ok());
    // The same bytes but for nested maps, which nlohmann's encoder sorts by key.
    if (text.find("info") == std::string::npos) {
      EXPECT_EQ(from_msgpack->Encode(), from_text->Encode()) << text;
    }
    EXPECT_EQ(from_msgpack->ToJson(), object) << text;
    for (const auto& [key, value] : object.items()) {
      EXPECT_EQ(from_msgpack->Number(key), from_text->Number(key)) << key;
      EXPECT_EQ(from_msgpack->Truthy(key), from_text->Truthy(key)) << key;
    }
  }
  EXPECT_TRUE(TrainingResult::FromMsgpack("")->Keys().empty());  // proto::MsgpackMap's empty map
}

TEST(TrainingResultTest, MsgpackThatIsNotAMapWithStringKeysAndJsonValuesIsRefused) {
  auto packed = [](auto&& pack) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pack(pk);
    return std::string(buf.data(), buf.size());
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {packed([](auto& pk) {
         pk.pack(std::vector<int>{1, 2});
       }),
       "is not a msgpack map"},
      {packed([](auto& pk) {
         pk.pack(std::map<int, int>{{1, 2}});
       }),
       "has a key that is not a string"},
      {packed([](auto& pk) {
         pk.pack_map(1);
         pk.pack(std::string("blob"));
         pk.pack_bin(2);
         pk.pack_bin_body("ab", 2);
       }),
       "value of 'blob' is binary, not JSON"},
      {std::string("\x82\xa1", 2), "is not msgpack"},  // a map cut short
  };
  for (const auto& [bytes, reason] : cases) {
    auto r = TrainingResult::FromMsgpack(bytes);
    ASSERT_FALSE(r.ok()) << reason;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().substr(0, reason.size()), reason);
  }
}

TEST(TrainingResultTest, KeysSetInAnyOrderEncodeSortedWithTheLatestValue) {
  // Order() sorts by insertion up to kInsertionSortMax entries and with std::sort above: both
  // give sorted unique keys, the latest Set of a key winning, whatever the order of the Sets.
  for (const int n : {5, 30, 200}) {
    TrainingResult r;
    json expected = json::object();
    for (int i = 0; i < n; ++i) {
      const std::string key = "k" + std::to_string((i * 7919) % n);  // a scrambled order
      r.SetInt(key, i);
      expected[key] = i;
    }
    r.SetInt("k0", -1);  // set again, last: wins
    expected["k0"] = -1;
    std::vector<std::string> keys;
    for (const auto& [key, value] : expected.items()) keys.push_back(key);
    EXPECT_EQ(r.Keys(), keys) << n;
    EXPECT_EQ(r.ToJson(), expected) << n;
  }
}

}  // namespace
}  // namespace tunebus
