// TrialRunner: the experiment's event loop logic (Ray Tune's `TrialRunner`, shared/seeds/000
// and 003), without I/O. It creates trials from its searcher (searcher.hpp), asks the executor to
// place and launch them, turns every result into a decision (stoppers + trial scheduler), shows
// results and trial ends to the searcher, handles failures with max_failures / fail_fast, and
// decides when the experiment is over (Ray's is_finished: every trial done and the searcher
// finished).
//
// Per trial it keeps three things at one index (Trial::index): the Trial (trials()), its phase
// (phases(), trial_phases.hpp: the states and their transitions) and its TrialSlot (slot(): a
// result held for the driver, a journaled driver answer, a PBT exploit note, the action that
// answered its newest result; the invariants are TrialSlot's, trial_slot.hpp). Its public
// methods are the executor's and the driver's answers, recovery and queries; the user's commands
// are TrialControl's (trial_control.hpp); reading a runner from outside (best trial, counts,
// referenced checkpoints, the slots' invariants) is runner_queries.hpp's.
//
// Its parts, each owned by the runner and each with one job:
//   SearchGenerator     the searcher: suggestions, its deltas journaled, whether it is done
//   TrialSchedulerHost  the trial scheduler: its context (the calls it makes back), its deltas
//                       journaled, its restore, its decision log
//   DriverHolds         results held for the driver's answer, answers restored from the journal
//   TrialLifecycle      attempts leaving RUNNING, failing, lost with their worker, ending a save
//   CheckpointManager   checkpoint requests at results, their answers, retention
//   StopCriteria        the `stop` dict
//   ResultLedger        the auto-filled result keys, the counters a result moves, its metric
// The runner orders them: every call into the searcher or trial scheduler is journaled before
// its effects leave (observer before executor), and the experiment's end is decided here.
//
// Threading: one thread calls everything (the scheduler service's loop, or a unit test).
// Time comes from a tunebus::Clock (libs/core/clock.hpp): its WallSeconds() (Unix seconds) for
// start times, result timestamps and the time budget, so tests pass a ManualClock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/checkpoint_failure.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/experiment_status.hpp"
#include "libs/core/fail_fast.hpp"
#include "libs/core/rerun_mode.hpp"
#include "libs/core/resources.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/checkpoint_manager.hpp"
#include "libs/tune/driver_holds.hpp"
#include "libs/tune/driver_link.hpp"
#include "libs/tune/pareto.hpp"
#include "libs/tune/result_ledger.hpp"
#include "libs/tune/scheduler_decisions.hpp"
#include "libs/tune/search_generator.hpp"
#include "libs/tune/searcher.hpp"
#include "libs/tune/stop_criteria.hpp"
#include "libs/tune/trial_control.hpp"
#include "libs/tune/trial_executor.hpp"
#include "libs/tune/trial_lifecycle.hpp"
#include "libs/tune/trial_phases.hpp"
#include "libs/tune/trial_scheduler.hpp"
#include "libs/tune/trial_scheduler_host.hpp"
#include "libs/tune/trial_slot.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

