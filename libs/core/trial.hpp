// Trial: one run of the trainable with one config (Ray Tune's `Trial`).
//
// Pure data owned by the scheduler's TrialRunner; no I/O. Status transitions follow Ray Tune's
// TrialRunner (see shared/seeds and DESIGN.md "Trial lifecycle"):
//   PENDING -> RUNNING -> TERMINATED | ERROR, RUNNING -> PAUSED -> PENDING, RUNNING -> PENDING
//   (requeued after a failure while num_failures < max_failures).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/failure_kind.hpp"
#include "libs/core/resources.hpp"

namespace tunebus {

enum class TrialStatus {
  kPending,     // waiting for resources (or unpaused / requeued)
  kRunning,     // resources committed, trainable started on a worker
  kPaused,      // checkpointed and resources released; waits for unpause
  kTerminated,  // finished: stop criterion, decision STOP, trainable returned, or user stop
  kError,       // failed more than max_failures times, or could never be placed
};

/// "PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR" (Ray Tune's spelling).
const char* TrialStatusName(TrialStatus status);
/// The status named `name`, in any case ("running" too).
std::optional<TrialStatus> ParseTrialStatus(std::string_view name);
/// TERMINATED or ERROR.
inline bool IsFinished(TrialStatus s) {
  return s == TrialStatus::kTerminated || s == TrialStatus::kError;
}

/// Keys the runner fills into every result (Ray Tune's auto-filled result fields).
namespace result_keys {
inline constexpr const char* kTrainingIteration = "training_iteration";
inline constexpr const char* kTimeThisIterS = "time_this_iter_s";
inline constexpr const char* kTimeTotalS = "time_total_s";
inline constexpr const char* kTimestamp = "timestamp";  // seconds since the Unix epoch
inline constexpr const char* kTrialId = "trial_id";
inline constexpr const char* kDone = "done";
inline constexpr const char* kExperimentTag = "experiment_tag";
inline constexpr const char* kIterationsSinceRestore = "iterations_since_restore";
inline constexpr const char* kTimeSinceRestore = "time_since_restore";  // seconds
/// The result's `timestamp` as local time, "%Y-%m-%d_%H-%M-%S" (Ray Tune 2.x Trainable's
/// auto-filled `date`); RayDate formats it.
inline constexpr const char* kDate = "date";
// Filled in by the trial-worker that ran the report (Ray Tune 2.x fills them in the trainable):
inline constexpr const char* kPid = "pid";            // the trainable's process id
inline constexpr const char* kHostname = "hostname";  // the worker's host name
inline constexpr const char* kNodeIp = "node_ip";     // the worker's IP address
}  // namespace result_keys

/// `epoch_s` (seconds since the Unix epoch) as local time in Ray Tune's `date` form,
/// "%Y-%m-%d_%H-%M-%S" (e.g. "2026-11-25_04-05-06").
std::string RayDate(int64_t epoch_s);

/// A checkpoint of a trial, stored in the checkpoint-store (Ray Tune's Checkpoint /
/// CheckpointManager entry).
struct CheckpointRef {
  std::string checkpoint_id;       // store key, unique per experiment
  int64_t training_iteration = 0;  // the trial's training_iteration the checkpoint holds
  double time_total_s = 0;         // the trial's time_total_s at that iteration, seconds
  std::optional<double> score;     // checkpoint_score_attr's value at that iteration, if any
  int64_t size_bytes = 0;          // total bytes of the checkpoint directory
};

/// One entry of a trial's failure history: an attempt that ended with an error (a trainable
/// failure, a lost worker, an unplaceable request) and the status the trial went to.
struct TrialFailure {
  int64_t attempt = 0;
  std::string error;
  TrialStatus then = TrialStatus::kPending;  // PENDING (requeued) or ERROR
  FailureKind kind = FailureKind::kError;
};

/// Failures kept per trial (the oldest are dropped beyond it).
inline constexpr size_t kMaxFailureHistory = 20;

/// A checkpoint asked of the trial that was never stored: the worker saved it but the
/// checkpoint-store refused it (its disk full, say) after the worker's retries. It is in no
/// trial's checkpoints, so retention and restores never see it.
struct CheckpointNotStored {
  int64_t training_iteration = 0;  // the iteration the refused checkpoint held
  std::string reason;              // the store's error as the worker got it, "io_error: ..."
};

/// Refused checkpoints listed per trial (the oldest are dropped beyond it; the trial counts them
/// all in num_checkpoints_not_stored).
inline constexpr size_t kMaxCheckpointsNotStored = 100;

struct Trial {
  std::string trial_id;        // "<experiment hash>_<index:05>", unique within the experiment
  int64_t index = 0;           // 0-based order of creation
  nlohmann::json config;       // the sampled config (a JSON object)
  std::string experiment_tag;  // "3_lr=0.0012,penalty=l2": index and the sampled values
  Resources resources;         // what one attempt asks for
  TrialStatus status = TrialStatus::kPending;
  int64_t attempt = 0;            // incremented at every start; results of older attempts are stale
  int64_t num_failures = 0;       // trainable errors so far (Ray Tune's num_failures)
  int64_t num_worker_losses = 0;  // attempts ended by the loss of their worker
  std::string worker_id;          // set while RUNNING
  std::vector<std::string> gpu_ids;  // GPU indices assigned on the worker, while RUNNING
  /// The newest result (a JSON object with the auto-filled keys) as msgpack bytes, empty before
  /// the first: one heap block per trial instead of a node per key
  /// (docs/explanation/performance/index.md). Read it with LastResult(); the runner writes it with
  /// SetLastResult().
  std::string last_result_msgpack;
  /// The experiment's `metric` in the newest result when it is a number (set by the runner;
  /// BestTrial reads this instead of decoding every trial's result).
  std::optional<double> last_metric;
  int64_t num_results = 0;  // results received over all attempts
  /// The current attempt's trainable returned after its last result (Ray Tune's RESULT_DUPLICATE,
  /// tune_controller._process_trial_result): the trial is TERMINATED and its newest result says
  /// done: true, while the results folder keeps that result as reported
  /// (docs/reference/results-folder.md).
  bool returned = false;
  std::string error;                   // the last error message, empty if none
  std::vector<TrialFailure> failures;  // failure history, oldest first (see NoteFailure)
  double start_time_s = 0;  // wall clock of the first start (seconds since epoch), 0 before
  // Progress of the current attempt (reset when an attempt restarts from scratch).
  int64_t training_iteration = 0;  // results of this run so far (Ray Tune's training_iteration)
  double time_total_s = 0;         // sum of time_this_iter_s, seconds
  int64_t last_seq = 0;            // highest result seq processed for `attempt`
  // Checkpoints (Ray Tune's CheckpointManager): kept checkpoints, oldest first. The newest is
  // what a restart, unpause or requeue restores.
  std::vector<CheckpointRef> checkpoints;
  /// Checkpoints asked of the current attempt and not reported stored yet, oldest first: the
  /// decision that answered the result at `training_iteration` saves one (checkpoint_id empty;
  /// time_total_s and score as of that result). The result record with that decision is the
  /// request's journal entry, so a scheduler that takes over adopts what the worker then stores.
  std::vector<CheckpointRef> requested_checkpoints;
  /// Checkpoints asked of the trial that the store refused, oldest first (the newest
  /// kMaxCheckpointsNotStored; see NoteCheckpointNotStored), and how many there were in all.
  std::vector<CheckpointNotStored> checkpoints_not_stored;
  int64_t num_checkpoints_not_stored = 0;
  /// True when checkpoints.back() was saved with the trial's current config: false from a PBT
  /// exploit (the config changed) until the trial stores a checkpoint of its own again. A PBT
  /// donor without it gives no checkpoint (it would pair an old state with the new config).
  bool newest_checkpoint_has_config = false;
  /// Set for one start only: restore this checkpoint (of this or another trial, e.g. PBT's
  /// exploit or restore_from) instead of the trial's newest. Unset = the newest, if any.
  std::optional<CheckpointRef> restore_checkpoint;
  /// The checkpoint the current attempt restored from ("" = from scratch) and the
  /// training_iteration / time_total_s it started at (Ray Tune's iterations_since_restore and
  /// time_since_restore count from here).
  std::string restored_checkpoint_id;
  int64_t restored_iteration = 0;
  double restored_time_total_s = 0;

