// trial-worker <-> scheduler messages. Worker DEALER (routing id = worker_id) connects to the
// scheduler's worker ROUTER. See PROTOCOL.md "Worker protocol".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/envelope.hpp"
#include "proto/msgpack_map.hpp"

namespace tunebus::proto {

/// A trial a worker is running, reported when it (re-)registers so a scheduler can reattach it.
struct RunningTrial {
  std::string trial_id;
  int64_t attempt = 0;
  TUNEBUS_DEFINE_MAP(trial_id, attempt)
};

/// worker -> scheduler, first message after connecting and after every reconnect.
struct RegisterWorker {
  TUNEBUS_ENVELOPE("register_worker");
  std::string worker_id;
  std::string hostname;
  std::vector<RunningTrial> running;
  TUNEBUS_DEFINE_MAP(v, type, id, worker_id, hostname, running)
};

/// scheduler -> worker, answer to RegisterWorker.
struct RegisterWorkerAck {
  TUNEBUS_ENVELOPE("register_worker_ack");
  std::vector<std::string> stale_trials;  // trial ids the worker must kill (not current attempts)
  TUNEBUS_DEFINE_MAP(v, type, id, stale_trials)
};

/// How to run the trainable; mirrors ExperimentSpec::trainable.
struct TrainableDef {
  std::vector<std::string> command;        // argv, run in working_dir; empty if builtin
  std::string builtin;                     // "mock" | "noop" | ""
  std::string working_dir;                 // absolute
  std::map<std::string, std::string> env;  // extra environment
  TUNEBUS_DEFINE_MAP(command, builtin, working_dir, env)
};

/// scheduler -> worker: start attempt `attempt` of a trial. Sent only after the journal record
/// "trial started" is durable.
struct StartTrial {
  TUNEBUS_ENVELOPE("start_trial");
  std::string experiment;
  std::string trial_id;
  int64_t attempt = 0;
  std::string config_json;  // the trial's config as a JSON object
  TrainableDef trainable;
  std::string trial_dir;             // absolute; stdout/stderr go here
  std::vector<std::string> gpu_ids;  // exported as CUDA_VISIBLE_DEVICES
  int64_t start_iteration = 0;       // training_iteration already done (restore), else 0
  double start_time_total_s = 0;     // time_total_s already trained (restore), seconds, else 0
  double report_timeout_s =
      0;  // fail the attempt after this many seconds without a report; 0 = off
  /// Checkpoint-store id to restore before starting ("" = from scratch). The worker fetches it
  /// into <trial_dir>/restore and passes that folder as TUNEBUS_RESTORE_DIR.
  std::string restore_checkpoint_id;
  /// Prefix of the ids of checkpoints this attempt saves: "<journal>/<trial_id>/". The worker
  /// appends "<training_iteration:08>-a<attempt>".
  std::string checkpoint_prefix;
  /// What the attempt was allocated (fixed-point units, see proto/resources.hpp). The worker
  /// reports it back in RegisterNode.running so a restarted resource-manager rebuilds it.
  std::map<std::string, int64_t> resources;
  /// SHA-256 of the experiment's shipped working_dir (since v1.8; "" = not shipped: the command
  /// runs in trainable.working_dir as is). The worker fetches the archive
  /// `working_dirs/<digest>` from the checkpoint-store once, keeps it unpacked in its cache and
  /// runs the command there, resolved relative to it.
  std::string working_dir_digest;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, trial_id, attempt, config_json, trainable, trial_dir,
                     gpu_ids, start_iteration, start_time_total_s, report_timeout_s,
                     restore_checkpoint_id, checkpoint_prefix, resources, working_dir_digest)
};

/// worker -> scheduler: one result reported by the trainable. The worker keeps it until a
/// Decision with the same (trial_id, attempt) and seq >= this seq arrives.
struct ReportResult {
  TUNEBUS_ENVELOPE("report_result");
  std::string trial_id;
  int64_t attempt = 0;
  int64_t seq = 0;  // 1, 2, ... per attempt
  /// The trainable's report as JSON text of an object. Either this or `metrics`: when it is not
  /// empty it counts and `metrics` is ignored (clients in other languages send it).
  std::string metrics_json;
  double time_this_iter_s = 0;  // seconds between this report and the previous (or start)
  /// The trainable's report as a msgpack map with string keys (since v1.3; trial-workers send
  /// this and leave metrics_json empty).
  MsgpackMap metrics;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, seq, metrics_json, time_this_iter_s, metrics)
};

/// One result inside ReportResults: ReportResult's fields without the envelope.
struct ResultItem {
  std::string trial_id;
  int64_t attempt = 0;
  int64_t seq = 0;              // 1, 2, ... per attempt
  std::string metrics_json;     // the trainable's report (JSON object), or empty: see ReportResult
  double time_this_iter_s = 0;  // seconds
  MsgpackMap metrics;           // the trainable's report (msgpack map), see ReportResult
  TUNEBUS_DEFINE_MAP(trial_id, attempt, seq, metrics_json, time_this_iter_s, metrics)
};

