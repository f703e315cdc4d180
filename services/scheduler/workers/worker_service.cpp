#include "services/scheduler/workers/worker_service.hpp"

#include <spdlog/spdlog.h>

#include <utility>

#include "libs/bus/socket.hpp"
#include "proto/resources.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/core/fair_share_arbiter.hpp"

namespace tunebus {

WorkerService::WorkerService(zmq::socket_t workers, zmq::socket_t node_events,
                             std::shared_ptr<const bus::Security> security, bus::EventLoop& loop,
                             const Clock& clock, ExperimentRegistry& experiments,
                             FairShareArbiter& arbiter)
    : socket_(std::move(workers)),
      node_events_socket_(std::move(node_events)),
      loop_(loop),
      clock_(clock),
      experiments_(experiments),
      arbiter_(arbiter),
      outbox_(socket_),
      dispatcher_(service::MessageDispatcher::Options{.reply_socket = &socket_,
                                                      .security = std::move(security),
                                                      .roles = {bus::Role::kWorker}}) {
  node_events_socket_.set(zmq::sockopt::subscribe, "node");
  AddHandlers();
}

WorkerService::~WorkerService() = default;

void WorkerService::Start(std::function<void()> between_batches) {
  between_batches_ = std::move(between_batches);
  loop_.AddSocket(socket_, [this] { OnReadable(); });
  loop_.AddSocket(node_events_socket_, [this] { OnNodeEvent(); });
}

// A worker of an earlier scheduler process may send results, trial_exited, checkpoint_saved,
// checkpoint_failed or heartbeats before it registers with this one: it is answered not_found (so
// it registers again and reports its trials) and the message is handled anyway. A worker sends
// trial_exited, checkpoint_saved and checkpoint_failed once (results are resent only while
// unacknowledged), so dropping them would lose a trial that ended while no scheduler ran;
// handling them is safe because every handler checks the trial's current attempt (and a
// result's seq) against the journal-restored runner.
void WorkerService::AddHandlers() {
  auto seen = [this](Handler handler) {
    return [this, handler](bus::Incoming& in, const proto::Decoded& d) {
      if (Status s = keys_.Claim(in.peer(), in.key); !s.ok()) return s;
      registry_.Seen(in.peer(), clock_.Now());
      return (this->*handler)(in, d);
    };
  };
  auto registered_only = [this, seen](Handler handler) {
    return [this, handler = seen(handler)](bus::Incoming& in, const proto::Decoded& d) {
      if (!registry_.IsRegistered(in.peer())) {
        dispatcher_.Reply(
            in, proto::MakeError(Status::NotFound("worker " + in.peer() + " is not registered"),
                                 d.id(), d.type()));
      }
      return handler(in, d);
    };
  };
  dispatcher_.On(proto::RegisterWorker::kType, seen(&WorkerService::HandleRegisterWorker))
      .On(proto::ReportResults::kType, registered_only(&WorkerService::HandleReportResults))
      .On(proto::ReportResult::kType, registered_only(&WorkerService::HandleReportResult))
      .On(proto::TrialExited::kType, registered_only(&WorkerService::HandleTrialExited))
      .On(proto::CheckpointSaved::kType, registered_only(&WorkerService::HandleCheckpointSaved))
      .On(proto::CheckpointFailed::kType, registered_only(&WorkerService::HandleCheckpointFailed))
      .On(proto::WorkerHeartbeat::kType, registered_only(&WorkerService::HandleWorkerHeartbeat));
}

void WorkerService::OnReadable() {
  bus::Incoming in;
  for (size_t n = 1; bus::Receive(socket_, in); ++n) {
    dispatcher_.Dispatch(in);
    // At saturation the workers' messages arrive as fast as they are handled: control requests
    // (tunectl lsx, status) are served between batches instead of after the whole drain.
    if (n % kWorkerMessagesBetweenControl == 0 && between_batches_) between_batches_();
  }
}

void WorkerService::OnNodeEvent() {
  bus::Incoming in;
  while (bus::Receive(node_events_socket_, in)) {
    auto d = proto::Decode(in.payload.data(), in.payload.size());
    if (!d.ok()) {
      spdlog::warn("Dropping node event because it is malformed: {}", d.status().ToString());
      continue;
    }
    auto ev = d->As<proto::NodeEvent>();
    if (!ev.ok()) continue;
    auto kind = proto::ParseNodeEventKind(ev->event);
    if (!kind.ok()) {
      spdlog::warn("Dropping node event because it is unknown: {}", kind.status().message());
      continue;
    }
    ++node_events_;
    if (*kind == proto::NodeEventKind::kNodeLost) {
      spdlog::warn("Worker {} was lost; requeueing its trials", ev->worker_id);
      registry_.Lost(ev->worker_id);
    }
    // resources_freed answers a release: with one experiment its executor's placement budget
    // already counts it; with more (an ended one may still release), another experiment's may
    // have been waiting for the room. A worker added or lost changes what fits, and the
    // capacity fair shares divide.
    if (*kind != proto::NodeEventKind::kResourcesFreed) arbiter_.RefreshCapacity();
    const bool others_may_wait = experiments_.experiments().size() > 1;
    for (Experiment* e : experiments_.Unfinished()) {
      if (*kind != proto::NodeEventKind::kResourcesFreed || others_may_wait)
        e->executor().Unblock();
      // A worker (re-)registered: after a resource-manager restart it reported what it runs,
      // stale attempts included; give back what no RUNNING trial owns.
      if (*kind == proto::NodeEventKind::kNodeAdded) e->ReconcileAllocations();
      if (*kind == proto::NodeEventKind::kNodeLost) e->runner().OnWorkerLost(ev->worker_id);
    }
  }
}

}  // namespace tunebus
