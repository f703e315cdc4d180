// HyperBandScheduler (libs/tune/hyperband_scheduler.hpp) through the TrialRunner with the fake
// executor: bracket sizes, the synchronous rung (PAUSE until the rung is complete), successive
// halving (unpause the best, stop the rest), the end of the last rung, and its journaled state.
#include "libs/tune/hyperband_scheduler.hpp"

#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

const json kHyperBand = {{"max_t", 9}, {"reduction_factor", 3}};

class HyperBandSchedulerTest : public TrialRunnerTest {
 protected:
  void StartHyperBand(int trials) {
    RunnerOptions o;
    o.metric = "acc";
    o.mode = "max";
    auto s = MakeTrialScheduler("hyperband", kHyperBand, "acc", "max");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    hyperband_ = static_cast<HyperBandScheduler*>(s->get());
    Start(o, trials, std::move(*s));
    StepAndGrantAll();  // trials come 16 at a time
  }
  HyperBandScheduler* hyperband_ = nullptr;
};

TEST_F(HyperBandSchedulerTest, BracketsFollowTheHyperBandSchedule) {
  // max_t 9, eta 3: s_max + 1 = round(log3 9) + 1 = 3 brackets per band;
  // bracket s: n0 = ceil(3 / (s + 1) * 3^s) trials starting at r0 = 9 * 3^-s:
  //   s=0: 3 trials x 9, s=1: ceil(4.5) = 5 trials x 3, s=2: 9 trials x 1. 17 trials fill a band;
  //   the 18th and 19th start band 2.
  StartHyperBand(19);
  const auto b = hyperband_->Brackets();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].s, 0);
  EXPECT_EQ(b[0].live.size(), 3u);
  EXPECT_EQ(b[0].r, 9);
  EXPECT_EQ(b[1].live.size(), 5u);
  EXPECT_EQ(b[1].r, 3);
  EXPECT_EQ(b[1].halves, 1);
  EXPECT_EQ(b[2].live.size(), 9u);
  EXPECT_EQ(b[2].r, 1);
  EXPECT_EQ(b[3].band, 1u);
  EXPECT_EQ(b[3].live, (std::vector<std::string>{Id(17), Id(18)}));
  EXPECT_EQ(HyperBandScheduler::BandTrials(9, 3), 17);
  // max_t 100, eta 3: 5 brackets, 81 + 34 + 15 + 8 + 5.
  EXPECT_EQ(HyperBandScheduler::BandTrials(100, 3), 143);
}

TEST_F(HyperBandSchedulerTest, HalvingWhileThePausedTrialsStillSaveStopsAndUnpausesThemAllTheSame) {
  // The same rung as below, but t3..t6 are still saving their pause checkpoints (RUNNING,
  // pausing) when t7 completes it: t3 and t5 are stopped at once, t4 and t6 are PENDING at once
  // (journaled) and placed once they have exited; nothing is left PAUSED.
  StartHyperBand(8);
  const double acc[] = {0, 0, 0, 0.3, 0.9, 0.5, 0.7, 0.1};
  for (int i = 3; i <= 7; ++i) {
    for (int64_t it = 1; it <= 2; ++it) EXPECT_EQ(Decide(i, it, acc[i]), "continue") << i;
  }
  for (int i = 3; i <= 6; ++i) {
    EXPECT_EQ(Decide(i, 3, acc[i]), "pause") << i;
    EXPECT_TRUE(runner_->phases().IsPausing(i));
    EXPECT_TRUE(Context().IsPaused(Id(i)));
  }
  EXPECT_EQ(Decide(7, 3, acc[7]), "stop");
  EXPECT_EQ(T(3).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(5).status, TrialStatus::kTerminated);
  const size_t placed = exec_.placements.size();
  EXPECT_EQ(T(4).status, TrialStatus::kPending);
  EXPECT_EQ(T(6).status, TrialStatus::kPending);
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), placed) << "placed while its checkpoint is saving";
  for (int i : {4, 6}) {
    ASSERT_TRUE(runner_->OnCheckpointSaved(Id(i), 1, Id(i) + "/3", 3, 10).ok());
    runner_->OnTrialExited(Id(i), 1, true, "");
  }
  EXPECT_EQ(T(4).checkpoints.size(), 1u);
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), placed + 2);
  EXPECT_EQ(CountByStatus(runner_->trials())[TrialStatus::kPaused], 0);
}

TEST_F(HyperBandSchedulerTest, RungWaitsPausedThenHalvingUnpausesTheBestAndStopsTheRest) {
  // 8 trials: t0..t2 fill bracket s=0, t3..t7 bracket s=1 (5 trials, first rung at 3).
  // At iteration 3 each of t3..t6 PAUSEs (the rung is not complete). t7 completes it:
  // successive halving keeps ceil(5 / 3) = 2, the best by acc: t4 (0.9) and t6 (0.7).
  // t3 and t5 (PAUSED) are stopped, t7 (0.1, the one reporting) is told to stop, t4 and t6 are
  // unpaused (PENDING again). Their next rung is min(3 * 3, 9 - 3) = 6, as Ray Tune.
  StartHyperBand(8);
  const double acc[] = {0, 0, 0, 0.3, 0.9, 0.5, 0.7, 0.1};
  for (int i = 3; i <= 7; ++i) {
    for (int64_t it = 1; it <= 2; ++it) EXPECT_EQ(AtIteration(i, it, acc[i]), "continue") << i;
  }
  for (int i = 3; i <= 6; ++i) {
    EXPECT_EQ(AtIteration(i, 3, acc[i]), "pause") << i;
    EXPECT_EQ(T(i).status, TrialStatus::kPaused);
  }
  EXPECT_EQ(AtIteration(7, 3, acc[7]), "stop");
  EXPECT_EQ(T(7).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(3).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(5).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(4).status, TrialStatus::kPending);
  EXPECT_EQ(T(6).status, TrialStatus::kPending);
  const auto b = hyperband_->Brackets();
  EXPECT_EQ(b[1].milestone, 6);
  EXPECT_EQ(b[1].live, (std::vector<std::string>{Id(4), Id(6)}));

  // The survivors run again; the rung at 6 is the last (no halvings left): the first to reach
  // it pauses, the second ends the bracket: it stops, and so does the paused one.
  runner_->Step();
  GrantAll();
  ASSERT_EQ(T(4).status, TrialStatus::kRunning);
  EXPECT_EQ(T(4).restored_iteration, 3);  // continued from the checkpoint of its pause
  EXPECT_EQ(T(6).restored_iteration, 3);
  for (int64_t it = 4; it <= 5; ++it) {
    EXPECT_EQ(AtIteration(4, it, 0.9), "continue");
    EXPECT_EQ(AtIteration(6, it, 0.7), "continue");
  }
  EXPECT_EQ(AtIteration(4, 6, 0.9), "pause");
  EXPECT_EQ(AtIteration(6, 6, 0.7), "stop");
  EXPECT_EQ(T(4).status, TrialStatus::kTerminated);
  ExpectDeltasRebuildState("hyperband", kHyperBand, "acc", "max");
}

}  // namespace
}  // namespace tunebus
