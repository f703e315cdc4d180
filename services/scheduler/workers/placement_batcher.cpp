#include "services/scheduler/workers/placement_batcher.hpp"

#include <fmt/format.h>

#include <span>
#include <utility>

namespace tunebus {

PlacementBatcher::Run& PlacementBatcher::RunFor(const void* owner, bool release, size_t n) {
  auto [it, added] = owner_index_.try_emplace(owner, queued_.size());
  if (added) queued_.emplace_back();
  std::vector<Run>& runs = queued_[it->second];
  if (runs.empty() || runs.back().release != release ||
      runs.back().size() + n > proto::kMaxPlacementBatchItems) {
    runs.emplace_back().release = release;
  }
  return runs.back();
}

void PlacementBatcher::Allocate(const void* owner, std::vector<proto::AllocateItem> items,
                                AllocateDone done) {
  if (items.empty()) return done(std::vector<proto::Allocation>{});
  Run& run = RunFor(owner, false, items.size());
  run.callers.push_back(Caller{items.size(), std::move(done), nullptr});
  if (run.allocate.empty()) {
    run.allocate = std::move(items);
  } else {
    run.allocate.insert(run.allocate.end(), std::make_move_iterator(items.begin()),
                        std::make_move_iterator(items.end()));
  }
}

void PlacementBatcher::Release(const void* owner, std::vector<proto::ReleaseItem> items,
                               ReleaseDone done) {
  if (items.empty()) return done(Status::Ok());
  Run& run = RunFor(owner, true, items.size());
  run.callers.push_back(Caller{items.size(), nullptr, std::move(done)});
  run.release_items.insert(run.release_items.end(), std::make_move_iterator(items.begin()),
                           std::make_move_iterator(items.end()));
}

void PlacementBatcher::Send() {
  if (queued_.empty()) return;
  std::vector<std::vector<Run>> queued = std::exchange(queued_, {});
  owner_index_.clear();
  std::vector<size_t> next(queued.size(), 0);  // per owner: its first run not sent
  std::vector<Run*> step;
  // Steps alternate releases and allocations; each takes the owners whose next run is of its
  // kind. Two steps in a row that take nothing: everything is sent.
  for (bool release = true, idle_before = false;; release = !release) {
    step.clear();
    for (size_t o = 0; o < queued.size(); ++o) {
      if (next[o] < queued[o].size() && queued[o][next[o]].release == release)
        step.push_back(&queued[o][next[o]++]);
    }
    if (step.empty() && idle_before) return;
    idle_before = step.empty();
    // One request per step, split between runs past kMaxPlacementBatchItems items.
    for (size_t first = 0; first < step.size();) {
      size_t last = first, items = 0;
      while (last < step.size() &&
             (last == first || items + step[last]->size() <= proto::kMaxPlacementBatchItems)) {
        items += step[last++]->size();
      }
      const std::span<Run* const> request(step.data() + first, last - first);
      if (release) {
        SendReleases(request);
      } else {
        SendAllocations(request);
      }
      first = last;
    }
  }
}

void PlacementBatcher::SendReleases(std::span<Run* const> runs) {
  proto::ReleaseBatch req;
  std::vector<ReleaseDone> done;
  for (Run* run : runs) {
    req.items.insert(req.items.end(), std::make_move_iterator(run->release_items.begin()),
                     std::make_move_iterator(run->release_items.end()));
    for (Caller& c : run->callers) done.push_back(std::move(c.released));
  }
  const size_t n = req.items.size();
  ++requests_sent_;
  rm_.Request(req, [n, done = std::move(done)](Result<proto::Decoded> reply) {
    Result<proto::ReleaseBatchReply> r = reply.ok()
                                             ? reply->As<proto::ReleaseBatchReply>()
                                             : Result<proto::ReleaseBatchReply>(reply.status());
    const Status status =
        !r.ok() ? r.status()
        : r->released.size() != n
            ? Status::InvalidArgument(
                  fmt::format("release_batch_reply has {} items for {}", r->released.size(), n))
            : Status::Ok();
    for (const ReleaseDone& d : done) d(status);
  });
}

void PlacementBatcher::SendAllocations(std::span<Run* const> runs) {
  proto::AllocateBatch req;
  std::vector<Caller> callers;
  for (Run* run : runs) {
    req.items.insert(req.items.end(), std::make_move_iterator(run->allocate.begin()),
                     std::make_move_iterator(run->allocate.end()));
    for (Caller& c : run->callers) callers.push_back(std::move(c));
  }
  const size_t n = req.items.size();
  ++requests_sent_;
  rm_.Request(req, [n, callers = std::move(callers)](Result<proto::Decoded> reply) {
    Result<proto::AllocateBatchReply> r = reply.ok()
                                              ? reply->As<proto::AllocateBatchReply>()
                                              : Result<proto::AllocateBatchReply>(reply.status());
    if (r.ok() && r->items.size() != n) {
      r = Status::InvalidArgument(
          fmt::format("allocate_batch_reply has {} items for {}", r->items.size(), n));
    }
    size_t at = 0;
    for (const Caller& c : callers) {
      if (!r.ok()) {
        c.allocated(r.status());
        continue;
      }
      c.allocated(std::vector<proto::Allocation>(
          std::make_move_iterator(r->items.begin() + long(at)),
          std::make_move_iterator(r->items.begin() + long(at + c.count))));
      at += c.count;
    }
  });
}

}  // namespace tunebus
