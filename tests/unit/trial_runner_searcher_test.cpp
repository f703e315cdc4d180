// Tests for the runner's use of its Searcher (Ray Tune's TrialRunner + search_alg, shared/seeds/
// 003): when it asks for trials, what it shows the searcher, how the searcher's state is
// journaled (`searcher` deltas, `searcher_state`) and that a runner resumed from a journal cut
// anywhere suggests the same configs in the same order as one that never stopped.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "libs/tune/make_searcher.hpp"
#include "tests/unit/fake_executor.hpp"
#include "tests/unit/recording_observer.hpp"
#include "tests/unit/runner_fixture.hpp"
#include "tests/unit/test_searchers.hpp"

namespace tunebus {
namespace {

class RunnerSearcherTest : public TrialRunnerTest {
 protected:
  MeanSearcher* StartMean(RunnerOptions options, int64_t num_samples) {
    options.metric = "score";
    options.mode = "max";
    auto searcher = std::make_unique<MeanSearcher>(num_samples, 11);
    MeanSearcher* mean = searcher.get();
    EXPECT_TRUE(searcher->SetSearchProperties("score", "max", json::object()).ok());
    StartWithSearcher(std::move(options), std::move(searcher));
    return mean;
  }
};

TEST_F(RunnerSearcherTest, SearcherSeesEveryResultAndEveryEndButNotARequeue) {
  // Ray's runner: on_trial_result for each result, on_trial_complete when a trial ends
  // (TERMINATED, ERROR, stopped by the user), with its last result; a retried failure is not an
  // end.
  RunnerOptions o;
  o.max_failures = 1;
  MeanSearcher* mean = StartMean(o, 3);
  runner_->Step();
  ASSERT_EQ(exec_.placements.size(), 3u);  // one Step, three free slots, three trials
  GrantAll();
  ASSERT_TRUE(Report(0, 1, {{"score", 1.0}}).ok());
  runner_->OnTrialExited(Id(0), 1, true, "");
  Fail(1, "boom");  // requeued (max_failures 1): not an end
  runner_->Step();
  GrantAll();
  Fail(1, "boom again");  // ERROR
  ASSERT_TRUE(Context().StopTrial(Id(2)).ok());
  EXPECT_EQ(mean->calls, (std::vector<std::string>{"suggest exp_00000", "suggest exp_00001",
                                                   "suggest exp_00002", "result exp_00000 1",
                                                   "complete exp_00000 error=false value=1",
                                                   "complete exp_00001 error=true value=none",
                                                   "complete exp_00002 error=false value=none"}));
  runner_->Step();
  EXPECT_TRUE(runner_->IsFinished());  // every trial done and the searcher suggested its Total
}

TEST_F(RunnerSearcherTest, StoppedTrialsResultIsShownThenItsEnd) {
  // A stopper's stop: on_trial_result, then on_trial_complete with that result.
  RunnerOptions o;
  o.stop = {{"score", 5.0}};
  MeanSearcher* mean = StartMean(o, 1);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1, {{"score", 6.0}}).ok());
  EXPECT_EQ(mean->calls, (std::vector<std::string>{"suggest exp_00000", "result exp_00000 1",
                                                   "complete exp_00000 error=false value=6"}));
}

TEST_F(RunnerSearcherTest, OneAtATimeSearcherGetsAsManyTrialsAsFreeSlots) {
  // A window-1 searcher is asked again within a Step while its trial was placed and a slot is
  // free; one more trial waits for a slot (Ray's max_pending_trials of 1), no other. That one
  // is suggested in the Step that filled the slots, so it is journaled before their trials
  // start.
  RunnerOptions o;
  o.max_concurrent_trials = 2;
  StartMean(o, 8);
  runner_->Step();  // two free slots: two trials at once, and one that waits
  EXPECT_EQ(exec_.placements.size(), 2u);
  EXPECT_EQ(runner_->trials().size(), 3u);
  GrantAll();
  runner_->Step();  // no free slot: the one suggestion still waits
  EXPECT_EQ(runner_->trials().size(), 3u);
  EXPECT_EQ(exec_.placements.size(), 2u);
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->OnTrialExited(Id(1), 1, true, "");
  runner_->Step();  // two free slots: the waiting trial and a new one, and the next waits
  EXPECT_EQ(exec_.placements.size(), 4u);
  EXPECT_EQ(runner_->trials().size(), 5u);
  // While the cluster has no room, one suggestion waits unplaced and no other is asked for.
  exec_.can_place = false;
  GrantAll();
  runner_->OnTrialExited(Id(2), 1, true, "");
  runner_->Step();
  EXPECT_EQ(runner_->trials().size(), 5u);
  runner_->Step();
  EXPECT_EQ(runner_->trials().size(), 5u);
  EXPECT_EQ(exec_.placements.size(), 4u);
}

