// Reading a TrialRunner from outside it: what the scheduler service's snapshots, views, recovery
// and worker registration need (the best trial, trials per status, the checkpoints still
// referenced, which attempt owns an allocation, the last worker actions) and the check of the
// slots' invariants (TrialSlot, trial_slot.hpp). Pure functions of the runner's const state.
// Thread-compatibility: call on the runner's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"

namespace tunebus {

class TrialRunner;

/// The trial whose last result is best by options.metric / options.mode (Ray Tune's
/// get_best_trial, scope "last"), or nullptr when there is no metric or no result carries it.
const Trial* BestTrial(const TrialRunner& runner);
/// Trials per status.
std::map<TrialStatus, int64_t> CountByStatus(const std::vector<Trial>& trials);
/// Every checkpoint id a trial keeps (in its checkpoints) or will restore. A stored checkpoint
/// not among them, and that OnCheckpointSaved refuses, is an orphan to delete.
std::unordered_set<std::string> ReferencedCheckpoints(const std::vector<Trial>& trials);
/// True if (trial_id, attempt) on `worker_id` still owns its allocation in `runner`: the trial's
/// RUNNING attempt there, or an attempt saving before it stops (also one Restore found storing
/// its end checkpoint, see StoresEndCheckpoint).
bool HoldsAllocation(const TrialRunner& runner, const std::string& trial_id, int64_t attempt,
                     const std::string& worker_id);
/// For snapshots: per trial id, the worker action that answered its newest result (the
/// slots' last_action; RunnerRestore::last_actions).
std::map<std::string, Action> LastActions(const TrialRunner& runner);
/// OK if every invariant of TrialSlot's comment holds for `runner`, else Internal naming the
/// trial and the broken one. O(trials).
Status CheckSlots(const TrialRunner& runner);

}  // namespace tunebus
