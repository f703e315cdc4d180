// TrialPhases (libs/tune/trial_phases.hpp): the runner's sub-state per trial. The transition table
// is checked pair by pair against the header's, every transition is walked through the named
// methods with its data, a refused one changes nothing (Apply) or aborts (the named methods), and
// the queue and counts the runner reads stay exact.
#include "libs/tune/trial_phases.hpp"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

namespace tunebus {
namespace {

using P = RunnerPhase;
using E = PhaseEvent;

constexpr P kAllPhases[] = {P::kIdle,           P::kQueued,  P::kPlacing, P::kRunning,
                            P::kPauseRequested, P::kPausing, P::kSaving};

// The header's table, written out again: (from, event) -> to.
const std::map<std::pair<P, E>, P>& Table() {
  static const std::map<std::pair<P, E>, P> table = {
      {{P::kIdle, E::kQueue}, P::kQueued},
      {{P::kQueued, E::kPlace}, P::kPlacing},
      {{P::kPlacing, E::kPlaced}, P::kRunning},
      {{P::kPlacing, E::kDefer}, P::kQueued},
      {{P::kQueued, E::kDrop}, P::kIdle},
      {{P::kPlacing, E::kDrop}, P::kIdle},
      {{P::kRunning, E::kRequestPause}, P::kPauseRequested},
      {{P::kPauseRequested, E::kRequestPause}, P::kPauseRequested},
      {{P::kPauseRequested, E::kTakePauseRequest}, P::kRunning},
      {{P::kRunning, E::kStartPausing}, P::kPausing},
      {{P::kRunning, E::kLeave}, P::kIdle},
      {{P::kPauseRequested, E::kLeave}, P::kIdle},
      {{P::kPausing, E::kLeave}, P::kIdle},
      {{P::kRunning, E::kLeaveSaving}, P::kSaving},
      {{P::kPauseRequested, E::kLeaveSaving}, P::kSaving},
      {{P::kPausing, E::kLeaveSaving}, P::kSaving},
      {{P::kSaving, E::kSetRequeue}, P::kSaving},
      {{P::kSaving, E::kEndSaving}, P::kIdle},
      {{P::kIdle, E::kAdopt}, P::kRunning},
      {{P::kIdle, E::kAdoptSaving}, P::kSaving},
  };
  return table;
}

// Drives trial `index` of `phases` from kIdle into `to` along allowed transitions.
void Reach(TrialPhases& phases, int64_t index, P to) {
  switch (to) {
    case P::kIdle:
      return;
    case P::kQueued:
      return phases.Queue(index);
    case P::kPlacing:
      phases.Queue(index);
      return phases.Place(index);
    case P::kRunning:
      return phases.Adopt(index);
    case P::kPauseRequested:
      phases.Adopt(index);
      return phases.RequestPause(index);
    case P::kPausing:
      phases.Adopt(index);
      return phases.StartPausing(index, 4);
    case P::kSaving:
      return phases.AdoptSaving(index, 4, "w1");
  }
}

// Applies `event` by its named method (with data for the events that carry some).
void Fire(TrialPhases& phases, int64_t index, E event) {
  switch (event) {
    case E::kQueue:
      return phases.Queue(index);
    case E::kPlace:
      return phases.Place(index);
    case E::kPlaced:
      return phases.Placed(index);
    case E::kDefer:
      return phases.Defer(index);
    case E::kDrop:
      return phases.Drop(index);
    case E::kRequestPause:
      return phases.RequestPause(index);
    case E::kTakePauseRequest:
      EXPECT_TRUE(phases.TakePauseRequest(index));
      return;
    case E::kStartPausing:
      return phases.StartPausing(index, 7);
    case E::kLeave:
      return phases.Leave(index);
    case E::kLeaveSaving:
      return phases.LeaveSaving(index, 7, "w2", true);
    case E::kSetRequeue:
      return phases.SetRequeue(index, true);
    case E::kEndSaving:
      (void)phases.EndSaving(index);
      return;
    case E::kAdopt:
      return phases.Adopt(index);
    case E::kAdoptSaving:
      return phases.AdoptSaving(index, 7, "w2");
  }
}

TEST(TrialPhasesTest, NextAllowsExactlyTheTableOfTheHeader) {
  // Every (phase, event) pair: the table's pairs go where it says, every other is refused.
  int allowed = 0;
  for (P from : kAllPhases) {
    for (const EnumName<E>& event : kPhaseEventNames) {
      const auto it = Table().find({from, event.value});
      const std::optional<P> next = TrialPhases::Next(from, event.value);
      if (it == Table().end()) {
        EXPECT_FALSE(next.has_value()) << RunnerPhaseName(from) << " " << event.name;
      } else {
        ++allowed;
        ASSERT_TRUE(next.has_value()) << RunnerPhaseName(from) << " " << event.name;
        EXPECT_EQ(*next, it->second) << RunnerPhaseName(from) << " " << event.name;
      }
    }
  }
  EXPECT_EQ(allowed, int(Table().size()));
}

TEST(TrialPhasesTest, EveryAllowedTransitionMovesTheTrialAndKeepsTheInvariants) {
  // Each transition of the table, fired by its named method on a trial brought to its `from`
  // phase, lands in its `to` phase with the counts and sets consistent.
  for (const auto& [key, to] : Table()) {
    const auto [from, event] = key;
    TrialPhases phases;
    phases.Reset(3);
    Reach(phases, 1, from);
    ASSERT_EQ(phases.phase(1), from);
    Fire(phases, 1, event);
    EXPECT_EQ(phases.phase(1), to) << RunnerPhaseName(from) << " " << PhaseEventName(event);
    EXPECT_EQ(phases.count(to), to == P::kIdle ? 3 : 1) << RunnerPhaseName(to);
    EXPECT_EQ(phases.busy(), to == P::kIdle ? 0 : 1);
    const Status ok = phases.CheckInvariants();
    EXPECT_TRUE(ok.ok()) << ok.ToString();
  }
}

TEST(TrialPhasesTest, PhaseDataLivesOnlyInThePhasesThatHaveIt) {
  // Pausing holds its attempt; saving holds attempt, worker and requeue; leaving clears them.
  TrialPhases phases;
  phases.Reset(1);
  phases.Queue(0);
  phases.Place(0);
  phases.Placed(0);
  phases.StartPausing(0, 3);
  EXPECT_EQ(phases.at(0).attempt, 3);
  phases.LeaveSaving(0, 3, "w7", /*requeue=*/false);
  EXPECT_EQ(phases.at(0).worker_id, "w7");
  EXPECT_EQ(phases.at(0).attempt, 3);
  EXPECT_FALSE(phases.at(0).requeue);
  phases.SetRequeue(0, true);
  EXPECT_TRUE(phases.at(0).requeue);
  EXPECT_EQ(phases.at(0).worker_id, "w7");  // SetRequeue changes only the flag
  const TrialPhase was = phases.EndSaving(0);
  EXPECT_EQ(was.phase, P::kSaving);
  EXPECT_EQ(was.attempt, 3);
  EXPECT_EQ(was.worker_id, "w7");
  EXPECT_TRUE(was.requeue);
  EXPECT_EQ(phases.phase(0), P::kIdle);
  EXPECT_EQ(phases.at(0).attempt, 0);
  EXPECT_TRUE(phases.at(0).worker_id.empty());
  EXPECT_FALSE(phases.at(0).requeue);
  EXPECT_TRUE(phases.CheckInvariants().ok());
}

TEST(TrialPhasesTest, ARefusedTransitionIsAnErrorThatChangesNothing) {
  // Placing a trial that runs: Apply says so by index, phase and event, and the phase stays.
  TrialPhases phases;
  phases.Reset(2);
  phases.Adopt(1);
  const Status refused = phases.Apply(1, E::kPlace);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(), "trial 1 cannot Place from running");
  EXPECT_EQ(phases.phase(1), P::kRunning);
  EXPECT_EQ(phases.count(P::kRunning), 1);
  EXPECT_TRUE(phases.queued().empty());
  // A saving trial cannot be queued: it is requeued by its flag once it exits.
  phases.LeaveSaving(1, 1, "w1", false);
  EXPECT_EQ(phases.Apply(1, E::kQueue).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(phases.phase(1), P::kSaving);
  EXPECT_EQ(phases.Apply(5, E::kQueue).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(phases.Apply(0, E::kLeaveSaving).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(phases.phase(0), P::kIdle);
  EXPECT_TRUE(phases.CheckInvariants().ok());
}

TEST(TrialPhasesDeathTest, ARefusedNamedTransitionAborts) {
  // The runner's calls are programming contracts: a refused one stops the process, naming it.
  TrialPhases phases;
  phases.Reset(1);
  EXPECT_DEATH(phases.Placed(0), "trial 0 cannot Placed from idle");
  phases.Queue(0);
  EXPECT_DEATH(phases.Queue(0), "trial 0 cannot Queue from queued");
}

TEST(TrialPhasesTest, TakePauseRequestIsFalseWithoutARequest) {
  // The runner asks at every result; a trial with no pause asked for keeps running.
  TrialPhases phases;
  phases.Reset(1);
  phases.Adopt(0);
  EXPECT_FALSE(phases.TakePauseRequest(0));
  EXPECT_EQ(phases.phase(0), P::kRunning);
  phases.RequestPause(0);
  phases.RequestPause(0);  // asked twice: one request
  EXPECT_EQ(phases.count(P::kPauseRequested), 1);
  EXPECT_TRUE(phases.TakePauseRequest(0));
  EXPECT_FALSE(phases.TakePauseRequest(0));
  EXPECT_EQ(phases.phase(0), P::kRunning);
}

TEST(TrialPhasesTest, QueueIsLowestIndexFirstWhateverTheOrderOfQueueing) {
  // Placement takes queued trials lowest index first (ChooseTrialToRun's FIFO): a trial that
  // was deferred goes back to its place, not to the end.
  TrialPhases phases;
  phases.Reset(10);
  for (int64_t i : {5, 2, 9, 0, 7}) phases.Queue(i);
  EXPECT_EQ(std::vector<int64_t>(phases.queued().begin(), phases.queued().end()),
            (std::vector<int64_t>{0, 2, 5, 7, 9}));
  phases.Place(0);
  phases.Place(2);
  EXPECT_EQ(*phases.queued().begin(), 5);
  phases.Defer(2);
  EXPECT_EQ(std::vector<int64_t>(phases.queued().begin(), phases.queued().end()),
            (std::vector<int64_t>{2, 5, 7, 9}));
  phases.Drop(7);
  EXPECT_EQ(std::vector<int64_t>(phases.queued().begin(), phases.queued().end()),
            (std::vector<int64_t>{2, 5, 9}));
  EXPECT_EQ(phases.Add(), 10);
  phases.Queue(10);
  EXPECT_EQ(*phases.queued().rbegin(), 10);
  EXPECT_TRUE(phases.CheckInvariants().ok());
}

TEST(TrialPhasesTest, CountsAreWhatTheRunnerReads) {
  // InFlight = placing + RUNNING phases + saving; busy = not idle (CheckFinished waits for 0).
  TrialPhases phases;
  phases.Reset(8);
  Reach(phases, 0, P::kQueued);
  Reach(phases, 1, P::kPlacing);
  Reach(phases, 2, P::kRunning);
  Reach(phases, 3, P::kPauseRequested);
  Reach(phases, 4, P::kPausing);
  Reach(phases, 5, P::kSaving);
  Reach(phases, 6, P::kSaving);
  EXPECT_EQ(phases.running(), 3);
  EXPECT_EQ(phases.saving(), 2);
  EXPECT_EQ(phases.in_flight(), 1 + 3 + 2);
  EXPECT_EQ(phases.busy(), 7);
  EXPECT_EQ(phases.count(P::kIdle), 1);
  EXPECT_TRUE(phases.IsRunning(3));
  EXPECT_FALSE(phases.IsRunning(5));
  phases.Leave(4);
  (void)phases.EndSaving(5);
  phases.Drop(1);
  EXPECT_EQ(phases.in_flight(), 2 + 1);
  EXPECT_EQ(phases.busy(), 4);
  phases.Reset(2);
  EXPECT_EQ(phases.busy(), 0);
  EXPECT_EQ(phases.in_flight(), 0);
  EXPECT_TRUE(phases.queued().empty());
  EXPECT_TRUE(phases.SavingOn("w1").empty());
}

TEST(TrialPhasesTest, SavingOnListsAWorkersSavingAttemptsLowestFirst) {
  // A worker that restarts without its saving attempts ends exactly those (EndSavingGoneFrom).
  TrialPhases phases;
  phases.Reset(6);
  phases.AdoptSaving(4, 1, "w1");
  phases.AdoptSaving(1, 2, "w1");
  phases.AdoptSaving(3, 1, "w2");
  Reach(phases, 0, P::kRunning);
  EXPECT_EQ(phases.SavingOn("w1"), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(phases.SavingOn("w2"), (std::vector<int64_t>{3}));
  EXPECT_TRUE(phases.SavingOn("w3").empty());
  (void)phases.EndSaving(1);
  EXPECT_EQ(phases.SavingOn("w1"), (std::vector<int64_t>{4}));
}

}  // namespace
}  // namespace tunebus
