// AshaScheduler (libs/tune/asha_scheduler.hpp) driven through the TrialRunner with the fake
// executor: decisions on a synthetic learning curve worked out by hand, strict metric checking,
// and rebuilding its state from the journaled deltas.
#include "libs/tune/asha_scheduler.hpp"

#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

const json kAsha = {{"max_t", 9}, {"grace_period", 1}, {"reduction_factor", 3}};

using AshaSchedulerTest = TrialRunnerTest;

TEST_F(AshaSchedulerTest, RungsFollowRayTunesMilestones) {
  // max_t 9, grace 1, eta 3: int(log3(9) + 1) = 3 rungs at 9, 3, 1; a second bracket starts at 3.
  auto s = AshaScheduler::Create(
      {{"max_t", 9}, {"grace_period", 1}, {"reduction_factor", 3}, {"brackets", 2}}, "acc", "max",
      0);
  ASSERT_TRUE(s.ok());
  auto* asha = static_cast<AshaScheduler*>(s->get());
  EXPECT_EQ(asha->Milestones(0), (std::vector<double>{9, 3, 1}));
  EXPECT_EQ(asha->Milestones(1), (std::vector<double>{9, 3}));
}

TEST_F(AshaSchedulerTest, TrialsBelowTheRungQuantileStopAndTheRestRunToMaxT) {
  // Four trials, eta 3: a trial stops at a rung when it is below the 2/3 quantile (numpy's
  // linear interpolation) of what that rung recorded before it.
  //   rung 1: t0 0.5 (first: continue), t1 0.9 (cutoff 0.5: continue),
  //           t2 0.1 (cutoff of {0.5, 0.9} = 0.5 + 0.4 * 2/3 = 0.767: STOP),
  //           t3 0.8 (cutoff of {0.1, 0.5, 0.9} = 0.5 + 0.4 * 1/3 = 0.633: continue)
  //   iteration 2: no rung, everyone continues
  //   rung 3: t0 0.6 (first: continue), t1 0.95 (cutoff 0.6: continue),
  //           t3 0.7 (cutoff of {0.6, 0.95} = 0.6 + 0.35 * 2/3 = 0.833: STOP)
  //   iteration 9 = max_t: t0 and t1 stop (stop_last_trials).
  StartScheduled("asha", kAsha, 4);
  EXPECT_EQ(Decide(0, 1, 0.5), "continue");
  EXPECT_EQ(Decide(1, 1, 0.9), "continue");
  EXPECT_EQ(Decide(2, 1, 0.1), "stop");
  EXPECT_EQ(Decide(3, 1, 0.8), "continue");
  EXPECT_EQ(T(2).status, TrialStatus::kTerminated);
  for (int i : {0, 1, 3}) EXPECT_EQ(Decide(i, 2, 0.5), "continue");
  EXPECT_EQ(Decide(0, 3, 0.6), "continue");
  EXPECT_EQ(Decide(1, 3, 0.95), "continue");
  EXPECT_EQ(Decide(3, 3, 0.7), "stop");
  for (int64_t it = 4; it < 9; ++it) {
    EXPECT_EQ(Decide(0, it, 0.6), "continue");
    EXPECT_EQ(Decide(1, it, 0.95), "continue");
  }
  EXPECT_EQ(Decide(0, 9, 0.6), "stop");
  EXPECT_EQ(Decide(1, 9, 0.95), "stop");
  EXPECT_TRUE(runner_->IsFinished());
  ExpectDeltasRebuildState("asha", kAsha, "acc", "max");
}

TEST_F(AshaSchedulerTest, TheDecisionLogListsEachStopWithItsRungAndNotAUsersStop) {
  // The scenario above: t2 stops at rung 1, t3 at rung 3, t0 at max_t; t1 is stopped by the
  // user (tunectl stop), which is not the scheduler's decision.
  StartScheduled("asha", kAsha, 4);
  Decide(0, 1, 0.5);
  Decide(1, 1, 0.9);
  Decide(2, 1, 0.1);
  Decide(3, 1, 0.8);
  for (int i : {0, 1, 3}) Decide(i, 2, 0.5);
  Decide(0, 3, 0.6);
  Decide(1, 3, 0.95);
  Decide(3, 3, 0.7);
  ASSERT_TRUE(Control().StopTrial(Id(1)).ok());
  for (int64_t it = 4; it <= 9; ++it) Decide(0, it, 0.6);
  const json log = runner_->scheduler_decisions().ToJson();
  ASSERT_EQ(log["total"], 3) << log.dump();
  const json& d = log["decisions"];
  EXPECT_EQ(d[0]["trial_id"], Id(2));
  EXPECT_EQ(d[0]["kind"], "stop");
  EXPECT_EQ(d[0]["scheduler"], "asha");
  EXPECT_EQ(d[0]["training_iteration"], 1);
  EXPECT_EQ(d[0]["detail"]["rung"], 1.0);
  EXPECT_NEAR(d[0]["detail"]["cutoff"].get<double>(), 0.5 + 0.4 * 2 / 3, 1e-9);
  EXPECT_EQ(d[0]["detail"]["value"], 0.1);
  EXPECT_EQ(d[1]["trial_id"], Id(3));
  EXPECT_EQ(d[1]["training_iteration"], 3);
  EXPECT_EQ(d[1]["detail"]["rung"], 3.0);
  EXPECT_EQ(d[2]["trial_id"], Id(0));
  EXPECT_EQ(d[2]["training_iteration"], 9);
  EXPECT_EQ(d[2]["detail"], json({{"max_t", 9.0}}));
}

