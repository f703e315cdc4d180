// TrialWorker: runs trainables for the scheduler on one node (DESIGN.md "Services",
// "Trainables"; wire messages in proto/worker.hpp and proto/resources.hpp).
//
// Sockets (all created in Create(), used only by the Run() thread):
//   scheduler DEALER (routing id = worker_id) -> the scheduler's worker ROUTER
//   resource-manager DEALER (bus::RequestClient) -> the RM's ROUTER
// Registration: RegisterNode (capacity in Resources fixed-point units) to the RM until it is
// acknowledged, then NodeHeartbeat every interval; an ErrorReply not_found to a heartbeat makes
// it register again. RegisterWorker (with the trials it runs) to the scheduler every interval
// until a RegisterWorkerAck arrives, then WorkerHeartbeat every interval; an ErrorReply
// not_found from the scheduler makes it register again. The first RegisterWorkerAck of each
// registration makes it resend its unacknowledged results and the TrialExited of trials that
// still hold some (the scheduler drops duplicates by (trial_id, attempt, seq)).
// Commands: a command trainable whose resolved program matches no --allow-command pattern is not
// started; its attempt exits failed ("command /usr/bin/curl is not allowed on this worker
// (--allow-command: ...)", logged at warn) and the scheduler retries it as max_failures allows.
// Trainables never see the worker's own TUNEBUS_* variables (libs/trainable/command_trainable.hpp).
// Trials: StartTrial creates the trial dir, fetches the experiment's shipped working_dir into
// the cache when it names one (WorkingDirCache; the trainable runs there) and the checkpoint to
// restore, and starts the trainable; each report becomes a
// result (seq 1, 2, ... per attempt), sent in one ReportResults per poll round and kept until a
// decision (Decision, or an item of Decisions) with seq >= it arrives; the
// decision's action goes to the trainable ("pause" is delivered as "stop" for now). Stop (a
// "stop"/"pause" decision or StopTrialRequest) tells a trainable that waits for a decision to
// stop; any trainable still running after stop_grace_ms is killed (SIGKILL to its process
// group). When a trainable ends the worker sends TrialExited (stopped = it was told to stop;
// a told-to-stop trainable that had to be killed counts as ok).
// Garbage or unknown messages are logged and dropped; the worker never crashes on input.
// After Run() returns (Stop(), SIGTERM) every trainable is killed and reaped.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/core/status.hpp"
#include "libs/metrics/metrics_publisher.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "libs/trainable/allowed_commands.hpp"
#include "libs/trainable/trainable.hpp"
#include "proto/worker.hpp"
#include "services/trial-worker/checkpoint_transfer.hpp"
#include "services/trial-worker/trial_run.hpp"
#include "services/trial-worker/working_dir_cache.hpp"

namespace tunebus {

struct TrialWorkerOptions {
  std::string worker_id;                                    // "" = "<hostname>-<pid>"
  std::string scheduler_endpoint = "tcp://127.0.0.1:5559";  // the scheduler's worker socket
  std::string rm_endpoint = "tcp://127.0.0.1:5556";
  std::string store_endpoint = "tcp://127.0.0.1:5557";  // checkpoint-store (checkpoints)
  double cpus = std::thread::hardware_concurrency() > 0 ? std::thread::hardware_concurrency() : 1;
  int64_t gpus = 0;                      // whole GPUs offered, ids "0" .. "gpus-1"
  int64_t memory_bytes = 0;              // 0 = memory not offered
  std::map<std::string, double> custom;  // extra resources: name -> amount
  int64_t heartbeat_interval_ms = 1000;
  int64_t liveness = 3;                // intervals of scheduler silence before a warning
  int64_t max_unacked_results = 1000;  // reports beyond this wait inside their trainables
  /// Time a trainable told to stop gets to exit (its `finally` blocks, the interpreter's
  /// teardown) before SIGKILL, ms. Python with scikit-learn loaded takes about 0.4 s to exit on
  /// an idle 2-core machine and over 2 s under load. Ray Tune 2.x waits
  /// TUNE_FORCE_TRIAL_CLEANUP_S (600 s); here the trial's resources already go to the next
  /// trial while it exits, so the wait is shorter.
  int64_t stop_grace_ms = 10000;
  std::string node_ip;  // results' `node_ip`; "" = the address this host reaches the scheduler from
  /// Unpacked shipped working_dirs, one folder per digest (WorkingDirCache); "" =
  /// <temp dir>/tunebus-working-dirs.
  std::string cache_dir;
  /// --allow-command: fnmatch(3) globs a command trainable's resolved program must match
  /// (trainable::AllowedCommands); empty = every program. A refused attempt fails like a crashed
  /// one (max_failures applies: another worker may allow it).
  std::vector<std::string> allow_commands;
  metrics::MetricsOptions metrics;  // --metrics-port / --metrics-host (0 = off)
  /// CURVE keys and bind checks of its sockets (RunService loads it from --keys-dir).
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  /// Times heartbeats, timeouts and trainables' iterations; tests pass a ManualClock. Outlives
  /// the worker.
  const Clock* clock = &Clock::Real();
};

class TrialWorker {
 public:
  enum class State {
    kRegistering,  // no RegisterWorkerAck yet: RegisterWorker is re-sent every heartbeat
    kRegistered,   // the scheduler acknowledged this worker; WorkerHeartbeat every interval
    kShutDown,     // Run() returned; every trainable was killed
  };

