#include "services/resource-manager/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <set>

namespace tunebus {

namespace {

constexpr int64_t kScale = Resources::kScale;

std::string FormatAmount(int64_t units) { return fmt::format("{}", double(units) / kScale); }

/// "cpu=4, gpu=0": `offer`'s amounts for each key of `ask` (so absent keys show as 0).
std::string FormatOffer(const Resources& ask, const Resources& offer) {
  std::string s;
  for (const auto& [key, units] : ask.units_map()) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{}={}", key, FormatAmount(offer.units(key)));
  }
  return s.empty() ? "nothing" : s;
}

proto::ResourceUnits ToWire(const Resources& r) {
  return proto::ResourceUnits(r.units_map().begin(), r.units_map().end());
}

Resources FreeOf(const Resources& capacity, const Resources& committed) {
  Resources free = capacity;
  free -= committed;  // committed <= capacity is an invariant
  return free;
}

}  // namespace

std::string ClusterState::Label(const Key& key) {
  return fmt::format("{}/{}", key.first, key.second);
}

Result<RegisterOutcome> ClusterState::RegisterNode(const std::string& worker_id,
                                                   const std::string& hostname,
                                                   const Resources& capacity,
                                                   const std::vector<std::string>& gpu_ids,
                                                   Millis now) {
  if (worker_id.empty()) return Status::InvalidArgument("register_node: worker_id is empty");
  const int64_t gpu_units = capacity.units("gpu");
  if (gpu_units % kScale != 0) {
    return Status::InvalidArgument(fmt::format(
        "worker {} offers gpu={}: GPU capacity must be whole", worker_id, FormatAmount(gpu_units)));
  }
  const size_t num_gpus = size_t(gpu_units / kScale);
  std::vector<std::string> ids = gpu_ids;
  if (ids.empty()) {
    for (size_t i = 0; i < num_gpus; ++i) ids.push_back(std::to_string(i));
  }
  if (ids.size() != num_gpus) {
    return Status::InvalidArgument(fmt::format("worker {} offers gpu={} but names {} gpu_ids",
                                               worker_id, num_gpus, ids.size()));
  }
  if (std::set<std::string>(ids.begin(), ids.end()).size() != ids.size()) {
    return Status::InvalidArgument(fmt::format("worker {} names a gpu id twice", worker_id));
  }

  RegisterOutcome outcome;
  auto it = nodes_.find(worker_id);
  if (it == nodes_.end()) {
    it = nodes_.emplace(worker_id, Node{}).first;
    it->second.worker_id = worker_id;
    outcome.added = true;
  }
  Node& node = it->second;
  std::vector<std::string> old_ids;
  for (const Gpu& g : node.gpus) old_ids.push_back(g.id);
  const bool same_shape = node.capacity == capacity && old_ids == ids;
  if (!node.alive) {
    outcome.added = true;  // back from lost: it holds nothing (dropped when lost)
  } else if (!outcome.added && !same_shape) {
    outcome.dropped_trials = DropAllocationsOn(worker_id);  // restarted with another shape
    outcome.added = true;
  }
  node.hostname = hostname;
  node.alive = true;
  node.last_heartbeat = now;
  if (outcome.added) {
    node.capacity = capacity;
    node.committed = Resources();
    node.gpus.clear();
    for (const auto& id : ids) node.gpus.push_back(Gpu{id, 0});
  }
  AssertInvariants();
  return outcome;
}

Status ClusterState::Heartbeat(const std::string& worker_id, Millis now) {
  auto it = nodes_.find(worker_id);
  if (it == nodes_.end()) {
    return Status::NotFound(fmt::format("unknown worker {}: register first", worker_id));
  }
  if (!it->second.alive) {
    return Status::NotFound(fmt::format("worker {} was declared lost: register again", worker_id));
  }
  it->second.last_heartbeat = now;
  return Status::Ok();
}

bool ClusterState::PickGpus(const Node& node, int64_t gpu_units,
                            std::vector<std::pair<size_t, int64_t>>* out) {
  out->clear();
  if (gpu_units == 0) return true;
  if (gpu_units >= kScale) {  // whole GPUs: the lowest fully free ids
    if (gpu_units % kScale != 0) return false;
    const size_t want = size_t(gpu_units / kScale);
    for (size_t i = 0; i < node.gpus.size() && out->size() < want; ++i) {
      if (node.gpus[i].used == 0) out->emplace_back(i, kScale);
    }
    if (out->size() == want) return true;
    out->clear();
    return false;
  }
  // A fraction: the most-used GPU that still has room, so fractions pack.
  size_t best = node.gpus.size();
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (kScale - node.gpus[i].used < gpu_units) continue;
    if (best == node.gpus.size() || node.gpus[i].used > node.gpus[best].used) best = i;
  }
  if (best == node.gpus.size()) return false;
  out->emplace_back(best, gpu_units);
  return true;
}

