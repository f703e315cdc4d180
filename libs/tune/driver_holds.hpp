// DriverHolds: the results a TrialRunner holds for its driver's answer and the driver answers it
// restored from the journal (proto/PROTOCOL.md section 7b), kept in the trials' slots
// (trial_slot.hpp: TrialSlot::held, TrialSlot::journaled_answer). It owns the link to the driver
// (not the driver itself) and is the only writer of those two slot fields.
//
// Per trial slot, at most one result is held (the trainable blocks on its decision): Hold sets
// it and asks the driver; Take gives it back when the driver's answer matches it; Drop forgets it
// when the trial leaves RUNNING (the driver is told to forget the trial). A journaled answer is
// set by Restore only for a RUNNING trial's result not yet journaled, and taken by the trial's
// next result (TakeJournaled), whether it matches or not.
//
// Thread-compatibility: owned by the runner's thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/trial.hpp"
#include "libs/tune/driver_link.hpp"
#include "libs/tune/trial_slot.hpp"

namespace tunebus {

class DriverHolds {
 public:
  /// Every result is held for `link`'s answer from now on; nullptr: results are decided at
  /// once. `link` outlives its use here.
  void set_link(DriverLink* link) { link_ = link; }
  /// The driver link, or nullptr.
  DriverLink* link() const { return link_; }

  /// Holds `held` in `slot` (REQUIRES: link() set, nothing held) and asks the driver, who sees
  /// the result as the trial scheduler will, with the trial's config (Ray's result dict
  /// carries it).
  void Hold(TrialSlot& slot, const Trial& trial, HeldResult held);
  /// The held result if it is result `seq` of `attempt` (then no longer held), else nullopt.
  static std::optional<HeldResult> Take(TrialSlot& slot, int64_t attempt, int64_t seq);
  /// Forgets the slot's held result, if any, and tells the driver to forget the trial.
  void Drop(TrialSlot& slot, const std::string& trial_id);
  /// The slot's journaled answer if it is for result `seq` of `attempt`; the slot's journaled
  /// answer is cleared either way (the trial's next result takes it).
  static std::optional<JournaledAnswer> TakeJournaled(TrialSlot& slot, int64_t attempt,
                                                      int64_t seq);
  /// Sets the journaled answers from driver_decision `records` (newest per trial id) whose
  /// results have no result record yet: the trial is RUNNING at that attempt and the record's
  /// seq is past its last_seq. Clears every other slot's. REQUIRES: slots[i] is trials[i]'s.
  static void Restore(const std::map<std::string, nlohmann::json>& records,
                      const std::vector<Trial>& trials, std::vector<TrialSlot>& slots);

 private:
  DriverLink* link_ = nullptr;  // not owned
};

}  // namespace tunebus
