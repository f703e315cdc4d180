// FairShareArbiter: divides the cluster among the running experiments, every round, by weighted
// DRF (fair_share.hpp, Ghodsi et al., NSDI 2011 §4.3), and makes them keep to it.
//
// Owns:
//   - the cluster's capacity (alive workers' sum) as the resource-manager last said
//     (RefreshCapacity: at Start, on node_added / node_lost, and every kCapacityRefresh);
//   - the last filling (WeightedDrfQuotas) and what it was made from: the running experiments,
//     their weights, the trials they wanted, the capacity and when. Apply refills only when one
//     of these changed, when QuotasStillHold says the quotas would, or kQuotaRefresh after the
//     last filling (ties rotate by attained service, which changes every round);
//   - the attained-service clock: Accrue adds the time since the previous round's end to each
//     running experiment's attained service at the trials it held in between (the filling's
//     tie-break, Tiresias NSDI 2019 §4).
// It sets each running experiment's trial quota (Experiment::set_trial_quota), preempts
// (Experiment::Preempt) `preemptible` experiments above their quota while another waits below
// its own, and readmits (Experiment::Readmit) what preemption paused once there is room. The
// experiments are the registry's; the arbiter keeps no pointer to one past a round.
//
// Threads: all on the scheduler's loop thread: Apply before the runners step, Accrue after the
// round's placements, the capacity answer in the resource-manager client's callback.
//
// Invariants: with fewer than two running experiments wanting trials, or no known capacity,
// no experiment has a quota (nothing to share); otherwise each running experiment's quota is
// the last filling's, which WeightedDrfQuotas checks (quotas fit the capacity or equal the
// wants). An ended or resuming experiment's quota is left as it was (it places nothing).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/resources.hpp"

namespace tunebus {

class Experiment;
class ExperimentRegistry;

class FairShareArbiter {
 public:
  static constexpr bus::Duration kCapacityRefresh{10000};
  static constexpr bus::Duration kQuotaRefresh{100};

  /// `registry`, `rm` (the resource-manager client), `loop` and `clock` outlive the arbiter.
  FairShareArbiter(ExperimentRegistry& registry, bus::RequestClient& rm, bus::EventLoop& loop,
                   const Clock& clock);

  /// RefreshCapacity now and every kCapacityRefresh while the loop runs.
  void Start();
  /// Asks the resource-manager for the cluster's capacity; its answer (alive nodes' capacity
  /// summed) replaces the capacity; a failed request keeps the last known one.
  void RefreshCapacity();
  /// The cluster's capacity, as RefreshCapacity's answer sets it.
  void SetCapacity(Resources capacity) { capacity_ = std::move(capacity); }
  const Resources& capacity() const { return capacity_; }

  /// Sets each running experiment's trial quota for this round: their weighted DRF shares of
  /// the capacity while two or more want trials, else no cap; then preempts and readmits.
  void Apply();
  /// At the end of a round (placements made): accrues attained service since the previous one.
  void Accrue();
  /// {"weight", "share" (dominant share of what it holds), "usage" (amounts held),
  ///  "trial_quota" (when it has one)} of `e`.
  nlohmann::json ShareJson(const Experiment& e) const;

 private:
  struct Fill {
    std::vector<Experiment*> running;
    std::vector<double> weights;
    std::vector<int64_t> wanted;
    Resources capacity;
    SteadyTime filled;
    std::vector<int64_t> quotas;
  };
  void RefreshEvery();

  ExperimentRegistry& registry_;
  bus::RequestClient& rm_;
  bus::EventLoop& loop_;
  const Clock& clock_;
  Resources capacity_;
  std::optional<Fill> fill_;
  SteadyTime last_accrual_{};
};

}  // namespace tunebus
