// Tests for TrialRunner's control and accounting: stopping trials and experiments, the time
// budget, the best trial, the write-ahead order of observer and executor calls and the
// release-once rule, driven step by step with the fakes of fake_executor.hpp (Ray Tune's
// TrialRunner.stop_trial / get_best_trial, DESIGN.md "Trial lifecycle").
#include "tests/unit/pausing_scheduler.hpp"
#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

// Its own suite: the fixture of runner_fixture.hpp is a distinct class in each file.
class TrialRunnerControlTest : public TrialRunnerTest {};

// ---- control: stop trial / experiment --------------------------------------------------

TEST_F(TrialRunnerControlTest, StopPendingTrialTerminatesItWithoutExecutorCalls) {
  // A PENDING trial (never placed) just becomes TERMINATED.
  exec_.can_place = false;
  Start({}, 2);
  runner_->Step();
  auto msg = Control().StopTrial(Id(0));
  ASSERT_TRUE(msg.ok());
  EXPECT_NE(msg->find("PENDING"), std::string::npos) << *msg;
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(obs_.statuses.back().trial_id, Id(0));
  EXPECT_TRUE(exec_.stops.empty());
  EXPECT_TRUE(exec_.releases.empty());
  exec_.can_place = true;
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 1u);  // only trial 1 is placed
  EXPECT_EQ(exec_.placements[0].trial_id, Id(1));
}

TEST_F(TrialRunnerControlTest, StopRunningTrialStopsItOnItsWorkerAndReleasesOnce) {
  // A RUNNING trial: TERMINATED, the executor stops it on its worker and its resources are
  // released once; its later exit is ignored.
  Start({}, 2);
  runner_->Step();
  Grant("w7");
  auto msg = Control().StopTrial(Id(0));
  ASSERT_TRUE(msg.ok());
  EXPECT_NE(msg->find("RUNNING"), std::string::npos) << *msg;
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  ASSERT_EQ(exec_.stops.size(), 1u);
  EXPECT_EQ(exec_.stops[0].trial_id, Id(0));
  EXPECT_EQ(exec_.stops[0].worker_id, "w7");
  EXPECT_EQ(exec_.stops[0].attempt, 1);
  EXPECT_EQ(exec_.releases.at({Id(0), 1}), 1);
  runner_->OnTrialExited(Id(0), 1, false, "SIGTERM");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(0).num_failures, 0);
  EXPECT_FALSE(runner_->IsFinished());  // trial 1 is still placing
}

TEST_F(TrialRunnerControlTest, StopFinishedTrialIsANoOpAndUnknownIsNotFound) {
  // Stopping a finished trial answers OK saying so and does nothing; an unknown id is NotFound.
  Start({}, 2);
  runner_->Step();
  GrantAll();
  runner_->OnTrialExited(Id(0), 1, true, "");
  const size_t log_size = log_.size();
  auto msg = Control().StopTrial(Id(0));
  ASSERT_TRUE(msg.ok());
  EXPECT_NE(msg->find("already"), std::string::npos) << *msg;
  EXPECT_EQ(log_.size(), log_size);
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  auto unknown = Control().StopTrial("exp_12345");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(log_.size(), log_size);
}

