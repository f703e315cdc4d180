// FairShare: how many trials each unfinished experiment may hold at once when they compete for
// the cluster, by weighted Dominant Resource Fairness (Ghodsi et al., "Dominant Resource
// Fairness: Fair Allocation of Multiple Resource Types", NSDI 2011, §4 and §4.3 "weighted
// DRF"). Pure: no sockets, no clock; the scheduler feeds it the cluster's capacity and each
// experiment's demand (FairShareArbiter::Apply, fair_share_arbiter.hpp, every round, refilling
// only when QuotasStillHold says the quotas changed or kQuotaRefresh has passed) and caps each
// experiment's placements at its quota (Experiment::set_trial_quota).
// docs/explanation/fair-share.md states the policy with a worked example.
//
// Units: Resources are fixed-point (Resources::kScale units per whole; memory in bytes). An
// experiment's dominant share is the largest, over resource kinds, of what its trials hold
// divided by the cluster's capacity of that kind (kinds with no capacity are left out); its
// weighted share is that divided by its weight.
//
// Progressive filling (§4): starting from nothing, the experiment with the lowest weighted
// dominant share whose next trial still fits in what is left of the capacity gets one more
// trial, until no experiment that wants more fits. Ties go to the experiment with the least
// weighted attained service (its dominant-share-seconds so far divided by its weight: the
// least-attained-service rule of Tiresias, NSDI 2019, §4), then to the one listed first. DRF
// alone divides an instant; when the capacity does not divide evenly (50 equal experiments on
// 64 CPUs: 14 get 2 trials, 36 get 1), this tie-break moves the remainder to whoever has had
// least, so the shares even out over time instead of always favouring the same experiments.
// The result is each experiment's quota: its fair number of concurrent trials. It is
// work-conserving: what one experiment does not want goes to the others.
//
// Approximations: capacity is summed over workers (a trial that needs a whole worker's room may
// still not fit one worker though the sum has room: the resource-manager then answers
// "insufficient" and the trial waits, as it would alone). Every trial of an experiment asks the
// same resources (resources_per_trial; a trial changed by set-resources counts as asking that).
//
// Invariants (checked, aborting on violation): a quota is >= 0 and <= the experiment's wanted
// trials; the quotas' resources together fit in the capacity, or every quota is the wanted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libs/core/resources.hpp"

namespace tunebus {

/// One unfinished experiment's claim on the cluster.
struct FairShareDemand {
  double weight = 1;    // > 0; `weight` in the experiment file, `tunectl set-weight`
  Resources per_trial;  // one trial's request (resources_per_trial)
  /// Trials it could hold now: those it holds plus those waiting to be placed, capped by its
  /// max_concurrent_trials.
  int64_t wanted = 0;
  /// Service it has had so far: dominant-share-seconds (Experiment::AccrueService), >= 0. Only
  /// breaks ties between equal weighted shares.
  double attained = 0;
};

/// The quotas for `demands` (same order) over `capacity`, by weighted DRF progressive filling.
/// An experiment whose trial asks nothing (empty resources) or of a kind the cluster lacks
/// gets its `wanted` (nothing to share, or the resource-manager refuses it anyway).
/// REQUIRES: every weight > 0 and every wanted >= 0.
std::vector<int64_t> WeightedDrfQuotas(const Resources& capacity,
                                       const std::vector<FairShareDemand>& demands);

/// Whether `quotas`, what WeightedDrfQuotas gave for demands wanting `wanted_then`, is what it
/// gives again for the same demands wanting `wanted_now` (same order and size), without filling
/// again: every experiment that got all it wanted (quota == wanted) wants the same, and every
/// other still wants more than its quota (the filling stopped giving to it for lack of room,
/// whatever it wants above that). Attained service, which only orders ties, is not compared:
/// the scheduler refills now and then anyway so that ties rotate.
bool QuotasStillHold(const std::vector<int64_t>& quotas, const std::vector<int64_t>& wanted_then,
                     const std::vector<int64_t>& wanted_now);

/// The dominant share of `held` in `capacity`: max over kinds of held / capacity (kinds the
/// capacity lacks are left out), in [0, ...); 0 for an empty capacity.
double DominantShare(const Resources& held, const Resources& capacity);

}  // namespace tunebus
