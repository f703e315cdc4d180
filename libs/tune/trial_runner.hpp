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
// answered its newest result; the invariants are TrialSlot's). Its public methods are the
// executor's and the driver's answers, recovery and queries; the user's commands are
// TrialControl's (trial_control.hpp), the trial scheduler's TrialSchedulerContext's.
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
#include "libs/tune/driver_link.hpp"
#include "libs/tune/scheduler_decisions.hpp"
#include "libs/tune/searcher.hpp"
#include "libs/tune/trial_control.hpp"
#include "libs/tune/trial_executor.hpp"
#include "libs/tune/trial_phases.hpp"
#include "libs/tune/trial_scheduler.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

struct RunnerOptions {
  std::string experiment_id;            // short hex, prefix of every trial id
  std::string metric;                   // may be empty
  std::string mode;                     // "max" | "min" | ""
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

/// A result held for the driver's answer (TrialRunner::SetDriver): decided in OnDriverAnswer.
struct HeldResult {
  int64_t attempt = 0, seq = 0;
  double time_this_iter_s = 0;  // seconds
  TrainingResult metrics;       // with the auto-filled keys, `done` not yet set
  bool user_done = false;       // the trainable reported a truthy `done`
};

/// A driver answer journaled (driver_decision record) before a restart whose result has no
/// result record yet: the result, sent again by its worker, is decided with it.
struct JournaledAnswer {
  int64_t attempt = 0, seq = 0;
  DriverAnswer answer;
};

/// The runner's bookkeeping of one trial beside the trial itself (TrialRunner::trials()[index])
/// and its phase (TrialRunner::phases().at(index)); TrialRunner::slot(index).
///
/// Where each part lives: the Trial stays in one contiguous std::vector<Trial> because the
/// trial scheduler (TrialSchedulerContext::trials()), the journal's snapshot encoder and the
/// scheduler service's views take `const std::vector<Trial>&`. The phase stays in TrialPhases:
/// its placement queue, its saving set and its counts move with every phase change, so one
/// class keeps the phase, the transition table and those indexes consistent (CheckInvariants)
/// and is tested alone. The slot holds what changes on events that never change the phase.
///
/// Invariants (CheckSlots checks them; the runner keeps them after every call):
///   - there is one slot per trial and one phase per trial (same count, same index);
///   - `held` is set only while the trial is RUNNING, for its current attempt, with a seq after
///     its last accepted one (held.attempt == trial.attempt, held.seq > trial.last_seq); at most
///     one per trial (the trainable blocks on its decision);
///   - `journaled_answer` is set only after Restore, for an attempt no newer than the trial's;
///     the trial's next result takes it (decided with it if attempt and seq match, else dropped);
///   - `exploit_note`, when not null, is an object ("pbt_exploit": donor, checkpoint_id,
///     old_config, new_config) written into the trial's next result, then cleared;
///   - `last_action`, once set, is the answer to the trial's newest decided result (re-sent for
///     a duplicate of it); Restore sets it from the journal.
///
/// Cost: the slots are one vector by trial index (O(1) lookup, one append per new trial); an
/// empty slot holds no heap memory, a held result or journaled answer one result's metrics.
/// Thread-compatibility: owned by the runner's thread.
struct TrialSlot {
  std::optional<HeldResult> held;
  std::optional<JournaledAnswer> journaled_answer;
  nlohmann::json exploit_note;  // null: none
  std::optional<Action> last_action;
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

class TrialControl;

class TrialRunner final : public TrialSchedulerContext {
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
  /// at once with the answer journaled for it before a restart (RestoreDriverAnswers). While it
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
  void SetDriver(DriverLink* driver) { driver_ = driver; }
  /// The driver link SetDriver gave, or nullptr.
  const DriverLink* driver() const { return driver_; }
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
  const std::vector<Trial>& trials() const override { return trials_; }
  const Trial* FindTrial(const std::string& trial_id) const override;
  /// The runner sub-state of every trial (trial_phases.hpp): its placement queue, what is in
  /// flight (phases().in_flight(), what a fair share across experiments divides:
  /// services/scheduler/core/fair_share.hpp), which trials are pausing.
  const TrialPhases& phases() const { return phases_; }
  /// The runner's bookkeeping of trial `index` beside its Trial and phase (TrialSlot).
  /// REQUIRES: 0 <= index < trials().size().
  const TrialSlot& slot(int64_t index) const { return slots_[size_t(index)]; }
  /// Total trials the experiment will have, added ones included (-1 if unbounded).
  int64_t TotalTrials() const;
  const RunnerOptions& options() const { return options_; }
  /// The search algorithm: its SaveState() for snapshots, Describe() for `tunectl status`.
  const Searcher& searcher() const { return *search_alg_; }
  /// The trial scheduler: its SaveState() for snapshots.
  const TrialScheduler& trial_scheduler() const { return *scheduler_; }
  /// The trial scheduler's newest STOP / PAUSE decisions and PBT exploits, in memory only
  /// (scheduler_decisions.hpp).
  const SchedulerDecisionLog& scheduler_decisions() const { return decisions_; }