TEST_F(TrialRunnerControlTest, GrantArrivingAfterStopIsReleasedAtOnce) {
  // The trial is stopped while its placement is in flight; the grant that still arrives is
  // returned immediately and the trial is never launched. A deferral arriving late is ignored.
  Start({}, 3);
  runner_->Step();
  ASSERT_TRUE(Control().StopTrial(Id(0)).ok());
  ASSERT_TRUE(Control().StopTrial(Id(1)).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  Grant("w9");
  ASSERT_EQ(exec_.released.size(), 1u);
  EXPECT_EQ(exec_.released[0].trial_id, Id(0));
  EXPECT_EQ(exec_.released[0].attempt, 1);
  EXPECT_EQ(exec_.released[0].worker_id, "w9");
  EXPECT_TRUE(exec_.launches.empty());
  EXPECT_TRUE(obs_.started.empty());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  PlacementCall p1 = exec_.open.front();
  exec_.open.pop_front();
  runner_->OnPlacementDeferred(p1.trial_id, p1.attempt);
  runner_->Step();
  EXPECT_EQ(T(1).status, TrialStatus::kTerminated);
  EXPECT_EQ(exec_.placements.size(), 3u);
  Grant();
  EXPECT_EQ(T(2).status, TrialStatus::kRunning);
  EXPECT_EQ(exec_.releases.count({Id(2), 1}), 0u);  // still running: not released yet
  runner_->OnTrialExited(Id(2), 1, true, "");
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialRunnerControlTest, StopExperimentTerminatesEveryUnfinishedTrial) {
  // StopExperiment: status STOPPED with the reason; running, placing and pending trials become
  // TERMINATED (running ones stopped on their worker), finished ones keep their status.
  RunnerOptions o;
  o.max_concurrent_trials = 3;
  Start(o, 5);
  runner_->Step();
  Grant("w1");  // trial 0 running
  Grant("w2");  // trial 1 running
  // trial 2 placing; trials 3, 4 pending
  Fail(1, "bad");
  ASSERT_EQ(T(1).status, TrialStatus::kError);
  Control().StopExperiment("user asked");
  EXPECT_EQ(runner_->status(), ExperimentStatus::kStopped);
  EXPECT_EQ(runner_->end_reason(), "user asked");
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(T(1).status, TrialStatus::kError);
  for (int i : {0, 2, 3, 4}) EXPECT_EQ(T(i).status, TrialStatus::kTerminated) << i;
  ASSERT_EQ(exec_.stops.size(), 1u);
  EXPECT_EQ(exec_.stops[0].trial_id, Id(0));
  ASSERT_EQ(obs_.ended.size(), 1u);
  EXPECT_EQ(obs_.ended[0], std::make_pair(std::string("STOPPED"), std::string("user asked")));
  // The late grant of trial 2 is released; nothing new is placed; a second stop is a no-op.
  Grant("w3");
  EXPECT_EQ(T(2).status, TrialStatus::kTerminated);
  runner_->Step();
  Control().StopExperiment("again");
  EXPECT_EQ(obs_.ended.size(), 1u);
  EXPECT_EQ(runner_->end_reason(), "user asked");
  EXPECT_EQ(exec_.placements.size(), 3u);
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialRunnerControlTest, TimeBudgetReachedFinishesTheExperimentAndStopsTrials) {
  // time_budget_s 60 from the runner's creation: just before it nothing happens; at 60 s the
  // next Step ends the experiment as FINISHED and stops every unfinished trial.
  RunnerOptions o;
  o.time_budget_s = 60;
  o.max_concurrent_trials = 1;
  Start(o, 3);
  runner_->Step();
  Grant("w1");
  clock_.AdvanceTo(1059.9);
  runner_->Step();
  EXPECT_FALSE(runner_->IsFinished());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  clock_.AdvanceTo(1060.0);
  runner_->Step();
  EXPECT_EQ(runner_->status(), ExperimentStatus::kFinished);
  EXPECT_NE(runner_->end_reason().find("time budget"), std::string::npos) << runner_->end_reason();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(T(i).status, TrialStatus::kTerminated) << i;
  ASSERT_EQ(exec_.stops.size(), 1u);
  EXPECT_EQ(exec_.stops[0].trial_id, Id(0));
  ExpectEachGrantReleasedOnce();
  ASSERT_EQ(obs_.ended.size(), 1u);
  EXPECT_EQ(obs_.ended[0].first, "FINISHED");
  EXPECT_EQ(exec_.placements.size(), 1u);
}

TEST_F(TrialRunnerControlTest, ExperimentFinishesWhenAllTrialsEnd) {
  // IsFinished is false while any trial is unfinished and becomes FINISHED (once) after the
  // last one ends, whichever way each ended.
  RunnerOptions o;
  o.stop = {{"training_iteration", 2}};
  Start(o, 3);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());  // stop criterion
  EXPECT_FALSE(runner_->IsFinished());
  Fail(1, "err");
  EXPECT_FALSE(runner_->IsFinished());
  runner_->OnTrialExited(Id(2), 1, true, "");
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(runner_->status(), ExperimentStatus::kFinished);
  EXPECT_STREQ(ExperimentStatusName(runner_->status()), "FINISHED");
  runner_->Step();
  ASSERT_EQ(obs_.ended.size(), 1u);
  EXPECT_EQ(obs_.ended[0].first, "FINISHED");
  auto counts = CountByStatus(runner_->trials());
  EXPECT_EQ(counts[TrialStatus::kTerminated], 2);
  EXPECT_EQ(counts[TrialStatus::kError], 1);
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialRunnerControlTest, PausedTrialReleasesResourcesAndCanBeStopped) {
  // A PAUSE decision: the worker saves a checkpoint and stops the trainable; the trial is
  // RUNNING until that exit (as Ray's synchronous pause), which returns the resources.
  // PAUSED keeps the experiment open until the trial is stopped.
  Start({}, 1, std::make_unique<PausingScheduler>(std::set<std::string>{Id(0)}));
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(exec_.decisions.back().action, "pause");
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_EQ(exec_.releases.count({Id(0), 1}), 0u);  // still saving
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
  EXPECT_EQ(exec_.releases.at({Id(0), 1}), 1);
  runner_->Step();
  EXPECT_FALSE(runner_->IsFinished());
  EXPECT_EQ(exec_.placements.size(), 1u);  // not placed again by itself
  auto msg = Control().StopTrial(Id(0));
  ASSERT_TRUE(msg.ok());
  EXPECT_NE(msg->find("PAUSED"), std::string::npos) << *msg;
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_TRUE(exec_.stops.empty());  // nothing runs
  EXPECT_TRUE(runner_->IsFinished());
  ExpectEachGrantReleasedOnce();
}

