// TrialRunner and checkpoint_at_end: a stopped trial is TERMINATED at once while its attempt
// stores the end checkpoint (Ray Tune 2.x); the attempt keeps its worker and allocation until it
// exits, a successor waits for it, and a worker that dies or restarts without it is journaled
// as the checkpoint's loss (docs/explanation/recovery.md). Driven with the fakes of
// fake_executor.hpp.
#include "tests/unit/trial_lifecycle_fixture.hpp"

namespace tunebus {
namespace {

// Its own suite: gtest wants one fixture class per suite name across test files.
class EndCheckpointTest : public TrialLifecycleTest {};

TEST_F(EndCheckpointTest, CheckpointAtEndMakesAStoppedTrialCheckpointBeforeItStops) {
  // A stopper hit (training_iteration >= 2) answers "checkpoint_and_stop"; the trial is
  // TERMINATED at once, keeps its resources until it exits, and the experiment ends after.
  StartCheckpointAtEnd(2, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  EXPECT_EQ(LastAction(), "checkpoint_and_stop");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_FALSE(runner_->IsFinished());  // waits for the checkpoint
  ASSERT_TRUE(Saved(0, 2).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(T(0).checkpoints.back().training_iteration, 2);
  ExpectEachGrantReleasedOnce();
}
TEST_F(EndCheckpointTest, AnIntermediateCheckpointLostWithItsWorkerIsJournaledOnTheTrial) {
  // checkpoint_freq 2: the checkpoint of iteration 2 is stored, the one of iteration 4 is asked
  // and the worker is lost before it reports it stored. The requeue's journaled status says that
  // checkpoint was lost and that the trial goes on from iteration 2 (a restarted worker does not
  // upload what its predecessor left on disk), and the failure history keeps it.
  RunnerOptions o;
  o.checkpoint_freq = 2;
  Start(o, 1);
  Run(0, "w1");
  for (int64_t i = 1; i <= 4; ++i) {
    ASSERT_TRUE(Report(0, i).ok());
    if (i == 2) {
      ASSERT_TRUE(Saved(0, 2).ok());
    }
  }
  ASSERT_EQ(LastAction(), "checkpoint");
  runner_->OnWorkerLost("w1");
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  const std::string expected =
      "; the checkpoint of iteration 4 it was saving was not stored, so the trial goes on from "
      "iteration 2";
  EXPECT_NE(T(0).error.find(expected), std::string::npos) << T(0).error;
  ASSERT_FALSE(obs_.statuses.empty());
  EXPECT_NE(T(0).failures.back().error.find(expected), std::string::npos);
}

TEST_F(EndCheckpointTest, AWorkerLostBeforeTheEndCheckpointIsStoredIsJournaledOnTheTrial) {
  // checkpoint_and_stop at iteration 2, then the worker dies before the upload: the trial stays
  // TERMINATED with its results, and a second status record (failure kind worker_lost) says its
  // end checkpoint is not stored; the allocation is released once, the experiment ends. The
  // request stays open: the worker, frozen rather than dead, may still store it.
  StartCheckpointAtEnd(2, 1);
  Run(0, "w1");
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  ASSERT_EQ(LastAction(), "checkpoint_and_stop");
  ASSERT_EQ(obs_.statuses.size(), 1u);
  runner_->OnWorkerLost("w1");
  ASSERT_EQ(obs_.statuses.size(), 2u);
  const Trial& journaled = obs_.statuses.back();
  EXPECT_EQ(journaled.status, TrialStatus::kTerminated);
  EXPECT_EQ(journaled.error, "while saving its checkpoint: worker w1 was lost");
  ASSERT_EQ(journaled.failures.size(), 1u);
  EXPECT_EQ(journaled.failures[0].kind, FailureKind::kWorkerLost);
  EXPECT_EQ(T(0).num_results, 2);
  EXPECT_TRUE(T(0).checkpoints.empty());
  EXPECT_TRUE(runner_->IsFinished());
  ExpectEachGrantReleasedOnce();
  EXPECT_TRUE(runner_->AttemptMayRun(Id(0), 1, "w1"));
  EXPECT_EQ(T(0).requested_checkpoints.size(), 1u);
}

TEST_F(EndCheckpointTest, AWorkerThatRestartedWithoutASavingAttemptEndsItAsLost) {
  // The worker comes back (a restart within the liveness window, so never declared lost) and
  // registers without the attempt saving trial 0's end checkpoint: it ends as a worker loss;
  // trial 1's, which it still reports, saves on.
  StartCheckpointAtEnd(1, 2);
  runner_->Step();
  Grant("w1");
  Grant("w1");
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(1, 1).ok());
  const size_t statuses = obs_.statuses.size();
  runner_->EndSavingGoneFrom("w1", {Id(1)}, "worker w1 restarted");
  ASSERT_EQ(obs_.statuses.size(), statuses + 1);
  EXPECT_EQ(obs_.statuses.back().trial_id, Id(0));
  EXPECT_EQ(obs_.statuses.back().error, "while saving its checkpoint: worker w1 restarted");
  EXPECT_EQ(obs_.statuses.back().failures.back().kind, FailureKind::kWorkerLost);
  EXPECT_FALSE(runner_->IsFinished());  // trial 1 still saving
  ASSERT_TRUE(Saved(1, 1).ok());
  runner_->OnTrialExited(Id(1), 1, true, "");
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_TRUE(T(1).error.empty());
  ExpectEachGrantReleasedOnce();
}

TEST_F(EndCheckpointTest, ATakeoverWaitsForAnEndCheckpointStillBeingStored) {
  // The journal ends with trial 0 TERMINATED by checkpoint_and_stop on w1, its request open
  // (replay keeps that attempt's worker): the successor keeps the allocation, answers the
  // resent result again to w1, and ends the experiment once the attempt has exited.
  StartCheckpointAtEnd(1, 1);
  Run(0, "w1");
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(T(0).worker_id, "w1");  // kept while it stores the end checkpoint, as replay has it
  std::vector<Trial> trials{T(0)};
  ASSERT_TRUE(StoresEndCheckpoint(trials[0]));
  ASSERT_TRUE(runner_
                  ->Restore({.trials = trials,
                             .last_actions = {{Id(0), Action::kCheckpointAndStop}},
                             .start_s = clock_.WallSeconds()})
                  .ok());
  EXPECT_TRUE(HoldsAllocation(*runner_, Id(0), 1, "w1"));
  EXPECT_FALSE(HoldsAllocation(*runner_, Id(0), 1, "w2"));
  EXPECT_FALSE(Report(0, 1).ok());  // resent after the restart: a duplicate, answered again
  EXPECT_EQ(exec_.decisions.back().action, "checkpoint_and_stop");
  EXPECT_EQ(exec_.decisions.back().worker_id, "w1");
  runner_->Step();
  EXPECT_FALSE(runner_->IsFinished());
  ASSERT_TRUE(Saved(0, 1).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_TRUE(T(0).error.empty());
  EXPECT_TRUE(T(0).worker_id.empty());
  ExpectEachGrantReleasedOnce();
}

TEST_F(EndCheckpointTest, AnAttemptSavingItsLastCheckpointMayRunOnUntilItExits) {
  // A worker registering (after a scheduler restart) with an attempt answered checkpoint_and_stop
  // keeps it running to store the checkpoint, whether the decision is this runner's (saving) or
  // a journaled one of its predecessor (the request is open); any other worker or attempt is stale.
  StartCheckpointAtEnd(1, 1);
  Run(0, "w1");
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_EQ(LastAction(), "checkpoint_and_stop");
  EXPECT_TRUE(runner_->AttemptMayRun(Id(0), 1, "w1"));
  EXPECT_FALSE(runner_->AttemptMayRun(Id(0), 1, "w2"));
  EXPECT_FALSE(runner_->AttemptMayRun(Id(0), 2, "w1"));
  std::vector<Trial> trials{T(0)};  // as a successor replays it: TERMINATED, the request open
  ASSERT_TRUE(Saved(0, 1).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_FALSE(runner_->AttemptMayRun(Id(0), 1, "w1"));  // exited: nothing may run
  ASSERT_EQ(trials[0].requested_checkpoints.size(), 1u);
  ASSERT_TRUE(runner_
                  ->Restore({.trials = trials,
                             .last_actions = {{Id(0), Action::kCheckpointAndStop}},
                             .start_s = clock_.WallSeconds()})
                  .ok());
  EXPECT_TRUE(runner_->AttemptMayRun(Id(0), 1, "w1"));
}

}  // namespace
}  // namespace tunebus
