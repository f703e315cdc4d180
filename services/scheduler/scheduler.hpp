// Scheduler: owns experiments and their trials, runs a TrialRunner per unfinished experiment,
// talks to workers, the resource-manager and the checkpoint-store, serves the control socket
// and publishes the event stream (DESIGN.md "Services").
//
// Sockets (all used only by the Run() thread):
//   control  ROUTER bind   tunectl requests (proto/control.hpp)
//   workers  ROUTER bind   trial-workers (proto/worker.hpp), routing id = worker_id
//   events   PUB    bind   SchedulerEvent stream (proto/events.hpp)
//   rm       DEALER connect resource-manager requests (proto/resources.hpp)
//   rm_sub   SUB    connect resource-manager node events
//   store    DEALER connect checkpoint-store journal appends and reads (proto/store.hpp)
// Many experiments run at once, each with its own journal, results folder, searcher and trial
// scheduler (an Experiment); worker messages go to the experiment their trial id names
// (<experiment_id>_<index>), control requests to the one they name (default: the only
// unfinished one). Names are unique among unfinished experiments. Finished experiments stay
// listed until the process ends, and read requests naming one that is only in the store's
// journals load it read-only. Journal
// reads (JournalReader) are requests on the store client whose answers the loop handles like any
// other: a slow store delays the request that reads, never a decision.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/domains.hpp"
#include "libs/bus/event_loop.hpp"
#include "libs/bus/identity_keys.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/rerun_mode.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/journal/replay.hpp"
#include "libs/journal/snapshot.hpp"
#include "libs/metrics/metrics_publisher.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/control.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/store/bus_journal_sink.hpp"
#include "services/scheduler/results/event_publisher.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/workers/placement_batcher.hpp"
#include "services/scheduler/results/result_files.hpp"
#include "services/scheduler/store/store_health.hpp"
#include "services/scheduler/workers/worker_outbox.hpp"
#include "services/scheduler/workers/worker_registry.hpp"

namespace tunebus {

struct SchedulerOptions {
  std::string control_endpoint = "tcp://127.0.0.1:5555";
  std::string worker_endpoint = "tcp://127.0.0.1:5559";
  std::string events_endpoint = "tcp://127.0.0.1:5560";
  std::string rm_endpoint = "tcp://127.0.0.1:5556";
  std::string rm_events_endpoint = "tcp://127.0.0.1:5558";
  std::string store_endpoint = "tcp://127.0.0.1:5557";
  /// experiment_state.json rewrite period, ms; stretched to 20 times the last rewrite's cost so
  /// that a large experiment's rewrites stay under 5% of the loop.
  int64_t state_file_interval_ms = 1000;
  /// On start, resume every unfinished experiment found in the store's journals.
  bool resume = true;
  /// How long a resumed scheduler waits for workers to report the trials the journal says
  /// are RUNNING before it requeues the others, ms.
  int64_t reattach_grace_ms = 3000;
  /// How long to keep trying to read the journals from the checkpoint-store at start, ms.
  int64_t resume_timeout_ms = 30000;
  /// Journal records between two snapshots of an experiment (replay = snapshot + tail); > 0.
  int64_t snapshot_every_records = journal::kSnapshotEveryRecords;
  metrics::MetricsOptions metrics;  // --metrics-port / --metrics-host (0 = off)
  /// CURVE keys and bind checks of its sockets (RunService loads it from --keys-dir).
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  /// The results folder of experiments whose file sets no absolute `results_dir` (a relative one
  /// names a folder beside the file on the submitting host): they write to
  /// <results_dir>/<experiment name> on the scheduler's host. Empty = as the file says (relative
  /// to its folder). Absolute; created and checked at start (/results in the container images).
  std::string results_dir;
  /// The dashboard (docs/dashboard.md, dashboard/server.hpp): "PORT" (on 127.0.0.1) or
  /// "HOST:PORT" (port 0: any free port, http_url() names it); "" = no dashboard.
  std::string http;
  /// With CURVE keys (security->curve()), the dashboard's own key <keys-dir>/<name>.key_secret:
  /// required then, and the scheduler's allow-list must give it the role viewer (the dashboard
  /// only reads). Unused without keys.
  std::string http_key_name;
  /// The dashboard's login-token secret (dashboard/tokens.hpp): this file, made if absent; ""
  /// = <keys-dir>/dashboard_token.secret with CURVE keys (in memory when it cannot be written),
  /// else in memory (tokens end with the process).
  std::string dashboard_secret_file;
};

class Experiment;
struct ExperimentContext;
namespace dashboard {
class DashboardServer;
class LoginTokens;
}  // namespace dashboard

class Scheduler {
 public:
  /// Binds the scheduler's sockets and resumes from the store's journals (options.resume).
  /// `clock` times everything the scheduler does (its loop's timers, heartbeat deadlines, trial
  /// times, the time budget) and outlives it: Clock::Real() in the service, a ManualClock in
  /// tests that advance time by hand (tests/unit/scheduler_test.cpp). Errors: a socket that does
  /// not bind, a results_dir that cannot be made, the store's journals unreadable.
  static Result<std::unique_ptr<Scheduler>> Create(zmq::context_t& ctx, SchedulerOptions options,
                                                   const Clock& clock = Clock::Real());
  ~Scheduler();