// ---- best trial ---------------------------------------------------------------------------

TEST_F(TrialRunnerControlTest, BestTrialUsesLastResultByMetricAndMode) {
  // get_best_trial(scope "last"): the newest result of each trial counts; max and min modes;
  // results without the metric are skipped.
  RunnerOptions o;
  o.metric = "score";
  o.mode = "max";
  Start(o, 4);
  EXPECT_EQ(BestTrial(*runner_), nullptr);  // no trials yet
  runner_->Step();
  GrantAll();
  EXPECT_EQ(BestTrial(*runner_), nullptr);  // no results yet
  ASSERT_TRUE(Report(0, 1, {{"score", -5.0}}).ok());
  ASSERT_TRUE(Report(1, 1, {{"score", 10.0}}).ok());
  ASSERT_TRUE(Report(1, 2, {{"score", -2.0}}).ok());  // last result is what counts
  ASSERT_TRUE(Report(2, 1, {{"score", -3.0}}).ok());
  ASSERT_TRUE(Report(3, 1, {{"other", 100.0}}).ok());
  ASSERT_NE(BestTrial(*runner_), nullptr);
  EXPECT_EQ(BestTrial(*runner_)->trial_id, Id(1));
}

TEST_F(TrialRunnerControlTest, BestTrialInMinMode) {
  // mode min picks the smallest last value; no metric configured means no best trial.
  RunnerOptions o;
  o.metric = "loss";
  o.mode = "min";
  Start(o, 3);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1, {{"loss", 0.3}}).ok());
  ASSERT_TRUE(Report(1, 1, {{"loss", 0.1}}).ok());
  ASSERT_TRUE(Report(2, 1, {{"loss", 0.2}}).ok());
  ASSERT_NE(BestTrial(*runner_), nullptr);
  EXPECT_EQ(BestTrial(*runner_)->trial_id, Id(1));
  ASSERT_TRUE(Report(1, 2, {{"loss", 0.5}}).ok());
  EXPECT_EQ(BestTrial(*runner_)->trial_id, Id(2));
}

TEST_F(TrialRunnerControlTest, NoBestTrialWithoutAMetric) {
  // Without a metric there is nothing to rank.
  Start({}, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1, {{"loss", 0.3}}).ok());
  EXPECT_EQ(BestTrial(*runner_), nullptr);
}

// ---- write-ahead ordering and resource accounting ---------------------------------------

TEST_F(TrialRunnerControlTest, ObserverHearsOfEveryStateChangeBeforeTheExecutorActsOnIt) {
  // Write-ahead: OnTrialStarted before LaunchTrial, OnTrialResult before SendDecision,
  // OnTrialStatus before ReleaseResources / StopTrial, for every path that causes them.
  RunnerOptions o;
  o.stop = {{"training_iteration", 2}};
  o.max_failures = 1;
  Start(o, 4);
  runner_->Step();
  GrantAll();
  for (int i = 0; i < 4; ++i) {
    EXPECT_LT(IndexOf("obs:started " + Id(i) + "/1"), IndexOf("exec:launch " + Id(i) + "/1")) << i;
  }
  // Trial 0: results, then STOP by the stopper.
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_LT(IndexOf("obs:result " + Id(0) + "/1 continue"),
            IndexOf("exec:decision " + Id(0) + "/1 continue"));
  ASSERT_TRUE(Report(0, 2).ok());
  EXPECT_LT(IndexOf("obs:result " + Id(0) + "/1 stop"),
            IndexOf("exec:decision " + Id(0) + "/1 stop"));
  EXPECT_LT(IndexOf("obs:status " + Id(0) + "/1 TERMINATED"),
            IndexOf("exec:release " + Id(0) + "/1"));
  // Trial 1: failure, requeue, then ERROR.
  Fail(1, "x");
  EXPECT_LT(IndexOf("obs:status " + Id(1) + "/1 PENDING"), IndexOf("exec:release " + Id(1) + "/1"));
  runner_->Step();
  Grant("w5");
  EXPECT_LT(IndexOf("obs:started " + Id(1) + "/2"), IndexOf("exec:launch " + Id(1) + "/2"));
  Fail(1, "y");
  EXPECT_LT(IndexOf("obs:status " + Id(1) + "/2 ERROR"), IndexOf("exec:release " + Id(1) + "/2"));
  // Trial 2: user stop of a running trial.
  ASSERT_TRUE(Control().StopTrial(Id(2)).ok());
  EXPECT_LT(IndexOf("obs:status " + Id(2) + "/1 TERMINATED"), IndexOf("exec:stop " + Id(2) + "/1"));
  EXPECT_LT(IndexOf("obs:status " + Id(2) + "/1 TERMINATED"),
            IndexOf("exec:release " + Id(2) + "/1"));
  // Trial 3: worker lost, requeued; then the experiment is stopped.
  runner_->OnWorkerLost("w00003");
  EXPECT_LT(IndexOf("obs:status " + Id(3) + "/1 PENDING"), IndexOf("exec:release " + Id(3) + "/1"));
  runner_->Step();
  Grant("w6");
  Control().StopExperiment("done here");
  EXPECT_LT(IndexOf("obs:status " + Id(3) + "/2 TERMINATED"), IndexOf("exec:stop " + Id(3) + "/2"));
  EXPECT_LT(IndexOf("obs:status " + Id(3) + "/2 TERMINATED"),
            IndexOf("exec:release " + Id(3) + "/2"));

  // Generic check: every launch / decision / stop / release is preceded by an observer entry
  // for the same trial and attempt.
  for (size_t i = 0; i < log_.size(); ++i) {
    const std::string& e = log_[i];
    if (e.rfind("exec:", 0) != 0 || e.rfind("exec:place", 0) == 0) continue;
    const std::string key =
        e.substr(e.find(' ') + 1, e.find(' ', e.find(' ') + 1) - e.find(' ') - 1);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) {
      seen = log_[j].rfind("obs:", 0) == 0 && log_[j].find(" " + key) != std::string::npos;
    }
    EXPECT_TRUE(seen) << e << " had no observer call before it";
  }
}