  /// Directory name in Ray Tune's layout: "<trial_id>_<experiment_tag>", cut to 120 bytes and
  /// with characters unsafe in file names replaced by '_'.
  std::string DirName() const;
  /// The newest result decoded (an object), null before the first one. Cost: one msgpack decode.
  nlohmann::json LastResult() const;
  /// Stores `result` (an object; anything else clears it) as the newest result.
  void SetLastResult(const nlohmann::json& result);
};

/// Adds the trial's current error to its failure history unless it is empty or the newest
/// entry already holds it for this attempt. Called for every status change the journal records,
/// live and in replay, so both build the same history.
void NoteFailure(Trial& trial, FailureKind kind = FailureKind::kError);

/// Adds a refused checkpoint to the trial's checkpoints_not_stored (dropping the oldest beyond
/// kMaxCheckpointsNotStored) and counts it. Live and in replay, so both build the same list.
void NoteCheckpointNotStored(Trial& trial, int64_t training_iteration, std::string reason);

/// True while a TERMINATED trial's attempt stores the end checkpoint its stop asked for
/// (checkpoint_at_end): the request is open and no error says it was lost. The attempt keeps
/// its worker and allocation until it exits.
inline bool StoresEndCheckpoint(const Trial& t) {
  return t.status == TrialStatus::kTerminated && t.error.empty() &&
         !t.requested_checkpoints.empty();
}

}  // namespace tunebus