  /// Creates the sockets (connects; binds nothing). Errors: InvalidArgument (bad options),
  /// Unavailable (an endpoint cannot be connected).
  static Result<std::unique_ptr<TrialWorker>> Create(zmq::context_t& ctx,
                                                     TrialWorkerOptions options);
  ~TrialWorker();
  TrialWorker(const TrialWorker&) = delete;
  TrialWorker& operator=(const TrialWorker&) = delete;

  /// Serves until Stop(); then kills every trainable (sending TrialExited for each).
  void Run();
  /// Thread- and signal-safe.
  void Stop() { loop_.Stop(); }
  /// The worker binds nothing: the scheduler endpoint it connects to.
  std::string endpoint() const { return options_.scheduler_endpoint; }
  const std::string& worker_id() const { return options_.worker_id; }

 private:
  using RunKey = std::pair<std::string, int64_t>;  // (trial_id, attempt)

  TrialWorker(TrialWorkerOptions options, trainable::AllowedCommands allowed_commands,
              std::string hostname, zmq::socket_t scheduler, zmq::socket_t rm, zmq::socket_t store);

  // Registration and heartbeats (trial_worker.cpp).
  void OnHeartbeat();
  void RegisterNode();
  void SendNodeHeartbeat();
  void SendRegisterWorker();
  void OnSchedulerReadable();
  void HandleRegisterWorkerAck(const proto::Decoded& msg);
  void HandleSchedulerError(const proto::Decoded& msg);
  void ResendUnacked();
  void Shutdown();
  /// Sends `message` now; results queued by QueueResult go out first (they were reported
  /// earlier).
  template <typename M>
  void SendToScheduler(const M& message);
  /// Adds a result to the ReportResults sent at the end of this poll round (FlushResults, the
  /// loop's idle hook) or once kMaxBatchItems are queued.
  void QueueResult(const proto::ResultItem& result);
  void FlushResults();