struct RunnerOptions {
  std::string experiment_id;  // short hex, prefix of every trial id
  std::string metric;         // may be empty
  std::string mode;           // "max" | "min" | ""
  /// Two or more for a multi-objective experiment (metric and mode are then empty), else empty.
  std::vector<Objective> objectives;
  std::map<std::string, double> stop;   // result key -> threshold (stop when >=)
  std::optional<double> time_budget_s;  // wall seconds for the whole experiment
  int64_t max_concurrent_trials = 0;    // 0 = unlimited
  int64_t max_failures = 0;             // -1 = retry forever
  /// Requeues after the trial's worker was lost (not counted in max_failures: a preempted
  /// machine is not the trainable's fault); past it the trial is ERROR. -1 = no limit.
  int64_t max_worker_losses = -1;
  FailFast fail_fast = FailFast::kOff;  // see ExperimentSpec
  bool queue_trials = false;            // a trial that fits no worker waits (stays PENDING)
  Resources resources_per_trial;
  // Checkpointing (Ray Tune's checkpoint_freq, checkpoint_at_end, keep_checkpoints_num,
  // checkpoint_score_attr with its "min-" prefix).
  int64_t checkpoint_freq = 0;
  bool checkpoint_at_end = false;
  int64_t keep_checkpoints_num = 0;  // 0 = keep all
  std::string checkpoint_score_attr;
  /// What a RUNNING trial does when a checkpoint asked of it is not stored (OnCheckpointFailed).
  CheckpointFailureMode checkpoint_failure = CheckpointFailureMode::kContinue;
  /// Every trial created by the search algorithm starts from this checkpoint (restore_from).
  std::optional<CheckpointRef> restore_from;
  /// The experiment's param space: `tunectl add` configs must use its keys. Null: any keys.
  nlohmann::json param_space;
};

/// A trial scheduler's journaled state: its newest whole state (null: its initial one) and the
/// deltas journaled after it, in order.
struct TrialSchedulerJournal {
  nlohmann::json state;
  std::vector<nlohmann::json> deltas;
};

/// What TrialRunner::Restore takes over: the state replayed from an experiment's journal
/// (libs/journal/replay.hpp's ReplayedExperiment holds every part).
struct RunnerRestore {
  std::vector<Trial> trials;  // in creation order (Trial::index == position)
  /// The searcher's newest whole state (a searcher_state record's or the snapshot's; null: the
  /// state it was built in) and the `searcher` deltas journaled after it, in order.
  nlohmann::json searcher_state;
  std::vector<nlohmann::json> searcher_deltas;
  /// nullopt: the trial scheduler keeps the state it was built in (a read-only experiment).
  std::optional<TrialSchedulerJournal> trial_scheduler;
  /// Per trial id, the worker action that answered its newest result.
  std::map<std::string, Action> last_actions;
  /// driver_decision records, newest per trial id.
  std::map<std::string, nlohmann::json> driver_answers;
  double start_s =
      0;  // when the experiment was submitted (Unix seconds): the budget counts from it
  /// kRunning while it runs; with `ended_reason`, restores an experiment that had ended.
  ExperimentStatus ended_status = ExperimentStatus::kRunning;
  std::string ended_reason;
};

class TrialRunner final {
 public:
  /// REQUIRES: search_alg ready to suggest (MakeSearcher called its SetSearchProperties);
  /// executor, observer and clock outlive the runner.
  TrialRunner(RunnerOptions options, std::unique_ptr<Searcher> search_alg,
              std::unique_ptr<TrialScheduler> scheduler, TrialExecutor& executor,
              RunnerObserver& observer, const Clock& clock);

  /// Makes progress without an external event: asks the searcher for trials, places pending ones
  /// while the executor can, enforces the time budget. Call after every event batch.
  /// Suggestions (Ray's _update_trial_queue): asked only while fewer than the searcher's
  /// MaxPendingSuggestions() trials wait unplaced (refilled once at most half of them wait);
  /// NotNow ends the asking for this Step, Finished for good. A searcher with a window of 1 is
  /// asked again within the Step as long as its trial was placed and a slot is free (the executor
  /// CanPlace and max_concurrent_trials allows), so N free workers get N trials at once; when
  /// no slot is left it is asked once more, for the trial that waits for the next slot.
  void Step();