TEST_F(RunnerSearcherTest, NotNowStopsAskingAndTheExperimentWaitsForTheSearcher) {
  // Ray's None from suggest: no trial this step; the experiment is not over while the searcher
  // may still suggest (Ray's is_finished needs search_alg.is_finished()).
  MeanSearcher* mean = StartMean(RunnerOptions{}, 2);
  runner_->Step();
  GrantAll();
  runner_->OnTrialExited(Id(0), 1, true, "");
  runner_->OnTrialExited(Id(1), 1, true, "");
  mean->not_now = true;
  ASSERT_EQ(runner_->trials().size(), 2u);
  EXPECT_TRUE(runner_->IsFinished());  // it suggested its Total: finished without asking again
  RunnerOptions unbounded;
  std::vector<std::string> log;
  FakeExecutor exec(log);
  RecordingObserver obs(log);
  auto searcher = std::make_unique<MeanSearcher>(-1, 11);
  MeanSearcher* waiting = searcher.get();
  waiting->not_now = true;
  unbounded.experiment_id = "u";
  ManualClock clock(0.0);
  TrialRunner runner(unbounded, std::move(searcher), std::make_unique<FifoScheduler>(), exec, obs,
                     clock);
  runner.Step();
  runner.Step();
  EXPECT_TRUE(runner.trials().empty());
  EXPECT_FALSE(runner.IsFinished());
  EXPECT_EQ(std::count(waiting->calls.begin(), waiting->calls.end(), "suggest u_00000"), 2);
  waiting->not_now = false;
  runner.Step();
  // No slot limit: one Step places at most 32, and one more waits.
  EXPECT_EQ(runner.trials().size(), 33u);
}

TEST_F(RunnerSearcherTest, SearcherDeltaIsJournaledBeforeTheTrialAndItsPlacement) {
  // Write-ahead: the searcher's delta for a suggestion precedes the trial_added record and the
  // placement; its delta for a trial's end precedes the trial's TERMINATED record.
  StartMean(RunnerOptions{}, 1);
  runner_->Step();
  EXPECT_LT(IndexOf("obs:searcher"), IndexOf("obs:added exp_00000"));
  EXPECT_LT(IndexOf("obs:added exp_00000"), IndexOf("exec:place exp_00000/1"));
  GrantAll();
  log_.clear();
  runner_->OnTrialExited(Id(0), 1, true, "");
  EXPECT_LT(IndexOf("obs:searcher"), IndexOf("obs:status exp_00000/1 TERMINATED"));
  EXPECT_EQ(obs_.searcher_deltas.size(), 2u);
  EXPECT_TRUE(obs_.searcher_states.empty());  // a delta-journaled searcher: no whole states
}

// ---- resume: a journal cut anywhere ----------------------------------------------------------

// One experiment run by a deterministic driver: each tick steps the runner, grants every
// placement, and has every RUNNING trial (in index order) report {"score": f(config)}; a trial's
// attempt returns after its third result.
struct Harness {
  using MakeSearcherFn = std::function<std::unique_ptr<Searcher>()>;
  Harness(RunnerOptions options, const MakeSearcherFn& make, std::vector<json> journal)
      : records(std::move(journal)), exec(log), obs(records) {
    options.experiment_id = "exp";
    runner = std::make_unique<TrialRunner>(options, make(), std::make_unique<FifoScheduler>(), exec,
                                           obs, clock);
  }
  // A resume from `records` as Experiment::Resume does it: replay, restore the runner, the trial
  // scheduler and the searcher, and requeue the trials no worker reattaches.
  void Resume() {
    journal::JournalReplayer replayer;
    for (const json& r : records) ASSERT_TRUE(replayer.Apply(r).ok()) << r.dump();
    journal::ReplayedExperiment st = replayer.Take();
    ASSERT_TRUE(runner
                    ->Restore({.trials = std::move(st.trials),
                               .searcher_state = st.searcher_state,
                               .searcher_deltas = st.searcher_deltas,
                               .trial_scheduler =
                                   TrialSchedulerJournal{st.scheduler_state, st.scheduler_deltas},
                               .last_actions = st.last_action,
                               .start_s = 1000.0,
                               .ended_status = st.ended_status.value_or(ExperimentStatus::kRunning),
                               .ended_reason = st.ended_reason})
                    .ok());
    for (const Trial& t : std::vector<Trial>(runner->trials())) {
      if (t.status == TrialStatus::kRunning) runner->RequeueLost(t.trial_id, "not reattached");
    }
  }
  void Drive() {
    for (int tick = 0; tick < 1000 && !runner->IsFinished(); ++tick) {
      runner->Step();
      while (!exec.open.empty()) {
        PlacementCall p = exec.open.front();
        exec.open.pop_front();
        runner->OnTrialPlaced(p.trial_id, p.attempt, "w", {});
      }
      for (size_t i = 0; i < runner->trials().size(); ++i) {
        const Trial t = runner->trials()[i];
        if (t.status != TrialStatus::kRunning) continue;
        const double x = t.config.value("x", t.config.value("a", 0.0));
        ASSERT_TRUE(runner
                        ->OnResult(t.trial_id, t.attempt, t.last_seq + 1,
                                   TrainingResult::FromJson(json{{"score", -x * x}}), 1.0)
                        .ok());
        if (t.last_seq + 1 == 3) runner->OnTrialExited(t.trial_id, t.attempt, true, "");
      }
    }
  }
  std::vector<json> Configs() const {
    std::vector<json> out;
    for (const Trial& t : runner->trials()) out.push_back(t.config);
    return out;
  }

