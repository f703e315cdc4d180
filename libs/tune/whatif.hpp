// What if: counterfactual replay of a finished experiment's recorded learning curves through
// another trial scheduler ("what would ASHA with grace_period 2 have done with these trials?").
//
// Input: every trial's results as the experiment recorded them (its result.json rows, oldest
// first) and the order the results reached the trial scheduler across trials (arrival order).
// The replay feeds each recorded result, in arrival order, to a trial scheduler built by
// MakeTrialScheduler, through the calls TrialRunner makes (OnTrialAdd, OnTrialResult,
// OnTrialComplete / OnTrialRemove / OnTrialError, ChooseTrialToRun, ChoosePausedTrialToRun),
// with SchedulerReplay as the TrialSchedulerContext the scheduler calls back, and acts on its
// decisions as TrialRunner::Decide does:
//
// - STOP ends the trial: its later recorded results are not fed (saved iterations and seconds).
// - PAUSE is Ray Tune's time slicing: a paused trial gives up its turns (its recorded results
//   wait, in their order) until the scheduler unpauses it (UnpauseTrial, then PENDING) or picks
//   it (ChoosePausedTrialToRun, asked when nothing is PENDING).
// - Turns. The arrival order is a sequence of turns, one per recorded result. A turn goes to its
//   recorded trial when that trial runs in the replay (RUNNING, or PENDING after an unpause);
//   otherwise (the trial was stopped, is paused, or has no result left) it is a free turn, which
//   goes where Ray Tune's runner would put a freed slot: the PENDING trial ChooseTrialToRun
//   picks, else the PAUSED trial ChoosePausedTrialToRun names, else nobody (saved). After the
//   last turn, trials still RUNNING or PENDING run on, and paused ones are resumed the same way,
//   until nothing is left to feed.
// - Trials. The scheduler learns of every trial with a result before the first turn (OnTrialAdd
//   in creation order, as the variant generator creates trials ahead of their start), so ASHA
//   draws brackets and HyperBand fills brackets as in a run; a trial enters the runner's list
//   (trials(), FindTrial) at its first recorded result. So trials start when they did, never
//   earlier, and no trial is PENDING but an unpaused one (the median rule and PBT time-slice only
//   when a paused trial waits). Trials without a result are left out.
// - Unknown beyond: when the replay wants a result the record does not have (the scheduler
//   CONTINUEs, or resumes, a trial the actual run ended early: its actual scheduler stopped it, or
//   the user did), the trial leaves the replay "unknown beyond" its last recorded result
//   (OnTrialRemove): counted, its later cost and metric never invented. A trial that errored is
//   errored again at the same point (OnTrialError); one that finished on its own (its trainable
//   returned or said done, or the experiment's stop criteria were met) stops at its last result
//   as TrialRunner stops it (STOP combined with the scheduler's decision, then OnTrialComplete).
//
// PBT cannot be replayed: its exploit restarts a trial from another trial's checkpoint with a
// new config, a curve no recorded result holds; SchedulerReplay::Run refuses it
// (InvalidArgument). Wall-clock time is not modelled: trial-seconds add up the results fed.
//
// Sources: the schedulers' own (ASHA: Li et al., "A System for Massively Parallel Hyperparameter
// Tuning", MLSys 2020, Algorithm 2; HyperBand: Li et al., JMLR 2018; the median stopping rule:
// Golovin et al., KDD 2017), with Ray Tune 2.x's TrialRunner and FIFO fallback to PAUSED trials.
//
// Deterministic: the same experiment, scheduler, config and seed give the same report. Pure: no
// I/O, no clock. Cost: O(results) besides the scheduler's own work per result (at -O2, 1,000
// trials x 100 results: ASHA 0.06-0.2 s, HyperBand 0.3 s, the median stopping rule 0.8 s, which
// looks at every other trial at each result; docs/how-to/whatif.md "Speed").
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

/// How a trial's recorded history ends.
enum class RecordedEnd {
  kFinished,  // on its own after its last result: trainable returned or done, stop criteria met
  kStopped,   // ended early from outside (its trial scheduler, the user): it could have run on
  kErrored,   // failed after its last result
};

