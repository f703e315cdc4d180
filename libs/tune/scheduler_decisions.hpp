// SchedulerDecisionLog: what the trial scheduler decided about trials, for people to look at
// (the dashboard's "Trial scheduler's decisions" panel, docs/how-to/dashboard.md; the control
// socket's ListSchedulerDecisions). The TrialRunner appends one entry for each STOP or PAUSE a
// trial scheduler returns from OnTrialResult (ASHA, HyperBand, the median stopping rule), each
// trial it stops through TrialSchedulerContext::StopTrial (HyperBand's halving) and each PBT
// exploit. A stopper (`stop:`), a user's `tunectl stop` and a driver's stop are not the scheduler's
// and are not listed. In memory only: bounded to the newest kMaxEntries, empty after a scheduler
// restart until new decisions come (the journal keeps the scheduler's state, not its reasons).
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>

namespace tunebus {

struct SchedulerDecision {
  std::string kind;                // "stop" | "pause" | "exploit"
  std::string trial_id;            // the trial decided on (an exploit's target)
  std::string scheduler;           // TrialScheduler::name(): "asha", "hyperband", "pbt", ...
  int64_t training_iteration = 0;  // the trial's training_iteration when decided
  double time_total_s = 0;         // the trial's time_total_s then, seconds
  double at_s = 0;                 // wall clock, seconds since the Unix epoch
  /// What the scheduler said of it (TrialScheduler::TakeDecisionDetail), e.g. ASHA's
  /// {"rung": milestone, "bracket", "cutoff", "value"}; an exploit's {"donor", "donor_iteration",
  /// "old_config", "new_config"}; null when it said nothing.
  nlohmann::json detail;
};

class SchedulerDecisionLog {
 public:
  static constexpr size_t kMaxEntries = 2000;
  /// Appends `d` (the oldest entry leaves beyond kMaxEntries).
  void Add(SchedulerDecision d);
  /// {"total": decisions ever added, "dropped": those no longer kept, "decisions": [{kind,
  /// trial_id, scheduler, training_iteration, time_total_s, at_s, detail}] oldest first}.
  nlohmann::json ToJson() const;
  int64_t total() const { return total_; }

 private:
  std::deque<SchedulerDecision> entries_;
  int64_t total_ = 0;
};

}  // namespace tunebus
