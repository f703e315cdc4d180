#include "services/scheduler/worker_outbox.hpp"

#include <spdlog/spdlog.h>

#include "libs/bus/socket.hpp"

namespace tunebus {

void WorkerOutbox::QueueDecision(const std::string& worker_id, proto::DecisionItem decision) {
  proto::Decisions& batch = queued_[worker_id];
  if (batch.decisions.empty()) pending_.push_back(worker_id);
  batch.decisions.push_back(std::move(decision));
  if (batch.decisions.size() >= proto::kMaxBatchItems) FlushWorker(worker_id, batch);
}

bool WorkerOutbox::Send(const std::string& worker_id, const std::string& payload) {
  if (auto it = queued_.find(worker_id); it != queued_.end()) FlushWorker(worker_id, it->second);
  return bus::SendTo(workers_, worker_id, payload);
}

void WorkerOutbox::Flush() {
  for (const std::string& worker_id : pending_) {
    if (auto it = queued_.find(worker_id); it != queued_.end()) FlushWorker(worker_id, it->second);
  }
  pending_.clear();
}

void WorkerOutbox::FlushWorker(const std::string& worker_id, proto::Decisions& batch) {
  if (batch.decisions.empty()) return;
  if (!bus::SendTo(workers_, worker_id, proto::Encode(batch))) {
    spdlog::warn("Dropping {} decision(s) for worker {}: not connected", batch.decisions.size(), worker_id);
  }
  batch.decisions.clear();  // keeps the capacity for the next round
}

}  // namespace tunebus
