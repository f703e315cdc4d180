// TrialRunner lifecycle: pause / unpause, checkpoints and their retention, restore,
// add, set resources, PBT exploit, fail_fast modes, queue_trials, strict metric checking,
// rerunning errored trials and taking over a journal's state — one test per behaviour, driven
// with the fake executor and clock of runner_fixture.hpp. Sources: Ray Tune's TrialRunner,
// TrialExecutor and CheckpointManager (shared/seeds).
#include <fmt/format.h>

#include "tests/unit/pausing_scheduler.hpp"
#include "tests/unit/trial_lifecycle_fixture.hpp"

namespace tunebus {
namespace {

// Returns kStop for trials in `stop`, and asks PBT-style exploits: when `exploiter` reports, it
// takes `donor`'s checkpoint with config {"x": 99}.
class ScriptedScheduler final : public TrialScheduler {
 public:
  std::string exploiter, donor, required_metric;
  const char* name() const override { return "scripted"; }
  Status ValidateResult(const TrainingResult& result) const override {
    if (required_metric.empty() || result.Has(required_metric)) return Status::Ok();
    return Status::InvalidArgument("scripted needs metric '" + required_metric + "'");
  }
  Decision OnTrialResult(const Trial& trial, const TrainingResult&) override {
    if (trial.trial_id == exploiter) (void)context_->ExploitTrial(exploiter, donor, {{"x", 99}});
    return Decision::kContinue;
  }
  void OnTrialRemove(const Trial& trial) override { removed.push_back(trial.trial_id); }
  void OnTrialComplete(const Trial& trial, const TrainingResult&) override {
    completed.push_back(trial.trial_id);
  }
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }
  std::vector<std::string> removed, completed;
};

TEST_F(TrialLifecycleTest, ATrialThatReturnsIsDoneWithoutAResultNobodyReported) {
  // The trainable reports twice (not done) and returns: as Ray Tune's runner (RESULT_DUPLICATE),
  // the trial is TERMINATED with its last result marked done: true and `returned` set for the
  // journal, but no result is recorded again (no row in the files), num_results counts what was
  // reported, and no trial scheduler sees the result twice. A trial whose last result already
  // said done is not marked returned. Every result carries `date` (its timestamp as local time).
  Start({}, 2);
  Run(0);
  Run(1);
  ASSERT_TRUE(Report(0, 1, {{"acc", 1}}).ok());
  ASSERT_TRUE(Report(0, 2, {{"acc", 2}}).ok());
  ASSERT_TRUE(Report(1, 1, {{"acc", 3}, {"done", true}}).ok());
  const size_t before = obs_.results.size();
  const auto& reported = obs_.results[before - 2];
  EXPECT_EQ(reported.trial_id, Id(0));
  EXPECT_EQ(reported.result.value("done", true), false);
  EXPECT_EQ(reported.result.value("date", ""),
            RayDate(reported.result.value("timestamp", int64_t(0))));
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->OnTrialExited(Id(1), 1, true, "");
  EXPECT_EQ(obs_.results.size(), before);
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_TRUE(T(0).returned);
  EXPECT_EQ(T(0).LastResult().value("done", false), true);
  EXPECT_EQ(T(0).LastResult().value("acc", 0), 2);
  EXPECT_EQ(T(0).num_results, 2);
  EXPECT_EQ(T(0).training_iteration, 2);
  EXPECT_FALSE(T(1).returned);
  EXPECT_EQ(T(1).num_results, 1);
  EXPECT_EQ(obs_.results[before - 1].result.value("done", false), true);  // trial 1's own
}

TEST_F(TrialLifecycleTest,
       PauseOfARunningTrialIsPausedOnlyOnceItsCheckpointIsStoredAndItHasExited) {
  // Ray's pause_trial saves, then the trial is PAUSED: here the next result is answered
  // "pause", the trial stays RUNNING (pausing) while the worker saves, and it is PAUSED, its
  // resources returned, only when the worker reports the exit.
  Start({}, 1);
  Run(0);
  auto msg = Control().PauseTrial(Id(0));
  ASSERT_TRUE(msg.ok());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_FALSE(runner_->phases().IsPausing(0));
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(LastAction(), "pause");
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_TRUE(runner_->phases().IsPausing(0));
  EXPECT_FALSE(Report(0, 2).ok());  // nothing after the pause answer counts
  const Status resize = Control().SetTrialResources(Id(0), *Resources::FromAmounts({{"cpu", 2}}));
  EXPECT_NE(resize.message().find("is pausing"), std::string::npos) << resize.message();
  EXPECT_EQ(exec_.releases.count({Id(0), 1}), 0u);
  ASSERT_TRUE(Saved(0, 1).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);  // stored, the trainable still exiting
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
  EXPECT_FALSE(runner_->phases().IsPausing(0));
  EXPECT_EQ(exec_.releases.at({Id(0), 1}), 1);
  EXPECT_EQ(T(0).checkpoints.size(), 1u);
  EXPECT_FALSE(runner_->IsFinished());             // a PAUSED trial keeps the experiment open
  EXPECT_FALSE(Control().PauseTrial(Id(0)).ok());  // already PAUSED
  EXPECT_TRUE(Control().SetTrialResources(Id(0), *Resources::FromAmounts({{"cpu", 2}})).ok());
}

TEST_F(TrialLifecycleTest, APausingTrialWhoseWorkerIsLostIsPausedFromItsNewestStoredCheckpoint) {
  Start({}, 1);
  Run(0);
  ASSERT_TRUE(Control().PauseTrial(Id(0)).ok());
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(runner_->phases().IsPausing(0));
  runner_->OnWorkerLost(T(0).worker_id);
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
  EXPECT_NE(T(0).error.find("while saving its pause checkpoint"), std::string::npos) << T(0).error;
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 1u);  // not placed again until unpaused
}