  // ---- answers from the executor -------------------------------------------------------
  /// Placement granted: the trial becomes RUNNING on `worker_id` and is launched.
  void OnTrialPlaced(const std::string& trial_id, int64_t attempt, const std::string& worker_id,
                     const std::vector<std::string>& gpu_ids);
  /// No room now: the trial stays PENDING (the executor will not place until something frees).
  void OnPlacementDeferred(const std::string& trial_id, int64_t attempt);
  /// The trial can never fit: it becomes ERROR with `reason`.
  void OnPlacementFailed(const std::string& trial_id, int64_t attempt, const std::string& reason);
  /// A result of (trial_id, attempt), 1-based `seq` per attempt: the trainable's metrics, to
  /// which the runner adds Ray Tune's auto-filled keys; `time_this_iter_s` in seconds.
  /// Duplicates (seq already seen) and stale attempts are dropped with an error Status saying
  /// why (not a failure).
  /// With a driver (SetDriver), a result that passes the checks is held: sent to the driver
  /// (driver_result, with the auto-filled keys and `config`) and decided in OnDriverAnswer, or
  /// at once with the answer journaled for it before a restart (DriverHolds::Restore). While it
  /// is held its trial's counters (training_iteration, time_total_s, last_seq) do not move, and
  /// a resend of it is dropped without a decision.
  Status OnResult(const std::string& trial_id, int64_t attempt, int64_t seq, TrainingResult metrics,
                  double time_this_iter_s);
  /// The trainable of (trial_id, attempt) ended: ok = returned normally (TERMINATED), else a
  /// failure with `error` (requeue or ERROR per max_failures). For an attempt that was saving a
  /// checkpoint before pausing or stopping, this is when its resources are returned.
  /// `start_failed`: the trainable could not be started at all (e.g. a missing command): ERROR at
  /// once, whatever max_failures allows.
  void OnTrialExited(const std::string& trial_id, int64_t attempt, bool ok,
                     const std::string& error, bool start_failed = false);
  /// The worker stored a checkpoint of (trial_id, attempt) holding `training_iteration`.
  /// It joins trial.checkpoints; keep_checkpoints_num retention may delete older ones (the
  /// newest is never deleted). Errors: NotFound; FailedPrecondition for a stale attempt or an
  /// iteration that was never asked for.
  Status OnCheckpointSaved(const std::string& trial_id, int64_t attempt,
                           const std::string& checkpoint_id, int64_t training_iteration,
                           int64_t size_bytes);
  /// The worker could not store the checkpoint of (trial_id, attempt) asked at
  /// `training_iteration`: the checkpoint-store refused it (after the worker's retries);
  /// `reason` is the store's error ("io_error: ... No space left on device"). The request, and
  /// every older one of the attempt still open, is closed, and the trial notes the refusal in
  /// checkpoints_not_stored (journaled). The checkpoint never joins trial.checkpoints, so
  /// keep_checkpoints_num retention and every restore (unpause, requeue, rerun) use stored
  /// checkpoints only. Then options.checkpoint_failure acts on a trial that is RUNNING and not
  /// pausing (a refused pause or end checkpoint is only noted: the trial keeps the status its
  /// decision gave it):
  ///   kContinue  nothing more: the trial runs on (Ray Tune 2.x's syncer logs a failed upload
  ///              and training continues);
  ///   kPause     PauseTrial: answered "pause" at its next result, PAUSED once that checkpoint
  ///              is stored or refused too (then it resumes from its newest stored checkpoint);
  ///   kFail      a trial failure with error "checkpoint at iteration N not stored: <reason>":
  ///              num_failures++, the trainable is stopped, and the trial requeues from its
  ///              newest stored checkpoint while max_failures allows, else is ERROR (fail_fast
  ///              applies).
  /// Errors: NotFound; FailedPrecondition for a stale attempt, an iteration never asked for, or
  /// an experiment that has ended (nothing is journaled after experiment_ended but checkpoints
  /// the store holds; the caller logs the refusal instead).
  Status OnCheckpointFailed(const std::string& trial_id, int64_t attempt,
                            int64_t training_iteration, const std::string& reason);
  /// True if `worker_id` may go on running (trial_id, attempt): the trial is RUNNING there, or
  /// the attempt is saving the checkpoint its last decision asked before it stops (pause,
  /// checkpoint_and_stop; also when that decision was journaled by a scheduler that died since).
  /// A worker that registers with an attempt for which this is false is told to kill it.
  bool AttemptMayRun(const std::string& trial_id, int64_t attempt,
                     const std::string& worker_id) const;
  /// A worker is gone: its RUNNING trials requeue (a worker loss does not count against
  /// max_failures, see DESIGN.md).
  void OnWorkerLost(const std::string& worker_id);