  /// Resumes from the journals (ResumeFromJournals), serving only the store and the
  /// resource-manager until that is done, then serves everything until Stop().
  void Run();
  void Stop() { loop_.Stop(); }
  /// "control=<ep> workers=<ep> events=<ep>" as bound.
  std::string endpoint() const;
  std::string control_endpoint() const { return control_bound_; }
  std::string worker_endpoint() const { return workers_bound_; }
  std::string events_endpoint() const { return events_bound_; }
  /// "http://HOST:PORT/" of the dashboard as bound; "" without --http.
  std::string http_url() const;

 private:
  Scheduler(zmq::context_t& ctx, SchedulerOptions options, const Clock& clock);
  Status Init();
  /// Starts the dashboard (options_.http) as a client of the bound control and events sockets.
  /// Errors: InvalidArgument for a bad --http; FailedPrecondition with keys but no viewer key;
  /// the key's and DashboardServer::Start's.
  Status StartDashboard();

  // sockets
  /// Starts serving tunectl, workers and the resource-manager's node events (after the resume
  /// at start: what they send meanwhile waits in their sockets).
  void ServeClients();
  void OnControlReadable();
  /// Handles every queued worker message, and the queued control requests after each
  /// kWorkerMessagesBetweenControl of them.
  void OnWorkerReadable();
  static constexpr size_t kWorkerMessagesBetweenControl = 32;
  void OnNodeEvent();
  void AfterRound();

  // worker handlers (scheduler_workers.cpp), in worker_dispatcher_'s table
  void AddWorkerHandlers();
  using Handler = Status (Scheduler::*)(bus::Incoming& in, const proto::Decoded& d);
  Status HandleRegisterWorker(bus::Incoming& in, const proto::Decoded& d);
  Status HandleReportResult(bus::Incoming& in, const proto::Decoded& d);   // one result
  Status HandleReportResults(bus::Incoming& in, const proto::Decoded& d);  // a batch
  Status HandleTrialExited(bus::Incoming& in, const proto::Decoded& d);
  Status HandleCheckpointSaved(bus::Incoming& in, const proto::Decoded& d);
  Status HandleCheckpointFailed(bus::Incoming& in, const proto::Decoded& d);
  Status HandleWorkerHeartbeat(bus::Incoming& in, const proto::Decoded& d);
  void HandleResult(const std::string& peer, proto::ResultItem result);
  /// Logs a trial failure once for users: trial, attempt, worker, error (exit code), what
  /// follows (requeued or ERROR with its error.txt) and the last lines of the trainable's stderr.
  void LogTrialFailure(const Experiment& e, const Trial& t, const std::string& worker,
                       const proto::TrialExited& exited) const;

