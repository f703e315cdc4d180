// One page of a trial's reported results, cut from its result.json for the control socket's
// ListResults (proto/control.hpp), so that a driver on another host reads a trial's history
// without the results folder.
//
// Why result.json: it holds exactly the journal's result records of the trial, each as the
// result the trial reported with Ray Tune's auto-filled keys and its config at that point, once
// each and in journal order (docs/explanation/recovery.md "The results folder"), on the scheduler's
// own host, for a running experiment and for one read back from its journal alike; one trial's rows
// are one file, where the journal would be read whole (every trial's records) for each page.
// A running trial's newest rows appear once their records are durable and the file writer wrote
// them (ResultFileWriter::kFileFlushInterval).
//
// Rows: the file's complete lines ('\n'-ended) whose text, without surrounding blanks, starts
// with '{' and ends with '}'; the torn last line a writer is appending is not one, nor a blank
// line. A page's rows are checked to be JSON (nlohmann::json::accept) and copied as text: no JSON
// document of them is built. Cost: one pass over the file (memchr per line), plus parsing the
// page's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus {

struct ResultRowsPage {
  std::string rows_json;  // the page's rows as the text of a JSON array, "[{...},{...}]"
  int64_t rows = 0;       // rows in the page
  int64_t total = 0;      // rows in the file
};

/// Cuts the page [offset, offset + limit) of the rows of a result.json fed in chunks (split
/// anywhere). The page ends early after the row that brings its text to `max_bytes` or more
/// (it holds at least one row when any is at `offset`).
class ResultRowsCutter {
 public:
  /// REQUIRES: offset >= 0, limit >= 1.
  ResultRowsCutter(std::string source, int64_t offset, int64_t limit, size_t max_bytes);

  /// The next bytes of the file. Errors: Corruption "<source>:<line>: not a JSON object" for a
  /// row of the page that does not parse (nothing more is taken).
  Status Feed(std::string_view bytes);
  /// The page, once every byte was fed (a last line without its '\n' is not a row).
  ResultRowsPage Finish();

 private:
  Status Line(std::string_view line);  // one complete line, without its '\n'

  std::string source_;  // named in errors (the file's path)
  int64_t offset_, limit_;
  size_t max_bytes_;
  std::string partial_;  // the bytes of the line that continues in the next chunk
  int64_t lines_ = 0;
  bool full_ = false;
  ResultRowsPage page_;
};

/// The page of the rows of the file `path` (see ResultRowsCutter); a missing file has no rows.
/// Errors: IoError when it cannot be read; Corruption (ResultRowsCutter::Feed).
Result<ResultRowsPage> ReadResultRows(const std::string& path, int64_t offset, int64_t limit,
                                      size_t max_bytes);

}  // namespace tunebus
