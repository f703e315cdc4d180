// JSON text written straight from values, with no JSON document in between: the characters
// nlohmann::json::dump() gives for the same values (compact, no spaces). The scheduler's result
// files and experiment_state.json are written this way (docs/explanation/performance/index.md).
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace tunebus {

/// Appends `o` as compact JSON (nlohmann::json::dump's form: no spaces, keys in the order of
/// the map, strings UTF-8 with '"', '\\' and control characters escaped, non-finite floats as
/// null, integral floats with ".0"). Binary and extension values become null.
void AppendJson(const msgpack::object& o, std::string& out);

/// Appends `s` as a JSON string (quoted; '"', '\\' and control characters escaped).
void AppendJsonString(std::string_view s, std::string& out);
/// Appends `v` as nlohmann::json::dump does: the shortest text that reads back as `v`, an
/// integral value with ".0", a non-finite one as null.
void AppendJsonDouble(double v, std::string& out);
/// Appends `v` in decimal.
void AppendJsonInt(int64_t v, std::string& out);

/// One JSON object appended to a string member by member: '{' when constructed, '}' when
/// destroyed, a ',' between members. The caller writes members in the order it wants them
/// (nlohmann::json::dump writes an object's keys sorted).
/// REQUIRES: `out` outlives the writer and nothing else appends to it meanwhile, except through
/// the string Key() returns (the member's value).
class JsonObjectText {
 public:
  explicit JsonObjectText(std::string& out) : out_(out) { out_.push_back('{'); }
  ~JsonObjectText() { out_.push_back('}'); }
  JsonObjectText(const JsonObjectText&) = delete;
  JsonObjectText& operator=(const JsonObjectText&) = delete;

  /// Writes `"key":` and returns the text to append the member's value to.
  std::string& Key(std::string_view key);
  void Int(std::string_view key, int64_t v) { AppendJsonInt(v, Key(key)); }
  void Double(std::string_view key, double v) { AppendJsonDouble(v, Key(key)); }
  void Bool(std::string_view key, bool v) { Key(key) += v ? "true" : "false"; }
  void String(std::string_view key, std::string_view v) { AppendJsonString(v, Key(key)); }
  void Null(std::string_view key) { Key(key) += "null"; }
  /// A string, or null when it is empty.
  void StringOrNull(std::string_view key, std::string_view v) {
    if (v.empty()) {
      Null(key);
    } else {
      String(key, v);
    }
  }
  /// A JSON array of `items`, each written by write(item, out).
  template <typename Items, typename Write>
  void Array(std::string_view key, const Items& items, Write write) {
    std::string& out = Key(key);
    out.push_back('[');
    bool first = true;
    for (const auto& item : items) {
      if (!std::exchange(first, false)) out.push_back(',');
      write(item, out);
    }
    out.push_back(']');
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace tunebus
