#include "libs/tune/trial_control.hpp"

#include <fmt/format.h>

#include "libs/tune/trial_runner.hpp"

namespace tunebus {

Result<std::string> TrialControl::StopTrial(const std::string& trial_id) {
  const Trial* t = runner_.FindTrial(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (IsFinished(t->status)) {
    return fmt::format("trial {} is already {}; nothing to do", trial_id,
                       TrialStatusName(t->status));
  }
  const TrialStatus was = t->status;
  if (Status stopped = runner_.StopTrial(trial_id, /*by_user=*/true); !stopped.ok()) return stopped;
  return fmt::format("trial {} stopped (was {})", trial_id, TrialStatusName(was));
}

Result<std::string> TrialControl::PauseTrial(const std::string& trial_id) {
  return runner_.PauseTrial(trial_id);
}

Status TrialControl::UnpauseTrial(const std::string& trial_id) {
  return runner_.UnpauseTrial(trial_id);
}

Result<const Trial*> TrialControl::AddTrial(nlohmann::json config) {
  return runner_.AddTrial(std::move(config));
}

Status TrialControl::SetTrialResources(const std::string& trial_id, const Resources& resources) {
  return runner_.SetTrialResources(trial_id, resources);
}

void TrialControl::StopExperiment(const std::string& reason) { runner_.StopExperiment(reason); }

void TrialControl::InterruptExperiment(const std::string& reason) {
  runner_.InterruptExperiment(reason);
}

bool TrialControl::Reopen() { return runner_.Reopen(); }

Result<int64_t> TrialControl::RerunErrored(RerunMode mode) { return runner_.RerunErrored(mode); }

}  // namespace tunebus
