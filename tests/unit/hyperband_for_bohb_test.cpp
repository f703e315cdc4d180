// HyperBandForBohb (libs/tune/hyperband_for_bohb.hpp) through the TrialRunner with the fake
// executor, against values worked by hand from Ray Tune 2.x's HyperBandForBOHB: brackets filled
// largest first, a trial PAUSEd at its milestone while its bracket is not filled or others still
// run, the halving of a complete rung (pause/unpause through the runner, checkpoints restored),
// the halving of an unfilled rung once nothing runs, the choice of the next trial by bracket age,
// the `hyperband_info` it writes into results, the observations BohbSearcher takes from them, and
// its journaled state.
#include "libs/tune/hyperband_for_bohb.hpp"

#include <tuple>

#include "libs/tune/bohb_searcher.hpp"
#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

// max_t 9, eta 3: s_max + 1 = 3 brackets a band; s = 2 first: 9 trials from r0 = 1.
const json kBohb = {{"max_t", 9}, {"reduction_factor", 3}};

class HyperBandForBohbTest : public TrialRunnerTest {
 protected:
  // `trials` trials (a grid over x) under hyperband_bohb, at most `max_concurrent` running.
  void StartBohb(int trials, int64_t max_concurrent = 0) {
    RunnerOptions o;
    o.metric = "acc";
    o.mode = "max";
    o.max_concurrent_trials = max_concurrent;
    auto s = MakeTrialScheduler("hyperband_bohb", kBohb, "acc", "max");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    bohb_ = static_cast<HyperBandForBohb*>(s->get());
    Start(o, trials, std::move(*s));
    StepAndGrantAll();
  }
  // The hyperband_info of the newest result of trial `index` the observer recorded.
  json Info(int index) const {
    for (auto it = obs_.results.rbegin(); it != obs_.results.rend(); ++it) {
      if (it->trial_id == Id(index)) return it->result.value("hyperband_info", json());
    }
    return nullptr;
  }
  HyperBandForBohb* bohb_ = nullptr;
};

TEST_F(HyperBandForBohbTest, BracketsAreFilledLargestFirst) {
  // Ray's HyperBandForBOHB.on_trial_add: s = s_max_1 - len(band) - 1. Bracket s: n0 = ceil(3 /
  // (s + 1) * 3^s), r0 = 9 * 3^-s: s=2: 9 trials x 1, s=1: 5 x 3, s=0: 3 x 9 (17 fill a band);
  // trials 18 and 19 open band 2 with s=2 again.
  StartBohb(19);
  using Row = std::tuple<size_t, int64_t, size_t, double>;  // band, s, trials, milestone
  std::vector<Row> brackets;
  for (const auto& b : bohb_->Brackets())
    brackets.emplace_back(b.band, b.s, b.live.size(), b.milestone);
  EXPECT_EQ(brackets, (std::vector<Row>{{0, 2, 9, 1}, {0, 1, 5, 3}, {0, 0, 3, 9}, {1, 2, 2, 1}}));
  EXPECT_EQ(bohb_->Brackets()[3].live, (std::vector<std::string>{Id(17), Id(18)}));
}

