// FairShareArbiter alone (services/scheduler/core/fair_share_arbiter.hpp) on a ManualClock:
// experiments of the mock trainable, each wanting more CPUs than the cluster has, submitted into
// an ExperimentRegistry with no resource-manager answering (SchedulerPartsHarness), and the
// cluster's capacity set as the resource-manager's answer would. What is checked is the quota
// each running experiment gets, when it is refilled, and the share view.
#include "services/scheduler/core/fair_share_arbiter.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "libs/tune/trial_control.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "tests/unit/scheduler_parts_harness.hpp"

namespace tunebus {
namespace {

using namespace std::chrono_literals;
using testing::SchedulerPartsHarness;

Resources Cpus(int64_t n) { return *Resources::FromAmounts({{"cpu", double(n)}}); }

// One experiment alone has nothing to share: no quota, whatever the capacity.
TEST(FairShareArbiterTest, ALoneExperimentHasNoQuota) {
  SchedulerPartsHarness h;
  FairShareArbiter arbiter(*h.registry, *h.rm, h.loop, h.clock);
  Experiment* a = h.Submit("alpha", 8);
  a->set_trial_quota(1);
  arbiter.SetCapacity(Cpus(4));
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), std::nullopt);
}

// Two experiments each wanting 8 one-CPU trials on 4 CPUs: weights 1 and 1 get 2 and 2; a
// weight of 3 (tunectl set-weight) refills at once to 3 and 1; a larger cluster to 6 and 2.
TEST(FairShareArbiterTest, QuotasFollowTheWeightsAndAreRefilledWhenTheyChange) {
  SchedulerPartsHarness h;
  FairShareArbiter arbiter(*h.registry, *h.rm, h.loop, h.clock);
  Experiment* a = h.Submit("alpha", 8);
  Experiment* b = h.Submit("beta", 8);
  ASSERT_GT(a->Wanted(), 4);
  ASSERT_GT(b->Wanted(), 4);

  arbiter.Apply();  // no capacity known yet: no cap
  EXPECT_EQ(a->trial_quota(), std::nullopt);
  EXPECT_EQ(b->trial_quota(), std::nullopt);

  arbiter.SetCapacity(Cpus(4));
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), 2);
  EXPECT_EQ(b->trial_quota(), 2);

  a->SetWeight(3);
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), 3);
  EXPECT_EQ(b->trial_quota(), 1);

  arbiter.SetCapacity(Cpus(8));
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), 6);
  EXPECT_EQ(b->trial_quota(), 2);

  const nlohmann::json share = arbiter.ShareJson(*a);
  EXPECT_EQ(share["weight"], 3.0);
  EXPECT_EQ(share["trial_quota"], 6);
  EXPECT_TRUE(share.contains("share"));
  EXPECT_TRUE(share.contains("usage"));

  // One ends: the other wants alone, and its cap goes.
  TrialControl(b->runner()).StopExperiment("stopped by the test");
  h.registry->StepRunning();
  ASSERT_EQ(b->phase(), Experiment::Phase::kEnded);
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), std::nullopt);
}

// Work-conserving: what one experiment does not want goes to the others. On 4 CPUs, one capped
// at max_concurrent_trials: 1 gets 1 and the other the 3 left; the filling then stands while
// nothing it depends on changes, before and after kQuotaRefresh.
TEST(FairShareArbiterTest, WhatOneExperimentDoesNotWantGoesToTheOther) {
  SchedulerPartsHarness h;
  FairShareArbiter arbiter(*h.registry, *h.rm, h.loop, h.clock);
  Experiment* a = h.Submit("alpha", 8);
  Experiment* b = h.Submit("beta", 8, "max_concurrent_trials: 1\n");
  ASSERT_EQ(b->Wanted(), 1);
  arbiter.SetCapacity(Cpus(4));
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), 3);
  EXPECT_EQ(b->trial_quota(), 1);

  // Its placements granted: RUNNING trials hold their CPUs (a placement still at the
  // resource-manager holds nothing, Experiment::AccrueService).
  for (const Trial& t : a->runner().trials()) {
    if (a->runner().phases().Is(t.index, RunnerPhase::kPlacing))
      a->runner().OnTrialPlaced(t.trial_id, t.attempt + 1, "w1", {});
  }
  ASSERT_GT(a->runner().phases().running(), 0);
  h.clock.Advance(FairShareArbiter::kQuotaRefresh / 2);
  arbiter.Accrue();
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), 3);
  EXPECT_EQ(b->trial_quota(), 1);
  h.clock.Advance(FairShareArbiter::kQuotaRefresh * 2);
  arbiter.Accrue();
  arbiter.Apply();
  EXPECT_EQ(a->trial_quota(), 3);
  EXPECT_EQ(b->trial_quota(), 1);
  EXPECT_GT(a->attained(), 0);  // it held trials between the rounds
}

}  // namespace
}  // namespace tunebus
