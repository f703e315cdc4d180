// WhatIfJournal: folds a finished experiment's journal records (libs/journal/records.hpp), in
// journal order, into the record a what-if replay takes (RecordedExperiment, libs/tune/whatif.hpp):
// the trials in creation order with their configs, each trial's results, the order the results
// reached the trial scheduler (the journal's order: exact, where result.json's whole-second
// timestamps tie), and how each trial's record ends.
//
// Which results: those of a trial's current attempt, as replay counts them (JournalReplayer
// OnResult): a late result of an attempt already restarted is left out, and so is the copy of
// the last result an older journal appended when a trainable returned (IsReturnCopy; its `done`
// is kept). A restored attempt reports again from its checkpoint: its result at
// training_iteration i replaces the earlier attempt's results from i on (the curve goes on from
// the checkpoint; the earlier attempt's lost iterations are not counted).
//
// How a record ends (RecordedEnd): ERROR status -> errored; the trainable returned
// (trial_status `returned`), its last result says done, or it reached the longest trial's
// training_iteration (a max_t, a stop criterion on training_iteration) -> finished; otherwise
// (its trial scheduler, a stop criterion on a metric or the user stopped it, or the experiment
// ended before it did) -> stopped early: a replay never runs it past its record.
//
// Results keep the numbers under the keys given (what the replayed schedulers read); the rest of
// a result is dropped. Pure: no I/O. Thread-compatible (whatif decodes on a thread of its own).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/whatif.hpp"

namespace tunebus {

class WhatIfJournal {
 public:
  /// `keys`: the result keys kept (their numbers); training_iteration, time_this_iter_s,
  /// time_total_s and timestamp are always kept.
  explicit WhatIfJournal(std::vector<std::string> keys);

  /// One decoded record (journal::ReadStoredRecord), in journal order. Records of kinds the
  /// record does not need are skipped. Errors: Corruption for a malformed trial_added, result
  /// or trial_status, or one naming a trial not added before it (the caller stops there).
  Status Apply(const nlohmann::json& record);
  /// One stored record (a journal page's, framed: journal::UnframeRecord) in journal order:
  /// Apply of its decoded form, with a result record's fields read from its msgpack in place
  /// (no JSON document: the whole cost of a replay's read, 100,000 of them for 1,000 trials x
  /// 100 results). Errors: Apply's; Corruption for a torn or flipped record or bad msgpack.
  Status ApplyStored(std::string_view stored);
  /// Result records applied (all attempts), for the report.
  int64_t results_seen() const { return results_seen_; }
  /// The record, with the experiment's metric and mode. Leaves this empty.
  RecordedExperiment Take(std::string metric, std::string mode);

 private:
  struct TrialFold {
    int64_t attempt = 0;
    int64_t last_seq = 0;
    std::string status;  // its newest trial_status ("" = none)
    bool returned = false;
    bool last_done = false;       // its newest kept result says done
    std::vector<uint64_t> slots;  // each kept result's position in owners_
  };
  Status OnResult(const nlohmann::json& r, size_t trial);
  /// A result record's fields as OnResult takes them: from a JSON record or straight from
  /// msgpack (ApplyStored).
  struct ResultFields {
    int64_t attempt = 0, seq = 0;
    bool done = false;
    TrainingResult kept;  // the numbers under keys_
  };
  Status OnResultFields(ResultFields f, size_t trial);

  std::vector<std::string> keys_;
  std::vector<RecordedTrial> trials_;
  std::vector<TrialFold> folds_;  // parallel to trials_
  std::unordered_map<std::string, size_t> index_;
  std::vector<int64_t> owners_;  // per result record kept, its trial (-1: replaced since)
  int64_t results_seen_ = 0;
};

}  // namespace tunebus
