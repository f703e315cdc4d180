// resource-manager messages: workers register their capacity and heartbeat; the scheduler
// allocates and releases resources per trial attempt and subscribes to node events.
// Resource quantities are fixed-point units (Resources::kScale = 10000 per whole).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/envelope.hpp"

namespace tunebus::proto {

using ResourceUnits = std::map<std::string, int64_t>;

/// A trial attempt a worker runs, with what it was allocated (RegisterNode.running).
struct HeldAllocation {
  std::string trial_id;
  int64_t attempt = 0;
  ResourceUnits resources;
  std::vector<std::string> gpu_ids;
  TUNEBUS_DEFINE_MAP(trial_id, attempt, resources, gpu_ids)
};

/// worker -> resource-manager, on start and on every reconnect.
struct RegisterNode {
  TUNEBUS_ENVELOPE("register_node");
  std::string worker_id;
  std::string hostname;
  ResourceUnits capacity;             // cpu, gpu, memory (bytes), custom
  std::vector<std::string> gpu_ids;   // "0", "1", ... one per whole GPU of capacity
  /// The attempts the worker runs now. A resource-manager that does not hold them (it
  /// restarted) records them, so allocations are rebuilt from worker reports. Since v1.1.
  std::vector<HeldAllocation> running;
  TUNEBUS_DEFINE_MAP(v, type, id, worker_id, hostname, capacity, gpu_ids, running)
};

struct RegisterNodeAck {
  TUNEBUS_ENVELOPE("register_node_ack");
  int64_t heartbeat_interval_ms = 1000;
  TUNEBUS_DEFINE_MAP(v, type, id, heartbeat_interval_ms)
};

/// worker -> resource-manager every heartbeat interval. A node missing `liveness` intervals
/// is declared lost.
struct NodeHeartbeat {
  TUNEBUS_ENVELOPE("node_heartbeat");
  std::string worker_id;
  TUNEBUS_DEFINE_MAP(v, type, id, worker_id)
};

/// scheduler -> resource-manager: place one trial attempt on a worker that has room for all of
/// `request`. Answered by AllocateReply.
struct Allocate {
  TUNEBUS_ENVELOPE("allocate");
  std::string trial_id;
  int64_t attempt = 0;
  ResourceUnits request;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, request)
};

struct AllocateReply {
  TUNEBUS_ENVELOPE("allocate_reply");
  std::string trial_id;
  int64_t attempt = 0;
  bool granted = false;
  std::string worker_id;              // when granted
  std::vector<std::string> gpu_ids;   // when granted and gpu > 0
  bool infeasible = false;            // when !granted: no worker could ever hold it
  std::string reason;                 // when !granted: human-readable
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, granted, worker_id, gpu_ids, infeasible, reason)
};

/// scheduler -> resource-manager: return what (trial_id, attempt) holds. Idempotent.
struct Release {
  TUNEBUS_ENVELOPE("release");
  std::string trial_id;
  int64_t attempt = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt)
};

struct ReleaseReply {
  TUNEBUS_ENVELOPE("release_reply");
  bool released = false;  // false if nothing was held (already released)
  TUNEBUS_DEFINE_MAP(v, type, id, released)
};

/// scheduler/tunectl -> resource-manager: the cluster as it is now.
struct GetClusterView {
  TUNEBUS_ENVELOPE("get_cluster_view");
  TUNEBUS_DEFINE_MAP(v, type, id)
};

struct NodeView {
  std::string worker_id;
  std::string hostname;
  bool alive = true;
  ResourceUnits capacity;
  ResourceUnits committed;
  std::vector<std::string> trials;  // "trial_id/attempt" holding resources here
  TUNEBUS_DEFINE_MAP(worker_id, hostname, alive, capacity, committed, trials)
};

struct ClusterView {
  TUNEBUS_ENVELOPE("cluster_view");
  std::vector<NodeView> nodes;
  TUNEBUS_DEFINE_MAP(v, type, id, nodes)
};

/// resource-manager PUB: published on every node change. Topic frame = "node".
struct NodeEvent {
  TUNEBUS_ENVELOPE("node_event");
  std::string event;  // "node_added" | "node_lost" | "resources_freed"
  std::string worker_id;
  std::vector<std::string> trials;  // node_lost: "trial_id/attempt" that were running there
  TUNEBUS_DEFINE_MAP(v, type, id, event, worker_id, trials)
};

}  // namespace tunebus::proto
