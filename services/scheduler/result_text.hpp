// ResultText: a result's lines for Ray Tune's per-trial files (result.json as JSON lines,
// progress.csv rows), formatted straight from the result's msgpack bytes (the form the runner
// keeps and journals), with no JSON document in between: the file writer's cost per result
// was mostly building and freeing that document (issue 6, docs/performance.md).
#pragma once

#include <string>
#include <cstdint>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

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

/// Decodes result msgpack bytes and formats them. One per writer thread: the decode zone and
/// the text buffer are reused from one result to the next. Each value is formatted once, in
/// Decode, for both the JSON line and the CSV row.
class ResultText {
 public:
  /// Decodes `msgpack_bytes`. False (and nothing to format) unless they hold one map.
  /// REQUIRES: the bytes outlive the formatting calls that follow (strings point into them).
  bool Decode(std::string_view msgpack_bytes);
  /// The decoded result's keys, in order (a CSV header).
  std::vector<std::string> Keys() const;
  /// The result as one JSON line (with the newline) appended to `out`.
  void AppendJsonLine(std::string& out) const;
  /// A CSV row (with the newline) of the values of `columns`, in that order, appended to
  /// `out`: strings as text, other values as compact JSON, missing keys empty (RFC 4180
  /// quoting). Ray Tune's CSV logger keeps the first result's columns.
  void AppendCsvRow(const std::vector<std::string>& columns, std::string& out) const;

 private:
  // One key/value of the map: its key (if a string), and the JSON text of the key (quoted)
  // and of the value as offsets into text_.
  struct Field {
    bool key_is_str;
    std::string_view key;
    uint32_t quoted_key_begin, value_begin, value_end;
    bool value_is_str;  // the CSV cell is the raw string, not its JSON text
    std::string_view str;
  };
  msgpack::zone zone_;
  std::vector<Field> fields_;
  std::string text_;
};

}  // namespace tunebus
