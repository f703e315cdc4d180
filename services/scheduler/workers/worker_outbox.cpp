#include "services/scheduler/workers/worker_outbox.hpp"

#include <spdlog/spdlog.h>

#include <utility>

#include "libs/bus/socket.hpp"

namespace tunebus {

void WorkerOutbox::QueueDecision(const std::string& worker_id, proto::DecisionItem decision) {
  std::vector<Item>& items = queued_[worker_id];
  if (items.empty()) pending_.push_back(worker_id);
  if (items.empty() || items.back().decisions.decisions.empty()) items.emplace_back();
  items.back().decisions.decisions.push_back(std::move(decision));
  if (items.back().decisions.decisions.size() >= proto::kMaxBatchItems) FlushWorker(worker_id);
}

void WorkerOutbox::Queue(const std::string& worker_id, std::string payload, OnSent on_sent) {
  std::vector<Item>& items = queued_[worker_id];
  if (items.empty()) pending_.push_back(worker_id);
  items.push_back(Item{{}, std::move(payload), std::move(on_sent)});
}

bool WorkerOutbox::Send(const std::string& worker_id, const std::string& payload) {
  FlushWorker(worker_id);
  return bus::SendTo(workers_, worker_id, payload);
}

void WorkerOutbox::Flush() {
  for (const std::string& worker_id : std::exchange(pending_, {})) FlushWorker(worker_id);
}

void WorkerOutbox::FlushWorker(const std::string& worker_id) {
  auto it = queued_.find(worker_id);
  if (it == queued_.end() || it->second.empty()) return;
  // Taken out first: an on_sent callback may queue more for this worker (sent next round).
  std::vector<Item> items = std::exchange(it->second, {});
  for (Item& item : items) {
    if (!item.decisions.decisions.empty()) {
      if (!bus::SendTo(workers_, worker_id, proto::Encode(item.decisions))) {
        spdlog::warn("Dropping {} decision(s) for worker {}: not connected",
                     item.decisions.decisions.size(), worker_id);
      }
      continue;
    }
    const bool sent = bus::SendTo(workers_, worker_id, item.payload);
    if (item.on_sent) item.on_sent(sent, std::move(item.payload));
  }
}

}  // namespace tunebus
