// TrialPhases: the TrialRunner's sub-state of every trial, one RunnerPhase per trial index, with
// the transitions it allows written down beside the enum. Pure: no I/O, no clock, no Trial.
//
// Relation to the trial's status (Trial::status, Ray Tune's Trial.status PENDING / RUNNING /
// PAUSED / TERMINATED / ERROR): the status is what the journal, `tunectl` and the trial scheduler
// see; the phase is what the runner is doing with the trial between two events. Ray Tune 2.x
// keeps the same split: TuneController's Trial.status beside its private bookkeeping of actors
// being started (_staged_trials), trials to pause at their next result and trials whose
// `save` future is in flight before they stop. Each status has the phases below:
//
//   status      phase             meaning
//   PENDING     kQueued           waits in the placement queue
//   PENDING     kPlacing          a placement of attempt + 1 is in flight
//   RUNNING     kRunning          its attempt runs on trial.worker_id
//   RUNNING     kPauseRequested   its next result is answered "pause" (PauseTrial)
//   RUNNING     kPausing          answered "pause": the attempt saves its checkpoint, then exits
//                                 (PAUSED then; IsPausing)
//   TERMINATED  kSaving           left RUNNING; the attempt saves the checkpoint its stop asked
//   PENDING                       for (checkpoint_at_end; an unpause while pausing; a paused
//   PAUSED                        one unpaused or stopped meanwhile) and keeps its worker and
//                                 allocation until it exits; `requeue`: queued once it has exited
//   any         kIdle             nothing in flight: PAUSED, TERMINATED, ERROR; also PENDING and
//                                 RUNNING once fail_fast: raise ended the experiment (it emptied
//                                 the queue, stopped and released the RUNNING attempts, and left
//                                 every status for a resume), and within one runner call between
//                                 leaving RUNNING and being queued again
//
// Transitions (from, event, to); every other pair is refused:
//
//   from                                  event            to
//   kIdle                                 Queue            kQueued
//   kQueued                               Place            kPlacing
//   kPlacing                              Placed           kRunning
//   kPlacing                              Defer            kQueued
//   kQueued, kPlacing                     Drop             kIdle
//   kRunning, kPauseRequested             RequestPause     kPauseRequested
//   kPauseRequested                       TakePauseRequest kRunning
//   kRunning                              StartPausing     kPausing (attempt)
//   kRunning, kPauseRequested, kPausing   Leave            kIdle
//   kRunning, kPauseRequested, kPausing   LeaveSaving      kSaving (attempt, worker, requeue)
//   kSaving                               SetRequeue       kSaving (requeue changed)
//   kSaving                               EndSaving        kIdle
//   kIdle                                 Adopt            kRunning (Restore: a RUNNING trial)
//   kIdle                                 AdoptSaving      kSaving (Restore: storing its end
//                                                          checkpoint, StoresEndCheckpoint)
//
// Combinations no phase can hold: placing while saving, queued while saving (UnpauseTrial of a
// PAUSED trial still saving sets `requeue` instead), pausing and pause-requested at once.
//
// Errors: a refused transition is a programming error of the runner. Apply returns it as
// FailedPrecondition naming the trial index, its phase and the event, and changes nothing; the
// named methods (Queue, Place, ...) abort the process with that message (a runner that went on
// would leak an allocation or never finish; the scheduler resumes from its journal).
// Invariants (CheckInvariants, asserted after every transition in debug builds): queued() holds
// exactly the kQueued indices; the counts match the phases; `attempt` is set only in kPausing
// and kSaving, `worker_id` and `requeue` only in kSaving.
//
// Cost: phase lookups are O(1) (a vector by trial index); Queue, Place, Defer, Drop,
// LeaveSaving and EndSaving are O(log n) (ordered sets); no transition allocates except those
// that insert into an ordered set (Queue, Defer, LeaveSaving, AdoptSaving) or copy a worker id.
//
// Thread-compatibility: not thread-safe; owned by the runner's thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

