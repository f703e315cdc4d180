// MedianStoppingRule (libs/tune/median_stopping_rule.hpp) through the TrialRunner with the fake
// executor: which trial stops at which time, worked out by hand; the soft stop (hard_stop
// false) that pauses and later runs the trial again; and its journaled state.
#include "libs/tune/median_stopping_rule.hpp"

#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

using MedianStoppingRuleTest = TrialRunnerTest;

const json kMedian = {
    {"time_attr", "training_iteration"}, {"grace_period", 1}, {"min_samples_required", 2}};

TEST_F(MedianStoppingRuleTest, TrialsWorseThanTheMedianOfRunningMeansStop) {
  // Four trials report acc t0 1.0, t1 0.8, t2 0.6, t3 0.1 at every iteration, in that order.
  // Iteration 1 is the grace period's end (time > grace_period is required): nobody stops.
  // Iteration 2: t0 and t1 have fewer than 2 others at time 2: continue. t2: others at 2 are
  // t0, t1 with running means 1.0, 0.8 -> median 0.9 > best 0.6: STOP. t3: others t0, t1, t2
  // (t2 reached 2 before it stopped) -> median 0.8 > 0.1: STOP.
  StartScheduled("median_stopping", kMedian, 4);
  const double acc[] = {1.0, 0.8, 0.6, 0.1};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Decide(i, 1, acc[i]), "continue") << i;
  EXPECT_EQ(Decide(0, 2, acc[0]), "continue");
  EXPECT_EQ(Decide(1, 2, acc[1]), "continue");
  EXPECT_EQ(Decide(2, 2, acc[2]), "stop");
  EXPECT_EQ(Decide(3, 2, acc[3]), "stop");
  EXPECT_EQ(Decide(0, 3, acc[0]), "continue");
  EXPECT_EQ(Decide(1, 3, acc[1]), "continue");  // median of t0 1.0, t2 0.6, t3 0.1 = 0.6 < 0.8
  ExpectDeltasRebuildState("median_stopping", kMedian, "acc", "max");
}

TEST_F(MedianStoppingRuleTest, SoftStopPausesAndTheTrialRunsAgainWhenNothingWaits) {
  // hard_stop false: t2 below the median is PAUSEd, not stopped. Once no trial is PENDING the
  // runner asks the scheduler for a paused trial (Ray Tune's FIFO fallback): t2 runs again and
  // is never judged again.
  json config = kMedian;
  config["hard_stop"] = false;
  StartScheduled("median_stopping", config, 3);
  const double acc[] = {1.0, 0.8, 0.1};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Decide(i, 1, acc[i]), "continue");
  EXPECT_EQ(Decide(0, 2, acc[0]), "continue");
  EXPECT_EQ(Decide(1, 2, acc[1]), "continue");
  EXPECT_EQ(Decide(2, 2, acc[2]), "pause");
  runner_->OnTrialExited(Id(2), T(2).attempt, true, "");
  EXPECT_EQ(T(2).status, TrialStatus::kPaused);
  runner_->Step();
  EXPECT_EQ(T(2).status, TrialStatus::kPending);
  GrantAll();
  EXPECT_EQ(Decide(2, 1, 0.0), "continue");  // soft-stopped once: FIFO from now on
  EXPECT_EQ(Decide(2, 2, 0.0), "continue");
}

TEST_F(MedianStoppingRuleTest, WithTrialsWaitingARunningTrialYieldsAfterItsTimeSlice) {
  // Ray Tune time-slices: with min_time_slice 2 and a PENDING trial (only 2 may run at once), a
  // trial that is not below the median pauses once it ran 2 time units past its last pause.
  json config = kMedian;
  config["min_time_slice"] = 2;
  StartScheduled("median_stopping", config, 3, "max", /*max_concurrent=*/2);
  EXPECT_EQ(T(2).status, TrialStatus::kPending);
  EXPECT_EQ(Decide(0, 1, 1.0), "pause");  // 1 - (-inf) > 2 and t2 waits
  EXPECT_EQ(Decide(1, 1, 0.8), "pause");
}

TEST_F(MedianStoppingRuleTest,
       WithEnoughSamplesATrialAtOrAboveTheMedianContinuesEvenWhenOthersWait) {
  // As Ray Tune: time slicing happens only while samples are insufficient. t3 waits (3 at once).
  // t0 and t1 at time 1 have fewer than 2 others there: they yield (pause). t2 has t0 (1.0) and
  // t1 (0.8): median 0.9 <= its 0.95, enough samples: CONTINUE, though t3 still waits.
  StartScheduled("median_stopping", kMedian, 4, "max", /*max_concurrent=*/3);
  EXPECT_EQ(T(3).status, TrialStatus::kPending);
  EXPECT_EQ(Decide(0, 1, 1.0), "pause");
  EXPECT_EQ(Decide(1, 1, 0.8), "pause");
  EXPECT_EQ(Decide(2, 1, 0.95), "continue");
}

TEST_F(MedianStoppingRuleTest, AnotherTrialWithNoResultInsideTheWindowMakesNoMedian) {
  // time_attr t moves in uneven steps (as time_total_s does); grace_period 60, mode min. t0
  // reports t = 55 then t = 65: it reached 61 but has no result in [60, 61]. t1 at t = 61 has one
  // other trial past 61 (enough for min_samples_required 1), but t0's running mean over
  // [60, 61] is empty: Ray Tune's np.mean is NaN, so is the median, and t1 (loss 0.9, worse than
  // anything t0 reported) CONTINUEs. A mean of 0 there would make the median 0 < 0.9: stop.
  const json config = {{"time_attr", "t"}, {"grace_period", 60}, {"min_samples_required", 1}};
  StartScheduled("median_stopping", config, 2, "min");
  EXPECT_TRUE(Report(0, 1, {{"acc", 0.5}, {"t", 55}}).ok());
  EXPECT_TRUE(Report(0, 2, {{"acc", 0.5}, {"t", 65}}).ok());
  EXPECT_EQ(LastAction(0), "continue");  // no other trial at 65 yet, nothing waits
  EXPECT_TRUE(Report(1, 1, {{"acc", 0.9}, {"t", 61}}).ok());
  EXPECT_EQ(LastAction(1), "continue");
  // At t = 66 t0's window [60, 66] holds its 65: mean 0.5 < t1's best 0.9 (min): STOP.
  EXPECT_TRUE(Report(0, 3, {{"acc", 0.5}, {"t", 70}}).ok());
  EXPECT_TRUE(Report(1, 2, {{"acc", 0.9}, {"t", 66}}).ok());
  EXPECT_EQ(LastAction(1), "stop");
}

}  // namespace
}  // namespace tunebus