  // control handlers (control_handlers.cpp), in control_dispatcher_'s table: each answers `in`
  // exactly once, itself or (a refusal) through the dispatcher
  void AddControlHandlers();
  Status HandleSubmit(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListTrials(bus::Incoming& in, const proto::Decoded& d);
  Status HandleShowTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleStopTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleStopExperiment(bus::Incoming& in, const proto::Decoded& d);
  Status HandleGetExperiment(bus::Incoming& in, const proto::Decoded& d);
  /// ListSchedulerDecisions (analysis_handlers.cpp).
  Status HandleListSchedulerDecisions(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListWorkers(bus::Incoming& in, const proto::Decoded& d);
  Status HandleResumeExperiment(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListExperiments(bus::Incoming& in, const proto::Decoded& d);
  Status HandlePauseTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleResumeTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleAddTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleSetTrialResources(bus::Incoming& in, const proto::Decoded& d);
  Status HandleSetExperimentWeight(bus::Incoming& in, const proto::Decoded& d);
  // `tunectl delete` (experiment_delete.cpp)
  Status HandleDeleteExperiment(bus::Incoming& in, const proto::Decoded& d);
  /// Deletes the finished experiment `e` (loaded from journal `journal`): the store's
  /// experiment_delete, then its results folder unless `keep_results`, then answers `route`.
  void DeleteFinished(const std::vector<std::string>& route, uint64_t id, const Experiment& e,
                      const std::string& journal, bool keep_results);
  /// Drops every trace of journal `journal` in this process: experiments_ (moved to retired_:
  /// callbacks may still name it), the routing table, read-only loads and lsx rows.
  void Forget(const std::string& journal);
  Status HandleFetchCheckpoint(bus::Incoming& in, const proto::Decoded& d);
  // The dashboard's login tokens and actions (control/dashboard_control_handlers.cpp,
  // proto/dashboard.hpp): LoadDashboardTokens reads or makes the secret (tokens_).
  Status LoadDashboardTokens();
  Status HandleIssueDashboardToken(bus::Incoming& in, const proto::Decoded& d);
  Status HandleVerifyDashboardToken(bus::Incoming& in, const proto::Decoded& d);
  Status HandleDashboardAction(bus::Incoming& in, const proto::Decoded& d);
  // The shipped working_dir's archive (working_dir_handlers.cpp): stored in the checkpoint-store
  // as proto::WorkingDirBlobId(digest), which checks its digest before committing it.
  Status HandleWorkingDirStat(bus::Incoming& in, const proto::Decoded& d);
  Status HandleWorkingDirPut(bus::Incoming& in, const proto::Decoded& d);
  /// Asks the store for the archive `digest`: `done` gets its size, nullopt when the store does
  /// not hold it, or the store's error (prefixed "checkpoint-store: ").
  void StatWorkingDir(const std::string& digest,
                      std::function<void(Result<std::optional<int64_t>>)> done);
  /// Submits a parsed, checked experiment: with restore_from, after the store named the
  /// checkpoint's iteration; then StartExperiment.
  void SubmitParsed(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
                    ExperimentSpec spec);
  /// The address of a reply that callbacks can copy (bus::Incoming holds the request's payload
  /// and is not copyable).
  static bus::Incoming ReplyTo(const std::vector<std::string>& route);
  /// Answers a request that changed state: sent once every journal record appended so far is
  /// durable (the change it reports is then safe).
  /// `e`: the experiment the request changed (null: none, sent at once).
  void ReplyJson(Experiment* e, const bus::Incoming& in, uint64_t id, const nlohmann::json& body);
  /// Answers a read at once, whatever the journal's state: what it shows may include changes
  /// not yet durable, marked as proto/PROTOCOL.md §2 says ("durable": false on a trial, the
  /// experiment's "journal_health").
  void ReplyRead(const bus::Incoming& in, uint64_t id, const nlohmann::json& body);
  /// Answers the read `d` (from `in`) with what `answer` makes of the experiment FindExperiment
  /// finds for `experiment` (ReplyRead, or ReplyError with its error); maybe after the store
  /// answered, so `answer` captures copies only.
  void AnswerRead(const bus::Incoming& in, const proto::Decoded& d, const std::string& experiment,
                  std::function<Result<nlohmann::json>(Result<Experiment*>)> answer);
  /// Ok, or Unavailable naming the cause while `e`'s journal writes fail (e may be null) or the
  /// checkpoint-store refuses writes: mutating control requests are refused then.
  Status JournalWritable(const Experiment* e);
  /// `e`'s journal: {"state": "ok"|"failing", "since_unix_s", "error", "failed_tries",
  ///  "not_durable_records"} ("since_unix_s", "error", "failed_tries" only while failing).
  /// REQUIRES: !e.read_only().
  static nlohmann::json JournalHealthJson(const Experiment& e);
  /// Adds "durable": false to a trial's view while one of its changes waits for the journal.
  static void MarkNotDurable(const Experiment& e, const Trial& t, nlohmann::json& view);
  /// Refuses control request `id` of `type` (logged, answered with an ErrorReply).
  void ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                  const Status& status);

  // experiments (scheduler_experiments.cpp)
  /// Starts a new experiment from a parsed spec: checks its results folder, creates it, journals
  /// experiment_submitted and answers `in` (the experiment, or the error).
  void StartExperiment(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
                       ExperimentSpec spec, std::optional<CheckpointRef> restore_from);
  /// Resumes `journal_name` (an unfinished experiment at start, or one tunectl resumes): it is
  /// in experiments_ at once (Phase::kResuming) and, once its result files are complete, runs
  /// unless it had ended; then `done` with it. Errors (to `done`): FailedPrecondition when its
  /// experiment id or its name is taken by an unfinished experiment here; Experiment::Create's
  /// and Experiment::Resume's. `store_last_seq`: the journal's length in the store (appends
  /// continue after it).
  void ResumeExperiment(const std::string& journal_name, journal::ReplayedExperiment replayed,
                        uint64_t store_last_seq, std::function<void(Result<Experiment*>)> done);
  /// At start: resumes every unfinished experiment in the store's journals, one after another
  /// (oldest first); one that fails is logged and the others still resume; then `done`.
  /// Asynchronous on the loop's store client, waiting options_.resume_timeout_ms for each answer;
  /// Run() drives the loop until `done` before it serves tunectl and workers (no socket of its own,
  /// no blocking wait).
  void ResumeFromJournals(std::function<void(Status)> done);
  /// `tunectl resume` of an experiment found in memory (or just resumed from its journal):
  /// reopens an interrupted one, reruns its errored trials as `mode` says, and answers `in`.
  void ContinueResume(const bus::Incoming& in, uint64_t id, Experiment* e, RerunMode mode);
  /// Calls `then` with the experiment a read request names (proto::ListTrials::experiment): ""
  /// = DefaultExperiment's, else (none in this process) the newest journaled; a name or journal
  /// name = the newest such experiment in this process, else in the store's journals. One found
  /// only in the journals is loaded read-only (LoadJournaled) after the store answered; if the
  /// name is in this process by then (submitted or resumed meanwhile), that one. `then` runs at
  /// once for an experiment in memory, else from the loop. The pointer is valid during `then`.
  /// Errors: NotFound "no experiment has been submitted" (""), or naming the known
  /// experiments; DefaultExperiment's; the JournalReader's errors.
  void FindExperiment(const std::string& name, std::function<void(Result<Experiment*>)> then);
  /// The experiment named `name` in this process (the newest such), or null.
  Experiment* InMemory(const std::string& name);
  /// Calls `then` with `journal` replayed into a read-only Experiment, cached in journaled_
  /// while the journal has the same length (then at once). Appends nothing, cuts no torn tail,
  /// touches no result file or checkpoint.
  void LoadJournaled(const JournalSummary& journal, std::function<void(Result<Experiment*>)> then);
  /// The lsx row of a journal not in memory: {name, journal, status, counts, total,
  /// submitted_at}, from a replay; cached in lsx_rows_ by (journal, last_seq).
  void JournalRow(const JournalLength& journal, std::function<void(Result<nlohmann::json>)> then);
  /// Answers list_experiments (request `id` of `type` from `route`): a row per experiment in
  /// memory and per other journal of `lengths`, oldest submission first.
  void ListExperiments(const std::vector<std::string>& route, uint64_t id, const std::string& type,
                       std::vector<JournalLength> lengths);
  /// <results folder>/<name> of an experiment: options_.results_dir replaces a results_dir that
  /// names a folder beside the experiment file (on the submitting host).
  /// <results directory>/<results_folder, or the experiment's name when "">.
  std::string ExperimentDir(const ExperimentSpec& spec, const std::string& results_folder) const;
  /// The experiment a request that names none means: the only unfinished one, else (none
  /// unfinished) the newest in this process, else null. Errors: FailedPrecondition when several
  /// are unfinished (the message lists them and says to name one with -e/--experiment).
  Result<Experiment*> DefaultExperiment();
  /// The live experiment a request that changes one names: the one holding `trial_id` when given
  /// (a trial id names its experiment), else the one named `experiment` (name or journal name),
  /// else DefaultExperiment's. Errors: NotFound (no such trial, no such experiment here, or
  /// "no experiment has been submitted"), NotFound when the named experiment does not hold the
  /// trial, DefaultExperiment's, FailedPrecondition while it is being resumed, JournalWritable's.
  Result<Experiment*> Target(const std::string& experiment, const std::string& trial_id = "");
  /// The experiment of `trial_id` (by its experiment id prefix) in this process, or null.
  Experiment* ForTrial(const std::string& trial_id);
  /// Unfinished experiments (Phase kRunning or kResuming), oldest first.
  std::vector<Experiment*> Unfinished() const;
  /// Sets each running experiment's trial quota for this round: their weighted DRF shares of
  /// cluster_capacity_ (fair_share.hpp) while two or more want trials, else no cap.
  void ApplyFairShare();
  /// At the end of a round (placements made): adds the time since the previous round's end to
  /// each running experiment's attained service at the trials it held in between (the fair
  /// share's tie-break, fair_share.hpp).
  void AccrueAttainedService();
  /// Asks the resource-manager for the cluster's capacity (alive workers' sum) into
  /// cluster_capacity_: at start, on node_added / node_lost, and every kCapacityRefresh.
  void RefreshCapacity();
  /// RefreshCapacity now and every kCapacityRefresh while the loop runs.
  void RefreshCapacityEvery();
  static constexpr bus::Duration kCapacityRefresh{10000};
  /// {"weight", "share" (dominant share of what it holds), "usage" (amounts held)} of `e`.
  nlohmann::json ShareJson(const Experiment& e) const;
  /// Takes a new live experiment into experiments_ and the trial routing table.
  Experiment* Adopt(std::unique_ptr<Experiment> e);
  /// FailedPrecondition when `name` is being submitted or resumed, or an unfinished experiment
  /// here has it (names are unique among unfinished experiments).
  Status NameFree(const std::string& name) const;

  zmq::context_t& ctx_;
  SchedulerOptions options_;
  const Clock& clock_;
  /// Names of experiments whose submission or `tunectl resume` waits for the checkpoint-store
  /// (they are not in experiments_ yet): another submission or resume of the name is refused.
  std::set<std::string> claimed_names_;
  bus::EventLoop loop_;
  zmq::socket_t control_;
  zmq::socket_t workers_;
  bus::IdentityKeys worker_keys_;         // a worker's routing id is its CURVE key's
  std::unique_ptr<WorkerOutbox> outbox_;  // decisions, starts and stops to workers (not replies)
  zmq::socket_t events_;                  // XPUB
  std::unique_ptr<EventPublisher> publisher_;
  zmq::socket_t rm_sub_;
  std::unique_ptr<bus::RequestClient> rm_;
  std::unique_ptr<bus::RequestClient> store_;
  std::unique_ptr<StoreHealth> store_health_;       // asks the store store_status every second
  std::unique_ptr<ResultFileWriter> result_files_;  // the experiments' result file writer
  std::unique_ptr<JournalAppendBatcher> journal_appends_;  // the experiments' journal appends
  std::unique_ptr<PlacementBatcher> placements_;  // the experiments' resource-manager requests
  std::unique_ptr<ExperimentContext> experiment_context_;  // what experiments use of this
  std::string control_bound_, workers_bound_, events_bound_;
  WorkerRegistry worker_registry_;
  /// Live experiments (unfinished and finished), in submission or resume order.
  std::vector<std::unique_ptr<Experiment>> experiments_;
  /// Deleted experiments, kept allocated until the process ends: a late callback (a timer, a
  /// store answer) may still name one. Nothing reads them.
  std::vector<std::unique_ptr<Experiment>> retired_;
  /// experiments_ by experiment id (the prefix of their trial ids): worker messages' routing.
  std::map<std::string, Experiment*, std::less<>> by_experiment_id_;
  /// Read-only experiments loaded from their journals, by journal name (at most
  /// kJournaledCacheSize; any other is dropped to make room).
  std::map<std::string, std::unique_ptr<Experiment>> journaled_;
  /// Journal reads over store_ (resume, lsx, read-only loads).
  std::unique_ptr<JournalReader> journals_;
  /// lsx rows of journals not in memory by journal name, with the length they were read at.
  std::map<std::string, std::pair<uint64_t, nlohmann::json>> lsx_rows_;
  std::unique_ptr<service::MessageDispatcher> control_dispatcher_;
  std::unique_ptr<service::MessageDispatcher> worker_dispatcher_;
  uint64_t node_events_ = 0;    // node events received from the resource-manager
  Resources cluster_capacity_;  // alive workers' capacity, as the resource-manager last said
  SteadyTime last_accrual_{};   // the previous AccrueAttainedService
  /// ApplyFairShare's last filling (WeightedDrfQuotas) and what it was made from; refilled when
  /// one of these changed, when QuotasStillHold says the quotas would, or kQuotaRefresh after
  /// it (ties rotate by attained service, which changes every round).
  struct FairShareFill {
    std::vector<Experiment*> running;
    std::vector<double> weights;
    std::vector<int64_t> wanted;
    Resources capacity;
    SteadyTime filled;
    std::vector<int64_t> quotas;
  };
  std::optional<FairShareFill> fair_share_;
  static constexpr bus::Duration kQuotaRefresh{100};
  SteadyTime next_state_file_;
  /// The state files' pass in progress: when it started, what its rounds cost the loop, and
  /// the experiments whose file it has not written yet (the first one's text in progress).
  struct StateFilePass {
    SteadyTime started;
    SteadyTime::duration cost{};
    std::vector<Experiment*> waiting;
  };
  std::optional<StateFilePass> state_file_pass_;
  static constexpr size_t kStateFileTrialsPerRound = 256;
  /// Prometheus figures (<service>_metrics.cpp), rendered on the loop thread every second.
  void RenderMetrics(metrics::MetricsText& m);
  metrics::MetricsPublisher metrics_;
  uint64_t results_received_ = 0;      // results in report_result(s) messages
  uint64_t metrics_last_results_ = 0;  // results_received_ at the last render
  SteadyTime metrics_last_at_{};       // when that was
  /// The dashboard's HTTP and relay threads (null without --http). Last: destroyed first, while
  /// the sockets it asks are still open.
  std::unique_ptr<dashboard::DashboardServer> dashboard_;
  std::unique_ptr<dashboard::LoginTokens> tokens_;  // the dashboard's login-token secret
};

}  // namespace tunebus
