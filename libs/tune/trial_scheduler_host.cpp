#include "libs/tune/trial_scheduler_host.hpp"

#include <fmt/format.h>

#include "libs/tune/trial_control.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {

TrialSchedulerHost::TrialSchedulerHost(std::unique_ptr<TrialScheduler> scheduler,
                                       TrialRunner& runner, RunnerObserver& observer,
                                       const Clock& clock)
    : scheduler_(std::move(scheduler)), runner_(runner), observer_(observer), clock_(clock) {
  scheduler_->Attach(this);
}

void TrialSchedulerHost::Journal() {
  nlohmann::json delta = scheduler_->TakeStateDelta();
  if (!delta.is_null()) observer_.OnTrialSchedulerState(delta);
}

Status TrialSchedulerHost::Restore(const nlohmann::json& state,
                                   const std::vector<nlohmann::json>& deltas) {
  if (Status s = scheduler_->RestoreState(state); !s.ok()) return s;
  for (const nlohmann::json& delta : deltas) {
    if (Status s = scheduler_->ApplyStateDelta(delta); !s.ok()) return s;
  }
  return Status::Ok();
}

void TrialSchedulerHost::NoteDecision(const Trial& t, const char* kind, nlohmann::json detail) {
  nlohmann::json said = scheduler_->TakeDecisionDetail();
  SchedulerDecision d;
  d.kind = kind;
  d.trial_id = t.trial_id;
  d.scheduler = scheduler_->name();
  d.training_iteration = t.training_iteration;
  d.time_total_s = t.time_total_s;
  d.at_s = clock_.WallSeconds();
  d.detail = detail.is_null() ? std::move(said) : std::move(detail);
  decisions_.Add(std::move(d));
}

Decision TrialSchedulerHost::Decide(const Trial& t, const TrainingResult& result,
                                    const DriverAnswer* answer) {
  Decision decision = Decision::kStop;
  deciding_ = t.index;
  if (answer == nullptr || !answer->stop_trial) {
    // Ray's _process_trial_result: a stopper's STOP is final, the trial scheduler is not asked.
    deciding_answer_ = answer;
    decision = scheduler_->OnTrialResult(t, result);
    deciding_answer_ = nullptr;
    if (decision != Decision::kContinue) NoteDecision(t, DecisionName(decision));
  }
  deciding_ = -1;
  Journal();
  return decision;
}

TrialSchedulerHost::Asked TrialSchedulerHost::TakeAsked() { return std::exchange(asked_, Asked{}); }

const std::vector<Trial>& TrialSchedulerHost::trials() const { return runner_.trials(); }

const Trial* TrialSchedulerHost::FindTrial(const std::string& trial_id) const {
  return runner_.FindTrial(trial_id);
}

bool TrialSchedulerHost::IsPaused(const std::string& trial_id) const {
  const Trial* t = runner_.FindTrial(trial_id);
  return t != nullptr &&
         (t->status == TrialStatus::kPaused || runner_.phases().IsPausing(t->index));
}

Status TrialSchedulerHost::UnpauseTrial(const std::string& trial_id) {
  return TrialControl(runner_).UnpauseTrial(trial_id);
}

Status TrialSchedulerHost::StopTrial(const std::string& trial_id) {
  const Trial* t = runner_.FindTrial(trial_id);
  if (t == nullptr) return Status::NotFound(fmt::format("no trial {}", trial_id));
  if (IsFinished(t->status)) return Status::Ok();
  if (t->index == deciding_) {
    return Status::FailedPrecondition("a trial scheduler stops the trial it decides on with kStop");
  }
  NoteDecision(*t, "stop");
  return TrialControl(runner_).StopTrial(trial_id).status();
}

Status TrialSchedulerHost::ExploitTrial(const std::string& trial_id,
                                        const std::string& donor_trial_id,
                                        nlohmann::json new_config) {
  return TrialControl(runner_).ExploitTrial(trial_id, donor_trial_id, std::move(new_config));
}

void TrialSchedulerHost::RequestCheckpoint(const std::string& trial_id) {
  const Trial* t = runner_.FindTrial(trial_id);
  if (t != nullptr && t->index == deciding_) asked_.checkpoint = true;
}

void TrialSchedulerHost::SetResultInfo(const std::string& trial_id, const std::string& key,
                                       nlohmann::json value) {
  const Trial* t = runner_.FindTrial(trial_id);
  if (t != nullptr && t->index == deciding_) asked_.result_info.emplace_back(key, std::move(value));
}

const nlohmann::json* TrialSchedulerHost::DriverSamples(const std::string& trial_id) const {
  const Trial* t = runner_.FindTrial(trial_id);
  if (t == nullptr || t->index != deciding_ || deciding_answer_ == nullptr) return nullptr;
  return &deciding_answer_->samples;
}

}  // namespace tunebus
