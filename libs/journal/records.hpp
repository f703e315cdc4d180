// Journal records: one per experiment state change (DESIGN.md "Journal and recovery").
//
// A record is a JSON object with a "kind" field, encoded as msgpack bytes (nlohmann::json
// to_msgpack) and stored, framed with a CRC (record_frame.hpp), in the checkpoint-store's
// append-only journal; docs/reference/journal-format.md is the grammar. Kinds and their fields:
//   experiment_submitted {spec_yaml} and the identity's fields (experiment_identity.hpp):
//                        experiment_id, base_dir, source_name, seed, submitted_at,
//                        restore_from, results_folder (when not the name), working_dir_digest
//                        and working_dir_size_bytes (when its working_dir is shipped)
//   trial_added          {trial_id, index, config, experiment_tag, resources (units),
//                         restore_checkpoint (checkpoint object, only with restore_from)}
//   searcher_state       {state}                      the searcher's whole state (SaveState):
//                                                     replaces the deltas journaled before it
//   searcher             {delta}                      Searcher::TakeStateDelta(), after a call
//   trial_scheduler      {delta}                      TrialScheduler::TakeStateDelta()
//   trial_started        {trial_id, attempt, worker_id, gpu_ids, restored_checkpoint_id,
//                         restored_iteration, restored_time_total_s, start_time_s}
//   result               {trial_id, attempt, seq, result, decision}
//   trial_status         {trial_id, attempt, status, error, num_failures}
//   experiment_ended     {status, reason}
//   checkpoint_saved     {trial_id, attempt, checkpoint_id, training_iteration, time_total_s,
//                         score (number or null), size_bytes}
//   checkpoint_deleted   {trial_id, checkpoint_id}
//   checkpoint_failed    {trial_id, attempt, training_iteration, reason}   the store refused the
//                        checkpoint asked at that iteration
//   trial_updated        {trial_id, config, resources (units), change}   set-resources, PBT exploit
//   driver_decision      {trial_id, attempt, seq, stop_trial, stop_all, should_checkpoint,
//                        samples}   the driver's
//                        answer to a result (proto/PROTOCOL.md section 7b), before its result
//   experiment_resumed   {at, rerun_errored ("", "restore", "restart")}  a scheduler took it over
//   weight_set           {weight}                     `tunectl set-weight`: its fair-share weight
//   trials_preempted     {trial_ids}                  the trials fair-share preemption paused that
//                        continue once the experiment is under its quota (the whole list)
// A checkpoint object is {checkpoint_id, training_iteration, time_total_s, score, size_bytes}.
// The kinds' names are one table, RecordKind (record_kind.hpp); every writer and reader names a
// kind by its RecordKind. Readers reject unknown kinds (libs/journal/replay.hpp): a newer
// writer must not be replayed by an older scheduler.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/experiment_status.hpp"
#include "libs/core/rerun_mode.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/journal/experiment_identity.hpp"
#include "libs/journal/record_kind.hpp"

namespace tunebus::journal {

/// msgpack bytes of a record.
std::string EncodeRecord(const nlohmann::json& record);
/// Errors: Corruption if the bytes are not a msgpack object with a string "kind".
Result<nlohmann::json> DecodeRecord(std::string_view bytes);
/// The record's kind; nullopt if its "kind" is missing, not a string or no kind's name.
std::optional<RecordKind> KindOf(const nlohmann::json& record);

/// The experiment's identity (VisitExperimentIdentityFields) and its experiment file's text.
nlohmann::json ExperimentSubmitted(const ExperimentIdentity& identity,
                                   const std::string& spec_yaml);
nlohmann::json TrialAdded(const Trial& trial);
/// The searcher's whole state (Searcher::SaveState): RecordKind::kSearcherState.
nlohmann::json SearcherState(const nlohmann::json& state);
/// The searcher's state delta (Searcher::TakeStateDelta): RecordKind::kSearcherDelta.
nlohmann::json SearcherDelta(const nlohmann::json& delta);
nlohmann::json TrialStarted(const Trial& trial);
/// A result and the worker action answering it. When that action saves a checkpoint (the trial's
/// newest requested_checkpoints entry is at its training_iteration) and the checkpoint has a
/// score, the record carries it as `checkpoint_score` (replay rebuilds the request from it).
nlohmann::json ResultRecord(const Trial& trial, const nlohmann::json& result, Action decision);
/// EncodeRecord(ResultRecord(trial, result, decision)) from the result already encoded as
/// msgpack (`result_msgpack`, e.g. by nlohmann::json::to_msgpack), without copying the result
/// into a record document: the scheduler's per-result path.
std::string EncodeResultRecord(const Trial& trial, std::string_view result_msgpack,
                               Action decision);
nlohmann::json TrialStatusRecord(const Trial& trial);
/// The trial scheduler's state delta (TrialScheduler::TakeStateDelta):
/// RecordKind::kTrialSchedulerDelta.
nlohmann::json TrialSchedulerDelta(const nlohmann::json& delta);

// The records the scheduler appends per trial, written straight from the trial with msgpack-c's
// packer instead of through a record document: the same bytes as EncodeRecord of the document
// (keys in its sorted order; a double that a float holds exactly as a float, as
// nlohmann::json::to_msgpack writes it).
std::string EncodeTrialAdded(const Trial& trial);    ///< EncodeRecord(TrialAdded(trial))
std::string EncodeTrialStarted(const Trial& trial);  ///< EncodeRecord(TrialStarted(trial))
std::string EncodeTrialStatusRecord(
    const Trial& trial);  ///< EncodeRecord(TrialStatusRecord(trial))
/// EncodeRecord(TrialSchedulerDelta(delta))
std::string EncodeTrialSchedulerDelta(const nlohmann::json& delta);
/// EncodeRecord(SearcherDelta(delta))
std::string EncodeSearcherDelta(const nlohmann::json& delta);

/// `at_s`: when it ended, seconds since the epoch (the `at` field; left out when 0: unknown).
nlohmann::json ExperimentEnded(ExperimentStatus status, const std::string& reason, double at_s = 0);
nlohmann::json ExperimentResumed(double at_s, RerunMode rerun_errored);
/// `tunectl set-weight`: the experiment's fair-share weight from now on (> 0).
nlohmann::json WeightSet(double weight);
/// The trials fair-share preemption paused and will unpause (Experiment::Preempt, Readmit),
/// oldest first: the whole list, appended whenever it changes.
nlohmann::json TrialsPreempted(const std::vector<std::string>& trial_ids);
nlohmann::json CheckpointSavedRecord(const Trial& trial, const CheckpointRef& ref);
nlohmann::json CheckpointDeletedRecord(const Trial& trial, const std::string& checkpoint_id);
/// The checkpoint of the trial's current attempt asked at `failed.training_iteration` was not
/// stored, for `failed.reason`: RecordKind::kCheckpointFailed.
nlohmann::json CheckpointFailedRecord(const Trial& trial, const CheckpointNotStored& failed);
nlohmann::json TrialUpdated(const Trial& trial, const nlohmann::json& change);
/// The driver's answer (DriverAnswer::ToJson: stop_trial, stop_all, samples) to result `seq` of
/// the trial's current attempt: RecordKind::kDriverDecision.
nlohmann::json DriverDecisionRecord(const Trial& trial, int64_t seq, const nlohmann::json& answer);

}  // namespace tunebus::journal
