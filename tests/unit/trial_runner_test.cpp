// Tests for TrialRunner: Ray Tune's TrialRunner semantics (shared/seeds) driven step by step
// with a fake executor, a recording observer and a fake clock (DESIGN.md "Trial lifecycle").
#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

// ---- creation and placement ----------------------------------------------------------------

TEST_F(TrialRunnerTest, TrialsAreCreatedFromGridTimesNumSamplesWithSequentialIds) {
  // A 3-point grid with num_samples 2 makes 6 trials, samples outer and grid inner, with ids
  // "<experiment_id>_00000".. in creation order, all PENDING with the per-trial resources.
  RunnerOptions o;
  o.experiment_id = "a1b2c3";
  o.resources_per_trial = *Resources::FromAmounts({{"cpu", 2}, {"gpu", 0.5}});
  exec_.can_place = false;
  StartWith(o, {{"lr", {{"grid_search", {0.1, 0.2, 0.3}}}}, {"k", 7}}, 2);
  EXPECT_EQ(runner_->TotalTrials(), 6);
  runner_->Step();
  ASSERT_EQ(runner_->trials().size(), 6u);
  const std::vector<double> lrs = {0.1, 0.2, 0.3, 0.1, 0.2, 0.3};
  for (size_t i = 0; i < 6; ++i) {
    const Trial& t = runner_->trials()[i];
    EXPECT_EQ(t.trial_id, "a1b2c3_0000" + std::to_string(i));
    EXPECT_EQ(t.index, int64_t(i));
    EXPECT_EQ(t.status, TrialStatus::kPending);
    EXPECT_EQ(t.attempt, 0);
    EXPECT_DOUBLE_EQ(t.config["lr"].get<double>(), lrs[i]);
    EXPECT_EQ(t.config["k"], 7);
    EXPECT_EQ(t.resources, o.resources_per_trial);
    EXPECT_EQ(runner_->FindTrial(t.trial_id), &t);
  }
  EXPECT_EQ(runner_->trials()[0].experiment_tag, "0_lr=0.1");
  EXPECT_EQ(runner_->trials()[4].experiment_tag, "4_lr=0.2");
  ASSERT_EQ(obs_.added.size(), 6u);
  EXPECT_EQ(obs_.added[5].trial_id, "a1b2c3_00005");
  ASSERT_FALSE(obs_.searcher_states.empty());
  EXPECT_EQ(obs_.searcher_states.back()["produced"], 6);
  EXPECT_TRUE(exec_.placements.empty());  // CanPlace was false
  EXPECT_EQ(CountByStatus(runner_->trials())[TrialStatus::kPending], 6);
  EXPECT_FALSE(runner_->IsFinished());
}

TEST_F(TrialRunnerTest, FifoPlacesTrialsInCreationOrderWhenTheExecutorCan) {
  // Nothing is placed while CanPlace is false; then FIFO asks in creation order, attempt 1.
  exec_.can_place = false;
  Start({}, 5);
  runner_->Step();
  EXPECT_TRUE(exec_.placements.empty());
  exec_.can_place = true;
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(exec_.placements[size_t(i)].trial_id, Id(i));
    EXPECT_EQ(exec_.placements[size_t(i)].attempt, 1);
  }
  runner_->Step();  // in-flight placements are not requested again
  EXPECT_EQ(exec_.placements.size(), 5u);
  GrantAll();
  ASSERT_EQ(exec_.launches.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(exec_.launches[size_t(i)].trial_id, Id(i));
    EXPECT_EQ(T(i).status, TrialStatus::kRunning);
    EXPECT_EQ(T(i).attempt, 1);
    EXPECT_EQ(T(i).worker_id, WorkerFor(Id(i)));
    EXPECT_DOUBLE_EQ(T(i).start_time_s, 1000.0);
  }
}

