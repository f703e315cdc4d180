// TrialControl: the commands on single trials (stop, pause, unpause, add, set resources, PBT
// exploit) and on the experiment (stop, interrupt, reopen, rerun errored trials). Ray Tune's
// TrialRunner.stop_trial / pause_trial / add_trial and TrialExecutor.unpause_trial.
#include "libs/tune/trial_control.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "libs/core/near_miss.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

Result<std::string> TrialControl::StopTrial(const std::string& trial_id) {
  Trial* t = runner_.Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (IsFinished(t->status)) {
    return fmt::format("trial {} is already {}; nothing to do", trial_id,
                       TrialStatusName(t->status));
  }
  if (t->index == runner_.host_.deciding()) {
    return Status::FailedPrecondition("a trial scheduler stops the trial it decides on with kStop");
  }
  const TrialStatus was = t->status;
  TrialSchedulerHost& host = runner_.host_;
  if (t->status == TrialStatus::kRunning) {
    host.scheduler().OnTrialComplete(*t, TrainingResult::FromJson(t->LastResult()));
    host.Journal();
    runner_.search_.OnTrialComplete(*t, /*error=*/false);
    runner_.lifecycle_.LeaveRunning(*t, TrialStatus::kTerminated, "", /*stop_trainable=*/true);
  } else {
    runner_.lifecycle_.DropPending(*t);  // a grant that still arrives is released in OnTrialPlaced
    t->status = TrialStatus::kTerminated;
    host.scheduler().OnTrialRemove(*t);
    host.Journal();
    runner_.search_.OnTrialComplete(*t, /*error=*/false);  // Ray's stop_trial of a PENDING/PAUSED
    NoteFailure(*t);
    runner_.observer_.OnTrialStatus(*t);
  }
  runner_.CheckFinished();
  return fmt::format("trial {} stopped (was {})", trial_id, TrialStatusName(was));
}

Result<std::string> TrialControl::PauseTrial(const std::string& trial_id) {
  Trial* t = runner_.Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (IsFinished(t->status) || t->status == TrialStatus::kPaused) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}; only PENDING or RUNNING trials can be paused", trial_id,
                    TrialStatusName(t->status)));
  }
  TrialPhases& phases = runner_.phases_;
  if (phases.IsPausing(t->index)) {
    return fmt::format("trial {} is pausing: saving its checkpoint, then PAUSED", trial_id);
  }
  if (t->status == TrialStatus::kRunning && !phases.IsRunning(t->index)) {
    return Status::FailedPrecondition(fmt::format(
        "trial {} was stopped when fail_fast: raise ended the experiment; resume it", trial_id));
  }
  if (t->status == TrialStatus::kRunning) {
    phases.RequestPause(t->index);
    return fmt::format(
        "trial {} pauses at its next result (RUNNING until its checkpoint is stored, then PAUSED)",
        trial_id);
  }
  runner_.lifecycle_.DropPending(*t);
  t->status = TrialStatus::kPaused;
  NoteFailure(*t);
  runner_.observer_.OnTrialStatus(*t);
  return fmt::format("trial {} paused (was PENDING)", trial_id);
}

Status TrialControl::UnpauseTrial(const std::string& trial_id) {
  Trial* t = runner_.Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (runner_.IsFinished()) return Status::FailedPrecondition("the experiment is finished");
  // A trial scheduler that unpauses from inside a callback (HyperBand's halving) has its state
  // change journaled before the unpause.
  runner_.host_.Journal();
  TrialPhases& phases = runner_.phases_;
  if (phases.IsPausing(t->index)) {
    // PENDING now (journaled), placed once its checkpoint is stored and it has exited.
    runner_.lifecycle_.LeaveRunning(*t, TrialStatus::kPending, "", /*stop_trainable=*/false,
                                    /*saving=*/true);
    phases.SetRequeue(t->index, true);
    return Status::Ok();
  }
  if (t->status != TrialStatus::kPaused) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}, not PAUSED", trial_id, TrialStatusName(t->status)));
  }
  t->status = TrialStatus::kPending;
  NoteFailure(*t);
  runner_.observer_.OnTrialStatus(*t);
  // An attempt still saving (paused while it saved before it stopped) is placed once it exits.
  if (phases.Is(t->index, RunnerPhase::kSaving)) {
    phases.SetRequeue(t->index, true);
  } else {
    phases.Queue(t->index);
  }
  return Status::Ok();
}

Result<const Trial*> TrialControl::AddTrial(nlohmann::json config) {
  if (!config.is_object()) return Status::InvalidArgument("a trial's config must be a JSON object");
  if (runner_.IsFinished()) return Status::FailedPrecondition("experiment is finished");
  // A key the param space does not have is a typo unless the space is empty (every key is new).
  const nlohmann::json& space = runner_.options_.param_space;
  std::vector<std::string> known;
  if (space.is_object()) {
    for (const auto& [key, value] : space.items()) known.push_back(key);
  }
  for (const auto& [key, value] : config.items()) {
    if (known.empty() || space.contains(key)) continue;
    const auto meant = NearMiss(key, known);
    return Status::InvalidArgument(
        fmt::format("config key '{}' is not in the param space{} (its keys: {})", key,
                    meant ? "; did you mean " + *meant + "?" : "", fmt::join(known, ", ")));
  }
  Trial& t = runner_.NewTrial(std::move(config), "");
  return &t;
}