TEST_F(HyperBandForBohbTest, RungsPauseUntilCompleteThenKeepTheBestThirdToTheLastMilestone) {
  // Bracket s=2 (9 trials, milestone 1). acc: t0 .1, t1 .9, t2 .3, t3 .8, t4 .5, t5 .2, t6 .7,
  // t7 .4, t8 .6. t0..t7 pause at iteration 1 (budget 1); t8 completes the rung: ceil(9 / 3) = 3
  // are kept, t1, t3, t6; t8 (reporting) is told to stop, the paused t0, t2, t4, t5, t7 are
  // stopped, t1, t3, t6 are unpaused. Next milestone: min(1 * 3, 9 - 1) = 3.
  // Rung 2: t1 and t3 pause at 3; t6 completes it: ceil(3 / 3) = 1 kept, t1; next milestone
  // min(3 * 3, 9 - 3) = 6 (Ray's _cumul_r). Last rung: t1 alone reaches 6: the bracket is
  // finished, t1 stops there.
  StartBohb(9);
  const double acc[] = {0.1, 0.9, 0.3, 0.8, 0.5, 0.2, 0.7, 0.4, 0.6};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(AtIteration(i, 1, acc[i]), "pause") << i;
    EXPECT_EQ(T(i).status, TrialStatus::kPaused) << i;
    EXPECT_EQ(Info(i), json({{"budget", 1}})) << i;
  }
  EXPECT_EQ(AtIteration(8, 1, acc[8]), "stop");
  EXPECT_EQ(Info(8), json({{"budget", 1}}));
  for (int i : {0, 2, 4, 5, 7, 8}) EXPECT_EQ(T(i).status, TrialStatus::kTerminated) << i;
  for (int i : {1, 3, 6}) EXPECT_EQ(T(i).status, TrialStatus::kPending) << i;
  auto b = bohb_->Brackets();
  EXPECT_EQ(b[0].milestone, 3);
  EXPECT_EQ(b[0].live, (std::vector<std::string>{Id(1), Id(3), Id(6)}));

  StepAndGrantAll();
  for (int i : {1, 3, 6}) {
    ASSERT_EQ(T(i).status, TrialStatus::kRunning) << i;
    EXPECT_EQ(T(i).restored_iteration, 1) << i;  // from the checkpoint of its pause
    EXPECT_EQ(AtIteration(i, 2, acc[i]), "continue") << i;
    EXPECT_EQ(Info(i), json::object()) << i;  // not a milestone: no budget
  }
  EXPECT_EQ(AtIteration(1, 3, acc[1]), "pause");
  EXPECT_EQ(Info(1), json({{"budget", 3}}));
  EXPECT_EQ(AtIteration(3, 3, acc[3]), "pause");
  EXPECT_EQ(AtIteration(6, 3, acc[6]), "stop");
  EXPECT_EQ(T(3).status, TrialStatus::kTerminated);
  EXPECT_EQ(T(1).status, TrialStatus::kPending);
  b = bohb_->Brackets();
  EXPECT_EQ(b[0].milestone, 6);
  EXPECT_EQ(b[0].halves, 0);

  StepAndGrantAll();
  EXPECT_EQ(T(1).restored_iteration, 3);
  EXPECT_EQ(AtIteration(1, 4, acc[1]), "continue");
  EXPECT_EQ(AtIteration(1, 5, acc[1]), "continue");
  EXPECT_EQ(AtIteration(1, 6, acc[1]), "stop");
  EXPECT_EQ(Info(1), json({{"budget", 6}}));
  EXPECT_TRUE(runner_->IsFinished());
  ExpectEachGrantReleasedOnce();
  ExpectDeltasRebuildState("hyperband_bohb", kBohb, "acc", "max");
}

TEST_F(HyperBandForBohbTest, TrialsPauseWhileTheBracketIsNotFilledAndNewTrialsJoinIt) {
  // Two slots: t0 and t1 run first. At their milestone (1) both pause although t1 is the last
  // live trial not paused: the bracket holds 2 of its 9 (Ray: `not bracket.filled()`). Their
  // slots go to the next trials of the same bracket.
  StartBohb(9, /*max_concurrent=*/2);
  ASSERT_EQ(exec_.placements.size(), 2u);
  EXPECT_EQ(AtIteration(0, 1, 0.5), "pause");
  EXPECT_EQ(AtIteration(1, 1, 0.6), "pause");
  StepAndGrantAll();
  EXPECT_EQ(T(2).status, TrialStatus::kRunning);
  EXPECT_EQ(T(3).status, TrialStatus::kRunning);
  EXPECT_EQ(T(0).status, TrialStatus::kPaused);
  EXPECT_EQ(T(1).status, TrialStatus::kPaused);
}

TEST_F(HyperBandForBohbTest, AnUnfilledRungIsHalvedOnceNothingRunsAndTheSearcherIsDone) {
  // Four trials for a bracket of 9: all four pause at milestone 1 and the searcher has no more.
  // With nothing running, Ray's choose_trial_to_run processes the bracket: the best ceil(9 / 3)
  // = 3 of the four (t3 .8, t1 .7, t2 .4) continue, t0 (.2) is stopped; the halving is
  // journaled.
  StartBohb(4);
  const double acc[] = {0.2, 0.7, 0.4, 0.8};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(AtIteration(i, 1, acc[i]), "pause") << i;
  EXPECT_FALSE(runner_->IsFinished());
  StepAndGrantAll();
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  for (int i : {1, 2, 3}) {
    EXPECT_EQ(T(i).status, TrialStatus::kRunning) << i;
    EXPECT_EQ(T(i).restored_iteration, 1) << i;
  }
  EXPECT_EQ(bohb_->Brackets()[0].milestone, 3);
  ExpectDeltasRebuildState("hyperband_bohb", kBohb, "acc", "max");
}