TEST_F(TrialRunnerTest, GrantSetsWorkerAndGpuIdsBeforeLaunch) {
  // The launched trial carries the granted worker, GPU ids and attempt.
  Start({}, 1);
  runner_->Step();
  Grant("gpu-node", {"2", "3"});
  ASSERT_EQ(exec_.launches.size(), 1u);
  EXPECT_EQ(exec_.launches[0].worker_id, "gpu-node");
  EXPECT_EQ(exec_.launches[0].gpu_ids, (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(exec_.launches[0].attempt, 1);
  ASSERT_EQ(obs_.started.size(), 1u);
  EXPECT_EQ(obs_.started[0].worker_id, "gpu-node");
}

TEST_F(TrialRunnerTest, MaxConcurrentTrialsCapsPlacingPlusRunning) {
  // With max_concurrent_trials 2, at most two trials are being placed or running at once.
  RunnerOptions o;
  o.max_concurrent_trials = 2;
  Start(o, 5);
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 2u);
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 2u);
  Grant();  // trial 0 running, trial 1 still placing
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 2u);
  // A deferral frees the slot: trial 1 is asked again (FIFO: lowest index first).
  PlacementCall p1 = exec_.open.front();
  exec_.open.pop_front();
  runner_->OnPlacementDeferred(p1.trial_id, p1.attempt);
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 3u);
  EXPECT_EQ(exec_.placements[2].trial_id, Id(1));
  Grant();
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 3u);
  // Trial 0 finishing frees a slot for trial 2.
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 4u);
  EXPECT_EQ(exec_.placements[3].trial_id, Id(2));
  int in_flight = 0;
  for (const Trial& t : runner_->trials()) in_flight += t.status == TrialStatus::kRunning;
  EXPECT_EQ(in_flight + int(exec_.open.size()), 2);
}

// ---- results and decisions -----------------------------------------------------------------

