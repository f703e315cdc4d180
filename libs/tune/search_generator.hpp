// SearchGenerator: the experiment's Searcher as the TrialRunner drives it (Ray Tune's
// SearchGenerator, which wraps a Searcher for the trial runner and answers is_finished). It owns
// the searcher, journals every call's state change, and knows whether more trials will come.
//
// Journaling (searcher.hpp, DESIGN.md "Journal and recovery"): after each call that may change
// the searcher (Suggest, OnTrialResult, OnTrialComplete) its TakeStateDelta is handed to the
// observer's OnSearcherDelta before the caller acts on the call's answer: a trial_added record
// never precedes the delta of the suggestion that made it.
//
// States of the suggestion stream: asking (Suggest may answer a config), not now (the newest
// Suggest answered NotNow; asked again at the next Step), finished (Suggest answered Finished, or
// the searcher suggested its Total()). After RestoreState the searcher is unconfirmed until it
// is asked again: its suggested() may count a suggestion whose trial_added the journal lost (cut
// after the searcher's delta), so Done() waits for that config to be suggested again.
//
// Thread-compatibility: owned by the runner's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/searcher.hpp"
#include "libs/tune/trial_executor.hpp"

namespace tunebus {

class SearchGenerator {
 public:
  /// REQUIRES: `searcher` ready to suggest (SetSearchProperties called); `observer` outlives
  /// this.
  SearchGenerator(std::unique_ptr<Searcher> searcher, RunnerObserver& observer)
      : searcher_(std::move(searcher)), observer_(observer) {}

  /// The config of new trial `trial_id` (Searcher::Suggest), its delta journaled.
  Suggestion Suggest(const std::string& trial_id);
  /// Shows an accepted result (with its auto-filled keys and `done`) to the searcher.
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result);
  /// Tells the searcher that `trial_id` ended with `last_result` (null: none).
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result, bool error);
  /// The same with the trial's newest result (trial.last_result_msgpack).
  void OnTrialComplete(const Trial& trial, bool error);
  /// True once the searcher will suggest nothing more: it answered Finished, or it suggested its
  /// Total() (and is not unconfirmed).
  bool Done() const;
  /// The newest Suggest answered NotNow.
  bool not_now() const { return not_now_; }
  /// Total trials of the experiment: `created` (every trial there is, added ones included) plus
  /// those the searcher has yet to suggest; -1 if unbounded.
  int64_t TotalTrials(int64_t created) const;
  /// Restores the searcher's whole state (null: it keeps the state it was built in) and marks it
  /// unconfirmed. Errors: the searcher's (InvalidArgument when the state does not restore).
  Status RestoreState(const nlohmann::json& state);
  /// Applies the deltas journaled after that state, in order (not journaled again). Errors:
  /// Corruption from the searcher.
  Status ApplyDeltas(const std::vector<nlohmann::json>& deltas);
  const Searcher& searcher() const { return *searcher_; }

 private:
  void Journal();

  std::unique_ptr<Searcher> searcher_;
  RunnerObserver& observer_;
  bool finished_ = false;     // Suggest answered Finished
  bool not_now_ = false;      // the newest Suggest answered NotNow
  bool unconfirmed_ = false;  // restored and not asked since
};

}  // namespace tunebus