  // ---- the driver link (proto/PROTOCOL.md section 7b) ------------------------------------
  /// Every result is held for `driver`'s answer before the trial scheduler decides (the
  /// experiment file's `driver: {on_result: true}`). `driver` outlives the runner's use of it;
  /// its answers must reach OnDriverAnswer (SetDriver does not set its callback: the caller
  /// steps the runner after each). Call before the first result.
  void SetDriver(DriverLink* driver) { driver_.set_link(driver); }
  /// The driver answered result `seq` of (trial_id, attempt). The answer is journaled, then the
  /// result is decided as Ray Tune 2.x's TuneController._process_trial_result does with a
  /// stopper: `stop_trial` makes the decision STOP without asking the trial scheduler (the
  /// trial is TERMINATED at exactly this result; the scheduler hears OnTrialComplete),
  /// otherwise the trial scheduler decides with the answer's `samples` at hand (DriverSamples);
  /// then `stop_all` stops the experiment (StopExperiment: every unfinished trial is stopped,
  /// the experiment ends STOPPED, as Ray's Stopper.stop_all ends tune.run). An answer to a
  /// result no longer held (its trial left RUNNING) is ignored.
  void OnDriverAnswer(const std::string& trial_id, int64_t attempt, int64_t seq,
                      const DriverAnswer& answer);

  // ---- resume (DESIGN.md "Journal and recovery") ------------------------------------------
  /// Takes over the state replayed from the experiment's journal (RunnerRestore's fields):
  /// the trials (PENDING ones are queued, RUNNING ones keep their attempt and wait for their
  /// worker to report them), the searcher's state and deltas, the trial scheduler's, the worker
  /// action that answered each trial's newest result (re-sent when that result arrives again)
  /// and the driver's journaled answers. Call before anything else. Errors: InvalidArgument
  /// when the searcher state does not restore; Corruption from a searcher or trial scheduler
  /// delta. On an error the runner is left part restored: the caller discards it.
  Status Restore(RunnerRestore restored);
  /// A RUNNING trial that no worker reported after a restart: its attempt's resources are
  /// returned and it requeues from its newest checkpoint (a worker loss: counted in
  /// num_worker_losses, not num_failures; ERROR past max_worker_losses).
  void RequeueLost(const std::string& trial_id, const std::string& why);
  /// `worker_id` no longer runs its attempts that are saving before they stop, except those of
  /// `still_running` (trial ids): it restarted without them. Each ends as in OnWorkerLost: a
  /// TERMINATED trial's end checkpoint is journaled as not stored (failure kind worker_lost,
  /// error "while saving its checkpoint: " + `why`).
  void EndSavingGoneFrom(const std::string& worker_id, const std::set<std::string>& still_running,
                         const std::string& why);
  /// The same for one trial's saving attempt (no worker reported it after a restart). False if
  /// the trial has none.
  bool EndSavingLost(const std::string& trial_id, const std::string& why);

