#include "services/resource-manager/resource_manager.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <map>
#include <utility>

#include "proto/resources.hpp"

namespace tunebus {

namespace {

/// Requests handled per wake-up before the loop gets to run timers again (fairness).
constexpr int kMaxBatch = 256;

Status CheckBatchSize(const char* type, size_t items) {
  if (items >= 1 && items <= proto::kMaxPlacementBatchItems) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("{}: {} items, expected 1..{}", type, items, proto::kMaxPlacementBatchItems));
}

std::string Join(const std::vector<std::string>& items) {
  return items.empty() ? std::string("none") : fmt::format("{}", fmt::join(items, ", "));
}

}  // namespace

Result<std::unique_ptr<ResourceManager>> ResourceManager::Create(zmq::context_t& ctx,
                                                                 Options options) {
  if (options.heartbeat_interval_ms <= 0) {
    return Status::InvalidArgument(
        fmt::format("heartbeat_interval_ms must be > 0, got {}", options.heartbeat_interval_ms));
  }
  if (options.liveness < 1) {
    return Status::InvalidArgument(fmt::format("liveness must be >= 1, got {}", options.liveness));
  }
  auto router = bus::Bind(ctx, zmq::socket_type::router, options.endpoint, *options.security,
                          bus::kResourceManagerDomain);
  if (!router.ok()) return router.status();
  auto pub = bus::Bind(ctx, zmq::socket_type::pub, options.events_endpoint, *options.security,
                       bus::kNodeEventsDomain);
  if (!pub.ok()) return pub.status();
  return std::unique_ptr<ResourceManager>(
      new ResourceManager(std::move(options), std::move(*router), std::move(*pub)));
}

ResourceManager::ResourceManager(Options options, zmq::socket_t router, zmq::socket_t pub)
    : options_(std::move(options)),
      router_(std::move(router)),
      pub_(std::move(pub)),
      loop_(*options_.clock),
      epoch_(loop_.clock().Now()),
      dispatcher_({.reply_socket = &router_,
                   .security = options_.security,
                   .roles = {bus::Role::kService}}) {
  endpoint_ = bus::BoundEndpoint(router_);
  events_endpoint_ = bus::BoundEndpoint(pub_);
  // Workers register and heartbeat; placement is the scheduler's (service).
  const bus::RoleSet workers{bus::Role::kWorker};
  dispatcher_.On(proto::RegisterNode::kType, workers, this, &ResourceManager::HandleRegisterNode)
      .On(proto::NodeHeartbeat::kType, workers, this, &ResourceManager::HandleHeartbeat)
      .On(proto::Allocate::kType, this, &ResourceManager::HandleAllocate)
      .On(proto::Release::kType, this, &ResourceManager::HandleRelease)
      .On(proto::AllocateBatch::kType, this, &ResourceManager::HandleAllocateBatch)
      .On(proto::ReleaseBatch::kType, this, &ResourceManager::HandleReleaseBatch)
      .On(proto::GetClusterView::kType, this, &ResourceManager::HandleGetClusterView);
}

void ResourceManager::Run() {
  spdlog::info("resource-manager serving on {} (events on {}), heartbeat {} ms x {}", endpoint_,
               events_endpoint_, options_.heartbeat_interval_ms, options_.liveness);
  loop_.AddSocket(router_, [this] { OnRouterReadable(); });
  loop_.AddPeriodic(ExpiryCheckPeriod(options_.heartbeat_interval_ms), [this] { OnExpiryTimer(); });
  if (Status s = metrics_.Start(loop_, options_.metrics,
                                [this](metrics::MetricsText& m) { RenderMetrics(m); });
      !s.ok()) {
    spdlog::error("No metrics endpoint: {}", s.ToString());
  }
  loop_.Run();
  spdlog::info("resource-manager stopped; messages received: {}", dispatcher_.CountsSummary());
}

Millis ResourceManager::Now() const {
  return std::chrono::duration_cast<Millis>(loop_.clock().Now() - epoch_);
}

void ResourceManager::OnRouterReadable() {
  bus::Incoming in;
  for (int i = 0; i < kMaxBatch && bus::Receive(router_, in); ++i) dispatcher_.Dispatch(in);
}

