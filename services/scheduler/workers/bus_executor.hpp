// BusExecutor: the scheduler's TrialExecutor over the bus.
//
// Placement asks the resource-manager in batches: the placements and releases of one poll round
// are queued on the scheduler's PlacementBatcher (Flush, once per round), which sends every
// experiment's as one release_batch and one allocate_batch (the resource-manager answers in
// order, so an allocation sees what the round released; placement_batcher.hpp). A budget
// bounds what is asked: after a "no room" answer nothing is asked until something is freed;
// each Release sent then allows one placement, each grant one more (there may be room left),
// and a node event (a worker added or lost) lifts the bound, so a full cluster costs one
// deferred item per freed trial, not one per pending trial.
//
// Hand-over: an allocation a trial gives back (ReleaseReusable: it left RUNNING on a healthy
// worker) goes first to the next trial of the round asking for the same resources. That trial
// starts on the same worker at once: its trial_started record follows the former's terminal
// record in the journal, so both are durable together (one group commit, no resource-manager
// round trip between two trials on a slot). The resource-manager hears of it after that
// commit, as an allocate_batch item with replaces_trial_id; an allocation nobody took by the
// end of the round is released as before. Ray Tune's reuse_actors keeps a slot busy likewise.
// Launch, decisions, stops and releases are released only after the journal records that caused
// them are durable (JournalWriter::AfterDurable); decisions, starts and stops leave once per round
// per worker, in order (WorkerOutbox). A StartTrial to a worker that has not registered with this
// scheduler process yet is held and retried (kStartTries x kStartRetry); after that the attempt
// fails. Holding it keeps a StartTrial from crossing the worker's RegisterWorker, which would
// list the trial as not running and requeue it.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <zmq.hpp>

#include "libs/bus/request_client.hpp"
#include "libs/journal/journal_writer.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/trial_executor.hpp"
#include "proto/resources.hpp"
#include "services/scheduler/workers/placement_batcher.hpp"
#include "services/scheduler/workers/worker_outbox.hpp"

namespace tunebus {

class TrialRunner;

class BusExecutor final : public TrialExecutor {
 public:
  /// `store` serves checkpoint deletes; checkpoints of trial T are stored as
  /// "<journal_name>/<T>/...".
  BusExecutor(bus::EventLoop& loop, PlacementBatcher& placements, bus::RequestClient& store,
              WorkerOutbox& workers, journal::JournalWriter& journal, const ExperimentSpec& spec,
              std::string experiment_dir, std::string journal_name);

  void set_runner(TrialRunner* runner) { runner_ = runner; }
  /// The cluster changed (a worker added or lost): placement may ask freely again.
  void Unblock() { Freed(kMaxPlacementsInFlight); }
  /// Starts this round's hand-overs, then sends the resource-manager what durable records
  /// released (releases, hand-overs, in order) and this round's placements, each run as one
  /// batch. Call once per round, after the runner's Step.
  void Flush();
  /// Called when the trainable of a trial could not be reached (worker never connected).
  void set_on_unreachable(std::function<void(const Trial&)> f) { on_unreachable_ = std::move(f); }
  /// True when the worker registered with this scheduler process (StartTrial waits until then).
  void set_is_registered(std::function<bool(const std::string&)> f) {
    is_registered_ = std::move(f);
  }
  /// False while no trial may start (the result files are behind); unset = always.
  void set_may_place(std::function<bool()> f) { may_place_ = std::move(f); }

  /// True while the StartTrial of this attempt has not gone out (waiting for durability or for
  /// the worker to register): a RegisterWorker that does not list the trial is then no loss.
  bool StartUnsent(const std::string& trial_id, int64_t attempt) const;