 private:
  friend class TrialControl;

  // ---- commands (TrialControl's; the trial scheduler's through TrialSchedulerContext) -----
  /// Stops one trial (PENDING, RUNNING or PAUSED -> TERMINATED; Ray Tune's stop_trial: the
  /// trial scheduler hears OnTrialRemove, or OnTrialComplete for a RUNNING one). NotFound for an
  /// unknown id; a finished trial is a no-op with an OK status. The trial scheduler's stop is
  /// noted in scheduler_decisions(); the user's (`by_user`) is not.
  Status StopTrial(const std::string& trial_id) override { return StopTrial(trial_id, false); }
  Status StopTrial(const std::string& trial_id, bool by_user);
  /// Pauses a trial (Ray Tune's pause_trial). PENDING -> PAUSED at once (no checkpoint);
  /// a RUNNING trial's next result is answered "pause": the worker saves a checkpoint and stops
  /// the trainable, and the trial stays RUNNING (pausing) until it has exited, then is PAUSED
  /// with its checkpoint stored and its resources free (Ray Tune saves before the trial is
  /// PAUSED). Returns a message. Errors: NotFound; FailedPrecondition for PAUSED or finished
  /// trials.
  Result<std::string> PauseTrial(const std::string& trial_id);
  /// PAUSED -> PENDING (Ray Tune's unpause_trial); it continues from its newest checkpoint.
  /// A pausing trial is PENDING at once and placed once its checkpoint is stored and it has
  /// exited. Errors: NotFound; FailedPrecondition for other statuses.
  Status UnpauseTrial(const std::string& trial_id) override;
  bool IsPaused(const std::string& trial_id) const override;
  /// Adds a trial with an explicit config (Ray Tune's add_trial). Returns it (PENDING).
  /// Errors: InvalidArgument if config is not an object or has a key the param space lacks;
  /// FailedPrecondition once finished.
  Result<const Trial*> AddTrial(nlohmann::json config);
  /// Sets the resource request of a trial that is not RUNNING (nor being placed or saving).
  /// Errors: NotFound; FailedPrecondition while RUNNING or finished.
  Status SetTrialResources(const std::string& trial_id, const Resources& resources);
  /// PBT's exploit, see TrialSchedulerContext::ExploitTrial.
  Status ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                      nlohmann::json new_config) override;
  /// Stops every unfinished trial; the experiment ends as STOPPED.
  void StopExperiment(const std::string& reason);
  /// Ray Tune's Ctrl-C: the experiment ends as INTERRUPTED, resumable. RUNNING trials are
  /// stopped and go back to PENDING (they continue from their newest checkpoint), pausing ones
  /// become PAUSED; PENDING and PAUSED trials keep their status. No-op once finished.
  void InterruptExperiment(const std::string& reason);
  /// Continues an INTERRUPTED experiment (its PENDING trials are placed again). Returns false
  /// for an experiment in any other status.
  bool Reopen();
  /// Reruns the ERROR trials (Ray Tune's resume="ERRORED_ONLY", done right): kRestore makes
  /// each PENDING to continue from its newest checkpoint; kRestart from scratch (checkpoints
  /// forgotten, num_failures 0). Nothing else changes. A finished experiment runs again when
  /// there is at least one. Returns how many. Errors: InvalidArgument for kNone.
  Result<int64_t> RerunErrored(RerunMode mode);
  // The rest of TrialSchedulerContext (trial_scheduler.hpp), for the trial scheduler only.
  double NowS() const override { return clock_.WallSeconds(); }
  void RequestCheckpoint(const std::string& trial_id) override;
  void SetResultInfo(const std::string& trial_id, const std::string& key,
                     nlohmann::json value) override;
  const nlohmann::json* DriverSamples(const std::string& trial_id) const override;

  // ---- restore parts (Restore calls them in this order) --------------------------------------
  /// Brings the trial scheduler to its journaled state: RestoreState(`state`, the newest
  /// snapshot's, or null) then every delta journaled after it, in order. Errors: Corruption.
  Status RestoreTrialScheduler(const nlohmann::json& state,
                               const std::vector<nlohmann::json>& deltas);
  /// Applies every `searcher` delta journaled after the whole state Restore gave the searcher.
  /// Errors: Corruption from the searcher.
  Status ApplySearcherDeltas(const std::vector<nlohmann::json>& deltas);
  /// Answers journaled (driver_decision records, newest per trial) whose results have no result
  /// record: the result, sent again by its worker, is decided with it without the driver.
  void RestoreDriverAnswers(const std::map<std::string, nlohmann::json>& records);

