// ResultText: a result's lines for Ray Tune's per-trial files (result.json as JSON lines,
// progress.csv rows), formatted straight from the result's msgpack bytes (the form the runner
// keeps and journals), with no JSON document in between: building and freeing one would be
// most of the file writer's cost per result (docs/explanation/performance/index.md).
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libs/core/json_text.hpp"

namespace tunebus {

/// A trial's config as its rows show it, formatted once per config (a trial's config changes
/// only at a PBT exploit), not once per result.
struct ConfigText {
  ConfigText() = default;
  /// `config`: the trial's config (a JSON object; another value shows as {}).
  explicit ConfigText(const nlohmann::json& config);
  /// The config as compact JSON (result.json's `config` value).
  std::string json;
  /// progress.csv's `config/<key>` cells, nested keys joined with '/' ("config/model/depth"),
  /// in key order: {column, cell} (a string as its text, another value as compact JSON).
  std::vector<std::pair<std::string, std::string>> cells;
};

/// Decodes result msgpack bytes and formats them. One per writer thread: the decode zone and
/// the text buffer are reused from one result to the next. Each value is formatted once, in
/// Decode, for both the JSON line and the CSV row (a value nested in an object is formatted
/// again for its own CSV cell).
///
/// Shapes, as Ray Tune 2.x's JsonLoggerCallback / CSVLoggerCallback write a result whose
/// auto-filled `config` is the trial's config (ray/tune/logger/json.py, csv.py):
///   - the JSON line is the result with `config` set to the trial's config, at its place in
///     key order (a reported key named `config` is replaced, as Ray's auto-filled one wins);
///   - the CSV cells are the result flattened with '/' (`{"info": {"a": 1}}` gives column
///     `info/a`; an empty object gives no column), including `config/<key>`. Ray's CSV logger
///     drops `config` instead; tunebus keeps it so that one progress.csv says which config made
///     its rows, under the column names of Ray's `ResultGrid.get_dataframe()`.
class ResultText {
 public:
  /// Decodes `msgpack_bytes`. False (and nothing to format) unless they hold one map.
  /// `config`: the trial's config to show (nullptr: none, the result as it is).
  /// REQUIRES: the bytes and `config` outlive the formatting calls that follow (strings point
  /// into them).
  bool Decode(std::string_view msgpack_bytes, const ConfigText* config = nullptr);
  /// The decoded result's CSV columns, in order (a CSV header).
  std::vector<std::string> Keys() const;
  /// The result as one JSON line (with the newline) appended to `out`.
  void AppendJsonLine(std::string& out) const;
  /// A CSV row (with the newline) of the values of `columns`, in that order, appended to
  /// `out`: strings as text, other values as compact JSON, missing keys empty (RFC 4180
  /// quoting). Ray Tune's CSV logger keeps the first result's columns.
  void AppendCsvRow(const std::vector<std::string>& columns, std::string& out) const;
  /// Calls `f(column, value)` for every CSV cell whose value is a number or a boolean (true is
  /// 1), in column order: what a TensorBoard scalar can show.
  template <typename F>
  void ForEachNumber(F&& f) const {
    for (const Cell& c : cells_) {
      if (c.is_number) f(View(c.key_src, c.key_begin, c.key_end), c.number);
    }
  }
  /// The number of top-level `key` (a number or a boolean), if the result has one.
  std::optional<double> Number(std::string_view key) const;

 private:
  // Where a Cell's text lives: the decoded bytes, text_ (JSON text) or arena_ (joined keys,
  // nested values' JSON text).
  // kConfigKey / kConfigCell: config_->cells[begin], its column / its cell.
  enum class Src : uint8_t { kBytes, kText, kArena, kConfigKey, kConfigCell };
  // One key/value of the JSON line: the JSON text of the key (quoted) and of the value as
  // offsets into text_.
  struct Field {
    uint32_t quoted_key_begin, value_begin, value_end;
  };
  // One CSV cell: its column and its text, as offsets into their Src.
  struct Cell {
    Src key_src, value_src;
    bool is_number;
    uint32_t key_begin, key_end, value_begin, value_end;
    double number;
  };
  std::string_view View(Src src, uint32_t begin, uint32_t end) const;
  void AddLeaf(Src key_src, uint32_t key_begin, uint32_t key_end, const msgpack::object& value,
               Src value_src, uint32_t value_begin, uint32_t value_end);
  void AddNestedCells(const std::string& prefix, const msgpack::object& map);  // `prefix/key` cells
  void AddConfig();  // the `config` field and its cells

  msgpack::zone zone_;
  std::string_view bytes_;
  const ConfigText* config_ = nullptr;
  std::vector<Field> fields_;
  std::vector<Cell> cells_;
  std::string text_, arena_;
};

}  // namespace tunebus