Status ResourceManager::HandleRegisterNode(bus::Incoming& in, const proto::Decoded& msg) {
  auto req = msg.As<proto::RegisterNode>();
  if (!req.ok()) return req.status();
  if (Status s = worker_keys_.Claim(req->worker_id, in.key); !s.ok()) return s;
  auto capacity = Resources::FromUnits(req->capacity);
  if (!capacity.ok()) return capacity.status();
  auto outcome =
      cluster_.RegisterNode(req->worker_id, req->hostname, *capacity, req->gpu_ids, Now());
  if (!outcome.ok()) return outcome.status();

  if (!outcome->dropped_trials.empty()) {
    spdlog::warn("Worker {} re-registered with another capacity; dropping allocations of {}",
                 req->worker_id, Join(outcome->dropped_trials));
    Publish(proto::NodeEventKind::kNodeLost, req->worker_id, outcome->dropped_trials);
  }
  for (const proto::HeldAllocation& held : req->running) {
    // A restarted resource-manager learns what runs from the workers (adopting a held
    // attempt is a no-op).
    auto resources = Resources::FromUnits(held.resources);
    const Status s = resources.ok() ? cluster_.Adopt(req->worker_id, held.trial_id, held.attempt,
                                                     *resources, held.gpu_ids)
                                    : resources.status();
    if (!s.ok()) {
      spdlog::warn("Not adopting {}/{} reported by {}: {}", held.trial_id, held.attempt,
                   req->worker_id, s.ToString());
    }
  }
  if (outcome->added) {
    spdlog::info("Worker {} ({}) registered with {}, running {} trial(s)", req->worker_id,
                 req->hostname, capacity->ToString(), req->running.size());
    Publish(proto::NodeEventKind::kNodeAdded, req->worker_id, {});
  } else {
    spdlog::debug("Worker {} re-registered (reconnect), allocations kept", req->worker_id);
  }
  proto::RegisterNodeAck ack;
  ack.id = msg.id();
  ack.heartbeat_interval_ms = options_.heartbeat_interval_ms;
  dispatcher_.Reply(in, ack);
  return Status::Ok();
}

Status ResourceManager::HandleHeartbeat(bus::Incoming& in, const proto::Decoded& msg) {
  auto hb = msg.As<proto::NodeHeartbeat>();
  if (!hb.ok()) return hb.status();
  if (Status s = worker_keys_.Claim(hb->worker_id, in.key); !s.ok()) return s;
  const Status s = cluster_.Heartbeat(hb->worker_id, Now());
  return s;  // not_found: the worker re-registers
}

