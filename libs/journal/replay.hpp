// Journal replay: folds an experiment's journal records (libs/journal/records.hpp), in seq
// order, back into the state the scheduler's TrialRunner held (DESIGN.md "Journal and
// recovery"). Pure: no I/O; the scheduler reads the records from the checkpoint-store.
//
// A trial whose last record says RUNNING was running when the journal ends: the resuming
// scheduler waits for its worker to report it (reattach) and requeues it otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/experiment_status.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/journal/experiment_identity.hpp"
#include "libs/journal/record_kind.hpp"

namespace tunebus::journal {

struct ReplayedExperiment {
  // From experiment_submitted.
  ExperimentIdentity identity;
  std::string spec_yaml;
  std::vector<Trial> trials;  // as the runner held them, in creation order
  /// The searcher's newest whole state (a searcher_state record's or the snapshot's; null: its
  /// initial state) and the `searcher` deltas journaled after it (TrialRunner::Restore then
  /// TrialRunner::ApplySearcherDeltas).
  nlohmann::json searcher_state;
  std::vector<nlohmann::json> searcher_deltas;
  /// The trial scheduler's whole state from the snapshot replay started from (null: initial)
  /// and the deltas journaled after it (TrialRunner::RestoreTrialScheduler applies both).
  nlohmann::json scheduler_state;
  std::vector<nlohmann::json> scheduler_deltas;
  /// trial_id -> the worker action answering its newest result (resent for a duplicate).
  std::map<std::string, Action> last_action;
  /// trial_id -> its newest driver_decision record (DriverHolds::Restore uses the
  /// ones whose result has no result record). Not kept in snapshots: a driver_decision and its
  /// result are appended in one loop turn, so a snapshot never falls between them.
  std::map<std::string, nlohmann::json> driver_answers;
  /// The status of the newest experiment_ended record; nullopt while the experiment runs (none
  /// yet, or an experiment_resumed came after it).
  std::optional<ExperimentStatus> ended_status;
  /// The newest weight_set's weight; nullopt: the experiment file's.
  std::optional<double> weight;
  /// The newest trials_preempted list: trials preemption paused that continue later.
  std::vector<std::string> preempted;
  std::string ended_reason;
  uint64_t records = 0;           // records applied
  uint64_t snapshot_records = 0;  // of those, how many a snapshot covered (0: none was used)
};

/// True for a result record that repeats the trial's previous result record of the same attempt
/// (`previous_seq`: that record's seq, 0 before the first): the copy with done: true that
/// journals written before Trial::returned existed appended when a trainable returned. It is no
/// reported result: replay takes only its done, and the results folder's repair writes no row.
inline bool IsReturnCopy(int64_t previous_seq, const nlohmann::json& result_record) {
  return previous_seq != 0 && result_record.value("seq", int64_t(0)) == previous_seq;
}

/// Applies records one at a time, in journal order, through a handler table with one handler
/// per RecordKind (record_kind.hpp), as a service's MessageDispatcher has one per message type.
/// A record no handler takes is refused in one place: an unknown kind (a newer writer's: replay
/// stops there, docs/reference/journal-format.md), a record before experiment_submitted, a trial
/// record naming no trial added before it, or a malformed one.
class JournalReplayer {
 public:
  /// Errors: Corruption naming the record's position and kind ("journal record 7 has unknown
  /// kind 'x'", "journal record 3 (result) names unknown trial t9", "... is malformed: ...").
  /// The record is not counted then, and replay stops at it.
  Status Apply(const nlohmann::json& record);
  /// Continues from a snapshot's state (records 1..state.records already applied).
  void Reset(ReplayedExperiment state);
  /// The state so far; trials' last_result_msgpack is filled in by Take() only (the newest
  /// result of each trial is encoded once, not at every result record).
  const ReplayedExperiment& state() const { return state_; }
  ReplayedExperiment Take();

 private:
  /// A kind's handler: of an experiment record, or of a trial record (the trial its trial_id
  /// names, which must have been added before it). Exactly one of the two is set.
  using ExperimentHandler = Status (JournalReplayer::*)(const nlohmann::json& r);
  using TrialHandler = Status (JournalReplayer::*)(const nlohmann::json& r, Trial& t);
  struct Handler {
    RecordKind kind;
    ExperimentHandler experiment = nullptr;
    TrialHandler trial = nullptr;
  };
  /// One row per RecordKind, in enum order (replay.cpp).
  static const Handler kHandlers[];

  Status Dispatch(RecordKind kind, const nlohmann::json& r, uint64_t position);

  Status OnExperimentSubmitted(const nlohmann::json& r);
  Status OnTrialAdded(const nlohmann::json& r);
  Status OnSearcherState(const nlohmann::json& r);
  Status OnSearcherDelta(const nlohmann::json& r);
  Status OnTrialSchedulerDelta(const nlohmann::json& r);
  Status OnExperimentEnded(const nlohmann::json& r);
  Status OnExperimentResumed(const nlohmann::json& r);
  Status OnWeightSet(const nlohmann::json& r);
  Status OnTrialsPreempted(const nlohmann::json& r);
  Status OnTrialStarted(const nlohmann::json& r, Trial& t);
  Status OnResult(const nlohmann::json& r, Trial& t);
  Status OnTrialStatus(const nlohmann::json& r, Trial& t);
  Status OnCheckpointSaved(const nlohmann::json& r, Trial& t);
  Status OnCheckpointDeleted(const nlohmann::json& r, Trial& t);
  Status OnCheckpointFailed(const nlohmann::json& r, Trial& t);
  Status OnTrialUpdated(const nlohmann::json& r, Trial& t);
  Status OnDriverDecision(const nlohmann::json& r, Trial& t);

  Trial* Find(const std::string& trial_id);
  /// Sets done: true in the trial's newest result (trial.returned).
  void MarkLastResultDone(const Trial& t);

  ReplayedExperiment state_;
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<size_t, nlohmann::json>
      last_results_;  // trial index -> newest result, until Take()
  bool submitted_ = false;
};

}  // namespace tunebus::journal