/// A trial's runner sub-state (see the file comment for its status and transitions).
enum class RunnerPhase : uint8_t {
  kIdle,            // nothing in flight
  kQueued,          // PENDING, waits for placement
  kPlacing,         // PENDING, placement in flight
  kRunning,         // RUNNING
  kPauseRequested,  // RUNNING, pause at the next result
  kPausing,         // RUNNING, saving its pause checkpoint before it exits
  kSaving,          // left RUNNING, saving a checkpoint before it exits; holds its allocation
};
inline constexpr size_t kRunnerPhaseCount = 7;

inline constexpr EnumName<RunnerPhase> kRunnerPhaseNames[] = {
    {RunnerPhase::kIdle, "idle"},
    {RunnerPhase::kQueued, "queued"},
    {RunnerPhase::kPlacing, "placing"},
    {RunnerPhase::kRunning, "running"},
    {RunnerPhase::kPauseRequested, "pause_requested"},
    {RunnerPhase::kPausing, "pausing"},
    {RunnerPhase::kSaving, "saving"},
};
inline const char* RunnerPhaseName(RunnerPhase phase) { return NameIn(kRunnerPhaseNames, phase); }

/// The events of the transition table (the named methods of TrialPhases).
enum class PhaseEvent : uint8_t {
  kQueue,
  kPlace,
  kPlaced,
  kDefer,
  kDrop,
  kRequestPause,
  kTakePauseRequest,
  kStartPausing,
  kLeave,
  kLeaveSaving,
  kSetRequeue,
  kEndSaving,
  kAdopt,
  kAdoptSaving,
};

inline constexpr EnumName<PhaseEvent> kPhaseEventNames[] = {
    {PhaseEvent::kQueue, "Queue"},
    {PhaseEvent::kPlace, "Place"},
    {PhaseEvent::kPlaced, "Placed"},
    {PhaseEvent::kDefer, "Defer"},
    {PhaseEvent::kDrop, "Drop"},
    {PhaseEvent::kRequestPause, "RequestPause"},
    {PhaseEvent::kTakePauseRequest, "TakePauseRequest"},
    {PhaseEvent::kStartPausing, "StartPausing"},
    {PhaseEvent::kLeave, "Leave"},
    {PhaseEvent::kLeaveSaving, "LeaveSaving"},
    {PhaseEvent::kSetRequeue, "SetRequeue"},
    {PhaseEvent::kEndSaving, "EndSaving"},
    {PhaseEvent::kAdopt, "Adopt"},
    {PhaseEvent::kAdoptSaving, "AdoptSaving"},
};
inline const char* PhaseEventName(PhaseEvent event) { return NameIn(kPhaseEventNames, event); }

/// One trial's phase and the data of the phases that have some.
struct TrialPhase {
  RunnerPhase phase = RunnerPhase::kIdle;
  int64_t attempt = 0;    // kPausing, kSaving: the attempt saving its checkpoint
  std::string worker_id;  // kSaving: the worker it saves on (the allocation's)
  bool requeue = false;   // kSaving: PENDING, queued once the attempt has exited
};

class TrialPhases {
 public:
  /// The phase `event` moves `from` to, or nullopt if the table refuses it.
  static std::optional<RunnerPhase> Next(RunnerPhase from, PhaseEvent event);

  /// Forgets every trial and holds `n`, all kIdle.
  void Reset(size_t n);
  /// Adds trial index size() in kIdle; returns its index.
  int64_t Add();
  size_t size() const { return phases_.size(); }

  /// REQUIRES: 0 <= index < size().
  const TrialPhase& at(int64_t index) const { return phases_[size_t(index)]; }
  RunnerPhase phase(int64_t index) const { return at(index).phase; }
  bool Is(int64_t index, RunnerPhase phase) const { return at(index).phase == phase; }
  /// kRunning, kPauseRequested or kPausing: the trial is RUNNING for the runner.
  bool IsRunning(int64_t index) const;
  /// kPausing: RUNNING, its attempt saves the checkpoint its "pause" answer asked for.
  bool IsPausing(int64_t index) const { return Is(index, RunnerPhase::kPausing); }

