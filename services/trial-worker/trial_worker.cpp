// TrialWorker: creation, registration, heartbeats and the scheduler socket. Trial handling is
// in trial_worker_trials.cpp.
#include "services/trial-worker/trial_worker.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "libs/bus/domains.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/resources.hpp"
#include "proto/resources.hpp"

namespace tunebus {

namespace {

Result<Resources> Capacity(const TrialWorkerOptions& o) {
  std::map<std::string, double> amounts = o.custom;
  for (const char* reserved : {"cpu", "gpu", "memory"}) {
    if (amounts.count(reserved) > 0) {
      return Status::InvalidArgument(
          fmt::format("custom resource '{}' is reserved: use the dedicated option", reserved));
    }
  }
  for (const auto& [name, amount] : amounts) {
    if (name.empty()) return Status::InvalidArgument("custom resource with an empty name");
  }
  amounts["cpu"] = o.cpus;
  amounts["gpu"] = static_cast<double>(o.gpus);
  amounts["memory"] = static_cast<double>(o.memory_bytes);
  return Resources::FromAmounts(amounts);
}

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// The local IPv4 address the kernel would send from towards `host` (a UDP socket's connect
// sends nothing), or "" if there is no route.
std::string SourceAddressTowards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return "";
  std::string address;
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      address = text;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

// Ray Tune's `node_ip` (ray.util.get_node_ip_address: the source address of a route outwards):
// the address this host reaches the scheduler from when that is not loopback, else the one it
// reaches the outside (8.8.8.8) from, else 127.0.0.1 (no route: a host on its own).
std::string NodeIp(const std::string& scheduler_endpoint) {
  std::string host;
  if (scheduler_endpoint.rfind("tcp://", 0) == 0) {
    host = scheduler_endpoint.substr(6, scheduler_endpoint.rfind(':') - 6);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  }
  std::string ip = host.empty() || host == "*" ? "" : SourceAddressTowards(host);
  if (ip.empty() || ip.rfind("127.", 0) == 0) {
    const std::string outward = SourceAddressTowards("8.8.8.8");
    if (!outward.empty()) ip = outward;
  }
  return ip.empty() ? "127.0.0.1" : ip;
}

}  // namespace

Result<std::unique_ptr<TrialWorker>> TrialWorker::Create(zmq::context_t& ctx,
                                                         TrialWorkerOptions options) {
  if (options.heartbeat_interval_ms <= 0) {
    return Status::InvalidArgument("heartbeat_interval_ms must be > 0");
  }
  if (options.liveness <= 0) return Status::InvalidArgument("liveness must be > 0");
  if (options.max_unacked_results <= 0)
    return Status::InvalidArgument("max_unacked_results must be > 0");
  if (options.stop_grace_ms < 0) return Status::InvalidArgument("stop_grace_ms must be >= 0");
  if (options.gpus < 0) return Status::InvalidArgument("gpus must be >= 0");
  if (options.memory_bytes < 0) return Status::InvalidArgument("memory_bytes must be >= 0");
  if (auto cap = Capacity(options); !cap.ok()) return cap.status();
  auto allowed = trainable::AllowedCommands::Make(options.allow_commands);
  if (!allowed.ok()) return allowed.status();
  std::string hostname = Hostname();
  if (options.node_ip.empty()) options.node_ip = NodeIp(options.scheduler_endpoint);
  if (options.worker_id.empty()) options.worker_id = fmt::format("{}-{}", hostname, ::getpid());

  const bus::Security& security = *options.security;
  auto scheduler = bus::Connect(ctx, zmq::socket_type::dealer, options.scheduler_endpoint, security,
                                bus::kSchedulerKey, {.routing_id = options.worker_id});
  if (!scheduler.ok()) return scheduler.status();
  auto rm = bus::Connect(ctx, zmq::socket_type::dealer, options.rm_endpoint, security,
                         bus::kResourceManagerKey, {.routing_id = options.worker_id});
  if (!rm.ok()) return rm.status();
  auto store = bus::Connect(ctx, zmq::socket_type::dealer, options.store_endpoint, security,
                            bus::kCheckpointStoreKey);
  if (!store.ok()) return store.status();
  return std::unique_ptr<TrialWorker>(new TrialWorker(
      std::move(options), std::move(allowed).value(), std::move(hostname),
      std::move(scheduler).value(), std::move(rm).value(), std::move(store).value()));
}

TrialWorker::TrialWorker(TrialWorkerOptions options, trainable::AllowedCommands allowed_commands,
                         std::string hostname, zmq::socket_t scheduler, zmq::socket_t rm,
                         zmq::socket_t store)
    : options_(std::move(options)),
      allowed_commands_(std::move(allowed_commands)),
      hostname_(std::move(hostname)),
      node_ip_(options_.node_ip),
      pid_(::getpid()),
      loop_(*options_.clock),
      scheduler_(std::move(scheduler)),
      dispatcher_({.peer_name = "the scheduler"}) {
  dispatcher_.On(proto::StartTrial::kType, this, &TrialWorker::HandleStartTrial)
      .On(proto::Decisions::kType, this, &TrialWorker::HandleDecisions)
      .On(proto::Decision::kType, this, &TrialWorker::HandleDecision)
      .On(proto::StopTrialRequest::kType, this, &TrialWorker::HandleStopTrial)
      .On(proto::RegisterWorkerAck::kType, this, &TrialWorker::HandleRegisterWorkerAck)
      .On(proto::ErrorReply::kType, this, &TrialWorker::HandleSchedulerError);
  rm_ = std::make_unique<bus::RequestClient>(loop_, std::move(rm), "resource-manager");
  store_ = std::make_unique<bus::RequestClient>(loop_, std::move(store), "checkpoint-store");
  transfer_ = std::make_unique<CheckpointTransfer>(loop_, *store_);
  working_dirs_ = std::make_unique<WorkingDirCache>(
      loop_, *transfer_,
      options_.cache_dir.empty()
          ? (std::filesystem::temp_directory_path() / "tunebus-working-dirs").string()
          : options_.cache_dir);
  rm_->SetUnsolicitedHandler([this](const proto::Decoded& msg) {
    auto err = msg.type() == proto::ErrorReply::kType
                   ? msg.As<proto::ErrorReply>()
                   : Result<proto::ErrorReply>(Status::NotFound(""));
    if (err.ok() && err->request_type == proto::NodeHeartbeat::kType && err->code == "not_found") {
      dispatcher_.Count("node_heartbeat_rejected");
      spdlog::warn("The resource-manager does not know worker {} ({}); registering again",
                   options_.worker_id, err->message);
      rm_registered_ = false;
      if (state_ != State::kShutDown && !rm_request_in_flight_) RegisterNode();
      return;
    }
    spdlog::debug("Dropping late {} from the resource-manager", msg.type());
  });
  loop_.AddSocket(scheduler_, [this] { OnSchedulerReadable(); });
  loop_.SetIdleHook([this] { FlushResults(); });
}

TrialWorker::~TrialWorker() {
  if (state_ != State::kShutDown) Shutdown();
}

void TrialWorker::Run() {
  spdlog::info("trial-worker {} on {}: scheduler {}, resource-manager {}", options_.worker_id,
               hostname_, options_.scheduler_endpoint, options_.rm_endpoint);
  if (allowed_commands_.allows_every_command()) {
    spdlog::info("trial-worker {} runs every command (no --allow-command)", options_.worker_id);
  } else {
    spdlog::info("trial-worker {} runs only commands matching --allow-command: {}",
                 options_.worker_id, allowed_commands_.Describe());
  }
  OnHeartbeat();
  loop_.AddPeriodic(bus::Duration{options_.heartbeat_interval_ms}, [this] { OnHeartbeat(); });
  if (Status s = metrics_.Start(loop_, options_.metrics,
                                [this](metrics::MetricsText& m) { RenderMetrics(m); });
      !s.ok()) {
    spdlog::error("No metrics endpoint: {}", s.ToString());
  }
  loop_.Run();
  Shutdown();
}

void TrialWorker::Shutdown() {
  if (state_ == State::kShutDown) return;
  state_ = State::kShutDown;
  FlushResults();
  for (auto& [key, run] : runs_) {
    if (run->has_exited()) continue;
    spdlog::info("Killing trial {} attempt {} because trial-worker {} shuts down", run->trial_id,
                 run->attempt, options_.worker_id);
    for (int fd : run->fds) loop_.RemoveFd(fd);
    run->fds.clear();
    run->trainable->Kill();
    proto::TrialExited exited;
    exited.trial_id = run->trial_id;
    exited.attempt = run->attempt;
    exited.ok = false;
    exited.exit_code = -9;
    exited.error = fmt::format("trial-worker {} shut down", options_.worker_id);
    exited.worker_shutdown = true;
    exited.last_seq = run->reports.last_seq;
    if (!run->stale()) SendToScheduler(exited);
  }
  runs_.clear();  // CommandTrainable's destructor reaps the killed processes
}

template <typename M>
void TrialWorker::SendToScheduler(const M& message) {
  if constexpr (!std::is_same_v<M, proto::ReportResults>) FlushResults();
  if (!bus::SendMessage(scheduler_, message)) {
    spdlog::warn(
        "Could not send {} to the scheduler (queue full); it is resent after re-registration",
        M::kType);
  }
}
template void TrialWorker::SendToScheduler(const proto::TrialExited&);
template void TrialWorker::SendToScheduler(const proto::CheckpointSaved&);
template void TrialWorker::SendToScheduler(const proto::CheckpointFailed&);

void TrialWorker::QueueResult(const proto::ResultItem& result) {
  outbox_.results.push_back(result);
  if (outbox_.results.size() >= proto::kMaxBatchItems) FlushResults();
}

void TrialWorker::FlushResults() {
  if (outbox_.results.empty()) return;
  SendToScheduler(outbox_);
  outbox_.results.clear();
}

void TrialWorker::OnHeartbeat() {
  if (state_ == State::kShutDown) return;
  if (!rm_request_in_flight_) {
    if (rm_registered_) {
      SendNodeHeartbeat();
    } else {
      RegisterNode();
    }
  }
  if (state_ == State::kRegistering) {
    SendRegisterWorker();
  } else {
    proto::WorkerHeartbeat hb;
    hb.worker_id = options_.worker_id;
    SendToScheduler(hb);
  }
  const auto silence = bus::Duration{options_.heartbeat_interval_ms * options_.liveness};
  if (scheduler_seen_ && !scheduler_silence_logged_ &&
      loop_.clock().Now() - last_scheduler_message_ > silence) {
    scheduler_silence_logged_ = true;
    // Not an error by itself (the protocol has no scheduler->worker heartbeat yet): a debug hint.
    spdlog::debug("The scheduler has been silent for more than {} ms; trials keep running",
                  silence.count());
  }
}

void TrialWorker::RegisterNode() {
  auto capacity = Capacity(options_);  // validated in Create()
  proto::RegisterNode m;
  m.worker_id = options_.worker_id;
  m.hostname = hostname_;
  for (const auto& [key, units] : capacity->units_map()) m.capacity[key] = units;
  for (int64_t i = 0; i < options_.gpus; ++i) m.gpu_ids.push_back(std::to_string(i));
  for (const auto& [key, run] : runs_) {
    if (run->has_exited() || run->stale()) continue;
    m.running.push_back({key.first, key.second, run->setup.resources, run->setup.gpu_ids});
  }
  rm_request_in_flight_ = true;
  const auto timeout = bus::Duration{options_.heartbeat_interval_ms * options_.liveness};
  rm_->Request(
      m,
      [this](Result<proto::Decoded> reply) {
        rm_request_in_flight_ = false;
        dispatcher_.Count("register_node_reply");
        if (!reply.ok()) {
          spdlog::warn("RegisterNode to the resource-manager failed: {}; retrying",
                       reply.status().ToString());
          return;
        }
        if (reply->type() != proto::RegisterNodeAck::kType) {
          spdlog::warn("Dropping reply '{}' to RegisterNode: expected {}", reply->type(),
                       proto::RegisterNodeAck::kType);
          return;
        }
        rm_registered_ = true;
        spdlog::info("Registered worker {} with the resource-manager ({})", options_.worker_id,
                     Capacity(options_)->ToString());
      },
      timeout);
}

// Heartbeats are one-way (PROTOCOL.md §4); only an error comes back, handled in
// OnRmUnsolicited: not_found means the resource-manager forgot us, so register again.
void TrialWorker::SendNodeHeartbeat() {
  proto::NodeHeartbeat hb;
  hb.worker_id = options_.worker_id;
  rm_->Post(hb);
}

void TrialWorker::SendRegisterWorker() {
  proto::RegisterWorker m;
  m.worker_id = options_.worker_id;
  m.hostname = hostname_;
  // An exited attempt whose checkpoint upload goes on (its exit report waits) still counts.
  for (const auto& [key, run] : runs_) {
    if (run->phase != RunPhase::kExited && !run->stale())
      m.running.push_back({key.first, key.second});
  }
  SendToScheduler(m);
}

void TrialWorker::OnSchedulerReadable() {
  bus::Incoming in;
  while (bus::Receive(scheduler_, in)) {
    last_scheduler_message_ = loop_.clock().Now();
    scheduler_seen_ = true;
    scheduler_silence_logged_ = false;
    dispatcher_.Dispatch(in);
  }
}

void TrialWorker::HandleRegisterWorkerAck(const proto::Decoded& msg) {
  if (state_ == State::kShutDown) return;
  auto ack = msg.As<proto::RegisterWorkerAck>();
  if (!ack.ok()) {
    spdlog::warn("Dropping RegisterWorkerAck: {}", ack.status().ToString());
    return;
  }
  const bool newly_registered = state_ == State::kRegistering;
  state_ = State::kRegistered;
  for (const std::string& stale : ack->stale_trials) {
    for (auto& [key, run] : runs_) {
      if (key.first == stale) KillStale(*run, "the scheduler says it is stale");
    }
  }
  // Only the first ack of a registration resends: RegisterWorkers queued while the scheduler was
  // away are answered one by one, and each resend would duplicate every unacked result.
  if (newly_registered) {
    spdlog::info("Registered worker {} with the scheduler", options_.worker_id);
    ResendUnacked();
  } else {
    std::vector<RunKey> keys;
    for (const auto& [key, run] : runs_) keys.push_back(key);
    for (const auto& key : keys) EraseIfDone(key);
  }
}

void TrialWorker::ResendUnacked() {
  for (auto& [key, run] : runs_) {
    for (const auto& [seq, result] : run->reports.unacked) QueueResult(result);
    // An exit that waits for its uploads goes after their checkpoint_saved / checkpoint_failed.
    if (run->phase == RunPhase::kExited) SendToScheduler(run->exited);
  }
  std::vector<RunKey> keys;
  for (const auto& [key, run] : runs_) keys.push_back(key);
  for (const auto& key : keys) EraseIfDone(key);
}

void TrialWorker::HandleSchedulerError(const proto::Decoded& msg) {
  auto err = msg.As<proto::ErrorReply>();
  if (!err.ok()) {
    spdlog::warn("Dropping a malformed error from the scheduler: {}", err.status().ToString());
    return;
  }
  spdlog::warn("The scheduler answered {} with {}: {}",
               err->request_type.empty() ? "?" : err->request_type, err->code, err->message);
  if (err->code == StatusCodeName(StatusCode::kNotFound) && state_ == State::kRegistered) {
    spdlog::info("The scheduler does not know worker {}; registering again", options_.worker_id);
    state_ = State::kRegistering;
    SendRegisterWorker();
  }
}

}  // namespace tunebus