/// One trial as the finished experiment recorded it.
struct RecordedTrial {
  std::string trial_id;
  nlohmann::json config;  // the sampled config (the searcher's suggestion), an object
  /// Its results, oldest first, each with the auto-filled keys (training_iteration,
  /// time_this_iter_s / time_total_s in seconds) and the metrics; the replayed scheduler's
  /// metric and time_attr must be numbers in every one.
  std::vector<TrainingResult> results;
  RecordedEnd end = RecordedEnd::kFinished;
};

/// A finished experiment's record, as the replay takes it.
struct RecordedExperiment {
  std::vector<RecordedTrial> trials;  // creation order
  /// The order results reached the trial scheduler: one trial position (into `trials`) per
  /// result; the k-th occurrence of position i stands for trials[i].results[k]. Empty = by
  /// ArrivalOrderByTimestamp.
  std::vector<uint32_t> arrival;
  std::string metric;  // the experiment's metric and mode ("max" | "min"): the schedulers'
  std::string mode;    // defaults, and what "best" means in the report
};

/// Arrival order from the results' `timestamp` (seconds since the Unix epoch, Ray Tune's
/// auto-filled key), ties broken by training_iteration then creation order; a result without
/// one sorts as its trial's previous result (0 for the first).
std::vector<uint32_t> ArrivalOrderByTimestamp(const std::vector<RecordedTrial>& trials);

/// What the replay did with one trial.
enum class ReplayFate {
  kAsRecorded,     // fed every recorded result and ended as it did
  kStopped,        // the replayed scheduler stopped it with recorded results left unfed
  kUnknownBeyond,  // the replay would have run it past its last recorded result
  kLeftPaused,     // paused when nothing was left to replay, and never resumed
};
/// "as_recorded" | "stopped" | "unknown_beyond" | "left_paused".
const char* ReplayFateName(ReplayFate fate);

/// One trial of the replay.
struct TrialReplay {
  std::string trial_id;
  ReplayFate fate = ReplayFate::kAsRecorded;
  int64_t results_recorded = 0;
  int64_t results_replayed = 0;
  double seconds_recorded = 0;  // sum of time_this_iter_s of its recorded results
  double seconds_replayed = 0;  // the same over the results fed
  /// training_iteration of the last result fed (0: none); for kStopped, where it stopped.
  int64_t last_training_iteration = 0;
  std::optional<double> actual_final;  // the metric in its last recorded result
  std::optional<double> replay_final;  // the metric in its last result fed
  /// kStopped: what the scheduler said of the stop (ASHA {"rung", "bracket", "cutoff",
  /// "value"}, the median rule {"median", "best", "time"}, HyperBand {"bracket", "halving"}).
  nlohmann::json stop_detail;
};

/// Totals of one side (the actual run or the replay).
struct ReplayTotals {
  int64_t training_iterations = 0;  // results fed (one training iteration each)
  double trial_seconds = 0;         // sum of their time_this_iter_s, seconds
  /// The best final metric (Ray Tune's default scope "last": each trial's last result) and its
  /// trial; the replay's counts trials whose end it knows (not kUnknownBeyond), nullopt if none.
  std::optional<double> best_final;
  std::string best_trial_id;
};

/// The replay's answer beside what happened.
struct WhatIfReport {
  std::string scheduler;            // the replayed scheduler's name (TrialScheduler::name)
  nlohmann::json scheduler_config;  // its parameters as given
  std::string metric, mode;
  int64_t trials = 0;  // trials with at least one recorded result (the others are left out)
  ReplayTotals actual, replay;
  /// actual.best_final - replay.best_final in the mode's direction (> 0: the replay ends worse;
  /// < 0 possible: a curve may peak before its end), nullopt when either is missing.
  std::optional<double> regret;
  /// The actual best trial in the replay: its fate, and where it stopped when kStopped.
  std::optional<TrialReplay> actual_best;
  int64_t trials_stopped = 0;          // kStopped
  int64_t trials_unknown_beyond = 0;   // kUnknownBeyond
  int64_t trials_left_paused = 0;      // kLeftPaused
  int64_t pauses = 0;                  // PAUSE decisions
  int64_t resumes = 0;                 // paused trials that ran again
  std::vector<TrialReplay> per_trial;  // creation order, trials with results only

  /// {"scheduler", "scheduler_config", "metric", "mode", "trials", "actual":
  /// {"training_iterations", "trial_seconds", "best_final", "best_trial_id"}, "replay": {...},
  /// "saved": {"training_iterations", "trial_seconds"}, "regret", "actual_best": {trial},
  /// "trials_stopped", "trials_unknown_beyond", "trials_left_paused", "pauses", "resumes",
  /// "per_trial": [{"trial_id", "fate", "results_recorded", "results_replayed", "seconds_recorded",
  /// "seconds_replayed", "last_training_iteration", "actual_final", "replay_final",
  /// "stop_detail"}]}; a missing optional is null.
  nlohmann::json ToJson() const;
};

