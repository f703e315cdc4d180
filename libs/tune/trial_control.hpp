// TrialControl: the user's commands on one experiment's trials, over its TrialRunner: `tunectl`
// stop / pause / resume / add / set-resources of a trial, the experiment's stop and interrupt,
// and a resume's reopen and rerun of ERROR trials; also the fair share's preemption (pause and
// unpause of a preemptible experiment's trials). Ray Tune's TrialRunner.stop_trial /
// pause_trial / add_trial and TrialExecutor.unpause_trial.
//
// What each command does to a trial, by its status and the runner's phase (trial_phases.hpp):
//
//   command            PENDING (queued,       RUNNING (running,          PAUSED         finished
//                      placing; saving+       pause_requested / pausing) (TERMINATED, requeue)
//                      ERROR)
//   StopTrial          TERMINATED; leaves     TERMINATED; trainable      TERMINATED     "nothing to
//                      the queue (a grant     stopped, resources freed                  do" (OK)
//                      still arriving is
//                      given back)
//   PauseTrial         PAUSED at once         pause_requested: "pause"   Failed-        Failed-
//                                             at its next result, then   Precondition Precondition
//                                             pausing; pausing: OK, a
//                                             message saying so
//   UnpauseTrial       FailedPrecondition     pausing: PENDING, queued   PENDING,       Failed-
//                                             once it exited; else       queued Precondition
//                                             FailedPrecondition
//   SetTrialResources  set unless placing     FailedPrecondition         set unless     Failed-
//                      or saving                                         saving Precondition
//
// Every command answers NotFound for an unknown trial id. AddTrial adds a PENDING trial (queued);
// StopExperiment ends the experiment STOPPED (every unfinished trial TERMINATED), Interrupt-
// Experiment INTERRUPTED (RUNNING trials back to PENDING, pausing ones PAUSED); Reopen and
// RerunErrored continue one that ended. Every state change is journaled by the runner's
// observer before its effect leaves, as for the runner's own events.
//
// TrialControl carries out the commands itself, on the runner's trials, phases and parts (it is
// the runner's friend); the runner calls it too where one of its events amounts to a command (a
// paused trial chosen to run again, checkpoint_failure: pause, an exploit deferred to the end of
// its trial's result).
// Holds only a reference: build one where a command is handled (it costs nothing).
// Threading: the runner's thread only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/rerun_mode.hpp"
#include "libs/core/resources.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"

namespace tunebus {

class TrialRunner;

class TrialControl {
 public:
  /// REQUIRES: `runner` outlives this.
  explicit TrialControl(TrialRunner& runner) : runner_(runner) {}

  /// Stops one trial (table above; the trial scheduler hears OnTrialRemove, or OnTrialComplete
  /// for a RUNNING one). Returns "trial X stopped (was RUNNING)" or "trial X is already
  /// TERMINATED; nothing to do". Not noted as a trial scheduler decision. Errors: NotFound.
  Result<std::string> StopTrial(const std::string& trial_id);
  /// Pauses a trial (table above). Returns a message saying what happens. Errors: NotFound;
  /// FailedPrecondition for PAUSED or finished trials, and for a RUNNING trial whose attempt
  /// fail_fast: raise stopped.
  Result<std::string> PauseTrial(const std::string& trial_id);
  /// PAUSED (or pausing) -> PENDING: it continues from its newest checkpoint. Errors: NotFound;
  /// FailedPrecondition for other statuses or a finished experiment.
  Status UnpauseTrial(const std::string& trial_id);
  /// Adds a trial with an explicit config (Ray Tune's add_trial). Returns it (PENDING).
  /// Errors: InvalidArgument if `config` is not an object or names a key the param space lacks
  /// (with its near miss); FailedPrecondition once the experiment is finished.
  Result<const Trial*> AddTrial(nlohmann::json config);
  /// Sets the resource request of a trial that is PENDING (not placing nor saving) or PAUSED.
  /// Errors: NotFound; FailedPrecondition otherwise.
  Status SetTrialResources(const std::string& trial_id, const Resources& resources);
  /// PBT's exploit (TrialSchedulerContext::ExploitTrial, the trial scheduler's through its
  /// TrialSchedulerHost): `trial_id` takes `new_config` and restores `donor_trial_id`'s newest
  /// checkpoint; a RUNNING trial is stopped and requeued, the trial being decided is exploited
  /// once its result is recorded. Errors: NotFound; FailedPrecondition if the donor has no
  /// checkpoint of its current config or the trial is finished; InvalidArgument if `new_config`
  /// is not an object.
  Status ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                      nlohmann::json new_config);
  /// Stops every unfinished trial; the experiment ends STOPPED with `reason`. No-op once ended.
  void StopExperiment(const std::string& reason);
  /// Ray Tune's Ctrl-C: the experiment ends INTERRUPTED with `reason`, resumable. No-op once
  /// ended.
  void InterruptExperiment(const std::string& reason);
  /// Continues an INTERRUPTED experiment. False for an experiment in any other status.
  bool Reopen();
  /// Reruns the ERROR trials (kRestore: from their newest checkpoint; kRestart: from scratch).
  /// Returns how many. Errors: InvalidArgument for kNone.
  Result<int64_t> RerunErrored(RerunMode mode);

 private:
  TrialRunner& runner_;
};

}  // namespace tunebus
