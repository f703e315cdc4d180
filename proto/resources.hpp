// resource-manager messages: workers register their capacity and heartbeat; the scheduler
// allocates and releases resources per trial attempt and subscribes to node events.
// Resource quantities are fixed-point units (Resources::kScale = 10000 per whole).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"
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
  ResourceUnits capacity;            // cpu, gpu, memory (bytes), custom
  std::vector<std::string> gpu_ids;  // "0", "1", ... one per whole GPU of capacity
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
  std::string worker_id;             // when granted
  std::vector<std::string> gpu_ids;  // when granted and gpu > 0
  bool infeasible = false;           // when !granted: no worker could ever hold it
  std::string reason;                // when !granted: human-readable
  TUNEBUS_DEFINE_MAP(v, type, id, trial_id, attempt, granted, worker_id, gpu_ids, infeasible,
                     reason)
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

/// One trial attempt to place (AllocateBatch.items).
struct AllocateItem {
  std::string trial_id;
  int64_t attempt = 0;
  ResourceUnits request;
  /// A hand-over (since v1.2): the scheduler gave the allocation of (replaces_trial_id,
  /// replaces_attempt) on `worker_id`, with `gpu_ids`, to this attempt when the former left
  /// RUNNING (both records durable). The resource-manager releases the former and records this
  /// attempt there; not granted if that does not fit. Empty = an ordinary placement.
  std::string replaces_trial_id;
  int64_t replaces_attempt = 0;
  std::string worker_id;
  std::vector<std::string> gpu_ids;
  TUNEBUS_DEFINE_MAP(trial_id, attempt, request, replaces_trial_id, replaces_attempt, worker_id,
                     gpu_ids)
};

/// What the resource-manager decided for one AllocateItem (the fields of AllocateReply).
struct Allocation {
  std::string trial_id;
  int64_t attempt = 0;
  bool granted = false;
  std::string worker_id;             // when granted
  std::vector<std::string> gpu_ids;  // when granted and gpu > 0
  bool infeasible = false;           // when !granted: no worker could ever hold it
  std::string reason;                // when !granted: human-readable
  TUNEBUS_DEFINE_MAP(trial_id, attempt, granted, worker_id, gpu_ids, infeasible, reason)
};

/// Most items in one AllocateBatch or ReleaseBatch; more is invalid_argument.
inline constexpr size_t kMaxPlacementBatchItems = 10000;

/// scheduler -> resource-manager: place several trial attempts, each exactly as one Allocate
/// would be, in order. The scheduler sends the placements (and releases) of one poll round as
/// one message (one wake-up per round, not per trial). Answered by
/// AllocateBatchReply. A malformed item fails the whole request (nothing is allocated).
/// Since v1.2.
struct AllocateBatch {
  TUNEBUS_ENVELOPE("allocate_batch");
  std::vector<AllocateItem> items;  // 1..kMaxPlacementBatchItems
  TUNEBUS_DEFINE_MAP(v, type, id, items)
};

struct AllocateBatchReply {
  TUNEBUS_ENVELOPE("allocate_batch_reply");
  std::vector<Allocation> items;  // one per request item, same order
  TUNEBUS_DEFINE_MAP(v, type, id, items)
};

/// One trial attempt whose resources return (ReleaseBatch.items).
struct ReleaseItem {
  std::string trial_id;
  int64_t attempt = 0;
  TUNEBUS_DEFINE_MAP(trial_id, attempt)
};

/// scheduler -> resource-manager: several Release in one message, in order; idempotent per
/// item. Publishes one resources_freed per worker that got something back. Since v1.2.
struct ReleaseBatch {
  TUNEBUS_ENVELOPE("release_batch");
  std::vector<ReleaseItem> items;  // 1..kMaxPlacementBatchItems
  TUNEBUS_DEFINE_MAP(v, type, id, items)
};

struct ReleaseBatchReply {
  TUNEBUS_ENVELOPE("release_batch_reply");
  std::vector<bool> released;  // per item: false if nothing was held (already released)
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

/// What a NodeEvent reports.
enum class NodeEventKind {
  kNodeAdded,       // "node_added": a worker registered (or re-registered)
  kNodeLost,        // "node_lost": a worker missed its heartbeats or left; `trials` ran there
  kResourcesFreed,  // "resources_freed": allocations on the worker were released (`trials`)
};

inline constexpr EnumName<NodeEventKind> kNodeEventKindNames[] = {
    {NodeEventKind::kNodeAdded, "node_added"},
    {NodeEventKind::kNodeLost, "node_lost"},
    {NodeEventKind::kResourcesFreed, "resources_freed"},
};

/// "node_added" | "node_lost" | "resources_freed".
inline const char* NodeEventKindName(NodeEventKind kind) {
  return NameIn(kNodeEventKindNames, kind);
}
/// Errors: InvalidArgument naming an unknown event word.
inline Result<NodeEventKind> ParseNodeEventKind(std::string_view word) {
  return ParseIn(kNodeEventKindNames, word, "node event");
}

/// resource-manager PUB: published on every node change. Topic frame = "node".
struct NodeEvent {
  TUNEBUS_ENVELOPE("node_event");
  std::string event;  // NodeEventKindName
  std::string worker_id;
  std::vector<std::string> trials;  // node_lost: "trial_id/attempt" that were running there
  TUNEBUS_DEFINE_MAP(v, type, id, event, worker_id, trials)
};

}  // namespace tunebus::proto
