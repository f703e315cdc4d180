// WorkerService: the scheduler's side of the trial-workers (proto/worker.hpp) and of the
// resource-manager's node events (proto/resources.hpp NodeEvent).
//
// Owns:
//   - the workers ROUTER (bound by the scheduler; a worker's routing id is its worker_id) and
//     its MessageDispatcher table: register_worker, report_result(s), trial_exited,
//     checkpoint_saved, checkpoint_failed, worker_heartbeat, one handler each;
//   - the identity keys (a worker's routing id is bound to the CURVE key it first came with);
//   - the WorkerRegistry (who is connected, who registered with this process);
//   - the WorkerOutbox: what experiments send to workers, flushed once a round (Flush);
//   - the SUB socket of the resource-manager's node events (node_added, node_lost,
//     resources_freed).
// A worker message goes to the experiment its trial id names (ExperimentRegistry::ForTrial);
// one of no experiment here is dropped with a log line (a result, a checkpoint) or its trial is
// reported stale (register_worker). A worker of an earlier scheduler process may send before it
// registers with this one: it is answered not_found (so it registers again and reports its
// trials) and the message is handled anyway (every handler checks the trial's attempt, and a
// result's seq, against the runner). Node events requeue a lost worker's trials, unblock the
// experiments' placements and refresh the fair share's capacity (FairShareArbiter).
//
// Threads: all on the scheduler's loop thread (its sockets are the loop's).
//
// Invariants: every message received is counted by type in the dispatcher (messages_total);
// every request that expects an answer (register_worker) gets exactly one; a routing id claimed
// by one key is refused to another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/identity_keys.hpp"
#include "libs/bus/security.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/trial.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/workers/worker_outbox.hpp"
#include "services/scheduler/workers/worker_registry.hpp"

namespace tunebus {

class Experiment;
class ExperimentRegistry;
class FairShareArbiter;

class WorkerService {
 public:
  /// Control requests are served after every this many worker messages of one drain.
  static constexpr size_t kWorkerMessagesBetweenControl = 32;

  /// Takes the bound workers ROUTER `workers` and the node events SUB `node_events` (subscribed
  /// here to "node"). `security` checks each message's key (the worker role). `loop`, `clock`,
  /// `experiments` and `arbiter` outlive the service.
  WorkerService(zmq::socket_t workers, zmq::socket_t node_events,
                std::shared_ptr<const bus::Security> security, bus::EventLoop& loop,
                const Clock& clock, ExperimentRegistry& experiments, FairShareArbiter& arbiter);
  ~WorkerService();
  WorkerService(const WorkerService&) = delete;
  WorkerService& operator=(const WorkerService&) = delete;

  /// Serves both sockets on the loop; `between_batches` runs after every
  /// kWorkerMessagesBetweenControl worker messages of one drain (the scheduler serves its control
  /// requests there, so they wait for no long drain).
  void Start(std::function<void()> between_batches);
  /// Handles every queued worker message.
  void OnReadable();
  /// Handles every queued node event.
  void OnNodeEvent();
  /// Sends what the round queued for workers (WorkerOutbox::Flush).
  void Flush() { outbox_.Flush(); }

  WorkerOutbox& outbox() { return outbox_; }
  const WorkerRegistry& workers() const { return registry_; }
  const service::MessageDispatcher& dispatcher() const { return dispatcher_; }
  /// Node events received; results received in report_results batches.
  uint64_t node_events() const { return node_events_; }
  uint64_t results_received() const { return results_received_; }

 private:
  using Handler = Status (WorkerService::*)(bus::Incoming& in, const proto::Decoded& d);
  void AddHandlers();
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

  zmq::socket_t socket_;
  zmq::socket_t node_events_socket_;
  bus::EventLoop& loop_;
  const Clock& clock_;
  ExperimentRegistry& experiments_;
  FairShareArbiter& arbiter_;
  bus::IdentityKeys keys_;  // a worker's routing id is its CURVE key's
  WorkerRegistry registry_;
  WorkerOutbox outbox_;  // decisions, starts and stops to workers (not replies)
  service::MessageDispatcher dispatcher_;
  std::function<void()> between_batches_;
  uint64_t node_events_ = 0;
  uint64_t results_received_ = 0;
};

}  // namespace tunebus