  std::vector<std::string> log;
  std::vector<json> records;
  FakeExecutor exec;
  JournalingObserver obs;
  ManualClock clock{1000.0};
  std::unique_ptr<TrialRunner> runner;
};

std::vector<json> Submitted() {
  return {journal::ExperimentSubmitted({"exp", 11, 1000.0, "/tmp", "e.yaml"}, "name: e")};
}

// Runs the experiment uninterrupted, then for every cut of its journal (`skip` excepted) resumes a
// new runner from the records before the cut and runs it to the end: same configs, same order.
void ExpectEveryCutResumesTheSameConfigs(const RunnerOptions& options,
                                         const Harness::MakeSearcherFn& make,
                                         const std::function<bool(const json&)>& skip) {
  Harness whole(options, make, Submitted());
  whole.Drive();
  ASSERT_TRUE(whole.runner->IsFinished());
  ASSERT_EQ(whole.runner->status(), ExperimentStatus::kFinished);
  const std::vector<json> expected = whole.Configs();
  int resumed = 0;
  for (size_t cut = 2; cut < whole.records.size(); ++cut) {
    if (skip(whole.records[cut - 1])) continue;
    Harness again(options, make,
                  std::vector<json>(whole.records.begin(), whole.records.begin() + long(cut)));
    again.Resume();
    again.Drive();
    ASSERT_TRUE(again.runner->IsFinished()) << "cut after record " << cut;
    EXPECT_EQ(again.Configs(), expected)
        << "cut after record " << cut << " (" << whole.records[cut - 1].dump() << ")";
    ++resumed;
  }
  EXPECT_GT(resumed, 20);
}

TEST(SearcherResumeTest, ModelSearcherResumedFromAnyCutSuggestsTheSameConfigs) {
  // A searcher whose suggestions depend on what it observed (the mean of the observed x plus a
  // seeded offset), one trial at a time: journaled as `searcher` deltas, rebuilt on resume.
  RunnerOptions o;
  o.metric = "score";
  o.mode = "max";
  o.max_concurrent_trials = 1;
  auto make = [] {
    auto s = std::make_unique<MeanSearcher>(6, 11);
    EXPECT_TRUE(s->SetSearchProperties("score", "max", json::object()).ok());
    return std::unique_ptr<Searcher>(std::move(s));
  };
  ExpectEveryCutResumesTheSameConfigs(o, make, [](const json&) { return false; });
}

TEST(SearcherResumeTest, RandomWithLimiterAndPointsResumedFromAnyBatchSuggestsTheSameConfigs) {
  // `search: {max_concurrent: 2, points_to_evaluate: [...]}` over random search: the limiter's and
  // the points' deltas plus the variant generator's whole state after each batch of suggestions.
  // A batch of trial_added records and its searcher_state are one group commit in the scheduler,
  // so cuts inside a batch are not tried.
  RunnerOptions o;
  o.metric = "score";
  o.mode = "max";
  const json space = {{"a", {{"uniform", {-2, 2}}}}, {"g", {{"grid_search", {1, 2}}}}};
  auto make = [space] {
    SearchSetup s;
    s.param_space = space;
    s.num_samples = 3;
    s.metric = "score";
    s.mode = "max";
    s.seed = 5;
    auto made =
        MakeSearcher("random", {{"max_concurrent", 2}, {"points_to_evaluate", {{{"a", 1.5}}}}}, s);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return std::move(made).value();
  };
  ExpectEveryCutResumesTheSameConfigs(
      o, make, [](const json& r) { return r["kind"] == "trial_added" || r["kind"] == "searcher"; });
}

}  // namespace
}  // namespace tunebus
