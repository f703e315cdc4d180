// Control socket messages: tunectl (REQ or DEALER) -> scheduler (ROUTER). Every request is
// answered by ControlReply, or by ErrorReply when it is malformed or cannot be served.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/envelope.hpp"

namespace tunebus::proto {

/// Submit an experiment file. The scheduler parses it again with the same validation tunectl
/// ran (libs/spec), so a bad file is rejected on either side.
struct SubmitExperiment {
  TUNEBUS_ENVELOPE("submit_experiment");
  std::string spec_yaml;    // the file's text
  std::string base_dir;     // absolute folder relative paths resolve against
  std::string source_name;  // file name for error messages
  /// The shipped working_dir (since v1.8): the SHA-256 of its archive, uploaded before with
  /// WorkingDirPut, and the archive's size in bytes. "" = not shipped (the command runs at the
  /// path the file names, on every worker host). The scheduler checks that the store holds it
  /// (not_found otherwise) and journals it with the experiment.
  std::string working_dir_digest;
  int64_t working_dir_size_bytes = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, spec_yaml, base_dir, source_name, working_dir_digest,
                     working_dir_size_bytes)
};

/// Whether the checkpoint-store holds the working_dir archive `digest` (since v1.8), so a client
/// uploads it only when it does not. body: {digest, stored (bool), size_bytes}. Errors:
/// invalid_argument (not 64 lowercase hex digits), the store's errors (unavailable).
struct WorkingDirStat {
  TUNEBUS_ENVELOPE("working_dir_stat");
  std::string digest;  // SHA-256 of the archive, 64 lowercase hex digits
  TUNEBUS_DEFINE_MAP(v, type, id, digest)
};

/// One chunk of a working_dir archive (since v1.8); the scheduler stores it in the
/// checkpoint-store as `working_dirs/<digest>`. Chunks go in order 0..n-1, one at a time; the
/// one with `last` commits the archive once the store has checked that the chunks' SHA-256 is
/// `digest`. body: {digest, chunk_index, stored (true after the last chunk)}. Errors:
/// invalid_argument (bad digest, chunk over 4 MiB), corruption (digest mismatch: nothing is
/// stored), failed_precondition (a chunk out of order), the store's errors (unavailable,
/// io_error).
struct WorkingDirPut {
  TUNEBUS_ENVELOPE("working_dir_put");
  std::string digest;
  uint32_t chunk_index = 0;
  std::vector<char> data;  // <= 4 MiB of the archive
  bool last = false;
  TUNEBUS_DEFINE_MAP(v, type, id, digest, chunk_index, data, last)
};

/// The `experiment` field of read requests (since v1.5; absent = ""): which experiment answers.
/// "" = the scheduler's current one, or when this process has none (after a restart) the newest
/// journaled one; a name = the newest experiment of that name; a journal name ("<name>-<id>") =
/// exactly that one. One that is not in memory is read from its journal, read-only (nothing is
/// appended, it does not become current). Errors: not_found listing the known experiments.

/// Trials of an experiment. body: JSON array of trial objects (see PROTOCOL.md).
struct ListTrials {
  TUNEBUS_ENVELOPE("list_trials");
  std::string status;  // filter by status name, "" = all
  int64_t offset = 0;  // skip this many (matching) trials, in `sort` order
  int64_t limit =
      0;  // at most this many; 0 = all (a page keeps the reply small at 10,000s of trials)
  std::string experiment;  // see above
  /// The order (since v1.9; absent = ""): "" = creation order; else trial_id, status,
  /// training_iteration, time_total_s, metric, config.NAME or result.NAME, "-KEY" descending;
  /// trials without the key last (services/scheduler/control/trial_page.hpp). Errors:
  /// invalid_argument.
  std::string sort;
  TUNEBUS_DEFINE_MAP(v, type, id, status, offset, limit, experiment, sort)
};

/// One trial. body: the trial object.
struct ShowTrial {
  TUNEBUS_ENVELOPE("show_trial");
  std::string trial_id;
  std::string experiment;  // see above
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, experiment)
};

