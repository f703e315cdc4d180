// PopulationBasedTraining (libs/tune/pbt_scheduler.hpp) through the TrialRunner with the fake
// executor: which trial checkpoints and which exploits which, worked out by hand; explore's
// perturbations; determinism by seed; its journaled state.
#include "libs/tune/pbt_scheduler.hpp"

#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

const json kPbt = {
    {"time_attr", "training_iteration"},
    {"perturbation_interval", 2},
    {"resample_probability", 0},
    {"hyperparam_mutations", {{"lr", {{"uniform", {0.01, 1.0}}}}, {"layers", {1, 2, 4}}}}};

class PbtSchedulerTest : public TrialRunnerTest {
 protected:
  void StartPbt() {
    RunnerOptions o;
    o.metric = "acc";
    o.mode = "max";
    auto s = MakeTrialScheduler("pbt", kPbt, "acc", "max", 7);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    // lr 0.5, 0.4, 0.3, 0.2 and layers 2 for t0..t3.
    StartWith(o, {{"lr", {{"grid_search", {0.5, 0.4, 0.3, 0.2}}}}, {"layers", 2}}, 1,
              std::move(*s));
    runner_->Step();
    GrantAll();
  }
  // acc t0 0.9, t1 0.5, t2 0.4, t3 0.1 at every iteration.
  const double acc_[4] = {0.9, 0.5, 0.4, 0.1};
  /// Iterations 1-3 of every trial (all continue), then t0's iteration 4 (the top checkpoints).
  void StartPbtAndRunToTheFirstTopCheckpoint() {
    StartPbt();
    for (int64_t it = 1; it <= 3; ++it) {
      for (int i = 0; i < 4; ++i) EXPECT_EQ(At(i, it, acc_[i]), "continue") << i << " at " << it;
    }
    EXPECT_EQ(At(0, 4, acc_[0]), "checkpoint");
  }
  std::string At(int index, int64_t seq, double acc) {
    EXPECT_TRUE(Report(index, seq, {{"acc", acc}}).ok());
    const std::string action = LastAction(index);
    if (action == "checkpoint") {
      const int64_t at = T(index).training_iteration;
      EXPECT_TRUE(runner_
                      ->OnCheckpointSaved(Id(index), T(index).attempt,
                                          Id(index) + "/" + std::to_string(at), at, 10)
                      .ok());
    }
    return action;
  }
};

TEST_F(PbtSchedulerTest, AFinishedTrialIsNoDonor) {
  // As the test below up to t0's checkpoint at iteration 4; then the user stops t0
  // (TERMINATED). Ray Tune's _quantiles leave finished trials out, so at iteration 4 the ranks
  // are t1 0.5, t2 0.4 (and t3 0.1): t1 is now the top and checkpoints, and t3, the bottom,
  // exploits t1's checkpoint, not the finished t0's.
  StartPbtAndRunToTheFirstTopCheckpoint();
  ASSERT_TRUE(Control().StopTrial(Id(0)).ok());
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  EXPECT_EQ(At(1, 4, acc_[1]), "checkpoint");
  EXPECT_EQ(At(2, 4, acc_[2]), "continue");
  EXPECT_EQ(At(3, 4, acc_[3]), "stop");
  ASSERT_TRUE(T(3).restore_checkpoint.has_value());
  EXPECT_EQ(T(3).restore_checkpoint->checkpoint_id, Id(1) + "/4");
}

TEST_F(PbtSchedulerTest, BottomQuantileExploitsTheTopTrialsCheckpointWithAnExploredConfig) {
  // Four trials, acc t0 0.9, t1 0.5, t2 0.4, t3 0.1; a perturbation every 2 iterations;
  // quantile 0.25 -> ceil(n * 0.25) trials at each end, at most n / 2.
  // Iteration 2, in report order: t0 alone has a score (no quantiles); t1: {t1, t0}: upper t0,
  // lower t1, but t0 has no checkpoint yet: no exploit; likewise t2, t3.
  // Iteration 4: t0 is the top: it checkpoints. t1, t2 are in neither quantile. t3 is the
  // bottom: it exploits t0: it takes t0's checkpoint (iteration 4) and t0's config explored
  // (lr 0.5 x 1.2 or x 0.8; layers 2 moves to 1 or 4), and goes PENDING to restore it.
  StartPbtAndRunToTheFirstTopCheckpoint();
  EXPECT_EQ(At(1, 4, acc_[1]), "continue");
  EXPECT_EQ(At(2, 4, acc_[2]), "continue");
  EXPECT_EQ(At(3, 4, acc_[3]), "stop");  // its attempt ends; it restarts from t0's checkpoint
  EXPECT_EQ(T(3).status, TrialStatus::kPending);
  ASSERT_TRUE(T(3).restore_checkpoint.has_value());
  EXPECT_EQ(T(3).restore_checkpoint->checkpoint_id, Id(0) + "/4");
  const double lr = T(3).config.value("lr", 0.0);
  EXPECT_TRUE(std::abs(lr - 0.6) < 1e-9 || std::abs(lr - 0.4) < 1e-9) << lr;
  const int layers = T(3).config.value("layers", 0);
  EXPECT_TRUE(layers == 1 || layers == 4) << layers;
  ASSERT_EQ(obs_.updates.size(), 1u);
  EXPECT_EQ(obs_.updates[0]["pbt_exploit"].value("donor", ""), Id(0));
  // The decision log has the exploit: target, source, the source's checkpoint iteration.
  const json log = runner_->scheduler_decisions().ToJson();
  ASSERT_EQ(log["total"], 1) << log.dump();
  EXPECT_EQ(log["decisions"][0]["kind"], "exploit");
  EXPECT_EQ(log["decisions"][0]["trial_id"], Id(3));
  EXPECT_EQ(log["decisions"][0]["scheduler"], "pbt");
  EXPECT_EQ(log["decisions"][0]["detail"]["donor"], Id(0));
  EXPECT_EQ(log["decisions"][0]["detail"]["donor_iteration"], 4);

  // It runs again from iteration 4 and its next result carries the exploit.
  runner_->Step();
  GrantAll();
  EXPECT_EQ(T(3).restored_iteration, 4);
  ASSERT_TRUE(Report(3, 1, {{"acc", 0.95}}).ok());
  EXPECT_EQ(T(3).LastResult().value("training_iteration", 0), 5);
  EXPECT_EQ(T(3).LastResult()["pbt_exploit"].value("donor", ""), Id(0));
  ExpectDeltasRebuildState("pbt", kPbt, "acc", "max", 7);
}

