// TrialRunner and its per-trial runner phases (libs/tune/trial_phases.hpp), walked at random:
// placements granted or deferred, results, checkpoints stored or refused, exits that succeed or
// fail, pauses, unpauses, stops and lost workers, in a seeded order. After every event each
// trial's phase is one its status allows (the status table of trial_phases.hpp) and the phases'
// and the slots' invariants hold; no event makes the runner ask for a transition the table refuses
// (that would abort the test binary); a walk that finishes the experiment has returned every grant.
#include <random>

#include "tests/unit/trial_lifecycle_fixture.hpp"

namespace tunebus {
namespace {

class RunnerPhaseWalkTest : public TrialLifecycleTest,
                            public ::testing::WithParamInterface<uint32_t> {
 protected:
  // The phases trial_phases.hpp gives each status (PENDING's kIdle only after fail_fast: raise,
  // which this walk does not use).
  static bool Allowed(const Trial& t, const TrialPhase& p) {
    switch (t.status) {
      case TrialStatus::kPending:
        return p.phase == RunnerPhase::kQueued || p.phase == RunnerPhase::kPlacing ||
               (p.phase == RunnerPhase::kSaving && p.requeue);
      case TrialStatus::kRunning:
        return p.phase == RunnerPhase::kRunning || p.phase == RunnerPhase::kPauseRequested ||
               p.phase == RunnerPhase::kPausing;
      case TrialStatus::kPaused:
      case TrialStatus::kTerminated:
        return p.phase == RunnerPhase::kIdle || (p.phase == RunnerPhase::kSaving && !p.requeue);
      case TrialStatus::kError:
        return p.phase == RunnerPhase::kIdle;
    }
    return false;
  }

  void ExpectConsistent(const std::string& after) {
    const Status invariants = runner_->phases().CheckInvariants();
    ASSERT_TRUE(invariants.ok()) << after << ": " << invariants.ToString();
    const Status slots = CheckSlots(*runner_);
    ASSERT_TRUE(slots.ok()) << after << ": " << slots.ToString();
    for (const Trial& t : runner_->trials()) {
      const TrialPhase& p = runner_->phases().at(t.index);
      ASSERT_TRUE(Allowed(t, p)) << after << ": " << t.trial_id << " is "
                                 << TrialStatusName(t.status) << " in phase "
                                 << RunnerPhaseName(p.phase) << (p.requeue ? " (requeue)" : "");
    }
  }

  // One random event; returns what it was, for the failure message.
  std::string RandomEvent(std::mt19937& rng, int trials) {
    auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
    const int i = pick(trials);
    const std::string worker = "w" + std::to_string(pick(3));
    switch (pick(12)) {
      case 0:
        runner_->Step();
        return "step";
      case 1:
        if (exec_.open.empty()) return "none";
        Grant(worker);
        return "grant on " + worker;
      case 2: {
        if (exec_.open.empty()) return "none";
        const PlacementCall p = exec_.open.front();
        exec_.open.pop_front();
        runner_->OnPlacementDeferred(p.trial_id, p.attempt);
        return "defer " + p.trial_id;
      }
      case 3:
      case 4:
        if (T(i).status != TrialStatus::kRunning) return "none";
        (void)Report(i, T(i).last_seq + 1);
        return "result of " + Id(i);
      case 5:
        if (T(i).requested_checkpoints.empty()) return "none";
        (void)Saved(i, T(i).requested_checkpoints.front().training_iteration);
        return "checkpoint of " + Id(i);
      case 6:
        if (T(i).requested_checkpoints.empty()) return "none";
        (void)runner_->OnCheckpointFailed(Id(i), T(i).attempt,
                                          T(i).requested_checkpoints.front().training_iteration,
                                          "disk full");
        return "refused checkpoint of " + Id(i);
      case 7: {
        const bool ok = pick(2) == 0;
        runner_->OnTrialExited(Id(i), T(i).attempt, ok, ok ? "" : "crashed");
        return std::string(ok ? "exit of " : "failure of ") + Id(i);
      }
      case 8:
        (void)Control().PauseTrial(Id(i));
        return "pause " + Id(i);
      case 9:
        (void)Control().UnpauseTrial(Id(i));
        return "unpause " + Id(i);
      case 10:
        if (pick(4) != 0) return "none";
        (void)Context().StopTrial(Id(i));
        return "stop " + Id(i);
      default:
        if (pick(4) != 0) return "none";
        runner_->OnWorkerLost(worker);
        return "loss of " + worker;
    }
  }
};

TEST_P(RunnerPhaseWalkTest, EveryTrialsPhaseFitsItsStatusAfterEveryEvent) {
  // Six trials, a checkpoint every 2 iterations and at the end (stopped at iteration 5),
  // failures retried forever, a refused checkpoint pauses its trial.
  constexpr int kTrials = 6;
  RunnerOptions o;
  o.checkpoint_freq = 2;
  o.checkpoint_at_end = true;
  o.stop = {{"training_iteration", 5}};
  o.max_failures = -1;
  o.checkpoint_failure = CheckpointFailureMode::kPause;
  o.max_concurrent_trials = 4;
  Start(o, kTrials);
  std::mt19937 rng(GetParam());
  runner_->Step();
  ExpectConsistent("the first step");
  for (int n = 0; n < 3000 && !runner_->IsFinished(); ++n) {
    const std::string event = RandomEvent(rng, int(runner_->trials().size()));
    ASSERT_NO_FATAL_FAILURE(ExpectConsistent(fmt::format("event {} ({})", n, event)));
  }
  // Pauses are undone at random too, so every seed's walk ends the experiment.
  ASSERT_TRUE(runner_->IsFinished()) << "not finished after 3000 events";
  EXPECT_EQ(runner_->phases().busy(), 0);
  // A placement asked again for the same attempt (paused or stopped while placing, then
  // unpaused) can be granted twice here; the resource-manager grants the same allocation again
  // (ClusterState::Allocate is idempotent per attempt). So: every granted attempt is returned,
  // and nothing that was not granted.
  for (const auto& [key, n] : grants_)
    EXPECT_GE(exec_.releases[key], 1) << key.first << "/" << key.second;
  for (const auto& [key, n] : exec_.releases)
    EXPECT_TRUE(grants_.contains(key)) << key.first << "/" << key.second;
}

INSTANTIATE_TEST_SUITE_P(Seeds, RunnerPhaseWalkTest, ::testing::Range<uint32_t>(1, 41));

}  // namespace
}  // namespace tunebus