  // ---- queries ----------------------------------------------------------------------------
  // The user's commands (stop, pause, unpause, add, set resources, stop or interrupt the
  // experiment, reopen, rerun errored trials) are TrialControl's (trial_control.hpp).
  bool IsFinished() const { return status_ != ExperimentStatus::kRunning; }
  ExperimentStatus status() const { return status_; }
  const std::string& end_reason() const { return end_reason_; }
  const std::vector<Trial>& trials() const { return trials_; }
  const Trial* FindTrial(const std::string& trial_id) const;
  /// The runner sub-state of every trial (trial_phases.hpp): its placement queue, what is in
  /// flight (phases().in_flight(), what a fair share across experiments divides:
  /// services/scheduler/core/fair_share.hpp), which trials are pausing.
  const TrialPhases& phases() const { return phases_; }
  /// The runner's bookkeeping of trial `index` beside its Trial and phase (TrialSlot).
  /// REQUIRES: 0 <= index < trials().size().
  const TrialSlot& slot(int64_t index) const { return slots_[size_t(index)]; }
  /// Total trials the experiment will have, added ones included (-1 if unbounded).
  int64_t TotalTrials() const { return search_.TotalTrials(int64_t(trials_.size())); }
  const RunnerOptions& options() const { return options_; }
  /// The search algorithm: its SaveState() for snapshots, Describe() for `tunectl status`.
  const Searcher& searcher() const { return search_.searcher(); }
  /// The trial scheduler: its SaveState() for snapshots.
  const TrialScheduler& trial_scheduler() const { return host_.scheduler(); }
  /// The trial scheduler's newest STOP / PAUSE decisions and PBT exploits, in memory only
  /// (scheduler_decisions.hpp).
  const SchedulerDecisionLog& scheduler_decisions() const { return host_.decisions(); }
  /// The runner as its trial scheduler sees it (TrialSchedulerHost): a stop through it is the
  /// scheduler's decision, noted in scheduler_decisions().
  TrialSchedulerContext& scheduler_context() { return host_; }

 private:
  friend class TrialControl;

  Trial* Find(const std::string& trial_id);
  Trial& NewTrial(nlohmann::json config, std::string tag);
  /// Asks the searcher for trials (see Step); returns how many it added.
  int64_t MaybeAddTrials();
  /// Places PENDING trials while the executor can; returns how many placements it asked for.
  int64_t PlacePending();
  /// The decision on an accepted, valid result (OnResult's second half): the trial scheduler,
  /// stoppers, searcher, journal and worker action. `answer`: the driver's, or nullptr.
  void Decide(Trial& trial, int64_t seq, TrainingResult metrics, bool user_done,
              const DriverAnswer* answer);
  /// `trial` is ERROR with `error`: the trial scheduler and the searcher hear it, then fail_fast
  /// applies (kStopExperiment: the experiment ends ERROR with every unfinished trial stopped;
  /// kRaise: it ends ERROR at once, every attempt stopped, every status kept for a resume, as
  /// Ray Tune re-raises the trial's error out of tune.run).
  void OnTrialErrored(Trial& trial, const std::string& error);
  /// Ends the experiment FINISHED once the searcher is done and no trial is in flight or PAUSED
  /// (ERROR when every trial is).
  void CheckFinished();
  /// Every unfinished trial is TERMINATED (RUNNING ones stopped; the searcher hears each end).
  void StopUnfinished();
  /// Ends the experiment (no-op once ended); kError stops every unfinished trial first.
  void EndExperiment(ExperimentStatus status, const std::string& reason);

  RunnerOptions options_;
  TrialExecutor& executor_;
  RunnerObserver& observer_;
  const Clock& clock_;  // WallSeconds(): trial start times, result timestamps, the time budget

  std::vector<Trial> trials_;
  std::unordered_map<std::string, size_t> index_;  // trial_id -> position in trials_
  TrialPhases phases_;                             // runner sub-state by trial index
  std::vector<TrialSlot> slots_;                   // by trial index (TrialSlot)

  SearchGenerator search_;         // the searcher, its deltas journaled
  TrialSchedulerHost host_;        // the trial scheduler, its context, deltas and decisions
  DriverHolds driver_;             // results held for the driver's answer
  TrialLifecycle lifecycle_;       // attempts leaving RUNNING, failing, lost, ending a save
  CheckpointManager checkpoints_;  // checkpoint requests and retention
  StopCriteria stop_;              // options.stop
  ResultLedger results_;           // auto-filled keys, counters, newest result

  double start_s_ = 0;
  ExperimentStatus status_ = ExperimentStatus::kRunning;
  std::string end_reason_;
};

}  // namespace tunebus
