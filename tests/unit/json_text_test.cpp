// Tests for the JSON text writer (libs/core/json_text.hpp): what it appends is, character for
// character, what nlohmann::json::dump() gives for the same values.
#include "libs/core/json_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tunebus {
namespace {

using json = nlohmann::json;

TEST(JsonTextTest, ScalarsAreWrittenAsDumpWritesThem) {
  // Escapes, control characters, integral and shortest doubles, non-finite numbers, integers.
  for (const std::string& s : {std::string(), std::string("plain"),
                               std::string("quote \" and \\ back"), std::string("tab\tnew\nline\r"),
                               std::string("nul\0bell\x07", 9), std::string("utf-8 \xc3\xa9")}) {
    std::string out;
    AppendJsonString(s, out);
    EXPECT_EQ(out, json(s).dump()) << s;
  }
  for (double v : {0.0, -0.0, 1.0, 2.5, 0.1, 1e-7, 1e21, 12.000001, -3.0, 1795366691.25}) {
    std::string out;
    AppendJsonDouble(v, out);
    EXPECT_EQ(out, json(v).dump()) << v;
  }
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    std::string out;
    AppendJsonDouble(v, out);
    EXPECT_EQ(out, "null");
  }
  for (int64_t v : {int64_t{0}, int64_t{-7}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    std::string out;
    AppendJsonInt(v, out);
    EXPECT_EQ(out, json(v).dump()) << v;
  }
}

TEST(JsonTextTest, MsgpackValuesAreWrittenAsTheirDocumentDumps) {
  // A msgpack map of every JSON type, nested: the text equals the decoded document's dump.
  const json doc = {{"b", true},          {"n", nullptr},
                    {"i", -42},           {"u", std::numeric_limits<uint64_t>::max()},
                    {"d", 0.25},          {"whole", 3.0},
                    {"s", "x\"y"},        {"a", {1, 2.5, "z", {{"k", false}}}},
                    {"o", json::object()}};
  std::string bytes;
  json::to_msgpack(doc, bytes);
  const msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size());
  std::string out = "keep ";
  AppendJson(h.get(), out);
  EXPECT_EQ(out, "keep " + doc.dump());
}

TEST(JsonObjectTextTest, MembersAreWrittenInTheCallersOrderWithCommasBetween) {
  // An object with every kind of member, and an empty one, written into text already there.
  std::string out = "[";
  {
    JsonObjectText o(out);
    o.Int("i", 3);
    o.Double("d", 2.0);
    o.Bool("b", false);
    o.String("s", "a\nb");
    o.StringOrNull("empty", "");
    o.StringOrNull("full", "x");
    o.Null("n");
    o.Array("ids", std::vector<std::string>{"0", "1"},
            [](const std::string& id, std::string& text) { AppendJsonString(id, text); });
    o.Array("none", std::vector<int>{}, [](int, std::string&) {});
    JsonObjectText nested(o.Key("nested"));
    nested.Int("k", -1);
  }
  { JsonObjectText empty(out += ","); }
  out += "]";
  EXPECT_EQ(out, R"([{"i":3,"d":2.0,"b":false,"s":"a\nb","empty":null,"full":"x","n":null,)"
                 R"("ids":["0","1"],"none":[],"nested":{"k":-1}},{}])");
  EXPECT_EQ(json::parse(out)[0]["nested"]["k"], -1);
}

}  // namespace
}  // namespace tunebus
