// TrialControl (libs/tune/trial_control.hpp): each user command on a trial in each of its
// phases, as the table of trial_control.hpp has it, with the runner's invariants (TrialPhases'
// and TrialSlot's) after every command; and TrialSlot's parts (the exploit note, the last
// action, the held result) as the runner keeps them.
#include <functional>

#include "tests/unit/trial_lifecycle_fixture.hpp"

namespace tunebus {
namespace {

// Where the target trial is before the command.
enum class Before {
  kQueued,          // PENDING, waits for a slot (max_concurrent_trials: 1, trial 0 runs)
  kPlacing,         // PENDING, its placement in flight
  kRunning,         // RUNNING
  kPauseRequested,  // RUNNING, pauses at its next result
  kPausing,         // RUNNING, answered "pause", saving its checkpoint
  kSavingEnd,       // TERMINATED, storing its end checkpoint (checkpoint_at_end)
  kPaused,          // PAUSED, exited
  kTerminated,      // TERMINATED, exited
  kErrored,         // ERROR
};
constexpr Before kAllBefore[] = {Before::kQueued,         Before::kPlacing,    Before::kRunning,
                                 Before::kPauseRequested, Before::kPausing,    Before::kSavingEnd,
                                 Before::kPaused,         Before::kTerminated, Before::kErrored};

const char* BeforeName(Before b) {
  switch (b) {
    case Before::kQueued:
      return "queued";
    case Before::kPlacing:
      return "placing";
    case Before::kRunning:
      return "running";
    case Before::kPauseRequested:
      return "pause_requested";
    case Before::kPausing:
      return "pausing";
    case Before::kSavingEnd:
      return "saving_end";
    case Before::kPaused:
      return "paused";
    case Before::kTerminated:
      return "terminated";
    case Before::kErrored:
      return "errored";
  }
  return "?";
}

// What a command leaves: its status code, then the trial's status and phase.
struct After {
  StatusCode code;
  TrialStatus status;
  RunnerPhase phase;
};

class TrialControlTest : public TrialLifecycleTest {
 protected:
  // Puts a trial in `before`; returns its index.
  int Arrange(Before before) {
    exec_.open.clear();  // a previous arrangement's placement in flight
    RunnerOptions o;
    o.checkpoint_at_end = before == Before::kSavingEnd;
    o.stop = {{"training_iteration", 3}};
    o.max_concurrent_trials = 1;
    Start(o, 2);
    if (before == Before::kPlacing) {
      runner_->Step();
      return 0;
    }
    Run(0);
    switch (before) {
      case Before::kQueued:
        return 1;
      case Before::kPauseRequested:
        EXPECT_TRUE(Control().PauseTrial(Id(0)).ok());
        break;
      case Before::kPausing:
      case Before::kPaused:
        EXPECT_TRUE(Control().PauseTrial(Id(0)).ok());
        EXPECT_TRUE(Report(0, 1).ok());
        if (before == Before::kPaused) {
          EXPECT_TRUE(Saved(0, 1).ok());
          runner_->OnTrialExited(Id(0), 1, true, "");
        }
        break;
      case Before::kSavingEnd:
        for (int64_t seq = 1; seq <= 3; ++seq) EXPECT_TRUE(Report(0, seq).ok());
        EXPECT_EQ(LastAction(), "checkpoint_and_stop");
        break;
      case Before::kTerminated:
        runner_->OnTrialExited(Id(0), 1, true, "");
        break;
      case Before::kErrored:
        Fail(0, "crashed");  // max_failures 0
        break;
      default:
        break;
    }
    return 0;
  }

  // Runs `command` on the trial of each `before` and checks what it leaves.
  void ExpectTable(const char* name, const std::function<StatusCode(int)>& command,
                   const std::map<Before, After>& table) {
    for (Before before : kAllBefore) {
      SCOPED_TRACE(fmt::format("{} of a {} trial", name, BeforeName(before)));
      const int i = Arrange(before);
      ASSERT_EQ(runner_->phases().phase(i), PhaseOf(before));
      const After& want = table.at(before);
      EXPECT_EQ(command(i), want.code);
      EXPECT_EQ(T(i).status, want.status) << TrialStatusName(T(i).status);
      EXPECT_EQ(runner_->phases().phase(i), want.phase)
          << RunnerPhaseName(runner_->phases().phase(i));
      EXPECT_TRUE(runner_->phases().CheckInvariants().ok());
      EXPECT_TRUE(CheckSlots(*runner_).ok()) << CheckSlots(*runner_).ToString();
    }
  }

