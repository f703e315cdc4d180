// What the dashboard's trial page (docs/how-to/dashboard.md "One trial",
// dashboard/routes/trial_routes.cpp) makes of a trial object, its result.json and its output files:
// pure functions of JSON and text, no I/O, unit-tested (tests/unit/dashboard_trial_views_test.cpp).
// Trial objects have the shape proto/PROTOCOL.md gives them ("Control socket"); result.json is
// docs/reference/results-folder.md's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus::dashboard {

/// A page of a trial's result rows, as GET .../trials/ID/results asks for it.
struct ResultsQuery {
  /// Rows skipped (>= 0); nullopt: the last `limit` rows (the tail).
  std::optional<int64_t> offset;
  int64_t limit = 100;  // 1..kMaxLimit rows
  static constexpr int64_t kMaxLimit = 1000;
};

/// Checks `offset` (absent or >= 0) and `limit` (1..kMaxLimit). Errors: InvalidArgument naming
/// the field.
Result<ResultsQuery> CheckResultsQuery(ResultsQuery query);

/// A page of the result rows of a trial's result.json text (JSON lines; a line that is not a
/// JSON object, such as a torn last line while the writer appends, is not a row):
///   {"total": rows in the file, "offset": the first row's index (0-based), "limit",
///    "columns": every top-level key of any row (not only this page's), "training_iteration",
///               `metric`, "time_total_s" first (those present), "config" last, the others in
///               name order,
///    "rows": [the row objects as written, offset .. offset+limit)}.
/// An offset past the end gives no rows.
nlohmann::json ResultPage(std::string_view text, const ResultsQuery& query,
                          const std::string& metric);

/// The checkpoints of a trial object for the trial page: {"checkpoints": [{checkpoint_id, name
/// (the id's last '/'-separated part, what the export route takes), training_iteration,
/// time_total_s (s), score (or null), size_bytes, timestamp (s since the epoch, of the result
/// row with that training_iteration in `result_text`; null when there is none)}] oldest first,
/// "not_stored": the trial's checkpoints_not_stored ([{training_iteration, reason}])}.
nlohmann::json CheckpointRows(const nlohmann::json& trial, std::string_view result_text);

/// The last id part of `checkpoint_id` ("exp/t1/00000004-a1" -> "00000004-a1").
std::string CheckpointName(std::string_view checkpoint_id);

/// The file name a checkpoint's export downloads as: "<trial_id>_checkpoint_<name>.tar", any
/// byte outside [A-Za-z0-9._-] replaced by '_' (it goes into a Content-Disposition header).
std::string ExportFileName(std::string_view trial_id, std::string_view checkpoint_id);

/// The trial's output streams the logs route serves: the files the trial-worker appends the
/// trainable's stdout and stderr to in the trial's folder (libs/trainable/command_trainable.hpp).
/// Returns the file name ("stdout" or "stderr") for `stream`, "" (default) meaning stdout.
/// Errors: InvalidArgument for another name.
Result<std::string> LogFileName(std::string_view stream);

/// Bytes of a log's tail served by default and at most (?tail_bytes=).
inline constexpr int64_t kDefaultTailBytes = 64 << 10;
inline constexpr int64_t kMaxTailBytes = 4 << 20;

/// Checks `tail_bytes` (1..kMaxTailBytes). Errors: InvalidArgument.
Result<int64_t> CheckTailBytes(int64_t tail_bytes);

/// Where to read the last `tail_bytes` of a file of `size` bytes: {offset, length}.
struct TailWindow {
  int64_t offset = 0;
  int64_t length = 0;
};
TailWindow TailOf(int64_t size, int64_t tail_bytes);

/// The text of a tail read from `offset` > 0 starts mid-line: its first (partial) line is
/// dropped, unless the text holds no newline at all (one long line: kept whole). From offset 0
/// the text is returned as is.
std::string_view WholeLines(std::string_view text, int64_t offset);

}  // namespace tunebus::dashboard