AllocationDecision ClusterState::GrantOf(const Node& node, const Allocation& a) {
  AllocationDecision d;
  d.kind = AllocationDecision::Kind::kGranted;
  d.worker_id = node.worker_id;
  for (const auto& [index, units] : a.gpu_shares) d.gpu_ids.push_back(node.gpus[index].id);
  return d;
}

Status ClusterState::Adopt(const std::string& worker_id, const std::string& trial_id,
                           int64_t attempt, const Resources& request,
                           const std::vector<std::string>& gpu_ids) {
  const Key key{trial_id, attempt};
  if (allocations_.contains(key)) return Status::Ok();
  auto it = nodes_.find(worker_id);
  if (it == nodes_.end() || !it->second.alive) {
    return Status::NotFound(fmt::format("worker {} is not registered", worker_id));
  }
  Node& node = it->second;
  if (!request.FitsIn(FreeOf(node.capacity, node.committed))) {
    return Status::ResourceExhausted(
        fmt::format("{} reported by {} for {}/{} does not fit what is free", request.ToString(),
                    worker_id, trial_id, attempt));
  }
  const int64_t gpu = request.units("gpu");
  std::vector<std::pair<size_t, int64_t>> shares;
  for (const std::string& id : gpu_ids) {
    size_t index = 0;
    while (index < node.gpus.size() && node.gpus[index].id != id) ++index;
    if (index == node.gpus.size()) {
      return Status::InvalidArgument(fmt::format("worker {} has no gpu id '{}'", worker_id, id));
    }
    const int64_t share = gpu < kScale ? gpu : kScale;
    if (kScale - node.gpus[index].used < share) {
      return Status::ResourceExhausted(fmt::format("gpu {} of {} is full", id, worker_id));
    }
    shares.emplace_back(index, share);
  }
  if (gpu > 0 && shares.empty() && !PickGpus(node, gpu, &shares)) {
    return Status::ResourceExhausted(
        fmt::format("no gpu of {} has room for {}/{}", worker_id, trial_id, attempt));
  }
  node.committed += request;
  for (const auto& [index, units] : shares) node.gpus[index].used += units;
  allocations_.emplace(key, Allocation{worker_id, request, std::move(shares)});
  AssertInvariants();
  return Status::Ok();
}

AllocationDecision ClusterState::Allocate(const std::string& trial_id, int64_t attempt,
                                          const Resources& request) {
  const Key key{trial_id, attempt};
  if (auto it = allocations_.find(key); it != allocations_.end()) {
    AllocationDecision again = GrantOf(nodes_.at(it->second.worker_id), it->second);
    again.retried = true;  // idempotent retry: the same grant, nothing more committed
    return again;
  }
  AllocationDecision d;
  const std::string ask = request.ToString();
  if (alive_count() == 0) {
    d.kind = AllocationDecision::Kind::kInsufficient;
    d.reason = nodes_.empty() ? std::string("no workers registered")
                              : fmt::format("no workers alive (all {} registered workers are lost)",
                                            nodes_.size());
    return d;
  }
  const int64_t gpu = request.units("gpu");
  if (gpu > kScale && gpu % kScale != 0) {
    d.kind = AllocationDecision::Kind::kInfeasible;
    d.reason = fmt::format(
        "trial {} asks gpu={}: a trial takes a fraction of one GPU (< 1) "
        "or whole GPUs",
        trial_id, FormatAmount(gpu));
    return d;
  }

  const Node* largest = nullptr;  // most cpu, then most gpu, then smallest worker_id
  const Node* best = nullptr;     // most free cpu among those with room now
  std::vector<std::pair<size_t, int64_t>> best_gpus;
  std::vector<std::pair<size_t, int64_t>> gpus;
  int64_t best_free_cpu = -1;
  size_t could_hold = 0;
  for (const auto& [id, node] : nodes_) {
    if (!node.alive) continue;
    if (largest == nullptr || node.capacity.units("cpu") > largest->capacity.units("cpu") ||
        (node.capacity.units("cpu") == largest->capacity.units("cpu") &&
         node.capacity.units("gpu") > largest->capacity.units("gpu"))) {
      largest = &node;
    }
    if (!request.FitsIn(node.capacity)) continue;
    ++could_hold;
    const Resources free = FreeOf(node.capacity, node.committed);
    if (!request.FitsIn(free) || !PickGpus(node, gpu, &gpus)) continue;
    if (free.units("cpu") > best_free_cpu) {  // strict: ties keep the smaller worker_id
      best = &node;
      best_free_cpu = free.units("cpu");
      best_gpus = gpus;
    }
  }
  if (could_hold == 0) {
    d.kind = AllocationDecision::Kind::kInfeasible;
    d.reason = fmt::format("trial {} asks {} but the largest worker offers {} ({})", trial_id, ask,
                           FormatOffer(request, largest->capacity), largest->worker_id);
    return d;
  }
  if (best == nullptr) {
    d.kind = AllocationDecision::Kind::kInsufficient;
    d.reason = fmt::format(
        "trial {} asks {} but no worker has room now ({} of {} alive workers "
        "could hold it when free)",
        trial_id, ask, could_hold, alive_count());
    return d;
  }

  Node& node = nodes_.at(best->worker_id);
  Allocation a{node.worker_id, request, best_gpus};
  node.committed += request;
  for (const auto& [index, units] : a.gpu_shares) node.gpus[index].used += units;
  d = GrantOf(node, a);
  allocations_.emplace(key, std::move(a));
  AssertInvariants();
  return d;
}