/// One chunk of a trial's stored checkpoint (since v1.5), for `tunectl checkpoint export`: the
/// scheduler checks that the trial keeps the checkpoint and fetches the chunk from the
/// checkpoint-store. Answered by CheckpointChunk (not ControlReply). The chunks, concatenated,
/// are a tar archive of the folder the trainable saved. Errors: not_found (experiment, trial, or
/// a checkpoint the trial does not keep, naming the ones it keeps); failed_precondition when the
/// trial has no checkpoint; the checkpoint-store's errors (unavailable, not_found).
struct FetchCheckpoint {
  TUNEBUS_ENVELOPE("fetch_checkpoint");
  std::string experiment;  // as in ListTrials
  std::string trial_id;
  std::string checkpoint_id;  // "" = the trial's newest checkpoint
  uint32_t chunk_index = 0;   // 0-based
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, trial_id, checkpoint_id, chunk_index)
};

struct CheckpointChunk {
  TUNEBUS_ENVELOPE("checkpoint_chunk");
  std::string experiment;  // the journal name of the experiment that answered
  std::string trial_id;
  std::string checkpoint_id;       // the one fetched (the newest when none was asked)
  int64_t training_iteration = 0;  // of the checkpoint
  uint32_t chunk_index = 0;
  uint32_t num_chunks = 0;  // chunks of the whole archive
  std::vector<char> data;   // <= 4 MiB of the tar archive
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, trial_id, checkpoint_id, training_iteration,
                     chunk_index, num_chunks, data)
};

/// Stop one trial (PENDING, RUNNING or PAUSED -> TERMINATED). body: {"trial_id", "status",
/// "message"}.
struct StopTrialCommand {
  TUNEBUS_ENVELOPE("stop_trial_command");
  std::string trial_id;
  /// The experiment (name or journal name; since v1.6, absent = ""): "" = the trial's own (a
  /// trial id names its experiment); a given one must hold the trial (not_found otherwise).
  std::string experiment;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, experiment)
};

/// Pause a RUNNING trial: checkpoint, release its resources, -> PAUSED (Ray Tune's
/// pause_trial). body: {"trial_id", "status", "message"}. A PENDING trial is paused without a
/// checkpoint. Errors: not_found; failed_precondition for a finished trial.
struct PauseTrialCommand {
  TUNEBUS_ENVELOPE("pause_trial_command");
  std::string trial_id;
  std::string experiment;  // as in StopTrialCommand
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, experiment)
};

/// Resume a PAUSED trial: -> PENDING, continuing from its latest checkpoint (Ray Tune's
/// unpause_trial). body: {"trial_id", "status", "message"}. Errors: not_found;
/// failed_precondition when the trial is not PAUSED.
struct ResumeTrialCommand {
  TUNEBUS_ENVELOPE("resume_trial_command");
  std::string trial_id;
  std::string experiment;  // as in StopTrialCommand
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, experiment)
};

/// Add a trial with an explicit config to a running experiment (Ray Tune's add_trial).
/// body: the new trial object. Errors: invalid_argument when config_json is not a JSON object;
/// failed_precondition when no experiment is running, when it is finished, or when several run
/// and `experiment` names none of them (the message lists them).
struct AddTrialCommand {
  TUNEBUS_ENVELOPE("add_trial_command");
  std::string config_json;  // JSON object
  /// The experiment (name or journal name; since v1.6, absent = ""): "" = the only unfinished
  /// one (else the newest in this scheduler).
  std::string experiment;
  TUNEBUS_DEFINE_MAP(v, type, id, config_json, experiment)
};

/// Change the resource request of a trial that is not RUNNING. `resources`: name -> amount
/// (cpu, gpu, memory, custom; amounts as in resources_per_trial, names not given keep their
/// value). body: the trial object. Errors: not_found; failed_precondition while RUNNING;
/// invalid_argument for a negative or non-finite amount.
struct SetTrialResourcesCommand {
  TUNEBUS_ENVELOPE("set_trial_resources_command");
  std::string trial_id;
  std::map<std::string, double> resources;
  std::string experiment;  // as in StopTrialCommand
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, resources, experiment)
};

