// TrialRunner and checkpoints the checkpoint-store refuses ("nothing silent"): the
// worker reports checkpoint_failed, the trial notes it (journaled, replayed), the refused
// checkpoint never joins the trial's checkpoints, so keep_checkpoints_num retention and every
// restore skip it, and the experiment's checkpoint_failure (continue | pause | fail) decides what
// a running trial does next. Driven with the fakes of fake_executor.hpp.
#include <fmt/format.h>

#include "libs/core/trial_view.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "tests/unit/fake_executor.hpp"
#include "tests/unit/recording_observer.hpp"
#include "tests/unit/trial_lifecycle_fixture.hpp"

namespace tunebus {
namespace {

constexpr const char* kDiskFull =
    "io_error: RocksDB write failed: IO error: While appending to file: "
    "/data/000042.log: No space left on device";

class CheckpointFailedTest : public TrialLifecycleTest {
 protected:
  // The worker reports the checkpoint asked at `iteration` of trial `index`'s current attempt
  // refused by the store.
  Status Refused(int index, int64_t iteration, const std::string& reason = kDiskFull) {
    return runner_->OnCheckpointFailed(Id(index), T(index).attempt, iteration, reason);
  }
  // The id Saved() gives the checkpoint of `iteration` of trial `index`'s attempt `attempt`.
  std::string CheckpointId(int index, int64_t iteration, int64_t attempt = 1) const {
    return fmt::format("{}/{:08d}-a{}", Id(index), iteration, attempt);
  }
  // The training iterations of trial `index`'s stored and refused checkpoints.
  std::vector<int64_t> StoredIterations(int index) const {
    std::vector<int64_t> out;
    for (const CheckpointRef& c : T(index).checkpoints) out.push_back(c.training_iteration);
    return out;
  }
  std::vector<int64_t> RefusedIterations(int index) const {
    std::vector<int64_t> out;
    for (const CheckpointNotStored& c : T(index).checkpoints_not_stored)
      out.push_back(c.training_iteration);
    return out;
  }
  // One trial with checkpoint_freq 1 and `mode`, RUNNING on w1.
  void StartEveryIteration(CheckpointFailureMode mode, int64_t max_failures = 0, int64_t keep = 0) {
    RunnerOptions o;
    o.checkpoint_freq = 1;
    o.keep_checkpoints_num = keep;
    o.max_failures = max_failures;
    o.checkpoint_failure = mode;
    Start(o, 1);
    Run(0);
  }
};

TEST_F(CheckpointFailedTest, RetentionKeepsStoredCheckpointsOnlyAndNeverDeletesARefusedOne) {
  // checkpoint_freq 1, keep_checkpoints_num 2: the checkpoints of 1, 2 and 3 are stored, 4 to 6
  // refused (the store's disk is full), 7 stored. The trial keeps 3 and 7; retention deleted 1
  // and 2 and nothing else (a refused checkpoint is in no list, so nothing deletes it); the
  // refusals are noted in order with the store's reason, every request is closed, and the trial
  // ran on.
  StartEveryIteration(CheckpointFailureMode::kContinue, 0, /*keep=*/2);
  for (int64_t i = 1; i <= 7; ++i) {
    ASSERT_TRUE(Report(0, i).ok());
    ASSERT_EQ(LastAction(), "checkpoint");
    ASSERT_TRUE((i >= 4 && i <= 6 ? Refused(0, i) : Saved(0, i)).ok()) << i;
  }
  EXPECT_EQ(StoredIterations(0), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(exec_.deleted_checkpoints,
            (std::vector<std::string>{CheckpointId(0, 1), CheckpointId(0, 2)}));
  EXPECT_EQ(RefusedIterations(0), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(T(0).num_checkpoints_not_stored, 3);
  EXPECT_EQ(T(0).checkpoints_not_stored[0].reason, kDiskFull);
  EXPECT_TRUE(T(0).requested_checkpoints.empty());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  ASSERT_EQ(obs_.failed_checkpoints.size(), 3u);
  EXPECT_EQ(obs_.failed_checkpoints[2].training_iteration, 6);
  EXPECT_TRUE(exec_.stops.empty());
}

TEST_F(CheckpointFailedTest, ARetryAfterAFailureRestoresTheNewestStoredCheckpoint) {
  // 1 to 3 stored, 4 to 6 refused, then the trainable fails at 6 (max_failures 1): the retry
  // restores the checkpoint of 3, not a refused one, and its results count from 3.
  StartEveryIteration(CheckpointFailureMode::kContinue, /*max_failures=*/1);
  for (int64_t i = 1; i <= 6; ++i) {
    ASSERT_TRUE(Report(0, i).ok());
    ASSERT_TRUE((i >= 4 ? Refused(0, i) : Saved(0, i)).ok()) << i;
  }
  Fail(0, "CUDA error");
  ASSERT_EQ(T(0).status, TrialStatus::kPending);
  runner_->Step();
  Grant("w2");
  ASSERT_EQ(T(0).attempt, 2);
  EXPECT_EQ(exec_.launches.back().restored_checkpoint_id, CheckpointId(0, 3));
  EXPECT_EQ(T(0).restored_iteration, 3);
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(T(0).training_iteration, 4);
}

TEST_F(CheckpointFailedTest, AResumedPauseRestoresTheNewestStoredCheckpoint) {
  // 1 to 3 stored, 4 to 6 refused; `tunectl pause` answers the result of 7 "pause" and the pause
  // checkpoint is refused too: the trial is PAUSED all the same, and once resumed it restores
  // the checkpoint of 3.
  StartEveryIteration(CheckpointFailureMode::kContinue);
  for (int64_t i = 1; i <= 6; ++i) {
    ASSERT_TRUE(Report(0, i).ok());
    ASSERT_TRUE((i >= 4 ? Refused(0, i) : Saved(0, i)).ok()) << i;
  }
  ASSERT_TRUE(Control().PauseTrial(Id(0)).ok());
  ASSERT_TRUE(Report(0, 7).ok());
  ASSERT_EQ(LastAction(), "pause");
  ASSERT_TRUE(Refused(0, 7).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  ASSERT_EQ(T(0).status, TrialStatus::kPaused);
  EXPECT_EQ(RefusedIterations(0), (std::vector<int64_t>{4, 5, 6, 7}));
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  runner_->Step();
  Grant("w1");
  EXPECT_EQ(exec_.launches.back().restored_checkpoint_id, CheckpointId(0, 3));
  EXPECT_EQ(T(0).restored_iteration, 3);
  EXPECT_EQ(exec_.releases, (std::map<AttemptKey, int>{{{Id(0), 1}, 1}}));
}

TEST_F(CheckpointFailedTest, ContinueNotesTheRefusalBeforeAnythingElseAndTheTrialRunsOn) {
  // The default: the refusal is journaled (the observer hears it) and the trial keeps running
  // with no executor call; its next checkpoint is asked as usual.
  StartEveryIteration(CheckpointFailureMode::kContinue);
  ASSERT_TRUE(Report(0, 1).ok());
  log_.clear();
  ASSERT_TRUE(Refused(0, 1).ok());
  EXPECT_EQ(log_, (std::vector<std::string>{"obs:checkpoint_failed exp_00000 1"}));
  ASSERT_TRUE(Report(0, 2).ok());
  EXPECT_EQ(LastAction(), "checkpoint");
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
}

TEST_F(CheckpointFailedTest, PauseModePausesAtTheNextResultAndResumesFromTheNewestStored) {
  // checkpoint_failure: pause. 1 stored, 2 refused: the trial is paused as `tunectl pause`
  // would (its next result is answered "pause"); the pause checkpoint is refused as well (noted,
  // no second pause), and the trial is PAUSED once it has exited, its first attempt's resources
  // returned once. Resumed, it continues from the checkpoint of 1.
  StartEveryIteration(CheckpointFailureMode::kPause);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  ASSERT_TRUE(Refused(0, 2).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_FALSE(Context().IsPaused(Id(0)));
  ASSERT_TRUE(Report(0, 3).ok());
  EXPECT_EQ(LastAction(), "pause");
  EXPECT_TRUE(runner_->phases().IsPausing(0));
  ASSERT_TRUE(Refused(0, 3).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
  EXPECT_EQ(T(0).error, "");
  EXPECT_EQ(RefusedIterations(0), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(runner_->IsFinished());
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  runner_->Step();
  Grant("w1");
  EXPECT_EQ(exec_.launches.back().restored_checkpoint_id, CheckpointId(0, 1));
  EXPECT_EQ(exec_.releases, (std::map<AttemptKey, int>{{{Id(0), 1}, 1}}));
}

TEST_F(CheckpointFailedTest, FailModeRequeuesWithinMaxFailuresThenErrors) {
  // checkpoint_failure: fail, max_failures 1. The refusal of 2 is a trial failure: journaled
  // first, then the trial is PENDING with the error naming the iteration and the store's reason,
  // its trainable is told to stop and its resources are returned; the retry restores the
  // checkpoint of 1. The second refusal exceeds max_failures: ERROR, and the experiment ends.
  StartEveryIteration(CheckpointFailureMode::kFail, /*max_failures=*/1);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  log_.clear();
  ASSERT_TRUE(Refused(0, 2).ok());
  const std::string error = std::string("checkpoint at iteration 2 not stored: ") + kDiskFull;
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_EQ(T(0).error, error);
  EXPECT_EQ(T(0).num_failures, 1);
  ASSERT_FALSE(T(0).failures.empty());
  EXPECT_EQ(T(0).failures.back().error, error);
  EXPECT_LT(IndexOf("obs:checkpoint_failed exp_00000 2"),
            IndexOf("obs:status exp_00000/1 PENDING"));
  EXPECT_LT(IndexOf("obs:status exp_00000/1 PENDING"), IndexOf("exec:stop exp_00000/1"));
  EXPECT_LT(IndexOf("exec:stop exp_00000/1"), IndexOf("exec:release exp_00000/1"));
  runner_->OnTrialExited(Id(0), 1, true, "");  // the stopped attempt's exit changes nothing
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  runner_->Step();
  Grant("w2");
  EXPECT_EQ(exec_.launches.back().restored_checkpoint_id, CheckpointId(0, 1));
  ASSERT_TRUE(Report(0, 1).ok());  // iteration 2 again
  ASSERT_TRUE(Refused(0, 2).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_EQ(T(0).error, error);
  EXPECT_EQ(T(0).num_failures, 2);
  EXPECT_EQ(RefusedIterations(0), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
  ExpectEachGrantReleasedOnce();
}

TEST_F(CheckpointFailedTest, ARefusedEndCheckpointLeavesTheTrialTerminatedWhateverTheMode) {
  // checkpoint_at_end with checkpoint_failure: fail. The stop at 2 is answered
  // checkpoint_and_stop and the trial is TERMINATED at once; its end checkpoint is refused: noted,
  // but the trial keeps its status and no failure is counted (the decision had already ended it).
  // Its exit then returns the resources and the experiment finishes.
  RunnerOptions o;
  o.checkpoint_at_end = true;
  o.checkpoint_failure = CheckpointFailureMode::kFail;
  o.stop = {{"training_iteration", 2}};
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  ASSERT_EQ(LastAction(), "checkpoint_and_stop");
  ASSERT_TRUE(Refused(0, 2).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(0).num_failures, 0);
  EXPECT_EQ(T(0).error, "");
  EXPECT_TRUE(T(0).checkpoints.empty());
  EXPECT_FALSE(runner_->IsFinished());  // the attempt still exits
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(runner_->status(), ExperimentStatus::kFinished);
  EXPECT_EQ(RefusedIterations(0), (std::vector<int64_t>{2}));
  ExpectEachGrantReleasedOnce();
}

TEST_F(CheckpointFailedTest, StaleUnaskedAndLateRefusalsAreRefusedAndChangeNothing) {
  // Only a refusal of a checkpoint the trial's current attempt was asked for and has not closed
  // counts: an unknown trial is NotFound, an older attempt, an iteration never asked and one
  // whose attempt has exited (its requests closed) are FailedPrecondition, and none of them is
  // noted. (A refusal of a request still open after the experiment ended would be noted, as a
  // checkpoint stored then is: the worker reports an attempt's uploads before its exit.)
  StartEveryIteration(CheckpointFailureMode::kFail);
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(runner_->OnCheckpointFailed("nosuch", 1, 1, kDiskFull).code(), StatusCode::kNotFound);
  EXPECT_EQ(runner_->OnCheckpointFailed(Id(0), 7, 1, kDiskFull).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(Refused(0, 5).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Report(0, 2, {{"done", true}}).ok());  // the trial stops
  runner_->OnTrialExited(Id(0), 1, true, "");
  ASSERT_TRUE(runner_->IsFinished());
  EXPECT_EQ(Refused(0, 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(T(0).checkpoints_not_stored.empty());
  EXPECT_TRUE(obs_.failed_checkpoints.empty());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(runner_->status(), ExperimentStatus::kFinished);
}

TEST_F(CheckpointFailedTest, ARefusalClosesTheOlderRequestsOfItsAttemptToo) {
  // Uploads go one at a time, oldest first: a refusal of the checkpoint of 3 answers the request
  // of 2 as well (the trainable saved nothing for it), as a stored one would; the newer request
  // of 4 stays open.
  StartEveryIteration(CheckpointFailureMode::kContinue);
  for (int64_t i = 1; i <= 4; ++i) ASSERT_TRUE(Report(0, i).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Refused(0, 3).ok());
  ASSERT_EQ(T(0).requested_checkpoints.size(), 1u);
  EXPECT_EQ(T(0).requested_checkpoints[0].training_iteration, 4);
  EXPECT_EQ(Refused(0, 2).code(), StatusCode::kFailedPrecondition);  // closed
  EXPECT_EQ(RefusedIterations(0), (std::vector<int64_t>{3}));
}

TEST_F(CheckpointFailedTest, TheTrialViewListsTheRefusedCheckpoints) {
  // The control socket's trial object (tunectl show) carries the refusals and their count.
  StartEveryIteration(CheckpointFailureMode::kContinue);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Refused(0, 1).ok());
  const json view = TrialToJson(T(0), "/r/e");
  json expected = json::array();
  expected.push_back({{"training_iteration", 1}, {"reason", kDiskFull}});
  EXPECT_EQ(view["checkpoints_not_stored"], expected);
  EXPECT_EQ(view["num_checkpoints_not_stored"], 1);
  EXPECT_EQ(view["checkpoints"], json::array());
}

TEST(CheckpointFailedJournalTest, ReplayOfTheJournalRestoresTheTrialWithItsRefusedCheckpoints) {
  // A runner with checkpoint_failure: fail, max_failures 2 and keep_checkpoints_num 1 journals
  // through the recorder's records: 1 stored, 2 refused (a failure, requeued), the retry stores
  // 2, then 3 is refused while 4 is asked (a second failure, requeued). A replay of that journal
  // gives the trial the runner has: the same stored and refused checkpoints, open requests,
  // failures and status; and a runner restored from it restores the newest stored checkpoint.
  std::vector<std::string> log;
  FakeExecutor exec(log);
  std::vector<json> records = {
      journal::ExperimentSubmitted({"exp", 1, 0, "/", "e.yaml"}, "name: e")};
  JournalingObserver obs(records);
  RunnerOptions o;
  o.experiment_id = "exp";
  o.checkpoint_freq = 1;
  o.keep_checkpoints_num = 1;
  o.max_failures = 2;
  o.checkpoint_failure = CheckpointFailureMode::kFail;
  ManualClock clock(1000.0);
  TrialRunner runner(o, std::make_unique<VariantGenerator>(Grid(1), 1, 42),
                     std::make_unique<FifoScheduler>(), exec, obs, clock);
  const std::string id = "exp_00000";
  auto place = [&](const std::string& worker) {
    runner.Step();
    ASSERT_FALSE(exec.open.empty());
    const PlacementCall p = exec.open.front();
    exec.open.pop_front();
    runner.OnTrialPlaced(p.trial_id, p.attempt, worker, {});
  };
  place("w1");
  ASSERT_TRUE(runner.OnResult(id, 1, 1, TrainingResult::FromJson(json::object()), 1.0).ok());
  ASSERT_TRUE(runner.OnCheckpointSaved(id, 1, id + "/1", 1, 10).ok());
  ASSERT_TRUE(runner.OnResult(id, 1, 2, TrainingResult::FromJson(json::object()), 1.0).ok());
  ASSERT_TRUE(runner.OnCheckpointFailed(id, 1, 2, kDiskFull).ok());
  place("w2");
  ASSERT_TRUE(runner.OnResult(id, 2, 1, TrainingResult::FromJson(json::object()), 1.0)
                  .ok());  // iteration 2
  ASSERT_TRUE(runner.OnCheckpointSaved(id, 2, id + "/2", 2, 10).ok());
  ASSERT_TRUE(runner.OnResult(id, 2, 2, TrainingResult::FromJson(json::object()), 1.0).ok());
  ASSERT_TRUE(runner.OnResult(id, 2, 3, TrainingResult::FromJson(json::object()), 1.0).ok());
  ASSERT_TRUE(runner.OnCheckpointFailed(id, 2, 3, "io_error: quota exceeded").ok());
  const Trial& live = *runner.FindTrial(id);
  ASSERT_EQ(live.status, TrialStatus::kPending);
  ASSERT_EQ(live.num_failures, 2);
  ASSERT_EQ(live.failures.size(), 2u);

  journal::JournalReplayer replayer;
  for (const json& r : records) ASSERT_TRUE(replayer.Apply(r).ok()) << r.dump();
  journal::ReplayedExperiment state = replayer.Take();
  ASSERT_EQ(state.trials.size(), 1u);
  const Trial& replayed = state.trials[0];
  EXPECT_EQ(TrialToJson(replayed, "/r"), TrialToJson(live, "/r"));
  ASSERT_EQ(replayed.checkpoints_not_stored.size(), 2u);
  EXPECT_EQ(replayed.checkpoints_not_stored[0].training_iteration, 2);
  EXPECT_EQ(replayed.checkpoints_not_stored[0].reason, kDiskFull);
  EXPECT_EQ(replayed.checkpoints_not_stored[1].training_iteration, 3);
  EXPECT_EQ(replayed.checkpoints_not_stored[1].reason, "io_error: quota exceeded");
  EXPECT_EQ(replayed.num_checkpoints_not_stored, 2);
  ASSERT_EQ(replayed.requested_checkpoints.size(), 1u);
  EXPECT_EQ(replayed.requested_checkpoints[0].training_iteration, 4);
  ASSERT_EQ(replayed.checkpoints.size(), 1u);
  EXPECT_EQ(replayed.checkpoints[0].checkpoint_id, id + "/2");

  // A successor restored from the journal places the trial again from the checkpoint of 2.
  std::vector<std::string> log2;
  FakeExecutor exec2(log2);
  RecordingObserver obs2(log2);
  TrialRunner successor(o, std::make_unique<VariantGenerator>(Grid(1), 1, 42),
                        std::make_unique<FifoScheduler>(), exec2, obs2, clock);
  ASSERT_TRUE(successor
                  .Restore({.trials = std::move(state.trials),
                            .searcher_state = state.searcher_state,
                            .last_actions = state.last_action,
                            .start_s = 1000.0})
                  .ok());
  successor.Step();
  ASSERT_FALSE(exec2.open.empty());
  successor.OnTrialPlaced(id, 3, "w3", {});
  ASSERT_FALSE(exec2.launches.empty());
  EXPECT_EQ(exec2.launches.back().restored_checkpoint_id, id + "/2");
}

TEST(CheckpointNotStoredTest, TheTrialListsTheNewest100AndCountsThemAll) {
  // A long outage with checkpoint_freq 1 refuses thousands of checkpoints: the trial keeps the
  // newest kMaxCheckpointsNotStored and counts every one.
  Trial t;
  for (int64_t i = 1; i <= 150; ++i) NoteCheckpointNotStored(t, i, kDiskFull);
  ASSERT_EQ(t.checkpoints_not_stored.size(), kMaxCheckpointsNotStored);
  EXPECT_EQ(t.checkpoints_not_stored.front().training_iteration, 51);
  EXPECT_EQ(t.checkpoints_not_stored.back().training_iteration, 150);
  EXPECT_EQ(t.num_checkpoints_not_stored, 150);
}

}  // namespace
}  // namespace tunebus
