// ClusterState (services/resource-manager/placement.hpp): pure placement and bookkeeping,
// stepped with explicit times; no sockets, no clock.
#include "services/resource-manager/placement.hpp"

#include <gtest/gtest.h>

#include <random>

namespace tunebus {
namespace {

using Kind = AllocationDecision::Kind;

Resources R(const std::map<std::string, double>& amounts) {
  return Resources::FromAmounts(amounts).value();
}

constexpr int64_t kGiB = 1ll << 30;

class PlacementTest : public ::testing::Test {
 protected:
  void Register(const std::string& id, const std::map<std::string, double>& capacity,
                Millis now = Millis{0}) {
    auto r = cluster_.RegisterNode(id, id + ".local", R(capacity), {}, now);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  AllocationDecision Allocate(const std::string& trial, const std::map<std::string, double>& ask,
                              int64_t attempt = 1) {
    AllocationDecision d = cluster_.Allocate(trial, attempt, R(ask));
    EXPECT_TRUE(cluster_.CheckInvariants().ok()) << cluster_.CheckInvariants().ToString();
    return d;
  }
  const proto::NodeView& Node(const std::string& id) {
    view_ = cluster_.View();
    for (const auto& n : view_.nodes) {
      if (n.worker_id == id) return n;
    }
    ADD_FAILURE() << "no node " << id;
    return view_.nodes.front();
  }

  ClusterState cluster_;
  proto::ClusterView view_;
};

TEST_F(PlacementTest, OneGpuWorkerRunsOneGpuTrialAtATime) {
  // 4 CPUs + 1 GPU; trials ask cpu=1, gpu=1: the GPU, not the CPUs, limits them to one.
  Register("w1", {{"cpu", 4}, {"gpu", 1}});
  auto t1 = Allocate("t1", {{"cpu", 1}, {"gpu", 1}});
  ASSERT_TRUE(t1.granted());
  EXPECT_EQ(t1.worker_id, "w1");
  EXPECT_EQ(t1.gpu_ids, std::vector<std::string>{"0"});
  auto t2 = Allocate("t2", {{"cpu", 1}, {"gpu", 1}});
  EXPECT_EQ(t2.kind, Kind::kInsufficient) << t2.reason;
  EXPECT_TRUE(cluster_.Release("t1", 1));
  EXPECT_TRUE(Allocate("t2", {{"cpu", 1}, {"gpu", 1}}).granted());
}

TEST_F(PlacementTest, HalfGpuTrialsShareOneGpuAndAThirdWaits) {
  // Two gpu=0.5 trials share GPU "0"; a third 0.5 finds no room.
  Register("w1", {{"cpu", 8}, {"gpu", 1}});
  auto a = Allocate("t1", {{"gpu", 0.5}});
  auto b = Allocate("t2", {{"gpu", 0.5}});
  ASSERT_TRUE(a.granted());
  ASSERT_TRUE(b.granted());
  EXPECT_EQ(a.gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(b.gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(Allocate("t3", {{"gpu", 0.5}}).kind, Kind::kInsufficient);
}

TEST_F(PlacementTest, ThirdsOfAGpuFitThreeTimesAndReleaseReturnsExactlyToZero) {
  // 0.33 x 3 = 9900 units fit one GPU, a 4th does not; releasing all leaves nothing committed.
  Register("w1", {{"cpu", 8}, {"gpu", 1}});
  for (const char* t : {"t1", "t2", "t3"}) {
    auto d = Allocate(t, {{"cpu", 1}, {"gpu", 0.33}});
    ASSERT_TRUE(d.granted()) << t << ": " << d.reason;
    EXPECT_EQ(d.gpu_ids, std::vector<std::string>{"0"});
  }
  EXPECT_EQ(Node("w1").committed.at("gpu"), 9900);
  EXPECT_EQ(Allocate("t4", {{"cpu", 1}, {"gpu", 0.33}}).kind, Kind::kInsufficient);
  for (const char* t : {"t1", "t2", "t3"}) EXPECT_TRUE(cluster_.Release(t, 1));
  EXPECT_TRUE(Node("w1").committed.empty());
  EXPECT_TRUE(Node("w1").trials.empty());
  EXPECT_TRUE(Allocate("t5", {{"gpu", 1}}).granted());
}

TEST_F(PlacementTest, FractionsPackOntoTheMostUsedGpuThatFits) {
  // Two GPUs: fractions stack on the GPU already in use, leaving the other whole for gpu=1.
  Register("w1", {{"cpu", 8}, {"gpu", 2}});
  EXPECT_EQ(Allocate("t1", {{"gpu", 0.25}}).gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(Allocate("t2", {{"gpu", 0.25}}).gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(Allocate("t3", {{"gpu", 1}}).gpu_ids, std::vector<std::string>{"1"});
  EXPECT_EQ(Allocate("t4", {{"gpu", 0.5}}).gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(Allocate("t5", {{"gpu", 0.1}}).kind, Kind::kInsufficient);
}

TEST_F(PlacementTest, WholeGpuRequestNeedsFullyFreeGpusNotScatteredShares) {
  // 3 GPUs each partly used leave 1.3 GPUs free in total, but no whole GPU: gpu=1 waits.
  Register("w1", {{"cpu", 8}, {"gpu", 3}});
  EXPECT_EQ(Allocate("t1", {{"gpu", 0.5}}).gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(Allocate("t2", {{"gpu", 0.6}}).gpu_ids, std::vector<std::string>{"1"});
  EXPECT_EQ(Allocate("t3", {{"gpu", 0.6}}).gpu_ids, std::vector<std::string>{"2"});
  EXPECT_EQ(Allocate("t4", {{"gpu", 1}}).kind, Kind::kInsufficient);
  EXPECT_TRUE(cluster_.Release("t2", 1));
  EXPECT_EQ(Allocate("t4", {{"gpu", 1}}).gpu_ids, std::vector<std::string>{"1"});
}

TEST_F(PlacementTest, MultiGpuTrialGetsDistinctGpuIds) {
  // gpu=2 on a worker with GPUs "a","b","c" takes two distinct fully free ids.
  ASSERT_TRUE(
      cluster_.RegisterNode("w1", "h", R({{"cpu", 4}, {"gpu", 3}}), {"a", "b", "c"}, Millis{0})
          .ok());
  auto d = Allocate("t1", {{"gpu", 2}});
  ASSERT_TRUE(d.granted());
  EXPECT_EQ(d.gpu_ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Allocate("t2", {{"gpu", 2}}).kind, Kind::kInsufficient);
}

TEST_F(PlacementTest, CustomResourceWithTotalTwoRunsOneTrialAtATime) {
  // A custom resource {a: 2} and trials asking a=2: one at a time although CPUs are plenty.
  Register("w1", {{"cpu", 8}, {"a", 2}});
  ASSERT_TRUE(Allocate("t1", {{"cpu", 1}, {"a", 2}}).granted());
  EXPECT_EQ(Allocate("t2", {{"cpu", 1}, {"a", 2}}).kind, Kind::kInsufficient);
  EXPECT_TRUE(cluster_.Release("t1", 1));
  EXPECT_TRUE(Allocate("t2", {{"cpu", 1}, {"a", 2}}).granted());
}

TEST_F(PlacementTest, MemoryIsCountedInBytes) {
  // 4 GiB of memory: a 3 GiB trial fits once, an 8 GiB trial never.
  Register("w1", {{"cpu", 8}, {"memory", 4.0 * kGiB}});
  ASSERT_TRUE(Allocate("t1", {{"memory", 3.0 * kGiB}}).granted());
  EXPECT_EQ(Allocate("t2", {{"memory", 3.0 * kGiB}}).kind, Kind::kInsufficient);
  auto big = Allocate("t3", {{"memory", 8.0 * kGiB}});
  EXPECT_EQ(big.kind, Kind::kInfeasible);
  EXPECT_EQ(big.reason,
            "trial t3 asks memory=8589934592 but the largest worker offers memory=4294967296 (w1)");
}

TEST_F(PlacementTest, InfeasibleMessageNamesTheAskAndTheLargestWorker) {
  // No worker could ever hold cpu=8, gpu=1: infeasible, naming the ask and the biggest worker.
  Register("w1", {{"cpu", 4}});
  Register("w2", {{"cpu", 2}});
  auto d = Allocate("t3", {{"cpu", 8}, {"gpu", 1}});
  EXPECT_EQ(d.kind, Kind::kInfeasible);
  EXPECT_EQ(d.reason, "trial t3 asks cpu=8, gpu=1 but the largest worker offers cpu=4, gpu=0 (w1)");
}

TEST_F(PlacementTest, NoAliveWorkerIsInsufficientNotInfeasible) {
  // Without workers nothing is infeasible yet: workers may still register.
  auto d = Allocate("t1", {{"cpu", 1}});
  EXPECT_EQ(d.kind, Kind::kInsufficient);
  EXPECT_EQ(d.reason, "no workers registered");
  Register("w1", {{"cpu", 1}});
  ASSERT_EQ(cluster_.ExpireNodes(Millis{5000}, Millis{3000}).size(), 1u);
  EXPECT_EQ(Allocate("t1", {{"cpu", 64}}).kind, Kind::kInsufficient);
}

TEST_F(PlacementTest, NonWholeGpuAboveOneIsInfeasible) {
  // gpu=1.5 is neither a fraction of one GPU nor whole GPUs.
  Register("w1", {{"cpu", 4}, {"gpu", 4}});
  auto d = Allocate("t1", {{"gpu", 1.5}});
  EXPECT_EQ(d.kind, Kind::kInfeasible);
  EXPECT_NE(d.reason.find("gpu=1.5"), std::string::npos) << d.reason;
}

TEST_F(PlacementTest, GpuTrialIsPlacedOnlyOnTheWorkerWithAGpu) {
  // w1 has many CPUs and no GPU, w2 has one GPU: GPU trials go to w2, CPU trials spread to w1.
  Register("w1", {{"cpu", 16}});
  Register("w2", {{"cpu", 2}, {"gpu", 1}});
  auto g = Allocate("t1", {{"cpu", 1}, {"gpu", 1}});
  ASSERT_TRUE(g.granted());
  EXPECT_EQ(g.worker_id, "w2");
  EXPECT_EQ(Allocate("t2", {{"cpu", 1}, {"gpu", 1}}).kind, Kind::kInsufficient);
  EXPECT_EQ(Allocate("t3", {{"cpu", 1}}).worker_id, "w1");
}

TEST_F(PlacementTest, SpreadsToTheWorkerWithMostFreeCpuTiesByWorkerId) {
  // Equal workers: the first goes to w1 (tie), the next to w2 (more free), then w1 again.
  Register("w2", {{"cpu", 4}});
  Register("w1", {{"cpu", 4}});
  EXPECT_EQ(Allocate("t1", {{"cpu", 1}}).worker_id, "w1");
  EXPECT_EQ(Allocate("t2", {{"cpu", 1}}).worker_id, "w2");
  EXPECT_EQ(Allocate("t3", {{"cpu", 1}}).worker_id, "w1");
  EXPECT_EQ(Allocate("t4", {{"cpu", 3}}).worker_id, "w2");  // w1 has 2 free, w2 has 3
  EXPECT_EQ(Allocate("t5", {{"cpu", 3}}).kind, Kind::kInsufficient);
  EXPECT_EQ(Allocate("t6", {{"cpu", 2}}).worker_id, "w1");
}

TEST_F(PlacementTest, ReleasingTwiceReturnsFalseTheSecondTime) {
  // Resources come back exactly once; unknown attempts release nothing.
  Register("w1", {{"cpu", 2}});
  ASSERT_TRUE(Allocate("t1", {{"cpu", 2}}).granted());
  std::string worker;
  EXPECT_TRUE(cluster_.Release("t1", 1, &worker));
  EXPECT_EQ(worker, "w1");
  EXPECT_FALSE(cluster_.Release("t1", 1));
  EXPECT_FALSE(cluster_.Release("t1", 2));
  EXPECT_FALSE(cluster_.Release("nope", 1));
  EXPECT_TRUE(Node("w1").committed.empty());
}

TEST_F(PlacementTest, AllocatingTheSameAttemptAgainReturnsTheSameGrant) {
  // A retried allocate (lost reply) gets the same worker and GPUs and commits nothing more.
  Register("w1", {{"cpu", 4}, {"gpu", 2}});
  Register("w2", {{"cpu", 4}, {"gpu", 2}});
  auto first = Allocate("t1", {{"cpu", 1}, {"gpu", 0.5}});
  auto again = Allocate("t1", {{"cpu", 1}, {"gpu", 0.5}});
  ASSERT_TRUE(again.granted());
  EXPECT_FALSE(first.retried);
  EXPECT_TRUE(again.retried);
  EXPECT_EQ(again.worker_id, first.worker_id);
  EXPECT_EQ(again.gpu_ids, first.gpu_ids);
  EXPECT_EQ(Node(first.worker_id).committed.at("cpu"), 10000);
  EXPECT_EQ(cluster_.allocation_count(), 1u);
  // A new attempt of the same trial is a different allocation.
  EXPECT_TRUE(Allocate("t1", {{"cpu", 1}}, 2).granted());
  EXPECT_EQ(cluster_.allocation_count(), 2u);
}

TEST_F(PlacementTest, ExpireNodesFreesAllocationsAndReportsTrials) {
  // w2 stops heartbeating: after the timeout it is lost and its attempts are reported freed.
  Register("w1", {{"cpu", 1}});
  Register("w2", {{"cpu", 1}});
  ASSERT_EQ(Allocate("t1", {{"cpu", 1}}).worker_id, "w1");
  ASSERT_EQ(Allocate("t2", {{"cpu", 1}}, 3).worker_id, "w2");
  ASSERT_TRUE(cluster_.Heartbeat("w1", Millis{2000}).ok());
  EXPECT_TRUE(cluster_.ExpireNodes(Millis{3000}, Millis{3000}).empty());  // not older yet
  auto lost = cluster_.ExpireNodes(Millis{3001}, Millis{3000});
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].worker_id, "w2");
  EXPECT_EQ(lost[0].trials, std::vector<std::string>{"t2/3"});
  EXPECT_FALSE(Node("w2").alive);
  EXPECT_TRUE(Node("w2").committed.empty());
  EXPECT_TRUE(Node("w1").alive);
  EXPECT_FALSE(cluster_.Release("t2", 3));  // already dropped with the worker
  EXPECT_EQ(cluster_.Heartbeat("w2", Millis{3002}).code(), StatusCode::kNotFound);
  EXPECT_EQ(cluster_.Heartbeat("w9", Millis{3002}).code(), StatusCode::kNotFound);
  EXPECT_TRUE(cluster_.ExpireNodes(Millis{3500}, Millis{3000}).empty());  // reported once
  EXPECT_EQ(Allocate("t3", {{"cpu", 1}}).kind, Kind::kInsufficient);      // w1 busy, w2 lost
}

TEST_F(PlacementTest, LostWorkerReRegistersAliveWithItsNewCapacity) {
  // A lost worker comes back (after a restart) with 8 CPUs instead of 2 and takes trials again.
  Register("w1", {{"cpu", 2}});
  ASSERT_TRUE(Allocate("t1", {{"cpu", 2}}).granted());
  ASSERT_EQ(cluster_.ExpireNodes(Millis{10000}, Millis{3000}).size(), 1u);
  auto r = cluster_.RegisterNode("w1", "new-host", R({{"cpu", 8}}), {}, Millis{11000});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->added);
  EXPECT_TRUE(r->dropped_trials.empty());
  EXPECT_TRUE(Node("w1").alive);
  EXPECT_EQ(Node("w1").hostname, "new-host");
  EXPECT_EQ(Node("w1").capacity.at("cpu"), 80000);
  EXPECT_TRUE(Node("w1").committed.empty());
  EXPECT_TRUE(Allocate("t2", {{"cpu", 8}}).granted());
  EXPECT_TRUE(cluster_.ExpireNodes(Millis{12000}, Millis{3000}).empty());  // heartbeat reset
}

TEST_F(PlacementTest, AliveWorkerReRegisteringKeepsOrDropsAllocationsByCapacity) {
  // A reconnect with the same capacity keeps allocations; a restart with another drops them.
  Register("w1", {{"cpu", 4}});
  ASSERT_TRUE(Allocate("t1", {{"cpu", 2}}).granted());
  auto same = cluster_.RegisterNode("w1", "h", R({{"cpu", 4}}), {}, Millis{100});
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->added);
  EXPECT_EQ(Node("w1").trials, std::vector<std::string>{"t1/1"});
  auto other = cluster_.RegisterNode("w1", "h", R({{"cpu", 1}}), {}, Millis{200});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->added);
  EXPECT_EQ(other->dropped_trials, std::vector<std::string>{"t1/1"});
  EXPECT_TRUE(Node("w1").committed.empty());
  EXPECT_TRUE(cluster_.CheckInvariants().ok());
}

TEST_F(PlacementTest, RegisterRejectsInconsistentGpus) {
  // GPU ids must match the whole-GPU capacity; fractional GPU capacity is refused.
  EXPECT_FALSE(cluster_.RegisterNode("w1", "h", R({{"gpu", 2}}), {"0"}, Millis{0}).ok());
  EXPECT_FALSE(cluster_.RegisterNode("w1", "h", R({{"gpu", 2}}), {"0", "0"}, Millis{0}).ok());
  EXPECT_FALSE(cluster_.RegisterNode("w1", "h", R({{"gpu", 0.5}}), {}, Millis{0}).ok());
  EXPECT_FALSE(cluster_.RegisterNode("", "h", R({{"cpu", 1}}), {}, Millis{0}).ok());
  EXPECT_TRUE(cluster_.View().nodes.empty());
}

TEST_F(PlacementTest, CommittedNeverExceedsCapacityUnderARandomWorkload) {
  // A seeded random mix of allocate / release / expire / re-register keeps every invariant.
  std::mt19937 rng(42);
  const std::vector<std::map<std::string, double>> asks = {{{"cpu", 1}},
                                                           {{"cpu", 2}, {"gpu", 1}},
                                                           {{"gpu", 0.33}},
                                                           {{"gpu", 0.5}, {"a", 1}},
                                                           {{"cpu", 0.25}, {"memory", 1.0 * kGiB}},
                                                           {{"gpu", 2}}};
  const std::vector<std::string> workers = {"w1", "w2", "w3"};
  std::map<std::string, Millis> beat;
  for (const auto& w : workers) {
    Register(w, {{"cpu", 4}, {"gpu", 2}, {"a", 2}, {"memory", 4.0 * kGiB}});
    beat[w] = Millis{0};
  }
  int granted = 0;
  for (int step = 0; step < 5000; ++step) {
    const Millis now{step * 10};
    const std::string trial = "t" + std::to_string(rng() % 40);
    switch (rng() % 6) {
      case 0:
      case 1:
      case 2:
        granted += cluster_.Allocate(trial, 1, R(asks[rng() % asks.size()])).granted();
        break;
      case 3:
        (void)cluster_.Release(trial, 1);
        break;
      case 4: {
        const auto& w = workers[rng() % workers.size()];
        if (!cluster_.Heartbeat(w, now).ok())
          Register(w, {{"cpu", 4 + double(rng() % 2)}, {"gpu", 2}}, now);
        break;
      }
      default:
        (void)cluster_.ExpireNodes(now, Millis{300});
    }
    ASSERT_TRUE(cluster_.CheckInvariants().ok())
        << "step " << step << ": " << cluster_.CheckInvariants().ToString();
    for (const auto& n : cluster_.View().nodes) {
      for (const auto& [key, units] : n.committed) {
        ASSERT_LE(units, n.capacity.count(key) ? n.capacity.at(key) : 0) << n.worker_id << key;
      }
    }
  }
  EXPECT_GT(granted, 100);
}

TEST_F(PlacementTest, AdoptedAllocationsFromAWorkerReportBlockPlacementAfterARestart) {
  // A fresh ClusterState (the resource-manager restarted) hears from w1 that it runs t1/1
  // (cpu 2, gpu 0.5 on GPU "0"). Adopting it commits those resources, so a trial asking cpu 3
  // no longer fits the 4-CPU worker, a 0.5 GPU trial shares GPU "0", and adopting the same
  // attempt again changes nothing. Releasing it frees everything.
  Register("w1", {{"cpu", 4}, {"gpu", 1}});
  ASSERT_TRUE(cluster_.Adopt("w1", "t1", 1, R({{"cpu", 2}, {"gpu", 0.5}}), {"0"}).ok());
  ASSERT_TRUE(cluster_.Adopt("w1", "t1", 1, R({{"cpu", 2}, {"gpu", 0.5}}), {"0"}).ok());
  EXPECT_TRUE(cluster_.CheckInvariants().ok());
  EXPECT_EQ(Node("w1").committed.at("cpu"), 2 * Resources::kScale);
  EXPECT_EQ(Allocate("t2", {{"cpu", 3}}).kind, Kind::kInsufficient);
  auto t3 = Allocate("t3", {{"cpu", 1}, {"gpu", 0.5}});
  ASSERT_TRUE(t3.granted());
  EXPECT_EQ(t3.gpu_ids, std::vector<std::string>{"0"});
  EXPECT_TRUE(cluster_.Release("t1", 1));
  EXPECT_TRUE(Allocate("t2", {{"cpu", 3}}).granted());
}

TEST_F(PlacementTest, AdoptRefusesUnknownWorkersGpusAndWhatDoesNotFit) {
  // Reports that cannot be true are refused with a typed error and commit nothing.
  Register("w1", {{"cpu", 2}, {"gpu", 1}});
  EXPECT_EQ(cluster_.Adopt("w9", "t1", 1, R({{"cpu", 1}}), {}).code(), StatusCode::kNotFound);
  EXPECT_EQ(cluster_.Adopt("w1", "t1", 1, R({{"cpu", 1}, {"gpu", 1}}), {"7"}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster_.Adopt("w1", "t1", 1, R({{"cpu", 3}}), {}).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(cluster_.allocation_count(), 0u);
  EXPECT_TRUE(cluster_.CheckInvariants().ok());
}

}  // namespace
}  // namespace tunebus