TEST_F(TrialRunnerTest, ResultsGetAutoFilledKeys) {
  // Each accepted result gets training_iteration (1, 2, ...), time_this_iter_s, time_total_s
  // (sum), timestamp, trial_id, experiment_tag and done=false; user metrics are kept.
  Start({}, 1);
  Run(0);
  clock_.AdvanceTo(1234.9);
  ASSERT_TRUE(Report(0, 1, {{"loss", 0.5}}, 1.5).ok());
  const json r1 = T(0).LastResult();
  EXPECT_EQ(r1["training_iteration"], 1);
  EXPECT_DOUBLE_EQ(r1["time_this_iter_s"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(r1["time_total_s"].get<double>(), 1.5);
  EXPECT_EQ(r1["trial_id"], Id(0));
  EXPECT_EQ(r1["experiment_tag"], T(0).experiment_tag);
  EXPECT_EQ(r1["done"], false);
  EXPECT_EQ(r1["timestamp"], 1234);
  EXPECT_DOUBLE_EQ(r1["loss"].get<double>(), 0.5);

  ASSERT_TRUE(Report(0, 2, {{"loss", 0.25}}, 2.0).ok());
  const json r2 = T(0).LastResult();
  EXPECT_EQ(r2["training_iteration"], 2);
  EXPECT_DOUBLE_EQ(r2["time_total_s"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(r2["loss"].get<double>(), 0.25);
  EXPECT_EQ(T(0).training_iteration, 2);
  EXPECT_DOUBLE_EQ(T(0).time_total_s, 3.5);
  EXPECT_EQ(T(0).num_results, 2);
  EXPECT_EQ(T(0).last_seq, 2);

  ASSERT_EQ(obs_.results.size(), 2u);
  EXPECT_EQ(obs_.results[1].result, r2);
  EXPECT_EQ(obs_.results[1].decision, "continue");
  ASSERT_EQ(exec_.decisions.size(), 2u);
  EXPECT_EQ(exec_.decisions[0].seq, 1);
  EXPECT_EQ(exec_.decisions[1].seq, 2);
  EXPECT_EQ(exec_.decisions[1].action, "continue");
  EXPECT_EQ(exec_.decisions[1].attempt, 1);
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
}

TEST_F(TrialRunnerTest, StopThresholdOnTrainingIterationTerminatesAtIterationThree) {
  // stop {training_iteration: 3}: results 1 and 2 continue, result 3 is STOP, the trial is
  // TERMINATED, its resources are released once, and a late exit changes nothing.
  RunnerOptions o;
  o.stop = {{"training_iteration", 3}};
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  ASSERT_TRUE(Report(0, 2).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  ASSERT_TRUE(Report(0, 3).ok());
  ASSERT_EQ(exec_.decisions.size(), 3u);
  EXPECT_EQ(exec_.decisions[1].action, "continue");
  EXPECT_EQ(exec_.decisions[2].action, "stop");
  EXPECT_EQ(exec_.decisions[2].seq, 3);
  EXPECT_EQ(obs_.results.back().decision, "stop");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(0).LastResult()["done"], true);
  EXPECT_EQ(T(0).LastResult()["training_iteration"], 3);
  EXPECT_TRUE(T(0).worker_id.empty());
  EXPECT_TRUE(exec_.stops.empty());  // the STOP decision itself tells the worker

  runner_->OnTrialExited(Id(0), 1, true, "");  // the trainable then exits
  runner_->OnTrialExited(Id(0), 1, false, "x");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(0).num_failures, 0);
  ExpectEachGrantReleasedOnce();
  EXPECT_EQ(runner_->status(), ExperimentStatus::kFinished);
}

TEST_F(TrialRunnerTest, StopThresholdOnUserMetric) {
  // stop {accuracy: 0.9}: a result at or above the threshold stops; once a result has carried
  // the key, one without it (a metric reported every few iterations) does not.
  RunnerOptions o;
  o.stop = {{"accuracy", 0.9}};
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1, {{"accuracy", 0.5}}).ok());
  ASSERT_TRUE(Report(0, 2, {{"loss", 1}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  ASSERT_TRUE(Report(0, 3, {{"accuracy", 0.89}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  ASSERT_TRUE(Report(0, 4, {{"accuracy", 0.9}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(exec_.decisions.back().action, "stop");
}

TEST_F(TrialRunnerTest, AStopKeyNoResultHasCarriedErrorsTheTrialNamingTheNearMiss) {
  // stop {training_iteraton: 5} (a typo): the first result has no such key, so the trial is
  // ERROR at once with the result's keys and the key meant, not run to its end; the experiment,
  // all of whose trials errored, ends ERROR.
  RunnerOptions o;
  o.stop = {{"training_iteraton", 5}};
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1, {{"loss", 1}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_NE(T(0).error.find("stop criterion 'training_iteraton' is not in the result; did you mean "
                            "training_iteration? (its keys: "),
            std::string::npos)
      << T(0).error;
  EXPECT_EQ(exec_.decisions.back().action, "stop");
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
}

TEST_F(TrialRunnerTest, DoneTrueResultTerminatesTheTrial) {
  // A trainable reporting done: true is finished (Ray Tune's DONE), decision STOP.
  Start({}, 2);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1, {{"done", true}, {"score", 3}}).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(exec_.decisions.back().action, "stop");
  EXPECT_EQ(T(0).LastResult()["done"], true);
  EXPECT_EQ(T(1).status, TrialStatus::kRunning);
  EXPECT_FALSE(runner_->IsFinished());
  EXPECT_EQ(exec_.releases.at({Id(0), 1}), 1);
}

TEST_F(TrialRunnerTest, NonBooleanDoneFollowsRayTruthinessInsteadOfThrowing) {
  // A trainable reports done: 1 / done: 0 (JSON numbers, as a script may write). Ray Tune
  // tests `if result.get(DONE)`, so 1 stops and 0 continues; the runner must never throw on a
  // trainable's input (an exception here would take down the scheduler's loop), and the
  // auto-filled `done` is a boolean.
  Start({}, 2);
  runner_->Step();
  GrantAll();
  Status s0;
  EXPECT_NO_THROW(s0 = Report(0, 1, {{"done", 0}}));
  EXPECT_TRUE(s0.ok()) << s0.ToString();
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_EQ(T(0).training_iteration, 1);
  ASSERT_TRUE(T(0).LastResult().is_object());
  EXPECT_EQ(T(0).LastResult()["done"], json(false));
  Status s1;
  EXPECT_NO_THROW(s1 = Report(1, 1, {{"done", 1}}));
  EXPECT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(T(1).status, TrialStatus::kTerminated);
  ASSERT_TRUE(T(1).LastResult().is_object());
  EXPECT_EQ(T(1).LastResult()["done"], json(true));
}

TEST_F(TrialRunnerTest, TrainableExitOkTerminatesTheTrial) {
  // A trainable that returns normally is TERMINATED without an error; resources come back once.
  Start({}, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_TRUE(T(0).error.empty());
  EXPECT_EQ(T(0).num_failures, 0);
  ExpectEachGrantReleasedOnce();
  ASSERT_FALSE(obs_.statuses.empty());
  EXPECT_EQ(obs_.statuses.back().status, TrialStatus::kTerminated);
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_EQ(runner_->status(), ExperimentStatus::kFinished);
}

// ---- failures ----------------------------------------------------------------------------

TEST_F(TrialRunnerTest, FailureWithMaxFailuresZeroIsError) {
  // max_failures 0: the first failure is final; the trial is ERROR with the error text.
  Start({}, 1);
  Run(0);
  Fail(0, "ValueError: boom");
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_EQ(T(0).error, "ValueError: boom");
  EXPECT_EQ(T(0).num_failures, 1);
  EXPECT_EQ(obs_.statuses.back().status, TrialStatus::kError);
  EXPECT_EQ(obs_.statuses.back().error, "ValueError: boom");
  ExpectEachGrantReleasedOnce();
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 1u);                  // not retried
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);  // its only trial errored
}

TEST_F(TrialRunnerTest, StartFailureIsErrorAtOnceEvenWithMaxFailuresMinusOne) {
  // A trainable that cannot be started (missing command) is ERROR at its first attempt, though
  // max_failures -1 retries other failures forever; the other trial goes on.
  RunnerOptions o;
  o.max_failures = -1;
  Start(o, 2);
  Run(0);
  Run(1);
  runner_->OnTrialExited(Id(0), T(0).attempt, false, "cannot run 'nope': No such file or directory",
                         /*start_failed=*/true);
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_EQ(T(0).num_failures, 1);
  EXPECT_EQ(T(1).status, TrialStatus::kRunning);
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 2u);  // trial 0 is not placed again
  EXPECT_EQ(exec_.releases.at({Id(0), 1}), 1);
}

TEST_F(TrialRunnerTest, MaxFailuresTwoRequeuesTwiceThenErrors) {
  // max_failures 2: failures 1 and 2 requeue the trial (PENDING, next attempt), the third is
  // ERROR; num_failures counts every failure.
  RunnerOptions o;
  o.max_failures = 2;
  Start(o, 1);
  for (int k = 1; k <= 3; ++k) {
    Run(0);
    EXPECT_EQ(T(0).attempt, k);
    Fail(0, "crash " + std::to_string(k));
    EXPECT_EQ(T(0).num_failures, k);
    EXPECT_EQ(T(0).error, "crash " + std::to_string(k));
    if (k < 3) {
      EXPECT_EQ(T(0).status, TrialStatus::kPending) << k;
      EXPECT_EQ(obs_.statuses.back().status, TrialStatus::kPending);
      EXPECT_FALSE(runner_->IsFinished());
    }
  }
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  // The failure history (tunectl show) holds each attempt's error and what followed.
  ASSERT_EQ(T(0).failures.size(), 3u);
  EXPECT_EQ(T(0).failures[0].attempt, 1);
  EXPECT_EQ(T(0).failures[0].error, "crash 1");
  EXPECT_EQ(T(0).failures[0].then, TrialStatus::kPending);
  EXPECT_EQ(T(0).failures[2].then, TrialStatus::kError);
  ASSERT_EQ(exec_.placements.size(), 3u);
  EXPECT_EQ(exec_.placements[2].attempt, 3);
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 3u);
  ExpectEachGrantReleasedOnce();
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
}

TEST_F(TrialRunnerTest, MaxFailuresMinusOneRetriesForever) {
  // max_failures -1: every failure requeues, however many there are.
  RunnerOptions o;
  o.max_failures = -1;
  Start(o, 1);
  for (int k = 1; k <= 25; ++k) {
    Run(0);
    Fail(0, "flaky");
    ASSERT_EQ(T(0).status, TrialStatus::kPending) << k;
    EXPECT_EQ(T(0).num_failures, k);
  }
  Run(0);
  EXPECT_EQ(T(0).attempt, 26);
  runner_->OnTrialExited(Id(0), 26, true, "");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialRunnerTest, RequeueResetsTrainingIterationAndSeq) {
  // After a failure a trial without checkpoints restarts from scratch: training_iteration and
  // time_total_s restart when it starts again, and the new attempt's seqs start at 1 again;
  // num_results keeps counting.
  RunnerOptions o;
  o.max_failures = 1;
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1, json::object(), 2.0).ok());
  ASSERT_TRUE(Report(0, 2, json::object(), 2.0).ok());
  Fail(0, "oom");
  Run(0);
  EXPECT_EQ(T(0).training_iteration, 0);
  EXPECT_DOUBLE_EQ(T(0).time_total_s, 0.0);
  EXPECT_EQ(T(0).last_seq, 0);
  ASSERT_TRUE(Report(0, 1, json::object(), 0.5).ok());
  EXPECT_EQ(T(0).LastResult()["training_iteration"], 1);
  EXPECT_DOUBLE_EQ(T(0).LastResult()["time_total_s"].get<double>(), 0.5);
  EXPECT_EQ(T(0).num_results, 3);
  EXPECT_EQ(exec_.decisions.back().attempt, 2);
}

TEST_F(TrialRunnerTest, FailFastEndsExperimentAsErrorAndStopsRunningTrials) {
  // fail_fast: the first trial to error ends the experiment as ERROR; running trials are told
  // to stop and released, pending ones become TERMINATED without executor calls.
  RunnerOptions o;
  o.fail_fast = FailFast::kStopExperiment;
  o.max_concurrent_trials = 3;
  Start(o, 4);
  runner_->Step();
  GrantAll();
  ASSERT_EQ(T(3).status, TrialStatus::kPending);
  Fail(1, "RuntimeError: nan loss");
  EXPECT_EQ(T(1).status, TrialStatus::kError);
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
  EXPECT_TRUE(runner_->IsFinished());
  EXPECT_NE(runner_->end_reason().find(Id(1)), std::string::npos) << runner_->end_reason();
  EXPECT_NE(runner_->end_reason().find("nan loss"), std::string::npos) << runner_->end_reason();
  for (int i : {0, 2, 3}) EXPECT_EQ(T(i).status, TrialStatus::kTerminated) << i;
  ASSERT_EQ(exec_.stops.size(), 2u);
  EXPECT_EQ(exec_.stops[0].trial_id, Id(0));
  EXPECT_EQ(exec_.stops[0].worker_id, "w00000");
  EXPECT_EQ(exec_.stops[0].attempt, 1);
  EXPECT_EQ(exec_.stops[1].trial_id, Id(2));
  EXPECT_EQ(exec_.stops[1].worker_id, "w00002");
  ExpectEachGrantReleasedOnce();
  ASSERT_EQ(obs_.ended.size(), 1u);
  EXPECT_EQ(obs_.ended[0].first, "ERROR");
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 3u);  // nothing is placed after the end
  // Exits of the stopped trials arriving later change nothing.
  runner_->OnTrialExited(Id(0), 1, false, "killed");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(0).num_failures, 0);
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialRunnerTest, InfeasiblePlacementIsErrorWithTheReason) {
  // A trial the cluster can never hold becomes ERROR with the placement's reason; nothing was
  // granted so nothing is released, and it does not count as a trainable failure.
  RunnerOptions o;
  o.resources_per_trial = *Resources::FromAmounts({{"gpu", 8}});
  Start(o, 1);
  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 1u);
  const std::string reason = "trial asks for gpu=8; the largest worker has cpu=4, gpu=2";
  runner_->OnPlacementFailed(Id(0), 1, reason);
  exec_.open.clear();
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_EQ(T(0).error, reason);
  EXPECT_EQ(T(0).num_failures, 0);
  EXPECT_EQ(obs_.statuses.back().error, reason);
  EXPECT_TRUE(exec_.releases.empty());
  EXPECT_TRUE(exec_.launches.empty());
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
}

TEST_F(TrialRunnerTest, InfeasiblePlacementWithFailFastEndsExperiment) {
  // fail_fast also applies to a trial that can never be placed.
  RunnerOptions o;
  o.fail_fast = FailFast::kStopExperiment;
  Start(o, 2);
  runner_->Step();
  runner_->OnPlacementFailed(Id(0), 1, "too big");
  EXPECT_EQ(runner_->status(), ExperimentStatus::kError);
  EXPECT_EQ(T(1).status, TrialStatus::kTerminated);
  // The grant for trial 1 that was still in flight is given straight back.
  exec_.open.pop_front();
  Grant();
  EXPECT_EQ(T(1).status, TrialStatus::kTerminated);
  EXPECT_TRUE(exec_.launches.empty());
  ExpectEachGrantReleasedOnce();
}

TEST_F(TrialRunnerTest, DeferredPlacementStaysPendingAndIsPlacedAgainLater) {
  // "No room now": the trial stays PENDING with no status change and is asked for again on a
  // later Step, with the same attempt number.
  Start({}, 1);
  runner_->Step();
  PlacementCall p = exec_.open.front();
  exec_.open.pop_front();
  const size_t statuses = obs_.statuses.size();
  runner_->OnPlacementDeferred(p.trial_id, p.attempt);
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_EQ(obs_.statuses.size(), statuses);
  EXPECT_FALSE(runner_->IsFinished());
  exec_.can_place = false;  // the executor waits for something to free
  runner_->Step();
  EXPECT_EQ(exec_.placements.size(), 1u);
  exec_.can_place = true;
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 2u);
  EXPECT_EQ(exec_.placements[1].trial_id, Id(0));
  EXPECT_EQ(exec_.placements[1].attempt, 1);
  Grant();
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_EQ(T(0).attempt, 1);
}

TEST_F(TrialRunnerTest, AnswersForOtherAttemptsOrUnknownTrialsAreIgnored) {
  // Placement answers naming a wrong attempt or an unknown trial change nothing.
  Start({}, 1);
  runner_->Step();
  runner_->OnTrialPlaced(Id(0), 2, "w1", {});
  runner_->OnTrialPlaced("nope_00000", 1, "w1", {});
  runner_->OnPlacementFailed(Id(0), 5, "x");
  runner_->OnPlacementDeferred(Id(0), 0);
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_TRUE(exec_.launches.empty());
  Grant();
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
}

// ---- stale and duplicate results -------------------------------------------------------

TEST_F(TrialRunnerTest, StaleAttemptsAndDuplicateSeqsAreRejectedAndChangeNothing) {
  // Duplicates (seq already seen), results of an old attempt, of a trial not RUNNING and of an
  // unknown trial are answered with an error Status and leave the trial untouched. The newest
  // result arriving again (resent after a reconnect) gets its decision again, nothing else.
  RunnerOptions o;
  o.max_failures = 1;
  Start(o, 1);
  Run(0);
  ASSERT_TRUE(Report(0, 1, {{"loss", 1.0}}).ok());
  const Trial before = T(0);
  const size_t decisions = exec_.decisions.size();
  const size_t results = obs_.results.size();
  auto unchanged = [&] {
    EXPECT_EQ(T(0).training_iteration, before.training_iteration);
    EXPECT_EQ(T(0).num_results, before.num_results);
    EXPECT_EQ(T(0).LastResult(), before.LastResult());
    EXPECT_EQ(T(0).last_seq, before.last_seq);
    EXPECT_DOUBLE_EQ(T(0).time_total_s, before.time_total_s);
    EXPECT_EQ(exec_.decisions.size(), decisions);
    EXPECT_EQ(obs_.results.size(), results);
  };
  Status dup = Report(0, 1, {{"loss", 9.0}});
  EXPECT_FALSE(dup.ok());
  EXPECT_EQ(dup.code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(exec_.decisions.size(), decisions + 1);  // the lost decision is answered again
  EXPECT_EQ(exec_.decisions.back().seq, 1);
  EXPECT_EQ(exec_.decisions.back().action, exec_.decisions[decisions - 1].action);
  exec_.decisions.pop_back();
  unchanged();
  EXPECT_FALSE(Report(0, 0, {{"loss", 9.0}}).ok());
  unchanged();
  Status old = runner_->OnResult(Id(0), 0, 2, TrainingResult::FromJson({{"loss", 9.0}}), 1.0);
  EXPECT_FALSE(old.ok());
  unchanged();
  Status future = runner_->OnResult(Id(0), 2, 2, TrainingResult::FromJson({{"loss", 9.0}}), 1.0);
  EXPECT_FALSE(future.ok());
  unchanged();
  Status unknown =
      runner_->OnResult("exp_99999", 1, 1, TrainingResult::FromJson({{"loss", 9.0}}), 1.0);
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);

  // After a requeue, attempt 1's late results are stale, also while the trial is PENDING.
  Fail(0, "crash");
  ASSERT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_FALSE(runner_->OnResult(Id(0), 1, 2, TrainingResult::FromJson({{"loss", 9.0}}), 1.0).ok());
  Run(0);
  Status stale = runner_->OnResult(Id(0), 1, 7, TrainingResult::FromJson({{"loss", 9.0}}), 1.0);
  EXPECT_EQ(stale.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(T(0).num_results, 1);
  EXPECT_EQ(T(0).training_iteration, 0);
  EXPECT_EQ(exec_.decisions.size(), decisions);
  // A gap in seqs is fine (only seen seqs are duplicates).
  ASSERT_TRUE(Report(0, 3).ok());
  EXPECT_FALSE(Report(0, 2).ok());
  EXPECT_EQ(T(0).training_iteration, 1);
}

// ---- worker loss --------------------------------------------------------------------------

TEST_F(TrialRunnerTest, WorkerLostRequeuesItsRunningTrialsWithoutCountingFailures) {
  // A lost worker's RUNNING trials go back to PENDING (released once, not a failure) and are
  // placed again as the next attempt; trials on other workers keep running.
  Start({}, 3);
  runner_->Step();
  Grant("w1");
  Grant("w1");
  Grant("w2");
  ASSERT_TRUE(Report(0, 1).ok());
  runner_->OnWorkerLost("w1");
  for (int i : {0, 1}) {
    EXPECT_EQ(T(i).status, TrialStatus::kPending) << i;
    EXPECT_EQ(T(i).num_failures, 0) << i;
    EXPECT_TRUE(T(i).worker_id.empty());
    EXPECT_NE(T(i).error.find("w1"), std::string::npos) << T(i).error;
    EXPECT_EQ(exec_.releases.at({Id(i), 1}), 1);
  }
  EXPECT_EQ(T(2).status, TrialStatus::kRunning);
  EXPECT_TRUE(exec_.stops.empty());
  runner_->OnWorkerLost("w1");  // again: nothing left there
  EXPECT_EQ(exec_.releases.size(), 2u);

  runner_->Step();
  ASSERT_EQ(exec_.open.size(), 2u);
  EXPECT_EQ(exec_.open[0].attempt, 2);
  GrantAll("w3");
  EXPECT_EQ(T(0).attempt, 2);
  EXPECT_EQ(T(0).worker_id, "w3");
  // The dead attempt's late messages are ignored.
  EXPECT_FALSE(runner_->OnResult(Id(0), 1, 2, TrainingResult::FromJson(json::object()), 1.0).ok());
  runner_->OnTrialExited(Id(0), 1, false, "connection lost");
  EXPECT_EQ(T(0).status, TrialStatus::kRunning);
  EXPECT_EQ(T(0).num_failures, 0);
}

TEST_F(TrialRunnerTest, MaxWorkerLossesBoundsRequeuesAfterWorkerLossSeparatelyFromMaxFailures) {
  // max_worker_losses 1, max_failures 0: the first loss of its worker requeues the trial (a
  // "worker_lost" failure, num_failures stays 0); the second makes it ERROR, naming the count.
  RunnerOptions o;
  o.max_worker_losses = 1;
  Start(o, 1);
  runner_->Step();
  Grant("w1");
  runner_->OnWorkerLost("w1");
  EXPECT_EQ(T(0).status, TrialStatus::kPending);
  EXPECT_EQ(T(0).num_worker_losses, 1);
  EXPECT_EQ(T(0).num_failures, 0);
  ASSERT_EQ(T(0).failures.size(), 1u);
  EXPECT_EQ(T(0).failures[0].kind, FailureKind::kWorkerLost);
  runner_->Step();
  Grant("w2");
  runner_->OnWorkerLost("w2");
  EXPECT_EQ(T(0).status, TrialStatus::kError);
  EXPECT_EQ(T(0).num_worker_losses, 2);
  EXPECT_EQ(T(0).num_failures, 0);
  EXPECT_NE(T(0).error.find("max_worker_losses 1"), std::string::npos) << T(0).error;
  EXPECT_EQ(T(0).failures.back().kind, FailureKind::kWorkerLost);
  EXPECT_EQ(T(0).failures.back().then, TrialStatus::kError);
  EXPECT_TRUE(runner_->IsFinished());
}

}  // namespace
}  // namespace tunebus