  /// Up to kMaxPlacementsInFlight placements are asked at once, within the budget (see above).
  bool CanPlace() const override {
    if (may_place_ && !may_place_()) return false;
    return !reusable_.empty() || (budget_ > 0 && placing_ < kMaxPlacementsInFlight);
  }
  /// True when nothing it asked or staged waits: no placement, allocation, release, hand-over
  /// or StartTrial pending.
  bool Idle() const {
    return placing_ == 0 && allocations_.empty() && reusable_.empty() && handovers_.empty() &&
           rm_ops_.empty() && unsent_starts_.empty();
  }
  void PlaceTrial(const Trial& trial, int64_t attempt) override;
  void LaunchTrial(const Trial& trial) override;
  void SendDecision(const Trial& trial, int64_t seq, Action action) override;
  void StopTrial(const Trial& trial) override;
  void ReleaseResources(const Trial& trial) override;
  void ReleaseReusable(const Trial& trial) override;
  void DeleteCheckpoint(const std::string& checkpoint_id) override;

 private:
  // Queues the StartTrial of (trial_id, attempt) if that attempt still waits for it.
  void SendStart(const std::string& worker_id, std::string payload, const std::string& trial_id,
                 int64_t attempt, int tries_left);
  // The worker was not reachable: SendStart again after kStartRetry, or give up after the last try.
  void RetryStart(const std::string& worker_id, std::string payload, const std::string& trial_id,
                  int64_t attempt, int tries_left);
  /// Hands the answers to `asked` (or the error of the request that carried them) to the
  /// runner, in order. `epoch`: freed_epoch_ when they were queued.
  void OnAllocations(const std::vector<proto::AllocateItem>& asked, uint64_t epoch,
                     Result<std::vector<proto::Allocation>> allocations);
  /// Something was freed: `placements` more may be asked.
  void Freed(int placements) {
    AddBudget(placements);
    ++freed_epoch_;
  }
  void AddBudget(int placements) {
    budget_ = std::min(budget_ + placements, kMaxPlacementsInFlight);
  }
  /// True (and the allocation is reusable again) if `trial` is the hand-over being started.
  bool TakeBackHandOver(const Trial& trial);
  /// Queues the resource-manager changes of rm_ops_, in order, consecutive kinds batched.
  void SendRmOps();

  // An allocation given back this round and not yet returned to the resource-manager, which
  // still holds it for (holder_trial_id, holder_attempt).
  struct Reusable {
    std::string holder_trial_id;
    int64_t holder_attempt = 0;
    std::string worker_id;
    std::vector<std::string> gpu_ids;
    Resources resources;
  };
  struct HandOver {
    std::string trial_id;  // the attempt that takes `from` over
    int64_t attempt = 0;
    Reusable from;
  };
  // A resource-manager change released by durable records: a release (item.replaces_trial_id
  // empty: release trial_id/attempt) or a hand-over.
  struct RmOp {
    bool release = false;
    proto::AllocateItem item;
  };

  bus::EventLoop& loop_;
  PlacementBatcher& placements_;  // the resource-manager requests, every experiment's per round
  bus::RequestClient& store_;
  WorkerOutbox& workers_;
  journal::JournalWriter& journal_;
  const ExperimentSpec& spec_;
  std::string experiment_dir_;
  std::string journal_name_;
  TrialRunner* runner_ = nullptr;
  std::function<void(const Trial&)> on_unreachable_;
  std::function<bool(const std::string&)> is_registered_;
  std::function<bool()> may_place_;
  std::map<std::string, int64_t> unsent_starts_;  // trial_id -> attempt whose StartTrial waits
  static constexpr int kMaxPlacementsInFlight = 256;
  int budget_ = kMaxPlacementsInFlight;  // placements that may be asked now
  int placing_ = 0;                      // placements asked (staged or in flight), not answered
  uint64_t freed_epoch_ = 0;  // counts Freed(): a "no room" from before a release is stale
  std::vector<proto::AllocateItem> allocations_;  // this round's, until Flush
  std::vector<Reusable> reusable_;                // this round's, until Flush
  std::vector<HandOver> handovers_;               // this round's, until Flush
  const HandOver* starting_ = nullptr;            // the hand-over Flush is starting
  std::vector<RmOp> rm_ops_;                      // durable, until Flush
};

}  // namespace tunebus