Status TrialControl::SetTrialResources(const std::string& trial_id, const Resources& resources) {
  Trial* t = runner_.Find(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  const TrialPhases& phases = runner_.phases_;
  if (phases.IsPausing(t->index)) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is pausing (RUNNING until its checkpoint is stored); change its "
                    "resources once it is PAUSED",
                    trial_id));
  }
  if (t->status == TrialStatus::kRunning || phases.Is(t->index, RunnerPhase::kPlacing) ||
      phases.Is(t->index, RunnerPhase::kSaving)) {
    return Status::FailedPrecondition(fmt::format(
        "trial {} is running; pause or stop it before changing its resources", trial_id));
  }
  if (IsFinished(t->status)) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}", trial_id, TrialStatusName(t->status)));
  }
  t->resources = resources;
  runner_.observer_.OnTrialUpdated(*t, {{"resources", resources.ToString()}});
  return Status::Ok();
}

Status TrialControl::ExploitTrial(const std::string& trial_id, const std::string& donor_trial_id,
                                  nlohmann::json new_config) {
  Trial* t = runner_.Find(trial_id);
  const Trial* donor = runner_.FindTrial(donor_trial_id);
  if (t == nullptr || donor == nullptr) {
    return Status::NotFound(fmt::format("no trial {}", t == nullptr ? trial_id : donor_trial_id));
  }
  if (donor->checkpoints.empty() || !donor->newest_checkpoint_has_config) {
    return Status::FailedPrecondition(
        fmt::format("trial {} has no checkpoint of its current config", donor_trial_id));
  }
  if (IsFinished(t->status)) {
    return Status::FailedPrecondition(
        fmt::format("trial {} is {}", trial_id, TrialStatusName(t->status)));
  }
  if (!new_config.is_object()) return Status::InvalidArgument("new_config must be a JSON object");
  TrialSchedulerHost& host = runner_.host_;
  if (t->index == host.deciding()) {  // applied by the runner once this result is recorded
    host.DeferExploit({donor_trial_id, std::move(new_config)});
    return Status::Ok();
  }
  if (t->status == TrialStatus::kRunning) {
    runner_.lifecycle_.LeaveRunning(*t, TrialStatus::kPending, "", /*stop_trainable=*/true);
    runner_.phases_.Queue(t->index);
  }
  nlohmann::json change = {{"pbt_exploit",
                            {{"donor", donor_trial_id},
                             {"checkpoint_id", donor->checkpoints.back().checkpoint_id},
                             {"old_config", t->config},
                             {"new_config", new_config}}}};
  runner_.slots_[size_t(t->index)].exploit_note = change["pbt_exploit"];
  nlohmann::json decision = change["pbt_exploit"];  // and where the donor's checkpoint is
  decision["donor_iteration"] = donor->checkpoints.back().training_iteration;
  host.NoteDecision(*t, "exploit", std::move(decision));
  t->config = std::move(new_config);
  t->restore_checkpoint = donor->checkpoints.back();
  // Its own checkpoints, and those its attempt was still asked for, hold the old config.
  t->newest_checkpoint_has_config = false;
  t->requested_checkpoints.clear();
  runner_.observer_.OnTrialUpdated(*t, change);
  return Status::Ok();
}

void TrialControl::StopExperiment(const std::string& reason) {
  if (runner_.IsFinished()) return;
  runner_.StopUnfinished();
  runner_.EndExperiment(ExperimentStatus::kStopped, reason);
}

void TrialControl::InterruptExperiment(const std::string& reason) {
  if (runner_.IsFinished()) return;
  TrialPhases& phases = runner_.phases_;
  for (Trial& t : runner_.trials_) {
    if (t.status != TrialStatus::kRunning) continue;
    // A pausing trial stays paused (from its newest stored checkpoint).
    const bool paused = phases.IsPausing(t.index);
    runner_.lifecycle_.LeaveRunning(t, paused ? TrialStatus::kPaused : TrialStatus::kPending, "",
                                    /*stop_trainable=*/true);
    if (!paused) phases.Queue(t.index);
  }
  // Placements in flight are given back when their grant arrives (OnTrialPlaced); their trials
  // wait with the others.
  for (const Trial& t : runner_.trials_) {
    if (phases.Is(t.index, RunnerPhase::kPlacing)) phases.Defer(t.index);
  }
  runner_.EndExperiment(ExperimentStatus::kInterrupted, reason);
}

bool TrialControl::Reopen() {
  if (runner_.status_ != ExperimentStatus::kInterrupted) return false;
  runner_.status_ = ExperimentStatus::kRunning;
  runner_.end_reason_.clear();
  return true;
}

Result<int64_t> TrialControl::RerunErrored(RerunMode mode) {
  if (mode == RerunMode::kNone) {
    return Status::InvalidArgument("rerun_errored must be 'restore' or 'restart', got ''");
  }
  int64_t n = 0;
  for (Trial& t : runner_.trials_) {
    if (t.status != TrialStatus::kError) continue;
    if (mode == RerunMode::kRestart) {
      t.checkpoints.clear();
      t.newest_checkpoint_has_config = false;
      t.restore_checkpoint.reset();
      t.num_failures = 0;
      t.num_worker_losses = 0;
    }
    t.status = TrialStatus::kPending;
    t.error.clear();
    NoteFailure(t);
    runner_.observer_.OnTrialStatus(t);
    runner_.phases_.Queue(t.index);
    ++n;
  }
  if (n > 0 && runner_.IsFinished()) {
    runner_.status_ = ExperimentStatus::kRunning;
    runner_.end_reason_.clear();
  }
  return n;
}

}  // namespace tunebus
