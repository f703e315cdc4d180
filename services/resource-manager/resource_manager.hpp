// ResourceManager: the resource-manager service (DESIGN.md "Services"). Owns the cluster's
// workers, their capacity and per-trial-attempt allocations (soft state in ClusterState, see
// placement.hpp) and detects lost workers by heartbeats.
//
// Sockets (both bound in Create()):
//   ROUTER `endpoint`         requests from workers (register_node, node_heartbeat) and from the
//                             scheduler / tunectl (allocate, release, allocate_batch,
//                             release_batch, get_cluster_view)
//   PUB    `events_endpoint`  two frames: topic "node", then an encoded proto::NodeEvent:
//                             node_added (a worker registered, came back, or restarted),
//                             node_lost (missed `liveness` heartbeat intervals, or restarted;
//                             `trials` lists the "trial_id/attempt" whose resources it dropped),
//                             resources_freed (a release returned resources; waiting
//                             schedulers retry)
//
// Replies: register_node -> RegisterNodeAck; node_heartbeat -> nothing, or ErrorReply not_found
// if the worker is unknown or lost (so it re-registers); allocate -> AllocateReply; release ->
// ReleaseReply; allocate_batch -> AllocateBatchReply; release_batch -> ReleaseBatchReply;
// get_cluster_view -> ClusterView. Garbage, an unknown type, a wrong version or
// malformed fields -> ErrorReply and a log line; the state is untouched.
//
// Threading: Create() on any thread; Run() on one thread that then owns every socket and all
// state; Stop() from any thread or a signal handler.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "libs/bus/domains.hpp"
#include "libs/bus/event_loop.hpp"
#include "libs/bus/identity_keys.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "libs/metrics/metrics_publisher.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "proto/resources.hpp"
#include "services/resource-manager/placement.hpp"

namespace tunebus {

struct ResourceManagerOptions {
  std::string endpoint = "tcp://127.0.0.1:5556";         // ROUTER bind
  std::string events_endpoint = "tcp://127.0.0.1:5558";  // PUB bind
  int64_t heartbeat_interval_ms = 1000;                  // told to workers in RegisterNodeAck; > 0
  int64_t liveness = 3;             // a worker silent for liveness x interval is lost; >= 1
  metrics::MetricsOptions metrics;  // --metrics-port / --metrics-host (0 = off)
  /// CURVE keys and bind checks of its sockets (RunService loads it from --keys-dir).
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  /// Times heartbeats and liveness; tests pass a ManualClock. Outlives the service.
  const Clock* clock = &Clock::Real();
};

class ResourceManager {
 public:
  using Options = ResourceManagerOptions;

  /// Binds both sockets. Errors: InvalidArgument for bad options, Unavailable if a bind fails.
  static Result<std::unique_ptr<ResourceManager>> Create(zmq::context_t& ctx, Options options);

  /// Serves until Stop(). REQUIRES: called once; after it returns the object may only be
  /// destroyed.
  void Run();
  /// Thread- and signal-safe.
  void Stop() { loop_.Stop(); }

  /// The bound ROUTER endpoint ("tcp://127.0.0.1:40123" for a ":0" bind).
  std::string endpoint() const { return endpoint_; }
  /// The bound PUB endpoint.
  std::string events_endpoint() const { return events_endpoint_; }

 private:
  ResourceManager(Options options, zmq::socket_t router, zmq::socket_t pub);

  void OnRouterReadable();
  Status HandleRegisterNode(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleHeartbeat(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleAllocate(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleRelease(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleAllocateBatch(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleReleaseBatch(bus::Incoming& in, const proto::Decoded& msg);
  /// Decides one placement (shared by allocate and allocate_batch) and logs it.
  proto::Allocation AllocateOne(const std::string& trial_id, int64_t attempt,
                                const Resources& request);
  /// A hand-over (AllocateItem.replaces_trial_id): releases the former holder and records the
  /// new attempt on the same worker, if it fits there.
  proto::Allocation HandOver(const proto::AllocateItem& item, const Resources& request);
  Status HandleGetClusterView(bus::Incoming& in, const proto::Decoded& msg);
  /// Expires the workers silent for more than liveness x interval (ClusterState::ExpireNodes).
  void OnExpiryTimer();
  /// How often OnExpiryTimer runs: a tenth of the heartbeat interval (at least 10 ms), so a
  /// worker is declared lost within liveness x interval + interval / 10 of its last heartbeat
  /// (3.1 s at the defaults; a check every interval made it up to 4 s). The scan is over every
  /// node: about 2,000 comparisons per check at 2,000 workers.
  static bus::Duration ExpiryCheckPeriod(int64_t heartbeat_interval_ms) {
    return bus::Duration{std::max<int64_t>(10, heartbeat_interval_ms / 10)};
  }

  void Publish(proto::NodeEventKind event, const std::string& worker_id,
               std::vector<std::string> trials);
  Millis Now() const;

  Options options_;
  bus::IdentityKeys worker_keys_;  // a worker id is the CURVE key's that registered it
  zmq::socket_t router_;
  zmq::socket_t pub_;
  std::string endpoint_;
  std::string events_endpoint_;
  bus::EventLoop loop_;
  ClusterState cluster_;
  SteadyTime epoch_;                       // Now() counts from here
  service::MessageDispatcher dispatcher_;  // one handler per request type; counts messages
  /// Prometheus figures (<service>_metrics.cpp), rendered on the loop thread every second.
  void RenderMetrics(metrics::MetricsText& m);
  metrics::MetricsPublisher metrics_;
};

}  // namespace tunebus