/// worker -> scheduler: every result the worker's trainables reported since its last send
/// (one poll round), in report order; at most kMaxBatchItems per message. Each is handled as
/// a ReportResult; trial-workers send only this form, the scheduler accepts both.
struct ReportResults {
  TUNEBUS_ENVELOPE("report_results");
  std::vector<ResultItem> results;
  TUNEBUS_DEFINE_MAP(v, type, id, results)
};

/// Most items in one ReportResults or Decisions message (far below the decoder's array limit).
inline constexpr size_t kMaxBatchItems = 1024;

/// scheduler -> worker: the decision for result `seq` (also its acknowledgement).
struct Decision {
  TUNEBUS_ENVELOPE("decision");
  std::string trial_id;
  int64_t attempt = 0;
  int64_t seq = 0;
  /// "continue" | "checkpoint" (save, go on) | "pause" (save, then stop) |
  /// "checkpoint_and_stop" (save, then stop) | "stop": ActionName / ParseAction (libs/core)
  std::string action;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, seq, action)
};

/// One decision inside Decisions: Decision's fields without the envelope.
struct DecisionItem {
  std::string trial_id;
  int64_t attempt = 0;
  int64_t seq = 0;
  std::string action;  // as Decision::action
  TUNEBUS_DEFINE_MAP(trial_id, attempt, seq, action)
};

/// scheduler -> worker: the decisions for that worker that became sendable in one poll round
/// (their journal records are durable), in decision order; at most kMaxBatchItems per message.
/// Each is handled as a Decision. The scheduler sends only this form; workers accept both.
struct Decisions {
  TUNEBUS_ENVELOPE("decisions");
  std::vector<DecisionItem> decisions;
  TUNEBUS_DEFINE_MAP(v, type, id, decisions)
};

/// scheduler -> worker: stop a trial now (user stop, experiment stop). The worker answers with
/// TrialExited once the trainable is gone.
struct StopTrialRequest {
  TUNEBUS_ENVELOPE("stop_trial");
  std::string trial_id;
  int64_t attempt = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt)
};

/// worker -> scheduler: the trainable of (trial_id, attempt) is gone.
struct TrialExited {
  TUNEBUS_ENVELOPE("trial_exited");
  std::string trial_id;
  int64_t attempt = 0;
  bool ok = true;           // false: it failed (could not start, exit code != 0, signal)
  int exit_code = 0;        // process exit code, or -signal
  bool stopped = false;     // true: it exited because it was told to stop
  std::string error;        // reason when !ok
  std::string stderr_tail;  // last lines of its stderr when !ok
  int64_t last_seq = 0;     // results sent before exiting (the scheduler waits for them)
  /// The worker itself is going away (SIGTERM): a worker loss, not a trainable failure, so it
  /// does not count toward max_failures.
  bool worker_shutdown = false;
  /// The trainable could not be started at all (missing command, bad trial setup): the trial
  /// goes to ERROR at once, without the retries max_failures allows.
  bool start_failed = false;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, ok, exit_code, stopped, error, stderr_tail,
                     last_seq, worker_shutdown, start_failed)
};

/// worker -> scheduler: a checkpoint of (trial_id, attempt) is committed in the checkpoint-store.
/// Sent before that attempt's TrialExited.
struct CheckpointSaved {
  TUNEBUS_ENVELOPE("checkpoint_saved");
  std::string trial_id;
  int64_t attempt = 0;
  std::string checkpoint_id;
  int64_t training_iteration = 0;  // the iteration the checkpoint holds
  int64_t size_bytes = 0;          // bytes stored (the directory as a tar stream)
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, checkpoint_id, training_iteration, size_bytes)
};

/// worker -> scheduler: a checkpoint of (trial_id, attempt) that its decision asked for was not
/// stored: the checkpoint-store refused the upload (e.g. io_error when its disk is full), or
/// stayed unreachable through the worker's retries. Sent once the upload has finally failed,
/// before that attempt's TrialExited (since v1.7).
struct CheckpointFailed {
  TUNEBUS_ENVELOPE("checkpoint_failed");
  std::string trial_id;
  int64_t attempt = 0;
  std::string checkpoint_id;       // the id it would have had (never stored)
  int64_t training_iteration = 0;  // the iteration the checkpoint held
  std::string error;               // the store's error, "io_error: ... No space left on device"
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, checkpoint_id, training_iteration, error)
};

/// worker -> scheduler, every heartbeat interval; lets each side notice the other is gone.
struct WorkerHeartbeat {
  TUNEBUS_ENVELOPE("worker_heartbeat");
  std::string worker_id;
  TUNEBUS_DEFINE_MAP(v, type, id, worker_id)
};

}  // namespace tunebus::proto