TEST_F(PbtSchedulerTest, ADonorWhoseCheckpointOfItsPerturbationIsNotStoredYetIsSkipped) {
  // t0 stores its checkpoint of iteration 4, runs on to 6 and is asked for another, which the
  // store has not answered when t3 (the bottom) reaches its perturbation at iteration 4: t0's
  // newest stored checkpoint (4) is older than its last perturbation (6), so t3 does not resume
  // from it (Ray Tune clones the donor's save of that point); it continues, and exploits t0's
  // checkpoint of iteration 6 at its next perturbation, once that is stored.
  StartPbtAndRunToTheFirstTopCheckpoint();
  EXPECT_EQ(At(1, 4, acc_[1]), "continue");
  EXPECT_EQ(At(2, 4, acc_[2]), "continue");
  EXPECT_EQ(At(0, 5, acc_[0]), "continue");
  ASSERT_TRUE(Report(0, 6, {{"acc", acc_[0]}}).ok());
  EXPECT_EQ(LastAction(0), "checkpoint");  // not stored yet
  EXPECT_EQ(At(3, 4, acc_[3]), "continue");
  EXPECT_FALSE(T(3).restore_checkpoint.has_value());
  ASSERT_TRUE(runner_->OnCheckpointSaved(Id(0), T(0).attempt, Id(0) + "/6", 6, 10).ok());
  EXPECT_EQ(At(3, 5, acc_[3]), "continue");
  EXPECT_EQ(At(3, 6, acc_[3]), "stop");
  ASSERT_TRUE(T(3).restore_checkpoint.has_value());
  EXPECT_EQ(T(3).restore_checkpoint->checkpoint_id, Id(0) + "/6");
}

TEST_F(PbtSchedulerTest, ExploreIsDeterministicForASeedAndPerturbsWithinTheRules) {
  // The same seed draws the same explorations; numbers are multiplied by 1.2 or 0.8 (ints stay
  // ints), list values move to a neighbour.
  auto a = MakeTrialScheduler("pbt", kPbt, "acc", "max", 11);
  auto b = MakeTrialScheduler("pbt", kPbt, "acc", "max", 11);
  auto* pa = static_cast<PopulationBasedTraining*>(a->get());
  auto* pb = static_cast<PopulationBasedTraining*>(b->get());
  const json config = {{"lr", 0.5}, {"layers", 2}, {"other", "kept"}};
  for (int i = 0; i < 20; ++i) {
    const json x = pa->Explore(config, kPbt["hyperparam_mutations"]);
    EXPECT_EQ(x, pb->Explore(config, kPbt["hyperparam_mutations"]));
    const double lr = x["lr"].get<double>();
    EXPECT_TRUE(std::abs(lr - 0.6) < 1e-9 || std::abs(lr - 0.4) < 1e-9) << lr;
    EXPECT_TRUE(x["layers"] == 1 || x["layers"] == 4) << x.dump();
    EXPECT_EQ(x["other"], "kept");
  }
  json always = kPbt;
  always["resample_probability"] = 1;
  auto c = MakeTrialScheduler("pbt", always, "acc", "max", 3);
  const json y = static_cast<PopulationBasedTraining*>(c->get())->Explore(
      config, always["hyperparam_mutations"]);
  EXPECT_GE(y["lr"].get<double>(), 0.01);
  EXPECT_LT(y["lr"].get<double>(), 1.0);
}

TEST_F(PbtSchedulerTest, MissingMutationsAndBadQuantileAreNamed) {
  EXPECT_EQ(MakeTrialScheduler("pbt", json::object(), "acc", "max").status().message(),
            "hyperparam_mutations: the pbt scheduler needs the config keys to explore");
  json bad = kPbt;
  bad["quantile_fraction"] = 0.7;
  EXPECT_EQ(MakeTrialScheduler("pbt", bad, "acc", "max").status().message(),
            "quantile_fraction: must be <= 0.5, got 0.7");
}

}  // namespace
}  // namespace tunebus