void ClusterState::Free(const Allocation& a) {
  Node& node = nodes_.at(a.worker_id);
  assert(a.resources.FitsIn(node.committed));
  node.committed -= a.resources;
  for (const auto& [index, units] : a.gpu_shares) {
    assert(node.gpus[index].used >= units);
    node.gpus[index].used -= units;
  }
}

bool ClusterState::Release(const std::string& trial_id, int64_t attempt, std::string* worker_id) {
  auto it = allocations_.find(Key{trial_id, attempt});
  if (it == allocations_.end()) return false;
  if (worker_id != nullptr) *worker_id = it->second.worker_id;
  Free(it->second);
  allocations_.erase(it);
  AssertInvariants();
  return true;
}

std::vector<std::string> ClusterState::DropAllocationsOn(const std::string& worker_id) {
  std::vector<std::string> labels;
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    if (it->second.worker_id != worker_id) {
      ++it;
      continue;
    }
    labels.push_back(Label(it->first));
    Free(it->second);
    it = allocations_.erase(it);
  }
  return labels;
}

std::vector<LostNode> ClusterState::ExpireNodes(Millis now, Millis timeout) {
  std::vector<LostNode> lost;
  for (auto& [id, node] : nodes_) {
    if (!node.alive || now - node.last_heartbeat <= timeout) continue;
    node.alive = false;
    lost.push_back(LostNode{id, DropAllocationsOn(id)});
  }
  if (!lost.empty()) AssertInvariants();
  return lost;
}

proto::ClusterView ClusterState::View() const {
  std::map<std::string, std::vector<std::string>> trials;
  for (const auto& [key, a] : allocations_) trials[a.worker_id].push_back(Label(key));
  proto::ClusterView view;
  for (const auto& [id, node] : nodes_) {
    proto::NodeView n;
    n.worker_id = id;
    n.hostname = node.hostname;
    n.alive = node.alive;
    n.capacity = ToWire(node.capacity);
    n.committed = ToWire(node.committed);
    if (auto t = trials.find(id); t != trials.end()) n.trials = t->second;
    view.nodes.push_back(std::move(n));
  }
  return view;
}

size_t ClusterState::alive_count() const {
  return size_t(
      std::count_if(nodes_.begin(), nodes_.end(), [](const auto& kv) { return kv.second.alive; }));
}

Status ClusterState::CheckInvariants() const {
  std::map<std::string, Resources> sums;
  std::map<std::string, std::vector<int64_t>> gpu_sums;
  for (const auto& [key, a] : allocations_) {
    auto it = nodes_.find(a.worker_id);
    if (it == nodes_.end()) {
      return Status::Internal(fmt::format("{} is on unknown worker {}", Label(key), a.worker_id));
    }
    if (!it->second.alive) {
      return Status::Internal(fmt::format("{} is on lost worker {}", Label(key), a.worker_id));
    }
    sums[a.worker_id] += a.resources;
    auto& g = gpu_sums[a.worker_id];
    g.resize(it->second.gpus.size(), 0);
    int64_t gpu_total = 0;
    for (const auto& [index, units] : a.gpu_shares) {
      if (index >= g.size()) return Status::Internal(Label(key) + " names a missing GPU");
      g[index] += units;
      gpu_total += units;
    }
    if (gpu_total != a.resources.units("gpu")) {
      return Status::Internal(Label(key) + ": GPU shares do not add up to its gpu request");
    }
  }
  for (const auto& [id, node] : nodes_) {
    if (!node.committed.FitsIn(node.capacity)) {
      return Status::Internal(fmt::format("worker {} committed {} exceeds capacity {}", id,
                                          node.committed.ToString(), node.capacity.ToString()));
    }
    if (!(node.committed == sums[id])) {
      return Status::Internal(fmt::format("worker {} committed {} but its allocations sum to {}",
                                          id, node.committed.ToString(), sums[id].ToString()));
    }
    auto& g = gpu_sums[id];
    g.resize(node.gpus.size(), 0);
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      if (node.gpus[i].used != g[i] || node.gpus[i].used < 0 || node.gpus[i].used > kScale) {
        return Status::Internal(fmt::format("worker {} gpu {} usage {} is wrong (allocated {})", id,
                                            node.gpus[i].id, node.gpus[i].used, g[i]));
      }
    }
  }
  return Status::Ok();
}

void ClusterState::AssertInvariants() const {
#ifndef NDEBUG
  const Status s = CheckInvariants();
  if (!s.ok()) std::fprintf(stderr, "ClusterState invariant broken: %s\n", s.ToString().c_str());
  assert(s.ok());
#endif
}

}  // namespace tunebus