TEST_F(TrialLifecycleTest, ATakeoverFindsATrialAnsweredPauseStillPausing) {
  // The journal holds the trial RUNNING with its newest result answered "pause": the successor
  // waits for the attempt's exit, then the trial is PAUSED.
  Start({}, 1);
  Run(0, "w1");
  ASSERT_TRUE(Report(0, 1).ok());
  std::vector<Trial> trials{T(0)};
  ASSERT_TRUE(runner_->Restore({.trials = trials, .start_s = clock_.WallSeconds()}).ok());
  EXPECT_FALSE(runner_->phases().IsPausing(0));  // answered "continue" as far as this journal knows
  ASSERT_TRUE(runner_
                  ->Restore({.trials = trials,
                             .last_actions = {{Id(0), Action::kPause}},
                             .start_s = clock_.WallSeconds()})
                  .ok());
  EXPECT_TRUE(runner_->phases().IsPausing(0));
  EXPECT_TRUE(runner_->AttemptMayRun(Id(0), 1, "w1"));
  EXPECT_FALSE(Report(0, 2).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
}

TEST_F(TrialLifecycleTest, ATakeoverFindsAnUnpausedTrialsNewAttemptRunningNotPausing) {
  // The trial paused (its newest result answered "pause"), was unpaused and started again: the
  // journal's last action is still attempt 1's "pause", but attempt 2 has no result yet. The
  // successor takes attempt 2's results (dropping them as those of a pausing attempt would hang
  // the experiment, as SearcherResumeFaultTest with hyperband_bohb showed).
  Start({}, 1);
  Run(0, "w1");
  ASSERT_TRUE(Control().PauseTrial(Id(0)).ok());
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(runner_->OnCheckpointSaved(Id(0), 1, "c1", 1, 10).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  Run(0, "w1");
  ASSERT_EQ(T(0).attempt, 2);
  std::vector<Trial> trials{T(0)};
  ASSERT_TRUE(runner_
                  ->Restore({.trials = trials,
                             .last_actions = LastActions(*runner_),
                             .start_s = clock_.WallSeconds()})
                  .ok());
  EXPECT_FALSE(runner_->phases().IsPausing(0));
  EXPECT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(T(0).training_iteration, 2);
}

TEST_F(TrialLifecycleTest, PauseOfAPendingTrialIsImmediateAndWithoutCheckpoint) {
  RunnerOptions o;
  o.max_concurrent_trials = 1;
  Start(o, 2);
  Run(0);
  ASSERT_TRUE(Control().PauseTrial(Id(1)).ok());
  EXPECT_EQ(T(1).status, TrialStatus::kPaused);
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->Step();
  EXPECT_TRUE(exec_.open.empty());  // the paused trial is not placed
  ASSERT_TRUE(Control().UnpauseTrial(Id(1)).ok());
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 1u);
  EXPECT_EQ(exec_.open.front().trial_id, Id(1));
}

TEST_F(TrialLifecycleTest, UnpauseRestoresTheNewestCheckpointAndTrainingIterationGoesOn) {
  // TrialExecutor.unpause_trial -> PENDING; the restart restores the checkpoint: results go on
  // at training_iteration 4 with iterations_since_restore 1 and time_since_restore from 0.
  Start({}, 1, std::make_unique<PausingScheduler>(std::set<std::string>{}));
  Run(0);
  for (int seq = 1; seq <= 3; ++seq) ASSERT_TRUE(Report(0, seq, json::object(), 2.0).ok());
  ASSERT_TRUE(Control().PauseTrial(Id(0)).ok());
  ASSERT_TRUE(Report(0, 4, json::object(), 2.0).ok());  // iteration 4 answered "pause"
  ASSERT_TRUE(Saved(0, 4).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  Run(0);
  EXPECT_EQ(T(0).attempt, 2);
  EXPECT_EQ(T(0).restored_checkpoint_id, Id(0) + "/00000004-a1");
  EXPECT_EQ(exec_.launches.back().training_iteration, 4);
  ASSERT_TRUE(Report(0, 1, json::object(), 0.5).ok());
  EXPECT_EQ(T(0).LastResult()["training_iteration"], 5);
  EXPECT_EQ(T(0).LastResult()["iterations_since_restore"], 1);
  EXPECT_DOUBLE_EQ(T(0).LastResult()["time_since_restore"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(T(0).LastResult()["time_total_s"].get<double>(), 8.5);
  runner_->OnTrialExited(Id(0), 2, true, "");
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialLifecycleTest, UnpauseWhileTheCheckpointIsStillSavingWaitsForTheExit) {
  Start({}, 1, std::make_unique<PausingScheduler>(std::set<std::string>{"exp_00000"}));
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());  // PAUSE: saving
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  runner_->Step();
  EXPECT_TRUE(exec_.open.empty());  // not placed before its checkpoint is stored
  ASSERT_TRUE(Saved(0, 1).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 1u);
  Grant();
  EXPECT_EQ(T(0).restored_checkpoint_id, Id(0) + "/00000001-a1");
}

TEST_F(TrialLifecycleTest, APausedTrialUnpausedWhileItsAttemptStillSavesWaitsForTheExit) {
  // Unpaused while saving its pause checkpoint (PENDING, requeued at its exit), paused again
  // (PAUSED, not requeued) and unpaused again: still one attempt saving, so the trial is placed
  // only once that attempt has exited, from the checkpoint it stored.
  Start({}, 1, std::make_unique<PausingScheduler>(std::set<std::string>{"exp_00000"}));
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());  // PAUSE: saving
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  ASSERT_TRUE(Control().PauseTrial(Id(0)).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
  ASSERT_TRUE(Control().UnpauseTrial(Id(0)).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_EQ(runner_->phases().phase(0), RunnerPhase::kSaving);
  runner_->Step();
  EXPECT_TRUE(exec_.open.empty());  // not placed before its attempt has exited
  ASSERT_TRUE(Saved(0, 1).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 1u);
  Grant();
  EXPECT_EQ(T(0).attempt, 2);
  EXPECT_EQ(T(0).restored_checkpoint_id, Id(0) + "/00000001-a1");
  EXPECT_TRUE(runner_->phases().CheckInvariants().ok());
}

TEST_F(TrialLifecycleTest, CheckpointFreqAsksForACheckpointEveryNIterations) {
  RunnerOptions o;
  o.checkpoint_freq = 2;
  Start(o, 1);
  Run(0);
  std::vector<std::string> actions;
  for (int seq = 1; seq <= 5; ++seq) {
    ASSERT_TRUE(Report(0, seq).ok());
    actions.push_back(LastAction());
  }
  EXPECT_EQ(actions, (std::vector<std::string>{"continue", "checkpoint", "continue", "checkpoint",
                                               "continue"}));
  ASSERT_TRUE(Saved(0, 2).ok());
  ASSERT_TRUE(Saved(0, 4).ok());
  EXPECT_EQ(T(0).checkpoints.size(), 2u);
  EXPECT_EQ(obs_.saved_checkpoints.size(), 2u);
}

TEST_F(TrialLifecycleTest, AStopAtAMultipleOfCheckpointFreqKeepsThatIterationsCheckpoint) {
  // Ray Tune checkpoints by checkpoint_freq whatever the decision: checkpoint_freq 1 with
  // stop training_iteration 2 keeps checkpoints 1 and 2 (a stop at 3 with freq 2 keeps 2 only).
  RunnerOptions o;
  o.checkpoint_freq = 1;
  o.stop = {{"training_iteration", 2}};
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(LastAction(), "checkpoint");
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  EXPECT_EQ(LastAction(), "checkpoint_and_stop");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  ASSERT_TRUE(Saved(0, 2).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  ASSERT_EQ(T(0).checkpoints.size(), 2u);
  EXPECT_EQ(T(0).checkpoints.back().training_iteration, 2);
  EXPECT_TRUE(runner_->IsFinished());

  o.checkpoint_freq = 2;
  o.stop = {{"training_iteration", 3}};
  Start(o, 1);
  Run(0);
  for (int seq = 1; seq <= 3; ++seq) ASSERT_TRUE(Report(0, seq).ok());
  EXPECT_EQ(LastAction(), "stop");
}

TEST_F(TrialLifecycleTest, KeepCheckpointsNumKeepsTheBestByScoreAndAlwaysTheNewest) {
  // CheckpointManager with keep_checkpoints_num 2 and checkpoint_score_attr "min-loss": losses
  // 5, 1, 3, 4 at iterations 1..4. After each save the worst (highest loss) of all but the
  // newest goes: at 3 -> delete it1 (5); at 4 -> keep it2 (1) and the newest it4; delete it3.
  RunnerOptions o;
  o.checkpoint_freq = 1;
  o.keep_checkpoints_num = 2;
  o.checkpoint_score_attr = "min-loss";
  Start(o, 1);
  Run(0);
  const double losses[] = {5, 1, 3, 4};
  for (int seq = 1; seq <= 4; ++seq) {
    ASSERT_TRUE(Report(0, seq, {{"loss", losses[seq - 1]}}).ok());
    ASSERT_TRUE(Saved(0, seq).ok());
  }
  EXPECT_EQ(exec_.deleted_checkpoints,
            (std::vector<std::string>{Id(0) + "/00000001-a1", Id(0) + "/00000003-a1"}));
  ASSERT_EQ(T(0).checkpoints.size(), 2u);
  EXPECT_EQ(T(0).checkpoints[0].training_iteration, 2);
  EXPECT_EQ(T(0).checkpoints[1].training_iteration, 4);
  EXPECT_DOUBLE_EQ(*T(0).checkpoints[0].score, 1.0);
}

TEST_F(TrialLifecycleTest, ACheckpointOfAStaleAttemptOrOfAnIterationNeverAskedIsRejected) {
  RunnerOptions o;
  o.checkpoint_freq = 2;
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(Saved(0, 1).code(), StatusCode::kFailedPrecondition);  // not asked at iteration 1
  EXPECT_EQ(runner_->OnCheckpointSaved(Id(0), 7, "x", 2, 1).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(runner_->OnCheckpointSaved("nosuch", 1, "x", 2, 1).code(), StatusCode::kNotFound);
  EXPECT_TRUE(T(0).checkpoints.empty());
}

TEST_F(TrialLifecycleTest, AFailedTrialRestartsFromItsNewestCheckpoint) {
  RunnerOptions o;
  o.checkpoint_freq = 1;
  o.max_failures = 1;
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  Fail(0, "segfault");
  EXPECT_EQ(T(0).num_failures, 1);
  Run(0);
  EXPECT_EQ(T(0).restored_checkpoint_id, Id(0) + "/00000001-a1");
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(T(0).LastResult()["training_iteration"], 2);
}

TEST_F(TrialLifecycleTest, RestoreFromStartsEveryNewTrialFromThatCheckpoint) {
  RunnerOptions o;
  CheckpointRef from;
  from.checkpoint_id = "old/exp_00007/00000010-a1";
  from.training_iteration = 10;
  from.time_total_s = 30;
  o.restore_from = from;
  Start(o, 2);
  runner_->Step();
  GrantAll();
  for (int i : {0, 1}) {
    EXPECT_EQ(T(i).restored_checkpoint_id, from.checkpoint_id);
    ASSERT_TRUE(Report(i, 1, json::object(), 1.0).ok());
    EXPECT_EQ(T(i).LastResult()["training_iteration"], 11);
    EXPECT_DOUBLE_EQ(T(i).LastResult()["time_total_s"].get<double>(), 31.0);
    EXPECT_EQ(T(i).LastResult()["iterations_since_restore"], 1);
  }
}

TEST_F(TrialLifecycleTest, TotalTrialsCountsAddedTrialsBesideTheOnesStillToGenerate) {
  // 3 from the search algorithm, 2 added before all 3 exist: 5, whatever the order.
  RunnerOptions o;
  o.max_concurrent_trials = 1;
  Start(o, 3);
  EXPECT_EQ(runner_->TotalTrials(), 3);
  ASSERT_TRUE(Control().AddTrial({{"x", 10}}).ok());
  ASSERT_TRUE(Control().AddTrial({{"x", 11}}).ok());
  EXPECT_EQ(runner_->TotalTrials(), 5);
  runner_->Step();
  EXPECT_EQ(runner_->TotalTrials(), 5);
  EXPECT_EQ(ParseTrialStatus("running"), TrialStatus::kRunning);
  EXPECT_EQ(ParseTrialStatus("Terminated"), TrialStatus::kTerminated);
  EXPECT_EQ(ParseTrialStatus("runing"), std::nullopt);
}

TEST_F(TrialLifecycleTest, AddTrialRefusesAConfigKeyThatIsNotInTheParamSpace) {
  Start({}, 1);  // the space is {"x": grid}
  auto typo = Control().AddTrial({{"xx", 1}});
  ASSERT_EQ(typo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(typo.status().message(),
            "config key 'xx' is not in the param space; did you mean x? (its keys: x)");
  EXPECT_TRUE(Control().AddTrial({{"x", 7}}).ok());
}

TEST_F(TrialLifecycleTest, AddTrialCreatesAPendingTrialAndIsRefusedOnceFinished) {
  Start({}, 1);
  runner_->Step();
  auto added = Control().AddTrial({{"x", 42}});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ((*added)->trial_id, Id(1));
  EXPECT_EQ((*added)->status, TrialStatus::kPending);
  EXPECT_EQ(Control().AddTrial(json::array()).status().code(), StatusCode::kInvalidArgument);
  Control().StopExperiment("user");
  EXPECT_EQ(Control().AddTrial({{"x", 1}}).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(TrialLifecycleTest, SetTrialResourcesIsRefusedWhileRunningAndAppliesToTheNextPlacement) {
  RunnerOptions o;
  o.max_concurrent_trials = 1;
  Start(o, 2);
  Run(0);
  auto two_cpus = Resources::FromAmounts({{"cpu", 2}});
  ASSERT_TRUE(two_cpus.ok());
  EXPECT_EQ(Control().SetTrialResources(Id(0), *two_cpus).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Control().SetTrialResources(Id(1), *two_cpus).ok());
  EXPECT_EQ(obs_.updates.size(), 1u);
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 1u);
  EXPECT_EQ(T(1).resources.units("cpu"), two_cpus->units("cpu"));
}

TEST_F(TrialLifecycleTest,
       ExploitFromInsideOnTrialResultRequeuesWithTheNewConfigAndTheDonorCheckpoint) {
  // PBT's exploit on the trial being decided: its result is recorded, the worker is told
  // "stop", the trial goes PENDING with config {"x": 99} and restores the donor's checkpoint;
  // its next result carries "pbt_exploit".
  RunnerOptions o;
  o.checkpoint_freq = 1;
  auto scripted = std::make_unique<ScriptedScheduler>();
  scripted->exploiter = "exp_00001";
  scripted->donor = "exp_00000";
  Start(o, 2, std::move(scripted));
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Report(1, 1).ok());
  EXPECT_EQ(LastAction(), "stop");
  EXPECT_EQ(T(1).status, TrialStatus::kPending);
  EXPECT_EQ(T(1).config, (json{{"x", 99}}));
  ASSERT_EQ(obs_.updates.size(), 1u);
  EXPECT_EQ(obs_.updates[0]["pbt_exploit"]["donor"], Id(0));
  runner_->Step();
  Grant("w9");
  EXPECT_EQ(T(1).restored_checkpoint_id, Id(0) + "/00000001-a1");
  EXPECT_EQ(T(1).attempt, 2);
}

TEST_F(TrialLifecycleTest, AnExploitNeverPairsADonorsCheckpointWithALaterConfig) {
  // A PBT event order to survive: t1 checkpoints (iteration 1), t1 is itself exploited
  // (it takes t0's checkpoint and a new config), then t2 tries to exploit t1 before t1's next
  // checkpoint. t1's newest checkpoint holds its old config: the exploit is refused (PBT skips
  // it) instead of restoring that state under t1's current config. Once t1 has stored a
  // checkpoint of its new config, exploiting it restores that one.
  RunnerOptions o;
  o.checkpoint_freq = 1;
  Start(o, 3);
  runner_->Step();
  GrantAll();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Report(i, 1).ok());
    ASSERT_TRUE(Saved(i, 1).ok());
  }
  ASSERT_TRUE(Context().ExploitTrial(Id(1), Id(0), {{"x", 10}}).ok());
  EXPECT_FALSE(T(1).newest_checkpoint_has_config);
  const Status refused = Context().ExploitTrial(Id(2), Id(1), {{"x", 11}});
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_EQ(T(2).config, (json{{"x", 2}}));  // untouched
  EXPECT_FALSE(T(2).restore_checkpoint.has_value());

  runner_->Step();
  GrantAll();  // t1 restarts from t0's checkpoint with x = 10
  ASSERT_EQ(T(1).status, TrialStatus::kRunning);
  ASSERT_TRUE(Report(1, 1).ok());
  ASSERT_TRUE(Saved(1, 2).ok());
  ASSERT_TRUE(Context().ExploitTrial(Id(2), Id(1), {{"x", 12}}).ok());
  EXPECT_EQ(T(2).restore_checkpoint->checkpoint_id, Id(1) + "/00000002-a2");
}

TEST_F(TrialLifecycleTest, StopOfAPausedTrialTellsTheSchedulerOnTrialRemove) {
  auto scripted = std::make_unique<ScriptedScheduler>();
  ScriptedScheduler* s = scripted.get();
  Start({}, 2, std::move(scripted));
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Control().PauseTrial(Id(0)).ok());
  ASSERT_TRUE(Report(0, 1).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  ASSERT_TRUE(Control().StopTrial(Id(0)).ok());
  ASSERT_TRUE(Control().StopTrial(Id(1)).ok());
  EXPECT_EQ(s->removed, (std::vector<std::string>{Id(0)}));    // PAUSED -> on_trial_remove
  EXPECT_EQ(s->completed, (std::vector<std::string>{Id(1)}));  // RUNNING -> on_trial_complete
  EXPECT_TRUE(runner_->IsFinished());
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialLifecycleTest, FailFastRaiseEndsTheExperimentAtOnceAndLeavesTheOtherTrialsAsTheyWere) {
  RunnerOptions o;
  o.fail_fast = FailFast::kRaise;
  Start(o, 3);
  runner_->Step();
  Grant("w1");
  Grant("w2");
  Fail(0, "boom");
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_EQ(T(1).status, TrialStatus::kRunning);  // as it was
  EXPECT_EQ(T(2).status, TrialStatus::kPending);
  EXPECT_EQ(exec_.stops.size(), 1u);            // its trainable is stopped...
  EXPECT_EQ(exec_.releases.at({Id(1), 1}), 1);  // ...and its resources returned
  runner_->OnTrialExited(Id(1), 1, true, "");   // the late exit changes nothing
  EXPECT_EQ(T(1).status, TrialStatus::kRunning);
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialLifecycleTest, QueueTrialsKeepsATrialThatFitsNoWorkerPending) {
  RunnerOptions o;
  o.queue_trials = true;
  Start(o, 1);
  runner_->Step();
  const PlacementCall p = exec_.open.front();
  exec_.open.pop_front();
  runner_->OnPlacementFailed(p.trial_id, p.attempt,
                             "asks cpu=64 but the largest worker offers cpu=2");
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 1u);  // asked again
}

TEST_F(TrialLifecycleTest, AResultWithoutTheSchedulersMetricErrorsTheTrialWithoutRetry) {
  RunnerOptions o;
  o.max_failures = 5;
  auto scripted = std::make_unique<ScriptedScheduler>();
  scripted->required_metric = "val_loss";
  Start(o, 1, std::move(scripted));
  Run(0);
  ASSERT_TRUE(Report(0, 1, {{"loss", 1.0}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_NE(T(0).error.find("val_loss"), std::string::npos) << T(0).error;
  EXPECT_EQ(LastAction(), "stop");
  EXPECT_TRUE(runner_->IsFinished());
}

TEST_F(TrialLifecycleTest, RerunErroredRestoreKeepsCheckpointsAndRestartForgetsThem) {
  RunnerOptions o;
  o.checkpoint_freq = 1;
  Start(o, 2);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  Fail(0, "boom");
  runner_->OnTrialExited(Id(1), 1, true, "");
  ASSERT_TRUE(runner_->IsFinished());
  // A mode other than restore or restart is refused: at the boundary, and by the runner.
  EXPECT_EQ(ParseRerunMode("sideways").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Control().RerunErrored(RerunMode::kNone).status().code(), StatusCode::kInvalidArgument);
  auto n = Control().RerunErrored(RerunMode::kRestore);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_FALSE(runner_->IsFinished());
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_EQ(T(0).checkpoints.size(), 1u);
  EXPECT_EQ(T(1).status, TrialStatus::kTerminated);  // untouched
  Run(0);
  EXPECT_EQ(T(0).restored_checkpoint_id, Id(0) + "/00000001-a1");
  Fail(0, "boom again");
  ASSERT_TRUE(Control().RerunErrored(RerunMode::kRestart).ok());
  EXPECT_TRUE(T(0).checkpoints.empty());
  EXPECT_EQ(T(0).num_failures, 0);
}

TEST_F(TrialLifecycleTest, RestoreFromJournalStateQueuesPendingKeepsRunningAndRequeuesLostOnes) {
  // Resume: a RUNNING trial keeps its attempt (a reattached worker goes on reporting seq 3);
  // its repeated newest result gets the journaled decision again; RequeueLost puts an
  // unreported one back in the queue without counting a failure.
  Start({}, 3);
  exec_.can_place = false;
  runner_->Step();  // generates the 3 trials: the search algorithm's state after them
  const json searcher_state = obs_.searcher_states.back();
  exec_.can_place = true;
  std::vector<Trial> trials(3);
  for (int i = 0; i < 3; ++i) {
    trials[size_t(i)].trial_id = Id(i);
    trials[size_t(i)].index = i;
    trials[size_t(i)].config = {{"x", i}};
  }
  trials[0].status = TrialStatus::kRunning;
  trials[0].attempt = 1;
  trials[0].worker_id = "w1";
  trials[0].last_seq = 2;
  trials[0].training_iteration = 2;
  trials[1].status = TrialStatus::kRunning;
  trials[1].attempt = 1;
  trials[1].worker_id = "w2";
  ASSERT_TRUE(runner_
                  ->Restore({.trials = trials,
                             .searcher_state = searcher_state,
                             .last_actions = {{Id(0), Action::kCheckpoint}},
                             .start_s = clock_.WallSeconds()})
                  .ok());
  EXPECT_FALSE(Report(0, 2).ok());  // duplicate: answered again, not applied
  EXPECT_EQ(LastAction(), "checkpoint");
  ASSERT_TRUE(Report(0, 3).ok());
  EXPECT_EQ(T(0).LastResult()["training_iteration"], 3);
  runner_->RequeueLost(Id(1), "not reported");
  EXPECT_EQ(T(1).status, TrialStatus::kPending);
  EXPECT_EQ(T(1).num_failures, 0);
  EXPECT_EQ(exec_.releases.at({Id(1), 1}), 1);
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 2u);  // trials 1 and 2
}

TEST_F(TrialLifecycleTest, ACheckpointAskedBeforeATakeoverIsAdoptedWithItsIterationTimeAndScore) {
  // A successor restored with the journaled request at iteration 4 accepts the checkpoint the
  // worker stored for it (its time and score come from the request); one at an iteration never
  // asked for is refused and, unlike the adopted one, referenced by no trial: an orphan.
  RunnerOptions o;
  o.checkpoint_score_attr = "acc";
  Start(o, 1);
  std::vector<Trial> trials(1);
  trials[0].trial_id = Id(0);
  trials[0].config = {{"x", 0}};
  trials[0].status = TrialStatus::kRunning;
  trials[0].attempt = 1;
  trials[0].worker_id = "w1";
  trials[0].last_seq = trials[0].training_iteration = 4;
  trials[0].requested_checkpoints.push_back({"", 4, 7.5, 0.9, 0});
  ASSERT_TRUE(runner_->Restore({.trials = trials, .start_s = clock_.WallSeconds()}).ok());
  EXPECT_EQ(runner_->OnCheckpointSaved(Id(0), 1, "c/3", 3, 10).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_FALSE(ReferencedCheckpoints(runner_->trials()).contains("c/3"));
  ASSERT_TRUE(runner_->OnCheckpointSaved(Id(0), 1, "c/4", 4, 10).ok());
  ASSERT_EQ(T(0).checkpoints.size(), 1u);
  EXPECT_DOUBLE_EQ(T(0).checkpoints[0].time_total_s, 7.5);
  EXPECT_EQ(T(0).checkpoints[0].score, std::optional<double>(0.9));
  EXPECT_TRUE(T(0).requested_checkpoints.empty());
  EXPECT_TRUE(ReferencedCheckpoints(runner_->trials()).contains("c/4"));
  EXPECT_EQ(ReferencedCheckpoints(runner_->trials()), (std::unordered_set<std::string>{"c/4"}));
  EXPECT_EQ(obs_.saved_checkpoints.size(), 1u);  // journaled like any stored checkpoint
}

TEST_F(TrialLifecycleTest, InterruptKeepsUnfinishedTrialsResumableAndReopenPlacesThemAgain) {
  // Ctrl-C (Ray Tune's SIGINT): the running trial is stopped and back to PENDING, the pending
  // one stays PENDING (never TERMINATED with 0 iterations), the experiment ends INTERRUPTED;
  // Reopen continues it and both are placed again, the first from its newest checkpoint.
  RunnerOptions o;
  o.checkpoint_freq = 1;
  o.max_concurrent_trials = 1;
  Start(o, 2);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Saved(0, 1).ok());
  Control().InterruptExperiment("interrupted by the user");
  EXPECT_EQ(runner_->status(), ExperimentStatus::kInterrupted);
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_EQ(T(1).status, TrialStatus::kPending);
  EXPECT_EQ(T(0).num_failures, 0);
  EXPECT_EQ(exec_.releases.at({Id(0), 1}), 1);
  ASSERT_FALSE(obs_.ended.empty());
  EXPECT_EQ(obs_.ended.back().first, "INTERRUPTED");
  runner_->Step();
  EXPECT_TRUE(exec_.open.empty());  // nothing is placed while interrupted
  ASSERT_TRUE(Control().Reopen());
  EXPECT_FALSE(Control().Reopen());  // running again: nothing to reopen
  runner_->Step();
  Grant("w1");
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_EQ(T(0).attempt, 2);
  EXPECT_EQ(T(0).restored_iteration, 1);
}

TEST_F(TrialLifecycleTest, DecisionsForOneResultCombineStopOverPauseOverContinue) {
  // Ray Tune's decision queue order: the trial scheduler says PAUSE for t0 and t1; t0's result
  // also reaches the stop threshold (STOP wins: it terminates); t1's does not (PAUSE wins over
  // the CONTINUE of the stoppers). t2's scheduler says CONTINUE but a user pause is pending:
  // PAUSE.
  RunnerOptions o;
  o.stop = {{"score", 10}};
  Start(o, 3, std::make_unique<PausingScheduler>(std::set<std::string>{"exp_00000", "exp_00001"}));
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Control().PauseTrial(Id(2)).ok());
  ASSERT_TRUE(Report(0, 1, {{"score", 10}}).ok());
  ASSERT_TRUE(Report(1, 1, {{"score", 1}}).ok());
  ASSERT_TRUE(Report(2, 1, {{"score", 1}}).ok());
  EXPECT_EQ(LastAction(0), "stop");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(LastAction(1), "pause");
  EXPECT_EQ(LastAction(2), "pause");
  EXPECT_EQ(Combine(Combine(Decision::kContinue, Decision::kStop), Decision::kPause),
            Decision::kStop);
}

}  // namespace
}  // namespace tunebus