/// Resume an experiment by name (the newest with that name in this scheduler or in the
/// store's journals): an unfinished one continues; `rerun_errored` "restore" / "restart" also
/// reruns its ERROR trials (from their newest checkpoint / from scratch). body: the experiment
/// summary plus "rerun" (trials rerun). Errors: not_found; failed_precondition while it is being
/// submitted or resumed, or when it is finished and there is nothing to rerun ("experiment is
/// finished"); invalid_argument for another rerun_errored. Other experiments run on meanwhile.
struct ResumeExperimentCommand {
  TUNEBUS_ENVELOPE("resume_experiment_command");
  std::string name;
  std::string rerun_errored;  // "" | "restore" | "restart"
  TUNEBUS_DEFINE_MAP(v, type, id, name, rerun_errored)
};

/// Change a running experiment's fair-share weight (since v1.6; weighted DRF across the
/// experiments of a suite, docs/explanation/fair-share.md), journaled (weight_set). body: the
/// experiment summary with "weight", "share", "usage". Errors: invalid_argument for a weight that
/// is not > 0; failed_precondition for a finished experiment; as StopExperiment's `experiment`.
struct SetExperimentWeight {
  TUNEBUS_ENVELOPE("set_experiment_weight");
  std::string experiment;  // as in AddTrialCommand
  double weight = 1;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, weight)
};

/// Delete a finished experiment (since v1.6): its journal and checkpoints leave the
/// checkpoint-store (which compacts the space away) and, unless keep_results, its results
/// folder is removed. body: {name, journal, records, checkpoints, store_bytes_before,
/// store_bytes_after, compaction_s, results_dir, results_removed}. Errors: not_found (no such
/// experiment, listing the known ones); failed_precondition while it is unfinished (stop it
/// first); the store's errors.
struct DeleteExperiment {
  TUNEBUS_ENVELOPE("delete_experiment");
  std::string experiment;  // name (the newest of that name) or journal name
  bool keep_results = false;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, keep_results)
};

/// Every experiment this scheduler knows or finds in the store's journals. body: array of
/// {name, journal, status, counts: {STATUS: n}, total, submitted_at (seconds since the epoch)};
/// the experiments in this scheduler also have weight, share (the dominant share of the
/// cluster their running trials hold, 0..1) and usage (resource amounts held).
struct ListExperiments {
  TUNEBUS_ENVELOPE("list_experiments");
  TUNEBUS_DEFINE_MAP(v, type, id)
};

/// Stop every unfinished trial and end the experiment. body: the experiment summary.
/// `interrupt` (since v1.4; absent = false): end it as INTERRUPTED instead, resumable: running
/// trials go back to PENDING, pending and paused ones keep their status (Ray Tune's Ctrl-C).
struct StopExperiment {
  TUNEBUS_ENVELOPE("stop_experiment");
  bool interrupt = false;
  std::string experiment;  // as in AddTrialCommand
  TUNEBUS_DEFINE_MAP(v, type, id, interrupt, experiment)
};

/// The experiment summary. body: {"name", "status", "counts", "total", "finished", "best",
/// "results_dir", "metric", "mode", "error"}; "journal" and "read_only" (true when it was read
/// from its journal) since v1.5.
struct GetExperiment {
  TUNEBUS_ENVELOPE("get_experiment");
  std::string experiment;  // see ListTrials
  TUNEBUS_DEFINE_MAP(v, type, id, experiment)
};

