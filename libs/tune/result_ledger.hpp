// ResultLedger: what a trial's results do to the Trial in a TrialRunner: the keys the runner adds
// to every result (Ray Tune's auto-filled result keys: date, experiment_tag,
// iterations_since_restore, time_since_restore, time_this_iter_s, time_total_s, timestamp,
// training_iteration, trial_id), the counters an accepted result moves, and the trial's newest
// result with its metric (options.metric) cached for BestTrial and the views.
//
// Invariants it keeps on a Trial: last_seq, training_iteration, time_total_s and num_results move
// only in Accept, once per accepted result (training_iteration by 1, time_total_s by the
// result's time_this_iter_s); last_metric is the metric of last_result_msgpack, or nullopt when
// that result lacks it as a number.
//
// Cost: AutoFill formats the date once per second of wall time at most (the cached `date`).
// Thread-compatibility: owned by the runner's thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/trial.hpp"
#include "libs/tune/training_result.hpp"

namespace tunebus {

class ResultLedger {
 public:
  /// `metric`: options.metric (may be empty: no metric is cached).
  explicit ResultLedger(std::string metric) : metric_(std::move(metric)) {}

  /// Sets the auto-filled keys on result `metrics` of `trial`, which moves the trial to its
  /// next training_iteration and `time_this_iter_s` (seconds) further; `now_s` (Unix seconds)
  /// gives `timestamp` and `date`; a non-null `exploit_note` goes in as "pbt_exploit". The keys
  /// are set in sorted order (TrainingResult::Order is cheapest on sorted runs); `done` is left
  /// to the decision.
  void AutoFill(TrainingResult& metrics, const Trial& trial, double time_this_iter_s, double now_s,
                nlohmann::json exploit_note);
  /// Makes result `seq` the trial's newest accepted one: last_seq, training_iteration,
  /// time_total_s (+ `time_this_iter_s` seconds), num_results.
  static void Accept(Trial& trial, int64_t seq, double time_this_iter_s);
  /// Stores `result` as the trial's newest (msgpack) and caches its metric.
  void SetLast(Trial& trial, const TrainingResult& result) const;
  /// Sets trial.last_metric from `result` (the metric when it is a number).
  void CacheMetric(Trial& trial, const TrainingResult& result) const;
  /// A trial whose trainable returned (exit ok, still RUNNING) and whose last result of this
  /// attempt is not done: that result, with done=true, becomes the trial's newest and
  /// trial.returned is set (journaled by the TERMINATED status). It is not a new result: no
  /// result record, no row in the files, not counted in num_results. Ray Tune 2.x's runner does
  /// the same with a function trainable's return (RESULT_DUPLICATE,
  /// tune_controller._process_trial_result: done for the scheduler and searcher, kept out of
  /// the logger callbacks); docs/reference/results-folder.md.
  void RecordReturn(Trial& trial) const;

 private:
  std::string metric_;
  int64_t date_of_ = -1;  // the timestamp date_ shows (RayDate), to format it once a second
  std::string date_;
};

}  // namespace tunebus
