// TrialRunner: the experiment's event loop logic (Ray Tune's `TrialRunner`, shared/seeds/000
// and 003), without I/O. It creates trials from the search algorithm, asks the executor to
// place and launch them, turns every result into a decision (stoppers + trial scheduler),
// handles failures with max_failures / fail_fast, and decides when the experiment is over.
//
// Threading: one thread calls everything (the scheduler service's loop, or a unit test).
// Time comes from the `now_s` function (seconds), so tests use a fake clock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "libs/core/resources.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/trial_executor.hpp"
#include "libs/tune/trial_scheduler.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

struct RunnerOptions {
  std::string experiment_id;                 // short hex, prefix of every trial id
  std::string metric;                        // may be empty
  std::string mode;                          // "max" | "min" | ""
  std::map<std::string, double> stop;        // result key -> threshold (stop when >=)
  std::optional<double> time_budget_s;       // wall seconds for the whole experiment
  int64_t max_concurrent_trials = 0;         // 0 = unlimited
  int64_t max_failures = 0;                  // -1 = retry forever
  std::string fail_fast;                     // "" (off), "true" or "raise" (see ExperimentSpec)
  Resources resources_per_trial;
};

enum class ExperimentStatus {
  kRunning,   // trials remain to run
  kFinished,  // every trial finished (or the time budget ran out)
  kStopped,   // stopped by the user
  kError,     // fail_fast and a trial errored
};
const char* ExperimentStatusName(ExperimentStatus s);  // "RUNNING", "FINISHED", ...

class TrialRunner {
 public:
  TrialRunner(RunnerOptions options, std::unique_ptr<VariantGenerator> search_alg,
              std::unique_ptr<TrialScheduler> scheduler, TrialExecutor& executor,
              RunnerObserver& observer, std::function<double()> now_s);

  /// Makes progress without an external event: creates trials, places pending ones while the
  /// executor can, enforces the time budget. Call after every event batch.
  void Step();

  // ---- answers from the executor -------------------------------------------------------
  /// Placement granted: the trial becomes RUNNING on `worker_id` and is launched.
  void OnTrialPlaced(const std::string& trial_id, int64_t attempt, const std::string& worker_id,
                     const std::vector<std::string>& gpu_ids);
  /// No room now: the trial stays PENDING (the executor will not place until something frees).
  void OnPlacementDeferred(const std::string& trial_id, int64_t attempt);
  /// The trial can never fit: it becomes ERROR with `reason`.
  void OnPlacementFailed(const std::string& trial_id, int64_t attempt, const std::string& reason);
  /// A result of (trial_id, attempt), 1-based `seq` per attempt. Duplicates (seq already seen)
  /// and stale attempts are dropped with an error Status saying why (not a failure).
  Status OnResult(const std::string& trial_id, int64_t attempt, int64_t seq, nlohmann::json metrics,
                  double time_this_iter_s);
  /// The trainable of (trial_id, attempt) ended: ok = returned normally (TERMINATED), else a
  /// failure with `error` (requeue or ERROR per max_failures).
  void OnTrialExited(const std::string& trial_id, int64_t attempt, bool ok, const std::string& error);
  /// A worker is gone: its RUNNING trials requeue (a worker loss does not count against
  /// max_failures, see DESIGN.md).
  void OnWorkerLost(const std::string& worker_id);

  // ---- control ----------------------------------------------------------------------------
  /// Stops one trial (PENDING, RUNNING or PAUSED -> TERMINATED). Returns a message; NotFound
  /// for an unknown id; a finished trial is a no-op with an OK message saying so.
  Result<std::string> StopTrial(const std::string& trial_id);
  /// Stops every unfinished trial; the experiment ends as STOPPED.
  void StopExperiment(const std::string& reason);

  // ---- queries ----------------------------------------------------------------------------
  bool IsFinished() const { return status_ != ExperimentStatus::kRunning; }
  ExperimentStatus status() const { return status_; }
  const std::string& end_reason() const { return end_reason_; }
  const std::vector<Trial>& trials() const { return trials_; }
  const Trial* FindTrial(const std::string& trial_id) const;
  /// Total trials the experiment will have (-1 if unbounded).
  int64_t TotalTrials() const;
  /// The trial whose last result is best by metric/mode (Ray Tune's get_best_trial, scope
  /// "last"), or nullptr when there is no metric or no result carries it.
  const Trial* BestTrial() const;
  std::map<TrialStatus, int64_t> CountByStatus() const;
  const RunnerOptions& options() const { return options_; }

 private:
  Trial* Find(const std::string& trial_id);
  Trial* FindCurrent(const std::string& trial_id, int64_t attempt, const char* what);
  void MaybeAddTrials();
  void PlacePending();
  /// RUNNING -> `to`: observer first, then (if asked) stop the trainable, then release.
  void LeaveRunning(Trial& trial, TrialStatus to, const std::string& error, bool stop_trainable = false);
  void HandleFailure(Trial& trial, const std::string& error);
  void SetPending(Trial& trial);
  void CheckFinished();
  void StopUnfinished();
  void EndExperiment(ExperimentStatus status, const std::string& reason);
  std::optional<Decision> StopperDecision(const nlohmann::json& result) const;
  int64_t InFlight() const { return int64_t(placing_.size()) + running_; }

  RunnerOptions options_;
  std::unique_ptr<VariantGenerator> search_alg_;
  std::unique_ptr<TrialScheduler> scheduler_;
  TrialExecutor& executor_;
  RunnerObserver& observer_;
  std::function<double()> now_s_;

  std::vector<Trial> trials_;
  std::unordered_map<std::string, size_t> index_;  // trial_id -> position in trials_
  std::set<int64_t> pending_;                      // indices of PENDING trials not being placed
  std::set<int64_t> placing_;                      // indices with a placement in flight
  int64_t running_ = 0;
  double start_s_ = 0;
  ExperimentStatus status_ = ExperimentStatus::kRunning;
  std::string end_reason_;
};

}  // namespace tunebus