/// The replay of one experiment through one trial scheduler: the TrialSchedulerContext the
/// scheduler calls back, holding the replayed trials' states. Single use: construct, Run once.
class SchedulerReplay final : public TrialSchedulerContext {
 public:
  /// REQUIRES: `experiment` outlives this; `scheduler` is fresh (no callback made yet).
  SchedulerReplay(const RecordedExperiment& experiment, std::unique_ptr<TrialScheduler> scheduler);

  /// Replays the whole record. Errors: InvalidArgument when the arrival order does not match the
  /// trials' result counts, or a recorded result lacks what the scheduler needs (its
  /// ValidateResult message, with the trial and training_iteration); FailedPrecondition when
  /// called twice.
  Result<WhatIfReport> Run();

  // ---- TrialSchedulerContext (trial_scheduler.hpp) ------------------------------------------
  const std::vector<Trial>& trials() const override { return trials_; }
  const Trial* FindTrial(const std::string& trial_id) const override;
  bool IsPaused(const std::string& trial_id) const override;
  Status UnpauseTrial(const std::string& trial_id) override;
  Status StopTrial(const std::string& trial_id) override;
  /// Always FailedPrecondition: an exploit's curve is in no record.
  Status ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                      nlohmann::json new_config) override;
  void RequestCheckpoint(const std::string&) override {}  // nothing to save
  void SetResultInfo(const std::string&, const std::string&, nlohmann::json) override {}
  /// Trial-seconds fed so far (the replay has no wall clock).
  double NowS() const override { return seconds_fed_; }

 private:
  /// Replay state of one trial beside its Trial in trials_.
  struct Cursor {
    uint32_t recorded = 0;  // position in experiment.trials
    size_t next = 0;        // its next recorded result to feed
    TrialReplay out;
  };
  void Start(uint32_t recorded);  // enters trials() at its first recorded result
  void SetStatus(int64_t index, TrialStatus status);
  /// Gives trial `index` a turn: feeds its next result, or, having none, ends it as its record
  /// ends (EndWithoutResult). Returns whether a result was fed.
  Result<bool> RunTurn(int64_t index);
  /// A turn nobody holds: to the PENDING trial ChooseTrialToRun picks, else to the PAUSED one
  /// ChoosePausedTrialToRun names. Returns whether a result was fed (false: nobody waits).
  Result<bool> FreeTurn();
  /// Feeds trial `index`'s next recorded result and acts on the decision (TrialRunner::Decide).
  Status Feed(int64_t index);
  /// The replay wants a result trial `index` has not recorded: unknown beyond, or its error.
  void EndWithoutResult(int64_t index);
  void Take();  // drops the scheduler's state delta (nothing is journaled)
  WhatIfReport Report() const;

  const RecordedExperiment& experiment_;
  std::unique_ptr<TrialScheduler> scheduler_;
  double sign_ = 1;
  std::vector<Trial> trials_;     // started trials, in start order (Trial::index)
  std::vector<Cursor> cursors_;   // parallel to trials_
  std::vector<int64_t> started_;  // experiment trial position -> index in trials_, or -1
  std::unordered_map<std::string, int64_t> by_id_;
  std::set<int64_t> pending_;  // indices of PENDING trials (unpaused)
  std::set<int64_t> running_;  // indices of RUNNING trials
  int64_t deciding_ = -1;
  double seconds_fed_ = 0;
  int64_t pauses_ = 0, resumes_ = 0;
  bool ran_ = false;
};

/// Builds `scheduler` (MakeTrialScheduler's names: fifo, asha, hyperband, hyperband_bohb,
/// median_stopping; not pbt) from `config` with the experiment's metric and mode, and replays
/// `experiment` through it. Errors: InvalidArgument for pbt, an unknown scheduler or a bad
/// parameter ("<param>: ..."), and SchedulerReplay::Run's.
Result<WhatIfReport> ReplayExperiment(const RecordedExperiment& experiment,
                                      const std::string& scheduler, const nlohmann::json& config,
                                      uint64_t seed = 0);

}  // namespace tunebus