  Trial* Find(const std::string& trial_id);
  /// The worker's answer (`what`: "checkpoint", "refused checkpoint") to the checkpoint request
  /// of `attempt` at `training_iteration`: closes it and the older requests of the attempt (the
  /// uploads go oldest first), and returns the trial and the request. Errors: NotFound (unknown
  /// trial), FailedPrecondition (a stale attempt, or no such open request).
  Result<std::pair<Trial*, CheckpointRef>> CloseCheckpointRequest(const std::string& trial_id,
                                                                  int64_t attempt,
                                                                  int64_t training_iteration,
                                                                  std::string_view what);
  /// Adds a `kind` decision of the trial scheduler on `t` (as it stands now) to decisions_,
  /// with `detail`, else what the scheduler explained (TakeDecisionDetail).
  void NoteDecision(const Trial& t, const char* kind, nlohmann::json detail = nullptr);
  /// Journals what the last trial scheduler callback changed (before any effect it causes).
  void JournalSchedulerDelta();
  /// Journals what the last searcher call changed (before any effect it causes).
  void JournalSearcherDelta();
  /// Tells the searcher that `trial` ended (TERMINATED or ERROR) with its newest result.
  void SearcherTrialComplete(const Trial& trial, bool error);
  /// True once the searcher will suggest nothing more: it answered Finished, or it suggested its
  /// Total().
  bool SearcherDone() const;
  Trial* FindCurrent(const std::string& trial_id, int64_t attempt, const char* what);
  /// Asks the searcher for trials (see Step); returns how many it added.
  int64_t MaybeAddTrials();
  /// Places PENDING trials while the executor can; returns how many placements it asked for.
  int64_t PlacePending();
  /// RUNNING -> `to`: observer first, then (if asked) stop the trainable, then release.
  /// `saving`: the trainable saves a checkpoint before it stops, so the attempt keeps its
  /// resources until OnTrialExited (RunnerPhase::kSaving).
  void LeaveRunning(Trial& trial, TrialStatus to, const std::string& error,
                    bool stop_trainable = false, bool saving = false,
                    FailureKind kind = FailureKind::kError);
  /// The trainable failed: requeue (from the newest checkpoint) or ERROR per max_failures.
  /// `stop_trainable`: the trainable still runs (the runner fails it, e.g. a refused checkpoint
  /// with checkpoint_failure: fail) and is told to stop.
  void HandleFailure(Trial& trial, const std::string& error, bool stop_trainable = false);
  /// The trial's worker was lost (or never reached): requeue, or ERROR past max_worker_losses.
  /// `lost` says why; the journaled error adds CheckpointsLostWith(trial).
  void HandleWorkerLoss(Trial& trial, const std::string& lost);
  /// "" or "; the checkpoint of iteration 4 it was saving was not stored, so the trial goes on
  /// from iteration 2": the checkpoints asked of the current attempt and never reported stored,
  /// lost with its worker. A worker keeps a checkpoint it could not upload only on its own disk
  /// and uploads nothing of an attempt after its own restart: the loss is journaled here (in the
  /// trial_status record's error and the failure history), not recovered.
  static std::string CheckpointsLostWith(const Trial& trial);
  /// The attempt in kSaving (saving before it stopped) exited (ok) or failed: its resources are
  /// returned; a TERMINATED trial whose end checkpoint was not stored gets the error in its
  /// journaled status (failure `kind`).
  void EndSaving(Trial& trial, bool ok, const std::string& error, FailureKind kind);
  /// A PENDING or PAUSED trial is taken out of the placement queue (kQueued, kPlacing -> kIdle:
  /// a grant that still arrives is released in OnTrialPlaced), or its attempt that still saves
  /// is no longer requeued when it exits.
  void DropPending(Trial& trial);
  Trial& NewTrial(nlohmann::json config, std::string tag);
  /// The worker action for `decision` at the trial's current result, with checkpointing.
  Action ActionFor(Trial& trial, const TrainingResult& result, Decision decision,
                   bool requested = false);
  /// Stores `result` as the trial's newest (msgpack) and caches options.metric from it.
  /// A trial whose trainable returned (exit ok, still RUNNING) and whose last result of this
  /// attempt is not done: that result, with done=true, becomes the trial's newest and
  /// trial.returned is set (journaled by the TERMINATED status). It is not a new result: no
  /// result record, no row in the files, not counted in num_results. Ray Tune 2.x's runner does
  /// the same with a function trainable's return (RESULT_DUPLICATE,
  /// tune_controller._process_trial_result: done for the scheduler and searcher, kept out of the
  /// logger callbacks); docs/results.md.
  void RecordReturn(Trial& trial);
  void SetLastResult(Trial& trial, const TrainingResult& result) const;
  /// Sets trial.last_metric from `result` (options.metric when it is a number).
  void CacheMetric(Trial& trial, const TrainingResult& result) const;
  void ApplyRetention(Trial& trial);
  void AbortExperiment(const std::string& reason);  // fail_fast: raise
  void OnTrialErrored(Trial& trial, const std::string& error);
  void CheckFinished();
  void StopUnfinished();
  void EndExperiment(ExperimentStatus status, const std::string& reason);
  /// Ray Tune's check that every `stop` key is in the result, kept for keys no result has
  /// carried yet. Errors: InvalidArgument naming the key, its near miss and the result's keys.
  Status ValidateStopKeys(const TrainingResult& result);
  /// Makes result `seq` (its auto-filled keys set) the trial's newest: counters, last_seq.
  void AcceptResult(Trial& trial, int64_t seq, double time_this_iter_s);
  /// The decision on an accepted, valid result (OnResult's second half): the trial scheduler,
  /// stoppers, searcher, journal and worker action. `answer`: the driver's, or nullptr.
  void Decide(Trial& trial, int64_t seq, TrainingResult metrics, bool user_done,
              const DriverAnswer* answer);
  /// `user_done`: the trainable reported a truthy `done`.
  std::optional<Decision> StopperDecision(const TrainingResult& result, bool user_done) const;
  int64_t InFlight() const { return phases_.in_flight(); }
  bool IsPausing(const Trial& t) const { return phases_.IsPausing(t.index); }