  // Trials (trial_worker_trials.cpp).
  void HandleStartTrial(const proto::Decoded& msg);
  void HandleDecision(const proto::Decoded& msg);   // one Decision
  void HandleDecisions(const proto::Decoded& msg);  // a Decisions batch
  void ApplyDecision(const proto::DecisionItem& d);
  void HandleStopTrial(const proto::Decoded& msg);
  /// Fetches the checkpoint to restore (if any), then StartRun.
  void RestoreAndStart(const proto::StartTrial& start, nlohmann::json config);
  /// Ends a wait (working_dir fetch, restore) of `key` registered in restoring_: false, after
  /// answering TrialExited(stopped) unless shutting down, when it was cancelled meanwhile.
  bool EndWait(const RunKey& key);
  void StartRun(const proto::StartTrial& start, nlohmann::json config, std::string restore_dir);
  /// The folder a restored attempt's checkpoint is fetched into: <trial_dir>/restore_a<attempt>
  /// (the trainable's TUNEBUS_RESTORE_DIR).
  static std::string RestoreDir(const std::string& trial_dir, int64_t attempt);
  /// Removes the restore folders of attempts up to `through_attempt` from `trial_dir` (those a
  /// killed worker left behind, and a new attempt's own from an earlier try).
  static void RemoveRestoreDirs(const std::string& trial_dir, int64_t through_attempt);
  /// The attempt exited: removes its restore folder, and the trial folder's checkpoint_tmp when
  /// it is empty (it saved nothing more) unless another attempt of the trial runs on this worker.
  void RemoveScratchDirs(const TrialRun& run);
  /// Moves the trainable's finished checkpoint aside and uploads it (checkpoints below).
  void CaptureCheckpoint(TrialRun& run);
  /// Streams the checkpoint folder `saved` to the checkpoint-store as `id`, then reports it
  /// (checkpoint_saved) and removes the folder. While the store does not answer (a restart), it
  /// tries again every second, kUploadTries times in all: the checkpoint the decision asked for
  /// outlives a store outage. A retry the store refuses as already committed (it died after
  /// committing an earlier try) counts as stored. An upload that finally fails (any other
  /// refusal, e.g. io_error from a full disk, or the last try unanswered) is reported as
  /// checkpoint_failed with the store's error, and the folder removed all the same; either
  /// report goes before the attempt's deferred TrialExited.
  void UploadCheckpoint(const RunKey& key, const std::string& saved, const std::string& id,
                        int64_t iteration, nlohmann::json metadata, int tries_left);
  static constexpr int kUploadTries = 60;
  /// Reports an attempt that never ran its trainable as exited with `error`. `start_failed`: it
  /// cannot start anywhere (the trial is ERROR at once); false: a failure of this attempt only
  /// (a working_dir this worker could not fetch), retried as max_failures allows.
  void FailStart(const proto::StartTrial& start, const std::string& error,
                 bool start_failed = true);
  void BeginStopping(TrialRun& run, const std::string& why);
  /// Arms run.watch.timer for one check period (report_timeout_s / 4).
  void ArmReportTimer(TrialRun& run);
  /// One report-timeout check: kills the trainable as failed once it has been quiet too long.
  void CheckReportTimeout(const RunKey& key);
  void KillStale(TrialRun& run, const std::string& why);
  void OnTrainableEvent(const RunKey& key);
  void AfterTrainableEvent(TrialRun& run);
  void OnTrainableExited(TrialRun& run);
  void SyncFds(TrialRun& run);
  void DrainBackpressured();
  void EraseIfDone(const RunKey& key);
  TrialRun* FindRun(const std::string& trial_id, int64_t attempt);

  TrialWorkerOptions options_;
  trainable::AllowedCommands allowed_commands_;  // from options_.allow_commands
  std::string hostname_;
  std::string node_ip_;  // this host's address, in every result (NodeIp in trial_worker.cpp)
  int64_t pid_;          // this process's id: a built-in trainable's results' `pid`
  bus::EventLoop loop_;
  zmq::socket_t scheduler_;
  std::unique_ptr<bus::RequestClient> rm_;
  std::unique_ptr<bus::RequestClient> store_;
  std::unique_ptr<CheckpointTransfer> transfer_;
  std::unique_ptr<WorkingDirCache> working_dirs_;
  /// starts waiting for their working_dir or checkpoint -> cancelled
  std::map<RunKey, bool> restoring_;
  State state_ = State::kRegistering;
  bool rm_registered_ = false;
  bool rm_request_in_flight_ = false;
  SteadyTime last_scheduler_message_{};
  bool scheduler_seen_ = false;
  bool scheduler_silence_logged_ = false;
  std::map<RunKey, std::unique_ptr<TrialRun>> runs_;
  int64_t total_unacked_ = 0;
  std::set<RunKey> held_;        // runs whose reports wait for max_unacked_results to allow them
  proto::ReportResults outbox_;  // results of this poll round, not sent yet
  service::MessageDispatcher dispatcher_;  // the scheduler's messages; counts messages
  /// Prometheus figures (<service>_metrics.cpp), rendered on the loop thread every second.
  void RenderMetrics(metrics::MetricsText& m);
  metrics::MetricsPublisher metrics_;
};

}  // namespace tunebus