/// The trial scheduler's decisions (for the dashboard): body {"experiment" (journal
/// name), "scheduler" (its name), "total", "dropped", "decisions": [{kind ("stop" | "pause" |
/// "exploit"), trial_id, scheduler, training_iteration, time_total_s, at_s (seconds since the
/// epoch), detail}]} oldest first (libs/tune/scheduler_decisions.hpp: in memory, the newest
/// 2000, none for an experiment read from its journal). A read, like GetExperiment.
struct ListSchedulerDecisions {
  TUNEBUS_ENVELOPE("list_scheduler_decisions");
  std::string experiment;  // see ListTrials
  TUNEBUS_DEFINE_MAP(v, type, id, experiment)
};

/// The most rows, and about the most bytes, a ListResults page holds.
inline constexpr int64_t kMaxResultsPageRows = 10000;
inline constexpr size_t kResultsPageBytes = size_t(1) << 20;

/// A trial's reported results, oldest first (since v1.13): the rows of its result.json on the
/// scheduler's host (docs/reference/results-folder.md), each the result the trial reported with Ray
/// Tune's auto-filled keys and its config, so a driver on another host reads a trial's history. A
/// read, like ShowTrial; a running trial's newest rows appear once durable and written
/// (services/scheduler/control/result_page.hpp). body: {experiment (journal name), trial_id,
/// offset, total (rows now), next_offset (of the next page; null when this page ends at the last
/// row), results: [row objects]}. A page holds at most `limit` rows and ends early after the row
/// that brings it to kResultsPageBytes. Errors: invalid_argument (offset < 0, limit outside
/// 0..kMaxResultsPageRows, no trial_id); not_found (experiment or trial); corruption (a row of the
/// page that is not JSON); io_error.
struct ListResults {
  TUNEBUS_ENVELOPE("list_results");
  std::string experiment;  // see ListTrials
  std::string trial_id;
  int64_t offset = 0;  // rows skipped
  int64_t limit = 0;   // at most this many rows; 0 = kMaxResultsPageRows
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, trial_id, offset, limit)
};

/// What another trial scheduler would have done with a finished experiment's recorded results
/// (since v1.15): the scheduler replays the experiment's journal (its result records, in the
/// order they arrived) through a fresh trial scheduler built from `scheduler_json`, off its event
/// loop (libs/tune/whatif.hpp, services/scheduler/control/handlers/whatif_handlers.hpp). A read.
/// body without `sweep_json`: the report (WhatIfReport::ToJson) with "experiment", "journal" and
/// "record" {journal_records, results, read_ms, decode_ms, replay_ms}; with it, the sweep's table
/// (libs/tune/whatif_sweep.hpp: {"base", "sweep", "actual", "rows", "cheapest_keeping"}) and the
/// same fields. Errors: invalid_argument (scheduler_json or sweep_json malformed, an unknown
/// scheduler or parameter, pbt, a result lacking what the scheduler reads); not_found (the
/// experiment); failed_precondition (the experiment is still running); resource_exhausted
/// (kMaxWhatIfReplays replays under way); unavailable (the checkpoint-store).
struct WhatIf {
  TUNEBUS_ENVELOPE("whatif");
  std::string experiment;      // see ListTrials
  std::string scheduler_json;  // {"type": "asha" | ..., params...}; no type = fifo
  /// "" = one replay; else a JSON object {param: [values...]} whose grid (every combination)
  /// is replayed, each setting `scheduler_json`'s parameters with the combination's over them.
  std::string sweep_json;
  uint64_t seed = 0;  // seeds the replayed scheduler (ASHA's bracket draw)
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, scheduler_json, sweep_json, seed)
};

/// Whatif replays a scheduler runs at once (more are refused: resource_exhausted).
inline constexpr size_t kMaxWhatIfReplays = 2;

/// Workers and resources as the resource-manager reports them. body: JSON array of nodes.
struct ListWorkers {
  TUNEBUS_ENVELOPE("list_workers");
  TUNEBUS_DEFINE_MAP(v, type, id)
};

struct ControlReply {
  TUNEBUS_ENVELOPE("control_reply");
  std::string body_json;  // JSON document, shape per request
  TUNEBUS_DEFINE_MAP(v, type, id, body_json)
};

}  // namespace tunebus::proto
