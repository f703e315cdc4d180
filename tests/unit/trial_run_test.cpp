// TrialRun's phases (services/trial-worker/trial_run.hpp): the transition table keeps the
// properties the worker relies on. A run never runs again once it left kRunning; an exited run
// never has a trainable again; a stale run stays silent; every phase is reachable from kRunning;
// and the predicates the worker asks (stale, has_exited, told_to_stop) follow the phase.
#include "services/trial-worker/trial_run.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace tunebus {
namespace {

constexpr RunPhase kPhases[] = {RunPhase::kRunning,    RunPhase::kStopping,  RunPhase::kTimedOut,
                                RunPhase::kStale,      RunPhase::kExitWaits, RunPhase::kExited,
                                RunPhase::kStaleExited};

bool Exited(RunPhase p) {
  return p == RunPhase::kExitWaits || p == RunPhase::kExited || p == RunPhase::kStaleExited;
}
bool Stale(RunPhase p) { return p == RunPhase::kStale || p == RunPhase::kStaleExited; }

TEST(TrialRunTest, NoPhaseMovesBackToRunningAndNoExitedRunComesBack) {
  for (RunPhase from : kPhases) {
    EXPECT_FALSE(RunPhaseMayMove(from, RunPhase::kRunning)) << int(from);
    for (RunPhase to : kPhases) {
      if (!RunPhaseMayMove(from, to)) continue;
      EXPECT_FALSE(Exited(from) && !Exited(to)) << int(from) << " -> " << int(to);
      EXPECT_FALSE(Stale(from) && !Stale(to)) << int(from) << " -> " << int(to);
    }
  }
}

TEST(TrialRunTest, EveryPhaseIsReachableFromRunningAndEveryExitedRunCanBeErased) {
  std::set<RunPhase> reached = {RunPhase::kRunning};
  for (bool grew = true; grew;) {
    grew = false;
    for (RunPhase from : std::vector<RunPhase>(reached.begin(), reached.end())) {
      for (RunPhase to : kPhases) {
        if (RunPhaseMayMove(from, to)) grew |= reached.insert(to).second;
      }
    }
  }
  EXPECT_EQ(reached.size(), std::size(kPhases));
  // kExitWaits ends in kExited (its last upload) or kStaleExited: both are erased once settled.
  EXPECT_TRUE(RunPhaseMayMove(RunPhase::kExitWaits, RunPhase::kExited));
  EXPECT_TRUE(RunPhaseMayMove(RunPhase::kExitWaits, RunPhase::kStaleExited));
}

TEST(TrialRunTest, PredicatesFollowThePhase) {
  TrialRun run;
  EXPECT_FALSE(run.stale() || run.has_exited() || run.told_to_stop());
  run.MoveTo(RunPhase::kStopping);
  EXPECT_TRUE(run.told_to_stop());
  run.MoveTo(RunPhase::kStale);
  EXPECT_TRUE(run.stale() && run.told_to_stop() && !run.has_exited());
  run.MoveTo(RunPhase::kStaleExited);
  EXPECT_TRUE(run.stale() && run.has_exited());

  TrialRun timed_out;
  timed_out.MoveTo(RunPhase::kTimedOut);
  EXPECT_FALSE(timed_out.told_to_stop());  // its exit is a failure, not a stop
  timed_out.MoveTo(RunPhase::kExitWaits);
  EXPECT_TRUE(timed_out.has_exited() && !timed_out.stale());
  timed_out.MoveTo(RunPhase::kExited);
  EXPECT_TRUE(timed_out.has_exited());
}

}  // namespace
}  // namespace tunebus
