// Scheduler: the scheduler service as parts it wires (DESIGN.md "Services"; Seastar's services,
// Mesos's processes). It binds the sockets, builds the parts, starts them in order and stops them
// in reverse; the parts talk through the references each is handed at construction:
//   ExperimentRegistry  (core/experiment_registry.hpp) live experiments, finished ones read from
//                       the journals, routing by trial id and by name, name claims, lsx rows
//   FairShareArbiter    (core/fair_share_arbiter.hpp) quotas, preemption, readmission, shares
//   WorkerService       (workers/worker_service.hpp) the workers socket and node events
//   ControlService      (control/control_service.hpp) the control socket, tunectl's requests
// and the shared plumbing they use: the loop, the resource-manager and checkpoint-store clients,
// the journal reader and appends, placements, result files, the event publisher, the store's
// health, metrics and the dashboard.
//
// Sockets (all used only by the Run() thread):
//   control  ROUTER bind   tunectl requests (proto/control.hpp)
//   workers  ROUTER bind   trial-workers (proto/worker.hpp), routing id = worker_id
//   events   PUB    bind   SchedulerEvent stream (proto/events.hpp)
//   rm       DEALER connect resource-manager requests (proto/resources.hpp)
//   rm_sub   SUB    connect resource-manager node events
//   store    DEALER connect checkpoint-store journal appends and reads (proto/store.hpp)
// Many experiments run at once, each with its own journal, results folder, searcher and trial
// scheduler (an Experiment). Journal reads (JournalReader) are requests on the store client whose
// answers the loop handles like any other: a slow store delays the request that reads, never a
// decision.
//
// Start order (Run): the registry resumes from the journals (the loop serving only the store and
// the resource-manager until done), then the control service, the workers service (workers
// socket and node events), the arbiter's capacity refresh, the store's health checks and
// metrics. Each poll round ends with AfterRound: quotas, the runners' steps, attained service,
// the experiments' round ends, then one send each of the round's journal appends, placements
// and worker messages, and the state files. Stop (destruction, see the members): the dashboard
// first, then the control service, the registry, the arbiter and the workers service.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "libs/journal/snapshot.hpp"
#include "libs/metrics/metrics_publisher.hpp"
#include "services/scheduler/core/retention_policy.hpp"
#include "services/scheduler/results/result_files.hpp"
#include "services/scheduler/store/bus_journal_sink.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/store/store_health.hpp"
#include "services/scheduler/workers/placement_batcher.hpp"

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
  /// MB of finished experiments read back from their journals kept for the next reads
  /// (ExperimentRegistry's finished cache); 0 keeps none past the reply.
  int64_t finished_cache_mb = 64;
  /// How long an ended experiment stays in memory with nothing in flight before its state is
  /// released (reads then come from its journal), ms; longer than any request's timeout.
  int64_t release_after_ms = 15000;
  metrics::MetricsOptions metrics;  // --metrics-port / --metrics-host (0 = off)
  /// CURVE keys and bind checks of its sockets (RunService loads it from --keys-dir).
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  /// The results folder of experiments whose file sets no absolute `results_dir` (a relative one
  /// names a folder beside the file on the submitting host): they write to
  /// <results_dir>/<experiment name> on the scheduler's host. Empty = as the file says (relative
  /// to its folder). Absolute; created and checked at start (/results in the container images).
  std::string results_dir;
  /// The dashboard (docs/how-to/dashboard.md, dashboard/server.hpp): "PORT" (on 127.0.0.1) or
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
  /// Retention of finished experiments (--retain-experiments, --retain-days;
  /// control/retention_sweeper.hpp, docs/how-to/retention.md): off by default.
  RetentionRules retention;
};

class ControlService;
class EventPublisher;
class ExperimentRegistry;
class FairShareArbiter;
class WorkerService;
struct ExperimentContext;
namespace dashboard {
class DashboardServer;
}  // namespace dashboard

class Scheduler {
 public:
  /// Binds the scheduler's sockets and builds its parts. `clock` times everything the scheduler
  /// does (its loop's timers, heartbeat deadlines, trial times, the time budget) and outlives
  /// it: Clock::Real() in the service, a ManualClock in tests that advance time by hand
  /// (tests/unit/scheduler_test.cpp). Errors: a socket that does not bind, a results_dir that
  /// cannot be made, the dashboard's token secret or address.
  static Result<std::unique_ptr<Scheduler>> Create(zmq::context_t& ctx, SchedulerOptions options,
                                                   const Clock& clock = Clock::Real());
  ~Scheduler();

  /// Resumes from the journals (ExperimentRegistry::ResumeAll), serving only the store and the
  /// resource-manager until that is done, then starts the parts and serves until Stop().
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
  /// Binds the sockets and builds the parts in dependency order.
  Status Init();
  /// Starts the dashboard (options_.http) as a client of the bound control and events sockets.
  /// Errors: InvalidArgument for a bad --http; FailedPrecondition with keys but no viewer key;
  /// the key's and DashboardServer::Start's.
  Status StartDashboard();
  /// After every poll round: quotas, the runners' steps, attained service, the experiments'
  /// round ends, then the round's journal appends, placements and worker messages as one send
  /// each, and the state files' pass.
  void AfterRound();
  /// Prometheus figures, rendered on the loop thread every second (the parts' counts).
  void RenderMetrics(metrics::MetricsText& m);

  zmq::context_t& ctx_;
  SchedulerOptions options_;
  const Clock& clock_;
  bus::EventLoop loop_;
  zmq::socket_t events_;  // XPUB
  std::unique_ptr<EventPublisher> publisher_;
  std::unique_ptr<bus::RequestClient> rm_;
  std::unique_ptr<bus::RequestClient> store_;
  std::unique_ptr<JournalReader> journals_;    // journal reads over store_ (resume, lsx, loads)
  std::unique_ptr<StoreHealth> store_health_;  // asks the store store_status every second
  std::unique_ptr<ResultFileWriter> result_files_;         // the experiments' result file writer
  std::unique_ptr<JournalAppendBatcher> journal_appends_;  // the experiments' journal appends
  std::unique_ptr<PlacementBatcher> placements_;  // the experiments' resource-manager requests
  std::string control_bound_, workers_bound_, events_bound_;
  // The parts. Init builds them in the order registry, arbiter, workers, experiment context,
  // control (each is handed the ones before it); they are destroyed in declaration order
  // reversed: control, then the registry (its experiments, while the outbox and the context
  // they use still exist), the arbiter, the context and the workers.
  std::unique_ptr<WorkerService> workers_;
  std::unique_ptr<ExperimentContext> experiment_context_;  // what experiments use of this
  std::unique_ptr<FairShareArbiter> arbiter_;
  std::unique_ptr<ExperimentRegistry> registry_;
  std::unique_ptr<ControlService> control_;
  metrics::MetricsPublisher metrics_;
  uint64_t metrics_last_results_ = 0;  // results received at the last render
  SteadyTime metrics_last_at_{};       // when that was
  /// The dashboard's HTTP and relay threads (null without --http). Last: destroyed first, while
  /// the sockets it asks are still open.
  std::unique_ptr<dashboard::DashboardServer> dashboard_;
};

}  // namespace tunebus