Status ResourceManager::HandleAllocate(bus::Incoming& in, const proto::Decoded& msg) {
  auto req = msg.As<proto::Allocate>();
  if (!req.ok()) return req.status();
  if (req->trial_id.empty()) {
    return Status::InvalidArgument("allocate: trial_id is empty");
  }
  auto request = Resources::FromUnits(req->request);
  if (!request.ok()) return request.status();

  proto::Allocation a = AllocateOne(req->trial_id, req->attempt, *request);
  proto::AllocateReply reply;
  reply.id = msg.id();
  reply.trial_id = std::move(a.trial_id);
  reply.attempt = a.attempt;
  reply.granted = a.granted;
  reply.worker_id = std::move(a.worker_id);
  reply.gpu_ids = std::move(a.gpu_ids);
  reply.infeasible = a.infeasible;
  reply.reason = std::move(a.reason);
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

proto::Allocation ResourceManager::AllocateOne(const std::string& trial_id, int64_t attempt,
                                               const Resources& request) {
  const AllocationDecision d = cluster_.Allocate(trial_id, attempt, request);
  proto::Allocation a;
  a.trial_id = trial_id;
  a.attempt = attempt;
  a.granted = d.granted();
  a.worker_id = d.worker_id;
  a.gpu_ids = d.gpu_ids;
  a.infeasible = d.kind == AllocationDecision::Kind::kInfeasible;
  a.reason = d.reason;
  if (d.granted()) {
    if (spdlog::should_log(spdlog::level::info)) {
      spdlog::info("{} {} for {}/{} on {}{}", d.retried ? "Re-sent the grant of" : "Allocated",
                   request.ToString(), trial_id, attempt, d.worker_id,
                   d.gpu_ids.empty() ? "" : fmt::format(" (gpus {})", Join(d.gpu_ids)));
    }
  } else if (a.infeasible) {
    spdlog::warn("Cannot ever place {}/{}: {}", trial_id, attempt, d.reason);
  } else {
    spdlog::debug("Cannot place {}/{} now: {}", trial_id, attempt, d.reason);
  }
  return a;
}

proto::Allocation ResourceManager::HandOver(const proto::AllocateItem& item,
                                            const Resources& request) {
  cluster_.Release(item.replaces_trial_id, item.replaces_attempt);
  const Status s =
      cluster_.Adopt(item.worker_id, item.trial_id, item.attempt, request, item.gpu_ids);
  proto::Allocation a;
  a.trial_id = item.trial_id;
  a.attempt = item.attempt;
  a.granted = s.ok();
  a.worker_id = item.worker_id;
  a.gpu_ids = item.gpu_ids;
  a.reason = s.ok() ? "" : s.message();
  if (s.ok()) {
    spdlog::debug("Handed {}/{} on {} over to {}/{}", item.replaces_trial_id, item.replaces_attempt,
                  item.worker_id, item.trial_id, item.attempt);
  } else {
    spdlog::warn("Cannot hand {}/{} on {} over to {}/{}: {}", item.replaces_trial_id,
                 item.replaces_attempt, item.worker_id, item.trial_id, item.attempt, s.message());
  }
  return a;
}

Status ResourceManager::HandleAllocateBatch(bus::Incoming& in, const proto::Decoded& msg) {
  auto req = msg.As<proto::AllocateBatch>();
  if (!req.ok()) return req.status();
  if (Status s = CheckBatchSize("allocate_batch", req->items.size()); !s.ok()) return s;
  // Validate every item before allocating any: a bad request changes nothing.
  std::vector<Resources> requests;
  requests.reserve(req->items.size());
  for (size_t i = 0; i < req->items.size(); ++i) {
    const proto::AllocateItem& item = req->items[i];
    if (item.trial_id.empty()) {
      return Status::InvalidArgument(fmt::format("allocate_batch: item {} has no trial_id", i));
    }
    if (!item.replaces_trial_id.empty() && item.worker_id.empty()) {
      return Status::InvalidArgument(
          fmt::format("allocate_batch: item {} hands over without a worker_id", i));
    }
    auto request = Resources::FromUnits(item.request);
    if (!request.ok()) {
      return Status::InvalidArgument(
          fmt::format("allocate_batch: item {}: {}", i, request.status().message()));
    }
    requests.push_back(std::move(*request));
  }
  proto::AllocateBatchReply reply;
  reply.id = msg.id();
  reply.items.reserve(req->items.size());
  for (size_t i = 0; i < req->items.size(); ++i) {
    const proto::AllocateItem& item = req->items[i];
    reply.items.push_back(item.replaces_trial_id.empty()
                              ? AllocateOne(item.trial_id, item.attempt, requests[i])
                              : HandOver(item, requests[i]));
  }
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

Status ResourceManager::HandleReleaseBatch(bus::Incoming& in, const proto::Decoded& msg) {
  auto req = msg.As<proto::ReleaseBatch>();
  if (!req.ok()) return req.status();
  if (Status s = CheckBatchSize("release_batch", req->items.size()); !s.ok()) return s;
  proto::ReleaseBatchReply reply;
  reply.id = msg.id();
  std::map<std::string, std::vector<std::string>> freed;  // worker -> "trial_id/attempt"
  for (const proto::ReleaseItem& item : req->items) {
    std::string worker_id;
    const bool released = cluster_.Release(item.trial_id, item.attempt, &worker_id);
    reply.released.push_back(released);
    if (released) {
      spdlog::debug("Released {}/{} on {}", item.trial_id, item.attempt, worker_id);
      freed[worker_id].push_back(fmt::format("{}/{}", item.trial_id, item.attempt));
    }
  }
  for (auto& [worker_id, trials] : freed)
    Publish(proto::NodeEventKind::kResourcesFreed, worker_id, std::move(trials));
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

Status ResourceManager::HandleRelease(bus::Incoming& in, const proto::Decoded& msg) {
  auto req = msg.As<proto::Release>();
  if (!req.ok()) return req.status();
  std::string worker_id;
  proto::ReleaseReply reply;
  reply.id = msg.id();
  reply.released = cluster_.Release(req->trial_id, req->attempt, &worker_id);
  if (reply.released) {
    spdlog::info("Released {}/{} on {}", req->trial_id, req->attempt, worker_id);
    Publish(proto::NodeEventKind::kResourcesFreed, worker_id,
            {fmt::format("{}/{}", req->trial_id, req->attempt)});
  } else {
    spdlog::debug("Release of {}/{}: nothing held", req->trial_id, req->attempt);
  }
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

Status ResourceManager::HandleGetClusterView(bus::Incoming& in, const proto::Decoded& msg) {
  auto req = msg.As<proto::GetClusterView>();
  if (!req.ok()) return req.status();
  proto::ClusterView view = cluster_.View();
  view.id = msg.id();
  dispatcher_.Reply(in, view);
  return Status::Ok();
}

void ResourceManager::OnExpiryTimer() {
  const Millis timeout{options_.heartbeat_interval_ms * options_.liveness};
  for (auto& lost : cluster_.ExpireNodes(Now(), timeout)) {
    spdlog::warn("Worker {} is lost: no heartbeat for more than {} ms; dropped allocations of {}",
                 lost.worker_id, timeout.count(), Join(lost.trials));
    Publish(proto::NodeEventKind::kNodeLost, lost.worker_id, std::move(lost.trials));
  }
}

void ResourceManager::Publish(proto::NodeEventKind event, const std::string& worker_id,
                              std::vector<std::string> trials) {
  proto::NodeEvent e;
  e.event = proto::NodeEventKindName(event);
  e.worker_id = worker_id;
  e.trials = std::move(trials);
  const std::string payload = proto::Encode(e);
  try {
    static constexpr std::string_view kTopic = "node";
    pub_.send(zmq::buffer(kTopic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    pub_.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    spdlog::error("Could not publish {} for {}: {}", proto::NodeEventKindName(event), worker_id,
                  e.what());
  }
}

}  // namespace tunebus