TEST_F(AshaSchedulerTest, AReplayedRecordReplacesItsValueInTheRungCutoff) {
  // A rung's cutoff comes from its values kept sorted; a "rec" replayed for a trial the rung
  // already holds replaces that trial's value instead of adding a second one.
  auto s = AshaScheduler::Create(kAsha, "acc", "max", 0);
  ASSERT_TRUE(s.ok());
  auto* asha = static_cast<AshaScheduler*>(s->get());
  for (const char* id : {"a", "b", "c"})
    ASSERT_TRUE(asha->ApplyStateDelta(json::array({{{"add", {id, 0}}}})).ok());
  // rung index 2 of bracket 0 is milestone 1
  ASSERT_TRUE(asha->ApplyStateDelta(json::array({{{"rec", {"a", 0, 2, 0.1}}},
                                                 {{"rec", {"b", 0, 2, 0.9}}},
                                                 {{"rec", {"a", 0, 2, 0.5}}}}))
                  .ok());
  EXPECT_EQ(asha->Recorded(0, 2), (std::map<std::string, double>{{"a", 0.5}, {"b", 0.9}}));
  // c at t=1: cutoff of {0.5, 0.9} at the 2/3 quantile = 0.5 + 0.4 * 2/3 = 0.767 (0.1 is gone)
  Trial c;
  c.trial_id = "c";
  EXPECT_EQ(
      asha->OnTrialResult(c, TrainingResult::FromJson({{"acc", 0.7}, {"training_iteration", 1}})),
      Decision::kStop);
  // d: cutoff of {0.5, 0.7, 0.9} = 0.7 + 0.2 / 3 = 0.767, so 0.8 continues and 0.75 would not
  ASSERT_TRUE(asha->ApplyStateDelta(json::array({{{"add", {"d", 0}}}})).ok());
  Trial d;
  d.trial_id = "d";
  EXPECT_EQ(
      asha->OnTrialResult(d, TrainingResult::FromJson({{"acc", 0.8}, {"training_iteration", 1}})),
      Decision::kContinue);
}

TEST_F(AshaSchedulerTest, MinModeStopsTheLargerLosses) {
  // mode min: t1's loss 0.9 is above (worse than) the first trial's 0.2 at rung 1.
  StartScheduled("asha", kAsha, 2, "min");
  EXPECT_EQ(Decide(0, 1, 0.2), "continue");
  EXPECT_EQ(Decide(1, 1, 0.9), "stop");
}

TEST_F(AshaSchedulerTest, AResultWithoutTheMetricIsATrialErrorNamingIt) {
  // Ray Tune's strict metric checking: the trial errors with the metric, scheduler and keys.
  StartScheduled("asha", kAsha, 1);
  ASSERT_TRUE(Report(0, 1, {{"loss", 0.3}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_NE(
      T(0).error.find("result has no number 'acc' (needed by the asha scheduler as its metric)"),
      std::string::npos)
      << T(0).error;
  EXPECT_NE(T(0).error.find("loss"), std::string::npos) << T(0).error;
}

TEST_F(AshaSchedulerTest, BadParametersAreNamed) {
  EXPECT_EQ(MakeTrialScheduler("asha", {{"reduction_factor", 1}}, "acc", "max").status().message(),
            "reduction_factor: must be > 1, got 1");
  EXPECT_EQ(MakeTrialScheduler("asha", {{"grace_period", 20}, {"max_t", 10}}, "acc", "max")
                .status()
                .message(),
            "grace_period: must be <= max_t (10), got 20");
  EXPECT_EQ(
      MakeTrialScheduler("asha", json::object(), "", "").status().message().rfind("metric: ", 0),
      0u);
}

}  // namespace
}  // namespace tunebus
