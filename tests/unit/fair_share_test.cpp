// WeightedDrfQuotas (services/scheduler/core/fair_share.hpp): weighted Dominant Resource Fairness
// by progressive filling, checked against the DRF paper's own example (Ghodsi et al., NSDI 2011,
// §4: 9 CPUs and 18 GB shared by tasks of <1 CPU, 4 GB> and <3 CPUs, 1 GB>) and the cases the
// scheduler meets: weights, an experiment that wants less than its share, kinds the cluster
// lacks, GPUs.
#include "services/scheduler/core/fair_share.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace tunebus {
namespace {

Resources R(const std::map<std::string, double>& amounts) {
  auto r = Resources::FromAmounts(amounts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Resources();
}

TEST(FairShareTest, ThePapersExampleGivesThreeTasksOfAAndTwoOfB) {
  // §4: A's dominant resource is memory (4/18 per task), B's is CPU (3/9 per task); DRF
  // equalizes them at 2/3: A runs 3 tasks <3 CPU, 12 GB>, B runs 2 <6 CPU, 2 GB>.
  const Resources capacity = R({{"cpu", 9}, {"memory", 18}});
  const std::vector<int64_t> q = WeightedDrfQuotas(
      capacity,
      {{1, R({{"cpu", 1}, {"memory", 4}}), 100}, {1, R({{"cpu", 3}, {"memory", 1}}), 100}});
  EXPECT_EQ(q, (std::vector<int64_t>{3, 2}));
  EXPECT_DOUBLE_EQ(DominantShare(R({{"cpu", 3}, {"memory", 12}}), capacity), 12.0 / 18);
  EXPECT_DOUBLE_EQ(DominantShare(R({{"cpu", 6}, {"memory", 2}}), capacity), 6.0 / 9);
}

TEST(FairShareTest, WeightsDivideTheClusterInTheirRatio) {
  // §4.3: weighted DRF equalizes share / weight. Weights 1 and 3 over 4 CPUs of 1-CPU trials.
  const Resources capacity = R({{"cpu", 4}});
  EXPECT_EQ(WeightedDrfQuotas(capacity, {{1, R({{"cpu", 1}}), 10}, {3, R({{"cpu", 1}}), 10}}),
            (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(WeightedDrfQuotas(capacity, {{1, R({{"cpu", 1}}), 10}, {1, R({{"cpu", 1}}), 10}}),
            (std::vector<int64_t>{2, 2}));
  // Three equal experiments on 4 CPUs: the older ones get the odd CPU (ties by order).
  EXPECT_EQ(
      WeightedDrfQuotas(
          capacity, {{1, R({{"cpu", 1}}), 10}, {1, R({{"cpu", 1}}), 10}, {1, R({{"cpu", 1}}), 10}}),
      (std::vector<int64_t>{2, 1, 1}));
}

TEST(FairShareTest, WhatOneDoesNotWantGoesToTheOthers) {
  // Work conservation: an experiment with one trial left leaves the rest to the other; one that
  // wants nothing gets nothing.
  const Resources capacity = R({{"cpu", 8}});
  EXPECT_EQ(WeightedDrfQuotas(capacity, {{5, R({{"cpu", 1}}), 1}, {1, R({{"cpu", 1}}), 20}}),
            (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(WeightedDrfQuotas(capacity, {{1, R({{"cpu", 1}}), 0}, {1, R({{"cpu", 2}}), 20}}),
            (std::vector<int64_t>{0, 4}));
  // Alone: everything that fits.
  EXPECT_EQ(WeightedDrfQuotas(capacity, {{1, R({{"cpu", 3}}), 20}}), (std::vector<int64_t>{2}));
}

TEST(FairShareTest, GpusAreTheDominantResourceOfGpuTrials) {
  // 16 CPUs and 4 GPUs: <1 CPU, 1 GPU> trials (dominant: GPU, 1/4 each) against <4 CPU> trials
  // (dominant: CPU, 1/4 each), equal weights: they alternate until the CPU trials stop fitting.
  const Resources capacity = R({{"cpu", 16}, {"gpu", 4}});
  const std::vector<int64_t> q =
      WeightedDrfQuotas(capacity, {{1, R({{"cpu", 1}, {"gpu", 1}}), 10}, {1, R({{"cpu", 4}}), 10}});
  // Filling: g1 c1 g2 c2 g3 c3 (CPUs left: 16-3-12 = 1) g4; c4 does not fit.
  EXPECT_EQ(q, (std::vector<int64_t>{4, 3}));
  // Fractional GPUs share: 0.5-GPU trials against 1-GPU trials on 2 GPUs, equal weights.
  EXPECT_EQ(WeightedDrfQuotas(R({{"cpu", 8}, {"gpu", 2}}),
                              {{1, R({{"gpu", 0.5}}), 10}, {1, R({{"gpu", 1}}), 10}}),
            (std::vector<int64_t>{2, 1}));
}

TEST(FairShareTest, DocsSchedulingWorkedExampleHolds) {
  // docs/explanation/fair-share.md: `vision` <1 CPU, 1 GPU> against `tabular` <3 CPUs>.
  const FairShareDemand vision{1, R({{"cpu", 1}, {"gpu", 1}}), 99};
  FairShareDemand tabular{1, R({{"cpu", 3}}), 99};
  EXPECT_EQ(WeightedDrfQuotas(R({{"cpu", 12}, {"gpu", 4}}), {vision, tabular}),
            (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(WeightedDrfQuotas(R({{"cpu", 24}, {"gpu", 4}}), {vision, tabular}),
            (std::vector<int64_t>{4, 6}));
  tabular.weight = 2;
  EXPECT_EQ(WeightedDrfQuotas(R({{"cpu", 12}, {"gpu", 4}}), {vision, tabular}),
            (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(WeightedDrfQuotas(R({{"cpu", 24}, {"gpu", 4}}), {vision, tabular}),
            (std::vector<int64_t>{3, 7}));
}

TEST(FairShareTest, TiesGoToTheLeastWeightedAttainedServiceThenToTheFirstListed) {
  // 3 equal experiments on 4 CPUs: one trial each, the fourth to the tie's winner.
  const Resources capacity = R({{"cpu", 4}});
  auto demand = [](double weight, double attained) {
    return FairShareDemand{weight, R({{"cpu", 1}}), 10, attained};
  };
  EXPECT_EQ(WeightedDrfQuotas(capacity, {demand(1, 0), demand(1, 0), demand(1, 0)}),
            (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(WeightedDrfQuotas(capacity, {demand(1, 5), demand(1, 1), demand(1, 3)}),
            (std::vector<int64_t>{1, 2, 1}));
  // Attained service counts divided by the weight, and only among equal weighted shares: the
  // first (weight 2) had the most service yet gets its 2 trials; the last CPU goes to the third.
  EXPECT_EQ(WeightedDrfQuotas(R({{"cpu", 5}}), {demand(2, 9), demand(1, 4), demand(1, 3)}),
            (std::vector<int64_t>{2, 1, 2}));
}

TEST(FairShareTest, QuotasStillHoldOnlyWhenAFillWithTheNewWantsGivesTheSameQuotas) {
  // Property, over 2,000 random clusters and demands (fixed seed): whenever QuotasStillHold says
  // the quotas of `wanted_then` hold for `wanted_now`, filling again with `wanted_now` gives them
  // (attained service unchanged). And the cases it must refuse: a capped experiment that wants
  // more, an uncapped one that drops to its quota.
  std::mt19937_64 rng(34);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int held = 0;
  for (int round = 0; round < 2000; ++round) {
    const Resources capacity = R({{"cpu", double(pick(1, 64))}, {"gpu", double(pick(0, 8))}});
    std::vector<FairShareDemand> demands(size_t(pick(2, 8)));
    for (FairShareDemand& d : demands) {
      d.weight = double(pick(1, 4));
      d.per_trial =
          pick(0, 3) == 0 ? R({{"cpu", 1}, {"gpu", 1}}) : R({{"cpu", double(pick(1, 4))}});
      d.wanted = pick(0, 20);
      d.attained = double(pick(0, 3));
    }
    const std::vector<int64_t> quotas = WeightedDrfQuotas(capacity, demands);
    std::vector<int64_t> then, now;
    for (FairShareDemand& d : demands) {
      then.push_back(d.wanted);
      d.wanted = std::max<int64_t>(0, d.wanted + pick(-3, 3));
      now.push_back(d.wanted);
    }
    if (!QuotasStillHold(quotas, then, now)) continue;
    ++held;
    EXPECT_EQ(WeightedDrfQuotas(capacity, demands), quotas) << "round " << round;
  }
  EXPECT_GT(held, 100);                                   // the property was exercised
  EXPECT_FALSE(QuotasStillHold({2, 3}, {2, 9}, {3, 9}));  // the first got all it wanted: wants more
  EXPECT_FALSE(QuotasStillHold({2, 3}, {2, 9}, {2, 3}));  // the second drops to its quota
  EXPECT_TRUE(QuotasStillHold({2, 3}, {2, 9}, {2, 4}));
}

TEST(FairShareTest, AKindTheClusterLacksOrAnEmptyRequestIsNotShared) {
  // A trial asking a custom resource no worker has, or nothing at all, is not divided: its
  // experiment keeps its wanted (the resource-manager refuses or places it as it would alone).
  const Resources capacity = R({{"cpu", 2}});
  EXPECT_EQ(WeightedDrfQuotas(capacity, {{1, R({{"cpu", 1}, {"tpu", 1}}), 3},
                                         {1, Resources(), 5},
                                         {1, R({{"cpu", 1}}), 4}}),
            (std::vector<int64_t>{3, 5, 2}));
}

}  // namespace
}  // namespace tunebus
