// RecordKind: the kind of a journal record and its one name table, the spelling of the record's
// "kind" field on disk (docs/reference/journal-format.md "Record kinds"; records.hpp lists each
// kind's fields). The names are the journal format: a stored record's bytes must not change, so a
// name is never respelled; a new kind is a format change (older schedulers stop replay at it).
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

#include "libs/core/enum_names.hpp"

namespace tunebus::journal {

enum class RecordKind {
  kExperimentSubmitted,  // first, at submission: the experiment's identity and file
  kTrialAdded,           // the search algorithm (or `tunectl add`) created a trial
  kSearcherState,        // the searcher's whole state (Searcher::SaveState)
  kSearcherDelta,        // a searcher call changed its state (Searcher::TakeStateDelta)
  kTrialSchedulerDelta,  // a trial scheduler callback changed its state
  kTrialStarted,         // a placement was granted: an attempt runs on a worker
  kResult,               // a result was accepted, with the worker action answering it
  kTrialStatus,          // a trial left RUNNING or changed status
  kCheckpointSaved,      // a worker stored a checkpoint
  kCheckpointDeleted,    // retention dropped a checkpoint
  kCheckpointFailed,     // the checkpoint-store refused a checkpoint the trial was asked for
  kTrialUpdated,         // set-resources, PBT exploit: config or resources changed
  kDriverDecision,       // the driver answered a result (before that result's record)
  kExperimentResumed,    // a scheduler took the experiment over, or reopened it
  kWeightSet,            // `tunectl set-weight`: the fair-share weight from now on
  kTrialsPreempted,      // the trials fair-share preemption paused (the whole list)
  kExperimentEnded,      // last, until an experiment_resumed reopens it
};

inline constexpr EnumName<RecordKind> kRecordKindNames[] = {
    {RecordKind::kExperimentSubmitted, "experiment_submitted"},
    {RecordKind::kTrialAdded, "trial_added"},
    {RecordKind::kSearcherState, "searcher_state"},
    {RecordKind::kSearcherDelta, "searcher"},
    {RecordKind::kTrialSchedulerDelta, "trial_scheduler"},
    {RecordKind::kTrialStarted, "trial_started"},
    {RecordKind::kResult, "result"},
    {RecordKind::kTrialStatus, "trial_status"},
    {RecordKind::kCheckpointSaved, "checkpoint_saved"},
    {RecordKind::kCheckpointDeleted, "checkpoint_deleted"},
    {RecordKind::kCheckpointFailed, "checkpoint_failed"},
    {RecordKind::kTrialUpdated, "trial_updated"},
    {RecordKind::kDriverDecision, "driver_decision"},
    {RecordKind::kExperimentResumed, "experiment_resumed"},
    {RecordKind::kWeightSet, "weight_set"},
    {RecordKind::kTrialsPreempted, "trials_preempted"},
    {RecordKind::kExperimentEnded, "experiment_ended"},
};

/// The record field that holds its kind's name.
inline constexpr const char* kKindField = "kind";

/// How many kinds there are; row i of kRecordKindNames is the kind whose value is i.
inline constexpr size_t kRecordKindCount = std::size(kRecordKindNames);

/// The "kind" field's value, e.g. "trial_status".
constexpr const char* RecordKindName(RecordKind kind) { return NameIn(kRecordKindNames, kind); }

/// The kind spelled `word`; nullopt for a word no kind has (a newer writer's kind, or garbage).
constexpr std::optional<RecordKind> FindRecordKind(std::string_view word) {
  return FindIn(kRecordKindNames, word);
}

namespace record_kind_checks {
constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kRecordKindCount; ++i) {
    if (size_t(kRecordKindNames[i].value) != i) return false;
  }
  return true;
}
static_assert(RowsInEnumOrder(), "kRecordKindNames lists every kind once, in enum order");
}  // namespace record_kind_checks

}  // namespace tunebus::journal
