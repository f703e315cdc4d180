#include "bench/quality/sim_executor.hpp"

#include <fmt/format.h>

namespace tunebus::bench {

SimModel SimModel::Curves(const CurveFamily& curves) {
  return {
      [curves](double s, const nlohmann::json& config) { return curves.Step(s, config); },
      [](uint64_t seed, int64_t index, int64_t iteration) { return Noise(seed, index, iteration); },
      [](uint64_t, int64_t, const nlohmann::json& config) { return IterationSeconds(config); }};
}

SimExecutor::SimExecutor(SimModel model, uint64_t seed, std::string metric, int64_t max_t)
    : model_(std::move(model)), seed_(seed), metric_(std::move(metric)), max_t_(max_t) {}

void SimExecutor::At(double time, std::function<void()> fire) {
  queue_.push(Event{time, order_++, std::move(fire)});
}

SimExecutor::Attempt* SimExecutor::Live(const std::string& trial_id, int64_t attempt) {
  auto it = attempts_.find(trial_id);
  if (it == attempts_.end() || !it->second.live || it->second.attempt != attempt) return nullptr;
  return &it->second;
}

void SimExecutor::PlaceTrial(const Trial& trial, int64_t attempt) {
  At(now_,
     [this, id = trial.trial_id, attempt] { runner_->OnTrialPlaced(id, attempt, "sim", {}); });
}

void SimExecutor::LaunchTrial(const Trial& trial) {
  Attempt a;
  a.attempt = trial.attempt;
  a.index = trial.index;
  a.config = trial.config;
  a.iteration = trial.training_iteration;  // the restored checkpoint's, or 0
  a.live = true;
  if (!trial.restored_checkpoint_id.empty()) {
    auto it = checkpoints_.find(trial.restored_checkpoint_id);
    if (it == checkpoints_.end()) {
      errors_.push_back(fmt::format("{}: restore of unknown checkpoint {}", trial.trial_id,
                                    trial.restored_checkpoint_id));
    } else {
      a.s = it->second.s;
      a.iteration = it->second.iteration;
      ++figures_.restores;
    }
  }
  attempts_[trial.trial_id] = std::move(a);
  NextResult(trial.trial_id, trial.attempt);
}

void SimExecutor::NextResult(const std::string& trial_id, int64_t attempt) {
  const Attempt* a = Live(trial_id, attempt);
  if (a == nullptr) return;
  At(now_ + model_.seconds(seed_, a->index, a->config),
     [this, trial_id, attempt] { Report(trial_id, attempt); });
}

void SimExecutor::Report(const std::string& trial_id, int64_t attempt) {
  Attempt* a = Live(trial_id, attempt);
  if (a == nullptr) return;  // stopped meanwhile
  a->s = model_.step(a->s, a->config);
  a->iteration += 1;
  a->seq += 1;
  ++figures_.iterations;
  const double value = a->s + model_.noise(seed_, a->index, a->iteration);
  figures_.reports.push_back({a->index, a->iteration, value, a->s});
  if (a->iteration == max_t_) {
    if (figures_.reached_max_t == 0 || value > figures_.best_final) {
      figures_.best_final = value;
      figures_.best_final_true = a->s;
    }
    ++figures_.reached_max_t;
  }
  if (value > best_last_) {
    best_last_ = value;
    best_last_true_ = a->s;
  }
  const double dt = model_.seconds(seed_, a->index, a->config);
  Status s = runner_->OnResult(trial_id, attempt, a->seq,
                               TrainingResult::FromJson({{metric_, value}}), dt);
  if (!s.ok()) errors_.push_back(fmt::format("{}: result rejected: {}", trial_id, s.ToString()));
}

void SimExecutor::SendDecision(const Trial& trial, int64_t seq, Action action) {
  At(now_, [this, id = trial.trial_id, attempt = trial.attempt, seq, action] {
    Act(id, attempt, seq, action);
  });
}

void SimExecutor::SaveCheckpoint(const std::string& trial_id, Attempt& a) {
  const std::string id = fmt::format("ck{:06d}", ++figures_.checkpoints);
  checkpoints_[id] = Stored{a.iteration, a.s};
  Status s = runner_->OnCheckpointSaved(trial_id, a.attempt, id, a.iteration, 64);
  if (!s.ok()) errors_.push_back(fmt::format("{}: checkpoint refused: {}", trial_id, s.ToString()));
}

void SimExecutor::Act(const std::string& trial_id, int64_t attempt, int64_t seq, Action action) {
  Attempt* a = Live(trial_id, attempt);
  if (a == nullptr || a->seq != seq) return;
  if (action == Action::kContinue) return NextResult(trial_id, attempt);
  if (SavesCheckpoint(action)) SaveCheckpoint(trial_id, *a);
  if (action == Action::kCheckpoint) return NextResult(trial_id, attempt);
  a->live = false;  // pause, checkpoint_and_stop, stop: the trainable exits
  runner_->OnTrialExited(trial_id, attempt, true, "");
}

void SimExecutor::StopTrial(const Trial& trial) {
  if (Attempt* a = Live(trial.trial_id, trial.attempt)) a->live = false;
}

void SimExecutor::OnTrialUpdated(const Trial& trial, const nlohmann::json& change) {
  (void)trial;
  if (change.contains("pbt_exploit")) ++figures_.exploits;
}

Result<SimFigures> SimExecutor::Run() {
  runner_->Step();
  while (!runner_->IsFinished() && errors_.empty()) {
    if (queue_.empty()) {
      return Status::Internal(fmt::format("the runner stalled at t = {} s with {} trials", now_,
                                          runner_->trials().size()));
    }
    Event e = queue_.top();
    queue_.pop();
    now_ = e.time;
    e.fire();
    runner_->Step();
  }
  if (!errors_.empty()) return Status::Internal(errors_.front());
  figures_.trials = int64_t(runner_->trials().size());
  figures_.sim_time_s = now_;
  figures_.status = ExperimentStatusName(runner_->status());
  figures_.best_reported = best_last_;
  if (figures_.reached_max_t == 0) {
    figures_.best_final = best_last_;
    figures_.best_final_true = best_last_true_;
  }
  return figures_;
}

}  // namespace tunebus::bench
