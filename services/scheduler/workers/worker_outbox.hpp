// WorkerOutbox: the scheduler's sends to trial-workers over the worker ROUTER, once per poll
// round. Every message released in a round (decisions, StartTrial, StopTrialRequest) is queued
// per worker in the order it was made and sent by Flush: consecutive decisions go as one
// Decisions message (proto/worker.hpp), so a round that acknowledges N results of a worker and
// starts M trials on it costs 1 + M frames, and the worker's ZeroMQ I/O thread is woken once
// per burst rather than once per message (a StartTrial sent on its own would cut the round's
// decision batch in two and cost an eventfd wake-up and a context switch:
// docs/explanation/performance/index.md, "Sends to a worker once per round"). A worker sees the
// messages in the order they were made.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "proto/worker.hpp"

namespace tunebus {

class WorkerOutbox {
 public:
  /// Told whether a queued message left (false when the worker is not connected) and handed
  /// the message back, so a sender that retries keeps no copy of its own.
  using OnSent = std::function<void(bool sent, std::string payload)>;

  explicit WorkerOutbox(zmq::socket_t& workers) : workers_(workers) {}

  /// Queues a decision for `worker_id`, sent by Flush (or once kMaxBatchItems are queued in a
  /// row). A decision the worker never gets (not connected) is recovered by the worker, which
  /// resends its unacknowledged results when it reconnects.
  void QueueDecision(const std::string& worker_id, proto::DecisionItem decision);
  /// Queues `payload` (an encoded message) for `worker_id`, after what is queued for it; Flush
  /// sends it and then calls `on_sent` (if set) with whether it left.
  void Queue(const std::string& worker_id, std::string payload, OnSent on_sent = {});
  /// Sends `payload` to `worker_id` now, after what is queued for it. Returns false if the
  /// worker is not connected (the payload is dropped).
  bool Send(const std::string& worker_id, const std::string& payload);
  /// Sends what every worker has queued, in order. Called after every poll round.
  void Flush();

 private:
  // One queued item: a run of decisions (decisions non-empty) or one message.
  struct Item {
    proto::Decisions decisions;
    std::string payload;
    OnSent on_sent;
  };
  void FlushWorker(const std::string& worker_id);

  zmq::socket_t& workers_;
  std::unordered_map<std::string, std::vector<Item>> queued_;  // worker_id -> its items, in order
  std::vector<std::string> pending_;                           // workers with items queued
};

}  // namespace tunebus
