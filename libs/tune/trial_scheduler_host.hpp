// TrialSchedulerHost: the experiment's TrialScheduler as a TrialRunner hosts it. It owns the
// scheduler, is the TrialSchedulerContext the scheduler calls back (trial_scheduler.hpp: Ray
// Tune's schedulers get the trial runner), journals the scheduler's state changes, restores it
// from the journal and keeps the log of its STOP / PAUSE decisions and PBT exploits.
//
// One result's decision (Decide): while the scheduler's OnTrialResult runs, the trial being
// decided is deciding(); what the scheduler asks of that trial meanwhile — a checkpoint
// (RequestCheckpoint), keys for the result (SetResultInfo), an exploit of itself (ExploitTrial:
// deferred, since its decision is still to come) — is collected and handed to the runner by
// TakeAsked; the driver's answer, if any, is at hand through DriverSamples. Its other calls
// (stop, unpause, exploit of another trial) act at once through TrialControl, as the user's do.
//
// Journaling: Journal() hands the scheduler's TakeStateDelta to the observer
// (OnTrialSchedulerState); the runner calls it right after every scheduler callback, before any
// effect of the callback leaves (Decide and the context's own calls do it themselves).
//
// Invariants: deciding() is -1 outside Decide; TakeAsked empties what it returns.
// Thread-compatibility: owned by the runner's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/driver_link.hpp"
#include "libs/tune/scheduler_decisions.hpp"
#include "libs/tune/trial_executor.hpp"
#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

class TrialRunner;

class TrialSchedulerHost final : public TrialSchedulerContext {
 public:
  /// A PBT exploit of the trial being decided, applied once its result is recorded.
  struct Exploit {
    std::string donor_trial_id;
    nlohmann::json new_config;
  };
  /// What the scheduler asked for the result it just decided.
  struct Asked {
    bool checkpoint = false;                                          // RequestCheckpoint
    std::vector<std::pair<std::string, nlohmann::json>> result_info;  // SetResultInfo, in order
    std::optional<Exploit> exploit;                                   // ExploitTrial of itself
  };

  /// Attaches `scheduler` to this context. REQUIRES: `runner`, `observer` and `clock` outlive
  /// this.
  TrialSchedulerHost(std::unique_ptr<TrialScheduler> scheduler, TrialRunner& runner,
                     RunnerObserver& observer, const Clock& clock);

  TrialScheduler& scheduler() { return *scheduler_; }
  const TrialScheduler& scheduler() const { return *scheduler_; }
  /// Journals what the last scheduler callback changed (OnTrialSchedulerState), if anything.
  void Journal();
  /// Brings the scheduler to its journaled state: RestoreState(`state`, null for its initial
  /// one) then every delta journaled after it, in order. Errors: Corruption.
  Status Restore(const nlohmann::json& state, const std::vector<nlohmann::json>& deltas);
  /// Adds a `kind` decision of the scheduler on `trial` (as it stands now) to decisions(), with
  /// `detail`, else what the scheduler explained (TakeDecisionDetail).
  void NoteDecision(const Trial& trial, const char* kind, nlohmann::json detail = nullptr);
  /// The scheduler's newest STOP / PAUSE decisions and PBT exploits, in memory only.
  const SchedulerDecisionLog& decisions() const { return decisions_; }
  /// The scheduler's decision on accepted result `result` of `trial` (Ray's
  /// _process_trial_result): kStop without asking it when the driver's `answer` stops the trial
  /// (a stopper's STOP is final), else OnTrialResult with the answer's samples at hand; a STOP
  /// or PAUSE is noted, the delta journaled.
  Decision Decide(const Trial& trial, const TrainingResult& result, const DriverAnswer* answer);
  /// What the scheduler asked during the last Decide (then nothing is kept).
  Asked TakeAsked();
  /// The index of the trial being decided, or -1.
  int64_t deciding() const { return deciding_; }
  /// Keeps `exploit` of the trial being decided for TakeAsked.
  void DeferExploit(Exploit exploit) { asked_.exploit = std::move(exploit); }

  // ---- TrialSchedulerContext (trial_scheduler.hpp) ------------------------------------------
  const std::vector<Trial>& trials() const override;
  const Trial* FindTrial(const std::string& trial_id) const override;
  bool IsPaused(const std::string& trial_id) const override;
  Status UnpauseTrial(const std::string& trial_id) override;
  /// Noted in decisions() (the user's stop, TrialControl's, is not). Errors: NotFound;
  /// FailedPrecondition for the trial being decided (it returns kStop instead).
  Status StopTrial(const std::string& trial_id) override;
  Status ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                      nlohmann::json new_config) override;
  void RequestCheckpoint(const std::string& trial_id) override;
  void SetResultInfo(const std::string& trial_id, const std::string& key,
                     nlohmann::json value) override;
  double NowS() const override { return clock_.WallSeconds(); }
  const nlohmann::json* DriverSamples(const std::string& trial_id) const override;

 private:
  std::unique_ptr<TrialScheduler> scheduler_;
  TrialRunner& runner_;
  RunnerObserver& observer_;
  const Clock& clock_;
  SchedulerDecisionLog decisions_;
  int64_t deciding_ = -1;                          // the trial whose OnTrialResult is running
  const DriverAnswer* deciding_answer_ = nullptr;  // the driver's answer for it, or null
  Asked asked_;                                    // what the scheduler asked of it
};

}  // namespace tunebus
