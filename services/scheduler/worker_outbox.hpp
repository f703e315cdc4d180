// WorkerOutbox: the scheduler's sends to trial-workers over the worker ROUTER. Decisions are
// batched: every decision released in one poll round goes to its worker in one Decisions
// message (proto/worker.hpp), so a round that acknowledges N results of a worker costs one
// frame, not N. Other messages (StartTrial, StopTrialRequest) go out at once, after the
// decisions already queued for that worker, so a worker sees them in the order they were made.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "proto/worker.hpp"

namespace tunebus {

class WorkerOutbox {
 public:
  explicit WorkerOutbox(zmq::socket_t& workers) : workers_(workers) {}

  /// Queues a decision for `worker_id`, sent by Flush (or once kMaxBatchItems are queued).
  void QueueDecision(const std::string& worker_id, proto::DecisionItem decision);
  /// Sends `payload` (an encoded message) to `worker_id` now, after its queued decisions.
  /// Returns false if the worker is not connected (the payload is dropped; so are queued
  /// decisions, which the worker recovers by resending their results on reconnect).
  bool Send(const std::string& worker_id, const std::string& payload);
  /// Sends every worker's queued decisions (one Decisions message per worker). Called after
  /// every poll round.
  void Flush();

 private:
  void FlushWorker(const std::string& worker_id, proto::Decisions& batch);

  zmq::socket_t& workers_;
  std::unordered_map<std::string, proto::Decisions> queued_;  // worker_id -> its batch
  std::vector<std::string> pending_;                          // workers with a non-empty batch
};

}  // namespace tunebus
