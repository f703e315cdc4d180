// TrialSlot: the TrialRunner's bookkeeping of one trial beside the Trial and its phase — a result
// held for the driver's answer, a journaled driver answer, a PBT exploit note, the action that
// answered its newest result — and the two records a slot holds (HeldResult, JournaledAnswer).
// Plain data: the runner (trial_runner.hpp), its DriverHolds (driver_holds.hpp) and its
// TrialLifecycle (trial_lifecycle.hpp) change slots; CheckSlots (runner_queries.hpp) checks them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "libs/core/action.hpp"
#include "libs/tune/driver_link.hpp"
#include "libs/tune/training_result.hpp"

namespace tunebus {

/// A result held for the driver's answer (TrialRunner::SetDriver): decided in OnDriverAnswer.
struct HeldResult {
  int64_t attempt = 0, seq = 0;
  double time_this_iter_s = 0;  // seconds
  TrainingResult metrics;       // with the auto-filled keys, `done` not yet set
  bool user_done = false;       // the trainable reported a truthy `done`
};

/// A driver answer journaled (driver_decision record) before a restart whose result has no
/// result record yet: the result, sent again by its worker, is decided with it.
struct JournaledAnswer {
  int64_t attempt = 0, seq = 0;
  DriverAnswer answer;
};

/// The runner's bookkeeping of one trial beside the trial itself (TrialRunner::trials()[index])
/// and its phase (TrialRunner::phases().at(index)); TrialRunner::slot(index).
///
/// Where each part lives: the Trial stays in one contiguous std::vector<Trial> because the
/// trial scheduler (TrialSchedulerContext::trials()), the journal's snapshot encoder and the
/// scheduler service's views take `const std::vector<Trial>&`. The phase stays in TrialPhases:
/// its placement queue, its saving set and its counts move with every phase change, so one
/// class keeps the phase, the transition table and those indexes consistent (CheckInvariants)
/// and is tested alone. The slot holds what changes on events that never change the phase.
///
/// Invariants (CheckSlots checks them; the runner keeps them after every call):
///   - there is one slot per trial and one phase per trial (same count, same index);
///   - `held` is set only while the trial is RUNNING, for its current attempt, with a seq after
///     its last accepted one (held.attempt == trial.attempt, held.seq > trial.last_seq); at most
///     one per trial (the trainable blocks on its decision);
///   - `journaled_answer` is set only after Restore, for an attempt no newer than the trial's;
///     the trial's next result takes it (decided with it if attempt and seq match, else dropped);
///   - `exploit_note`, when not null, is an object ("pbt_exploit": donor, checkpoint_id,
///     old_config, new_config) written into the trial's next result, then cleared;
///   - `last_action`, once set, is the answer to the trial's newest decided result (re-sent for
///     a duplicate of it); Restore sets it from the journal.
///
/// Cost: the slots are one vector by trial index (O(1) lookup, one append per new trial); an
/// empty slot holds no heap memory, a held result or journaled answer one result's metrics.
/// Thread-compatibility: owned by the runner's thread.
struct TrialSlot {
  std::optional<HeldResult> held;
  std::optional<JournaledAnswer> journaled_answer;
  nlohmann::json exploit_note;  // null: none
  std::optional<Action> last_action;
};

}  // namespace tunebus
