// BusExecutor: the scheduler's TrialExecutor over the bus.
//
// Placement asks the resource-manager (Allocate, several pipelined), and after a "no room"
// answer no new request goes out until something is freed (a Release we sent, or a node event
// from the resource-manager), so a full cluster costs no traffic. Launch, decisions, stops and
// releases are released only after the journal records that caused them are durable
// (JournalWriter::AfterDurable); decisions leave batched per worker (WorkerOutbox). A StartTrial to a worker that has not registered with this
// scheduler process yet is held and retried (kStartTries x kStartRetry); after that the attempt
// fails. Holding it keeps a StartTrial from crossing the worker's RegisterWorker, which would
// list the trial as not running and requeue it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "libs/bus/request_client.hpp"
#include "libs/journal/journal_writer.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/trial_executor.hpp"
#include "services/scheduler/worker_outbox.hpp"

namespace tunebus {

class TrialRunner;

class BusExecutor final : public TrialExecutor {
 public:
  /// `store` serves checkpoint deletes; checkpoints of trial T are stored as
  /// "<journal_name>/<T>/...".
  BusExecutor(bus::EventLoop& loop, bus::RequestClient& rm, bus::RequestClient& store,
              WorkerOutbox& workers, journal::JournalWriter& journal, const ExperimentSpec& spec,
              std::string experiment_dir, std::string journal_name);

  void set_runner(TrialRunner* runner) { runner_ = runner; }
  /// Something was freed in the cluster: placement may be tried again.
  void Unblock() { blocked_ = false; }
  /// Called when the trainable of a trial could not be reached (worker never connected).
  void set_on_unreachable(std::function<void(const Trial&)> f) { on_unreachable_ = std::move(f); }
  /// True when the worker registered with this scheduler process (StartTrial waits until then).
  void set_is_registered(std::function<bool(const std::string&)> f) { is_registered_ = std::move(f); }

  /// True while the StartTrial of this attempt has not gone out (waiting for durability or for
  /// the worker to register): a RegisterWorker that does not list the trial is then no loss.
  bool StartUnsent(const std::string& trial_id, int64_t attempt) const;

  /// Up to kMaxPlacementsInFlight Allocate requests are pipelined to the resource-manager (it
  /// answers them in order); after a "no room" answer none is sent until something is freed.
  bool CanPlace() const override { return !blocked_ && placing_ < kMaxPlacementsInFlight; }
  void PlaceTrial(const Trial& trial, int64_t attempt) override;
  void LaunchTrial(const Trial& trial) override;
  void SendDecision(const Trial& trial, int64_t seq, const char* action) override;
  void StopTrial(const Trial& trial) override;
  void ReleaseResources(const Trial& trial) override;
  void DeleteCheckpoint(const std::string& checkpoint_id) override;

 private:
  void SendStart(const std::string& worker_id, std::string payload, const Trial& trial, int tries_left);

  bus::EventLoop& loop_;
  bus::RequestClient& rm_;
  bus::RequestClient& store_;
  WorkerOutbox& workers_;
  journal::JournalWriter& journal_;
  const ExperimentSpec& spec_;
  std::string experiment_dir_;
  std::string journal_name_;
  TrialRunner* runner_ = nullptr;
  std::function<void(const Trial&)> on_unreachable_;
  std::function<bool(const std::string&)> is_registered_;
  std::map<std::string, int64_t> unsent_starts_;  // trial_id -> attempt whose StartTrial waits
  bool blocked_ = false;
  static constexpr int kMaxPlacementsInFlight = 32;
  int placing_ = 0;  // Allocate requests in flight
};

}  // namespace tunebus