  struct Exploit {
    std::string donor_trial_id;
    nlohmann::json new_config;
  };

  RunnerOptions options_;
  std::unique_ptr<Searcher> search_alg_;
  bool searcher_finished_ = false;  // Suggest answered Finished
  bool searcher_not_now_ = false;   // the newest Suggest answered NotNow
  // Restored and not asked since: its suggested() may count a suggestion whose trial_added the
  // journal lost (cut after the searcher's delta); it is asked again (and answers that config
  // again) before Total() may say it is done.
  bool searcher_unconfirmed_ = false;
  std::unique_ptr<TrialScheduler> scheduler_;
  TrialExecutor& executor_;
  RunnerObserver& observer_;
  const Clock& clock_;    // WallSeconds(): trial start times, result timestamps, the time budget
  int64_t date_of_ = -1;  // the timestamp date_ shows (RayDate), to format it once a second
  std::string date_;

  std::vector<Trial> trials_;
  std::unordered_map<std::string, size_t> index_;  // trial_id -> position in trials_
  TrialPhases phases_;                             // runner sub-state by trial index
  std::vector<TrialSlot> slots_;                   // by trial index (TrialSlot)
  int64_t in_result_ = -1;                         // index whose OnTrialResult is running
  bool checkpoint_requested_ = false;              // RequestCheckpoint for `in_result_`
  std::vector<std::pair<std::string, nlohmann::json>> result_info_;  // SetResultInfo, in order
  std::optional<Exploit> deferred_exploit_;                          // ExploitTrial on `in_result_`
  std::set<std::string> stop_keys_seen_;           // stop keys some accepted result carried
  DriverLink* driver_ = nullptr;                   // not owned; null: no driver link
  const DriverAnswer* deciding_answer_ = nullptr;  // the driver's answer for `in_result_`
  SchedulerDecisionLog decisions_;
  double start_s_ = 0;
  ExperimentStatus status_ = ExperimentStatus::kRunning;
  std::string end_reason_;
};

/// The trial whose last result is best by options.metric / options.mode (Ray Tune's
/// get_best_trial, scope "last"), or nullptr when there is no metric or no result carries it.
const Trial* BestTrial(const TrialRunner& runner);
/// Trials per status.
std::map<TrialStatus, int64_t> CountByStatus(const std::vector<Trial>& trials);
/// Every checkpoint id a trial keeps (in its checkpoints) or will restore. A stored checkpoint
/// not among them, and that OnCheckpointSaved refuses, is an orphan to delete.
std::unordered_set<std::string> ReferencedCheckpoints(const std::vector<Trial>& trials);
/// True if (trial_id, attempt) on `worker_id` still owns its allocation in `runner`: the trial's
/// RUNNING attempt there, or an attempt saving before it stops (also one Restore found storing
/// its end checkpoint, see StoresEndCheckpoint).
bool HoldsAllocation(const TrialRunner& runner, const std::string& trial_id, int64_t attempt,
                     const std::string& worker_id);
/// For snapshots: per trial id, the worker action that answered its newest result (the
/// slots' last_action; RunnerRestore::last_actions).
std::map<std::string, Action> LastActions(const TrialRunner& runner);
/// OK if every invariant of TrialSlot's comment holds for `runner`, else Internal naming the
/// trial and the broken one. O(trials).
Status CheckSlots(const TrialRunner& runner);

}  // namespace tunebus