  static RunnerPhase PhaseOf(Before before) {
    switch (before) {
      case Before::kQueued:
        return RunnerPhase::kQueued;
      case Before::kPlacing:
        return RunnerPhase::kPlacing;
      case Before::kRunning:
        return RunnerPhase::kRunning;
      case Before::kPauseRequested:
        return RunnerPhase::kPauseRequested;
      case Before::kPausing:
        return RunnerPhase::kPausing;
      case Before::kSavingEnd:
        return RunnerPhase::kSaving;
      default:
        return RunnerPhase::kIdle;
    }
  }
};

constexpr StatusCode kOk = StatusCode::kOk;
constexpr StatusCode kRefused = StatusCode::kFailedPrecondition;
using S = TrialStatus;
using P = RunnerPhase;

TEST_F(TrialControlTest, StopEndsEveryUnfinishedTrialAndLeavesFinishedOnesAlone) {
  // A stopped RUNNING trial's attempt is told to stop and released; a TERMINATED trial still
  // storing its end checkpoint keeps saving (nothing to do).
  ExpectTable("stop", [&](int i) { return Control().StopTrial(Id(i)).status().code(); },
              {{Before::kQueued, {kOk, S::kTerminated, P::kIdle}},
               {Before::kPlacing, {kOk, S::kTerminated, P::kIdle}},
               {Before::kRunning, {kOk, S::kTerminated, P::kIdle}},
               {Before::kPauseRequested, {kOk, S::kTerminated, P::kIdle}},
               {Before::kPausing, {kOk, S::kTerminated, P::kIdle}},
               {Before::kSavingEnd, {kOk, S::kTerminated, P::kSaving}},
               {Before::kPaused, {kOk, S::kTerminated, P::kIdle}},
               {Before::kTerminated, {kOk, S::kTerminated, P::kIdle}},
               {Before::kErrored, {kOk, S::kError, P::kIdle}}});
}

TEST_F(TrialControlTest, PausePausesPendingTrialsAtOnceAndRunningOnesAtTheirNextResult) {
  ExpectTable("pause", [&](int i) { return Control().PauseTrial(Id(i)).status().code(); },
              {{Before::kQueued, {kOk, S::kPaused, P::kIdle}},
               {Before::kPlacing, {kOk, S::kPaused, P::kIdle}},
               {Before::kRunning, {kOk, S::kRunning, P::kPauseRequested}},
               {Before::kPauseRequested, {kOk, S::kRunning, P::kPauseRequested}},
               {Before::kPausing, {kOk, S::kRunning, P::kPausing}},
               {Before::kSavingEnd, {kRefused, S::kTerminated, P::kSaving}},
               {Before::kPaused, {kRefused, S::kPaused, P::kIdle}},
               {Before::kTerminated, {kRefused, S::kTerminated, P::kIdle}},
               {Before::kErrored, {kRefused, S::kError, P::kIdle}}});
}

TEST_F(TrialControlTest, UnpauseQueuesPausedTrialsAndRequeuesAPausingOneOnceItHasExited) {
  ExpectTable("unpause", [&](int i) { return Control().UnpauseTrial(Id(i)).code(); },
              {{Before::kQueued, {kRefused, S::kPending, P::kQueued}},
               {Before::kPlacing, {kRefused, S::kPending, P::kPlacing}},
               {Before::kRunning, {kRefused, S::kRunning, P::kRunning}},
               {Before::kPauseRequested, {kRefused, S::kRunning, P::kPauseRequested}},
               {Before::kPausing, {kOk, S::kPending, P::kSaving}},
               {Before::kSavingEnd, {kRefused, S::kTerminated, P::kSaving}},
               {Before::kPaused, {kOk, S::kPending, P::kQueued}},
               {Before::kTerminated, {kRefused, S::kTerminated, P::kIdle}},
               {Before::kErrored, {kRefused, S::kError, P::kIdle}}});
}

TEST_F(TrialControlTest, SetTrialResourcesChangesOnlyTrialsThatHoldAndAskForNothing) {
  const Resources two_cpus = *Resources::FromAmounts({{"cpu", 2}});
  ExpectTable("set_resources",
              [&](int i) { return Control().SetTrialResources(Id(i), two_cpus).code(); },
              {{Before::kQueued, {kOk, S::kPending, P::kQueued}},
               {Before::kPlacing, {kRefused, S::kPending, P::kPlacing}},
               {Before::kRunning, {kRefused, S::kRunning, P::kRunning}},
               {Before::kPauseRequested, {kRefused, S::kRunning, P::kPauseRequested}},
               {Before::kPausing, {kRefused, S::kRunning, P::kPausing}},
               {Before::kSavingEnd, {kRefused, S::kTerminated, P::kSaving}},
               {Before::kPaused, {kOk, S::kPaused, P::kIdle}},
               {Before::kTerminated, {kRefused, S::kTerminated, P::kIdle}},
               {Before::kErrored, {kRefused, S::kError, P::kIdle}}});
}

TEST_F(TrialControlTest, EveryCommandAnswersNotFoundForAnUnknownTrial) {
  Start({}, 1);
  const Resources one_cpu = *Resources::FromAmounts({{"cpu", 1}});
  EXPECT_EQ(Control().StopTrial("exp_12345").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Control().PauseTrial("exp_12345").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Control().UnpauseTrial("exp_12345").code(), StatusCode::kNotFound);
  EXPECT_EQ(Control().SetTrialResources("exp_12345", one_cpu).code(), StatusCode::kNotFound);
}

TEST_F(TrialControlTest, AUserStopIsNotNotedAsATrialSchedulerDecision) {
  // The trial scheduler's stop (TrialSchedulerContext::StopTrial) is its decision, shown by
  // `tunectl status`; the user's is not.
  Start({}, 2);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Control().StopTrial(Id(0)).ok());
  EXPECT_EQ(runner_->scheduler_decisions().total(), 0);
  ASSERT_TRUE(Context().StopTrial(Id(1)).ok());
  EXPECT_EQ(runner_->scheduler_decisions().total(), 1);
}

TEST_F(TrialControlTest, TheSlotKeepsTheActionOfTheNewestResultAndTheExploitNoteUntilUsed) {
  // A PBT exploit of a PAUSED trial is noted in its slot and written into its next result as
  // "pbt_exploit", then cleared; the slot's last action follows every decided result.
  RunnerOptions o;
  o.checkpoint_freq = 1;
  Start(o, 2);
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1).ok());
  EXPECT_EQ(runner_->slot(0).last_action, Action::kCheckpoint);
  ASSERT_TRUE(Saved(0, 1).ok());
  ASSERT_TRUE(Control().PauseTrial(Id(1)).ok());
  ASSERT_TRUE(Report(1, 1).ok());
  EXPECT_EQ(runner_->slot(1).last_action, Action::kPause);
  ASSERT_TRUE(Saved(1, 1).ok());
  runner_->OnTrialExited(Id(1), 1, true, "");
  ASSERT_EQ(T(1).status, TrialStatus::kPaused);
  ASSERT_TRUE(Context().ExploitTrial(Id(1), Id(0), {{"x", 7}}).ok());
  ASSERT_TRUE(runner_->slot(1).exploit_note.is_object());
  EXPECT_EQ(runner_->slot(1).exploit_note["donor"], Id(0));
  EXPECT_TRUE(CheckSlots(*runner_).ok());
  ASSERT_TRUE(Control().UnpauseTrial(Id(1)).ok());
  runner_->Step();
  GrantAll();
  ASSERT_EQ(T(1).status, TrialStatus::kRunning);
  ASSERT_TRUE(Report(1, 1).ok());
  EXPECT_EQ(obs_.results.back().result["pbt_exploit"]["donor"], Id(0));
  EXPECT_TRUE(runner_->slot(1).exploit_note.is_null());
  EXPECT_EQ(LastActions(*runner_).at(Id(1)), Action::kCheckpoint);
}

}  // namespace
}  // namespace tunebus
