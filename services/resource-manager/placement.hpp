// ClusterState: the resource-manager's pure bookkeeping of workers, their capacity and the
// allocations of trial attempts (DESIGN.md "Services", "Trial lifecycle"). No ZeroMQ, no clock:
// every time is given by the caller, so tests step it deterministically.
//
// Units: resource quantities are fixed-point Resources (Resources::kScale = 10000 units per
// whole; `memory` in bytes, also fixed-point). Times are milliseconds on any monotonic clock
// the caller chooses (the service uses steady_clock since its epoch).
//
// Placement (Ray Tune's "one trial on one node"): a trial attempt goes on ONE alive worker that
// has room for all of its request. Among the candidates the one with the most free cpu wins
// (spread), ties by the smaller worker_id.
// GPUs: a worker's GPUs are ids ("0", "1", ...) each with a fixed-point usage 0..kScale. A
// request of g >= 1 GPUs must be whole and takes g fully free ids (lowest first); a fraction
// g < 1 takes ONE id whose free share is >= g, preferring the most-used id that still fits
// (packs fractions: 0.33 x 3 share one GPU, 0.5 x 2 share one). Usage never exceeds kScale.
//
// Invariants (checked by CheckInvariants(), asserted after every mutation in debug builds):
// committed <= capacity on every node; committed == the sum of its allocations; each GPU's
// usage == the sum of the shares allocated on it, <= kScale; lost nodes hold no allocations.
//
// Thread-compatibility: not thread-safe; owned by the service's loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/resources.hpp"
#include "libs/core/status.hpp"
#include "proto/resources.hpp"

namespace tunebus {

/// Milliseconds since an epoch the caller chooses (monotonic).
using Millis = std::chrono::milliseconds;

/// The outcome of ClusterState::Allocate.
struct AllocationDecision {
  enum class Kind {
    kGranted,       // resources committed on `worker_id`
    kInsufficient,  // no alive worker has room now; retry after resources_freed / node_added
    kInfeasible,    // alive workers exist but none could ever hold the request
  };
  Kind kind = Kind::kInsufficient;
  std::string worker_id;             // kGranted
  std::vector<std::string> gpu_ids;  // kGranted with gpu > 0
  std::string reason;                // not granted: human-readable, names the trial and ask
  bool retried = false;              // kGranted: the attempt already held these (a retry)

  bool granted() const { return kind == Kind::kGranted; }
};

/// What RegisterNode did.
struct RegisterOutcome {
  /// True if the worker is new, came back from lost, or restarted with another capacity or
  /// GPU ids: its capacity is (re)set and schedulers may retry (publish node_added).
  bool added = false;
  /// "trial_id/attempt" of allocations dropped because an alive worker re-registered with a
  /// different capacity or GPU ids (it restarted: those attempts are gone).
  std::vector<std::string> dropped_trials;
};

/// A worker declared lost by ExpireNodes, with the attempts whose allocations were dropped.
struct LostNode {
  std::string worker_id;
  std::vector<std::string> trials;  // "trial_id/attempt"
};

class ClusterState {
 public:
  /// Registers a new worker or re-registers a known one at time `now`. `gpu_ids` names one id
  /// per whole GPU of capacity; if empty and capacity has gpu = n whole GPUs, ids "0".."n-1"
  /// are assumed. A lost worker comes back alive with the new capacity (its old allocations
  /// were dropped when it was lost). An alive worker re-registering with the same capacity and
  /// GPU ids keeps its allocations (a reconnect); with a different one its allocations are
  /// dropped and reported (a restart).
  /// Errors: InvalidArgument if worker_id is empty, gpu capacity is not whole, or the number
  /// of (distinct) gpu_ids does not match the gpu capacity.
  Result<RegisterOutcome> RegisterNode(const std::string& worker_id, const std::string& hostname,
                                       const Resources& capacity,
                                       const std::vector<std::string>& gpu_ids, Millis now);

  /// Records a heartbeat of `worker_id` at `now`.
  /// Errors: NotFound if the worker is unknown or lost (it must re-register).
  Status Heartbeat(const std::string& worker_id, Millis now);

  /// Places attempt `attempt` of `trial_id` asking for `request` (see the placement rules
  /// above). If the attempt already holds resources, returns the same grant (idempotent retry).
  AllocationDecision Allocate(const std::string& trial_id, int64_t attempt,
                              const Resources& request);

  /// Records an allocation a worker reports it is running (attempt `attempt` of `trial_id`
  /// holding `request`, on the GPUs named `gpu_ids`), as the worker re-registers after a
  /// resource-manager restart: allocations are rebuilt from worker reports, so nothing placed
  /// later can over-commit the worker. A held attempt is left as it is (Ok, idempotent).
  /// Errors: NotFound if the worker is unknown or lost; InvalidArgument if a gpu id is unknown;
  /// ResourceExhausted if it does not fit what is free there (the report is not recorded).
  Status Adopt(const std::string& worker_id, const std::string& trial_id, int64_t attempt,
               const Resources& request, const std::vector<std::string>& gpu_ids);

  /// Returns what the attempt holds. True if it held something; false if nothing (already
  /// released, never allocated, or dropped with a lost worker). Sets `*worker_id` (if not
  /// null) to the worker it was on.
  bool Release(const std::string& trial_id, int64_t attempt, std::string* worker_id = nullptr);

  /// Marks alive workers whose last heartbeat is older than `timeout` at `now` (now - last >
  /// timeout) as lost, drops their allocations and returns them, ordered by worker_id.
  std::vector<LostNode> ExpireNodes(Millis now, Millis timeout);

  /// Every known worker (lost ones with alive = false), ordered by worker_id.
  proto::ClusterView View() const;

  /// OK if every invariant in the file comment holds, else Internal naming the broken one.
  Status CheckInvariants() const;

  size_t alive_count() const;
  size_t allocation_count() const { return allocations_.size(); }

 private:
  struct Gpu {
    std::string id;
    int64_t used = 0;  // fixed-point share in use, 0..kScale
  };
  struct Node {
    std::string worker_id;
    std::string hostname;
    Resources capacity;
    Resources committed;
    std::vector<Gpu> gpus;
    bool alive = true;
    Millis last_heartbeat{0};
  };
  struct Allocation {
    std::string worker_id;
    Resources resources;
    std::vector<std::pair<size_t, int64_t>> gpu_shares;  // (index into Node::gpus, units)
  };
  using Key = std::pair<std::string, int64_t>;  // (trial_id, attempt)

  /// GPU indices (and the share on each) that `gpu_units` would take on `node` now, or false.
  static bool PickGpus(const Node& node, int64_t gpu_units,
                       std::vector<std::pair<size_t, int64_t>>* out);
  static AllocationDecision GrantOf(const Node& node, const Allocation& a);
  static std::string Label(const Key& key);
  /// Frees `a` on its node and erases nothing (the caller erases the allocation).
  void Free(const Allocation& a);
  /// Drops every allocation on `worker_id`; returns their labels in key order.
  std::vector<std::string> DropAllocationsOn(const std::string& worker_id);
  void AssertInvariants() const;

  std::map<std::string, Node> nodes_;  // by worker_id
  std::map<Key, Allocation> allocations_;
};

}  // namespace tunebus
