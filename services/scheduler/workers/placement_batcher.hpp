// PlacementBatcher: every experiment's resource-manager requests of one poll round, sent as few
// AllocateBatch and ReleaseBatch requests (proto/resources.hpp) as their order allows. Each
// experiment's BusExecutor queues its runs of releases and allocations during the round (its
// owner key: the executor); Send, from the loop's idle hook after every experiment flushed,
// sends them.
//
// Order: the resource-manager handles requests, and the items of a request, in order. One
// owner's runs keep their order (a hand-over allocation and a later release of the trial that
// took it over must not swap). Different owners' runs name different trials, so they are merged:
// Send alternates steps of the two kinds, releases first; a step takes every owner whose next run
// is of its kind (in the order the owners first queued this round) and sends their runs as one
// ReleaseBatch or AllocateBatch (freed resources are seen by the allocations after them). An
// owner's consecutive runs of one kind are one run, so a round of N experiments costs at most
// twice its longest run count in requests, whatever N. A request carries at most
// proto::kMaxPlacementBatchItems items: a step larger than that is split between runs (a run is
// never larger).
//
// One request per step, not one per experiment and kind: with 50 experiments the resource-manager
// got 5,158 allocate_batch for 10,000 trials where one experiment's sent 622
// (docs/explanation/performance/many-experiments.md).
//
// Each run's callback runs exactly once, on the loop thread: with its own items' answers (an
// Allocation each, in order; for releases, Ok) or with the error of the request that carried it
// (no answer within the RequestClient's timeout, an ErrorReply, a reply of the wrong type or
// item count). The client must outlive the batcher.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "libs/bus/request_client.hpp"
#include "libs/core/status.hpp"
#include "proto/resources.hpp"

namespace tunebus {

class PlacementBatcher {
 public:
  using AllocateDone = std::function<void(Result<std::vector<proto::Allocation>> allocations)>;
  using ReleaseDone = std::function<void(const Status& status)>;

  explicit PlacementBatcher(bus::RequestClient& rm) : rm_(rm) {}

  /// Queues `items` (1..kMaxPlacementBatchItems) for `owner` after its runs queued so far.
  void Allocate(const void* owner, std::vector<proto::AllocateItem> items, AllocateDone done);
  void Release(const void* owner, std::vector<proto::ReleaseItem> items, ReleaseDone done);
  /// Sends everything queued (see the order above). Nothing when nothing is queued.
  void Send();
  /// Requests Send has sent so far.
  uint64_t requests_sent() const { return requests_sent_; }

 private:
  /// A run's items' callback: `count` items of the run, from its first on.
  struct Caller {
    size_t count = 0;
    AllocateDone allocated;  // allocate runs
    ReleaseDone released;    // release runs
  };
  struct Run {
    bool release = false;
    std::vector<proto::AllocateItem> allocate;
    std::vector<proto::ReleaseItem> release_items;
    std::vector<Caller> callers;  // consecutive runs of one kind merged
    size_t size() const { return release ? release_items.size() : allocate.size(); }
  };
  /// The owner's run of that kind to append `n` items to: its last one, or a new one when that
  /// is of the other kind or would pass kMaxPlacementBatchItems.
  Run& RunFor(const void* owner, bool release, size_t n);
  /// Sends `runs` as one request.
  void SendReleases(std::span<Run* const> runs);
  void SendAllocations(std::span<Run* const> runs);

  bus::RequestClient& rm_;
  std::vector<std::vector<Run>> queued_;                 // per owner, in first-queue order
  std::unordered_map<const void*, size_t> owner_index_;  // owner -> its queued_ index
  uint64_t requests_sent_ = 0;
};

}  // namespace tunebus