TEST_F(TrialRunnerControlTest, ResourcesAreReleasedExactlyOncePerPlacedAttemptOnEveryPath) {
  // Every way out of RUNNING (stop decision, done, normal exit, failure requeue, failure
  // error, pause, worker loss, user stop, experiment stop) and a grant after a stop releases
  // the attempt exactly once, however many late messages follow.
  RunnerOptions o;
  o.stop = {{"training_iteration", 2}};
  o.max_failures = 1;
  Start(o, 10, std::make_unique<PausingScheduler>(std::set<std::string>{Id(6)}));
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 10u);
  for (int i = 0; i < 9; ++i) Grant(std::string("w").append(std::to_string(i)));
  const PlacementCall p9 = exec_.open.front();  // trial 9 stays placing
  exec_.open.pop_front();
  ASSERT_EQ(p9.trial_id, Id(9));
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());                    // 0: stop decision
  ASSERT_TRUE(Report(1, 1, {{"done", true}}).ok());  // 1: done
  runner_->OnTrialExited(Id(2), 1, true, "");        // 2: normal exit
  Fail(3, "once");                                   // 3: requeue (attempt 1)
  runner_->Step();
  Grant("w3b");                                  // 3: attempt 2
  Fail(3, "twice");                              // 3: error (attempt 2)
  runner_->OnWorkerLost("w4");                   // 4: worker lost -> requeue
  ASSERT_TRUE(Control().StopTrial(Id(5)).ok());  // 5: user stop while running
  ASSERT_TRUE(Report(6, 1).ok());                // 6: pause
  ASSERT_TRUE(Control().StopTrial(Id(9)).ok());  // 9: stop while placing
  grants_[{p9.trial_id, p9.attempt}] += 1;       // 9: late grant -> released at once
  runner_->OnTrialPlaced(p9.trial_id, p9.attempt, "w9", {});
  runner_->Step();
  Grant("w4b");                     // 4: attempt 2
  Control().StopExperiment("end");  // 4, 7, 8: experiment stop

  // Late and duplicate messages for every attempt change nothing.
  for (const Trial& t : runner_->trials()) {
    for (int64_t a = 1; a <= 2; ++a) {
      runner_->OnTrialExited(t.trial_id, a, false, "late");
      runner_->OnTrialExited(t.trial_id, a, true, "");
      (void)runner_->OnResult(t.trial_id, a, 99, TrainingResult::FromJson(json::object()), 1.0);
    }
  }
  runner_->OnWorkerLost("w7");
  (void)Control().StopTrial(Id(7));
  Control().StopExperiment("again");

  ExpectEachGrantReleasedOnce();
  EXPECT_EQ(exec_.releases.size(), 12u);  // 10 first attempts + trial 3 and 4's second
  EXPECT_EQ(runner_->status(), ExperimentStatus::kStopped);
}

}  // namespace
}  // namespace tunebus
