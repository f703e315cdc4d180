// ResultFilesRepair: brings a resumed experiment's result files back to what its journal holds
// (docs/explanation/recovery.md "The results folder"). The files of a trial hold exactly the
// journal's result records of that trial, in journal order: one line of result.json, one row of
// progress.csv (after the CSV header) and one record of its TensorBoard event file (after the file
// version) each. Every row is derived from its record and the trial's config at that point of the
// journal (trial_added / trial_updated records), so a repaired row is the row live writing gave. A
// scheduler killed mid-run leaves them short (rows its writer had not written yet) or with a torn
// last line; one killed while ending the experiment may leave rows whose records never became
// durable. Repairing twice changes nothing.
//
// Use, on the loop thread before the resumed experiment takes new results:
//   1. Plan(trials): cuts torn last lines and rows beyond the journal's, writes a missing
//      params.json, and returns how many rows are missing;
//   2. if any are, for every record of the journal in order, OnConfigRecord(trial, config) for a
//      trial_added or trial_updated record and OnResultRecord(trial, record) for a result
//      record: the missing rows are staged on the experiment's ResultFiles (which keeps the CSV
//      header already there), ahead of every live result;
//   3. Finish(): closes the files it wrote to (a running trial's next result reopens them), so a
//      resumed experiment does not hold three descriptors per repaired trial until it ends.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/trial.hpp"
#include "services/scheduler/results/result_files.hpp"

namespace tunebus {

/// Rows of a result file. `rows` counts complete rows (ended by '\n'; in a CSV, one outside
/// quotes), without the CSV header; `header` is whether a complete header row is there.
struct FileRows {
  int64_t rows = 0;
  bool header = false;
  bool torn = false;  // bytes after the last complete row
};

/// Counts the rows of `path` (missing file: 0 rows). `csv`: the first row is a header and
/// quoted fields may hold newlines.
FileRows CountRows(const std::string& path, bool csv);
/// Cuts `path` after its first `keep` rows (after the header too, for a CSV), dropping a torn
/// tail. Returns false (and logs) if the file cannot be cut.
bool CutAfterRows(const std::string& path, bool csv, int64_t keep);
/// Counts the result records of a TensorBoard event file (tensorboard_events.hpp): complete
/// records after the file version; `header` is whether the file version is complete.
FileRows CountEventRows(const std::string& path);
/// Cuts an event file after its file version and `keep` result records, dropping a torn tail.
bool CutAfterEventRows(const std::string& path, int64_t keep);

class ResultFilesRepair {
 public:
  struct Summary {
    int64_t trials = 0;          // trials whose files were looked at
    int64_t torn_lines = 0;      // torn last lines cut
    int64_t surplus_rows = 0;    // rows cut because no durable record holds them
    int64_t missing_rows = 0;    // rows the journal holds and the files did not
    int64_t rows_written = 0;    // of those, staged by OnResultRecord
    int64_t params_written = 0;  // params.json files that were missing
  };

  /// `experiment_dir`: <results_dir>/<experiment>; `files`: the experiment's writer.
  ResultFilesRepair(std::string experiment_dir, ResultFiles& files);

  /// Step 1 (see above). `trials`: as replayed (num_results = result records in the journal).
  /// Returns the rows missing.
  int64_t Plan(const std::vector<Trial>& trials);
  /// Step 2: the next trial_added / trial_updated record of the journal, `config` its `config`.
  void OnConfigRecord(const Trial& trial, const nlohmann::json& config);
  /// Step 2: the next result record of the journal (its `attempt`, `seq` and `result`). A record
  /// repeating the trial's previous one (journal::IsReturnCopy: an older journal's copy of the
  /// last result with done: true) is no reported result and writes no row.
  void OnResultRecord(const Trial& trial, const nlohmann::json& record);
  /// Step 3: closes the files of every trial OnResultRecord wrote rows to.
  void Finish();
  const Summary& summary() const { return summary_; }

 private:
  struct Progress {
    int64_t kept = 0;       // rows the files hold after Plan
    int64_t seen = 0;       // result records of the trial fed so far
    int64_t total = 0;      // result records of the trial in the journal (copies not counted)
    nlohmann::json config;  // the trial's config at the journal record fed last
    int64_t attempt = 0;    // attempt and seq of the result record fed last
    int64_t seq = 0;
    bool wrote = false;  // OnResultRecord staged a row (the files are open)
  };
  std::string experiment_dir_;
  ResultFiles& files_;
  std::unordered_map<int64_t, Progress> progress_;  // trial index -> its rows
  Summary summary_;
};

}  // namespace tunebus