TEST_F(HyperBandForBohbTest, TheKeptTrialsOfTheOldestBracketRunBeforeANewerBracketsTrials) {
  // One slot, ten trials: t0..t8 fill bracket s=2, t9 opens s=1. Each of t0..t7 pauses at 1 and
  // its slot goes to the next trial of bracket 0; t8 completes the rung (as in the test above):
  // t1, t3, t6 are PENDING again beside t9. Ray's HyperBandForBOHB.choose_trial_to_run takes the
  // first PENDING trial of the oldest bracket: t1 (HyperBand would take t9, whose bracket is the
  // least complete).
  StartBohb(10, /*max_concurrent=*/1);
  const double acc[] = {0.1, 0.9, 0.3, 0.8, 0.5, 0.2, 0.7, 0.4, 0.6};
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(T(i).status, TrialStatus::kRunning) << i;
    EXPECT_EQ(AtIteration(i, 1, acc[i]), "pause") << i;
    StepAndGrantAll();
  }
  ASSERT_EQ(T(8).status, TrialStatus::kRunning);
  EXPECT_EQ(AtIteration(8, 1, acc[8]), "stop");
  StepAndGrantAll();
  EXPECT_EQ(T(1).status, TrialStatus::kRunning);
  EXPECT_EQ(T(9).status, TrialStatus::kPending);
}

TEST_F(HyperBandForBohbTest, BohbSearcherObservesTheMilestoneResultsAtTheirBudget) {
  // BOHB pairs with it as TuneBOHB with HyperBandForBOHB: the searcher's observations are the
  // results carrying hyperband_info.budget, one per trial and rung; results between milestones
  // are none. After the first rung of 9 (budget 1) its model is fitted there.
  auto searcher = std::make_unique<BohbSearcher>(BohbOptions{}, 9, 5);
  BohbSearcher* bohb = searcher.get();
  ASSERT_TRUE(
      searcher->SetSearchProperties("acc", "max", {{"lr", {{"uniform", {0.0, 1.0}}}}}).ok());
  RunnerOptions o;
  o.metric = "acc";
  o.mode = "max";
  auto s = MakeTrialScheduler("hyperband_bohb", kBohb, "acc", "max");
  ASSERT_TRUE(s.ok());
  StartWithSearcher(o, std::move(searcher), std::move(*s));
  StepAndGrantAll();
  ASSERT_EQ(exec_.placements.size(), 9u);
  EXPECT_EQ(bohb->Describe()["phase"], "startup");
  for (int i = 0; i < 9; ++i) {
    const double lr = T(i).config["lr"].get<double>();
    const std::string action = AtIteration(i, 1, lr);
    EXPECT_TRUE(action == "pause" || i == 8) << i << " " << action;
  }
  EXPECT_EQ(bohb->num_observations(), 9);
  EXPECT_EQ(bohb->ModelBudget(), std::optional<double>(1));
  EXPECT_EQ(bohb->Describe()["phase"], "model");
  StepAndGrantAll();
  int kept = 0;
  for (int i = 0; i < 9; ++i) {
    if (T(i).status != TrialStatus::kRunning) continue;
    ++kept;
    EXPECT_EQ(AtIteration(i, 2, 0.5), "continue");
  }
  EXPECT_EQ(kept, 3);
  EXPECT_EQ(bohb->num_observations(), 9) << "a result between milestones is no observation";
}

TEST(HyperBandForBohbParamsTest, ParametersAreHyperBandsWithErrorsNamingTheParameter) {
  // Ray's HyperBandForBOHB takes HyperBandScheduler's arguments.
  auto ok = MakeTrialScheduler("hyperband_bohb", json::object(), "acc", "max");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_STREQ((*ok)->name(), "hyperband_bohb");
  auto bad = MakeTrialScheduler("hyperband_bohb", {{"reduction_factor", 1}}, "acc", "max");
  EXPECT_EQ(bad.status().message(), "reduction_factor: must be > 1, got 1");
  auto unknown = MakeTrialScheduler("hyperband_bohb", {{"grace_period", 1}}, "acc", "max");
  EXPECT_EQ(unknown.status().message(),
            "grace_period: unknown parameter of the hyperband_bohb scheduler (known: time_attr, "
            "max_t, reduction_factor, stop_last_trials)");
  auto no_metric = MakeTrialScheduler("hyperband_bohb", json::object(), "", "");
  EXPECT_FALSE(no_metric.ok());
}

}  // namespace
}  // namespace tunebus