  /// Applies a transition that carries no data (not StartPausing, LeaveSaving, AdoptSaving).
  /// Errors: FailedPrecondition "trial 3 cannot Place from running" (nothing changes);
  /// InvalidArgument for an index out of range or an event that carries data.
  [[nodiscard]] Status Apply(int64_t index, PhaseEvent event);

  // The table's transitions. Each aborts with Apply's message when the table refuses it.
  void Queue(int64_t index) { Must(Apply(index, PhaseEvent::kQueue)); }
  void Place(int64_t index) { Must(Apply(index, PhaseEvent::kPlace)); }
  void Placed(int64_t index) { Must(Apply(index, PhaseEvent::kPlaced)); }
  void Defer(int64_t index) { Must(Apply(index, PhaseEvent::kDefer)); }
  void Drop(int64_t index) { Must(Apply(index, PhaseEvent::kDrop)); }
  void RequestPause(int64_t index) { Must(Apply(index, PhaseEvent::kRequestPause)); }
  /// kPauseRequested -> kRunning and true; false (nothing changes) in any other phase.
  bool TakePauseRequest(int64_t index);
  /// kRunning -> kPausing of `attempt`.
  void StartPausing(int64_t index, int64_t attempt);
  void Leave(int64_t index) { Must(Apply(index, PhaseEvent::kLeave)); }
  /// RUNNING phases -> kSaving of `attempt` on `worker_id`.
  void LeaveSaving(int64_t index, int64_t attempt, std::string worker_id, bool requeue);
  /// kSaving: sets its requeue flag.
  void SetRequeue(int64_t index, bool requeue);
  /// kSaving -> kIdle; returns what the saving phase held.
  TrialPhase EndSaving(int64_t index);
  void Adopt(int64_t index) { Must(Apply(index, PhaseEvent::kAdopt)); }
  /// kIdle -> kSaving of `attempt` on `worker_id` (not requeued).
  void AdoptSaving(int64_t index, int64_t attempt, std::string worker_id);

  /// The kQueued indices, lowest first (the order TrialScheduler::ChooseTrialToRun is given).
  const std::set<int64_t>& queued() const { return queued_; }
  /// The kSaving indices on `worker_id`, lowest first.
  std::vector<int64_t> SavingOn(const std::string& worker_id) const;
  int64_t count(RunnerPhase phase) const { return counts_[size_t(phase)]; }
  /// Trials in a RUNNING phase (kRunning + kPauseRequested + kPausing).
  int64_t running() const;
  /// Trials holding or asking for an allocation: kPlacing, RUNNING phases and kSaving.
  int64_t in_flight() const { return count(RunnerPhase::kPlacing) + running() + saving(); }
  int64_t saving() const { return count(RunnerPhase::kSaving); }
  /// Trials not kIdle.
  int64_t busy() const { return int64_t(size()) - count(RunnerPhase::kIdle); }

  /// OK if every invariant of the file comment holds, else Internal naming the broken one.
  Status CheckInvariants() const;

 private:
  /// Moves `index` by `event` (checked against the table) and sets the phase's data from
  /// `data` (its phase field is ignored).
  Status Move(int64_t index, PhaseEvent event, TrialPhase data);
  /// Aborts the process with `s`'s message unless it is OK.
  static void Must(const Status& s);
  void AssertInvariants() const;

  std::vector<TrialPhase> phases_;  // by trial index
  std::set<int64_t> queued_;        // kQueued indices
  std::set<int64_t> saving_;        // kSaving indices
  std::array<int64_t, kRunnerPhaseCount> counts_{};
};

}  // namespace tunebus
