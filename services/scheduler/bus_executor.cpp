#include "services/scheduler/bus_executor.hpp"

#include <spdlog/spdlog.h>

#include "libs/tune/trial_runner.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "proto/worker.hpp"

namespace tunebus {

namespace {
constexpr int kStartTries = 50;                  // x kStartRetry = how long a worker may take to connect
constexpr bus::Duration kStartRetry{200};
constexpr bus::Duration kRmRetry{1000};
}  // namespace

BusExecutor::BusExecutor(bus::EventLoop& loop, bus::RequestClient& rm, bus::RequestClient& store,
                         WorkerOutbox& workers, journal::JournalWriter& journal, const ExperimentSpec& spec,
                         std::string experiment_dir, std::string journal_name)
    : loop_(loop),
      rm_(rm),
      store_(store),
      workers_(workers),
      journal_(journal),
      spec_(spec),
      experiment_dir_(std::move(experiment_dir)),
      journal_name_(std::move(journal_name)) {}

void BusExecutor::PlaceTrial(const Trial& trial, int64_t attempt) {
  proto::Allocate req;
  req.trial_id = trial.trial_id;
  req.attempt = attempt;
  req.request = {trial.resources.units_map().begin(), trial.resources.units_map().end()};
  ++placing_;
  const std::string trial_id = trial.trial_id;
  rm_.Request(req, [this, trial_id, attempt](Result<proto::Decoded> reply) {
    --placing_;
    if (runner_ == nullptr) return;
    Result<proto::AllocateReply> r = reply.ok() ? reply->As<proto::AllocateReply>() : Result<proto::AllocateReply>(reply.status());
    if (!r.ok()) {
      spdlog::warn("Placement of {} failed: {}; retrying in {} ms", trial_id, r.status().ToString(), kRmRetry.count());
      blocked_ = true;
      loop_.AddTimer(kRmRetry, [this] { blocked_ = false; });
      runner_->OnPlacementDeferred(trial_id, attempt);
      return;
    }
    if (r->granted) {
      runner_->OnTrialPlaced(trial_id, attempt, r->worker_id, r->gpu_ids);
    } else if (r->infeasible) {
      runner_->OnPlacementFailed(trial_id, attempt, r->reason);
    } else {
      spdlog::debug("No room for {} now: {}", trial_id, r->reason);
      blocked_ = true;
      runner_->OnPlacementDeferred(trial_id, attempt);
    }
  });
}

void BusExecutor::LaunchTrial(const Trial& trial) {
  proto::StartTrial msg;
  msg.experiment = spec_.name;
  msg.trial_id = trial.trial_id;
  msg.attempt = trial.attempt;
  msg.config_json = trial.config.dump();
  msg.trainable.command = spec_.trainable.command;
  msg.trainable.builtin = spec_.trainable.builtin;
  msg.trainable.working_dir = spec_.trainable.working_dir;
  for (const auto& [k, v] : spec_.trainable.env.items()) {
    msg.trainable.env[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  msg.trial_dir = experiment_dir_ + "/" + trial.DirName();
  msg.gpu_ids = trial.gpu_ids;
  msg.start_iteration = trial.training_iteration;
  msg.restore_checkpoint_id = trial.restored_checkpoint_id;
  msg.checkpoint_prefix = journal_name_ + "/" + trial.trial_id + "/";
  for (const auto& [key, units] : trial.resources.units_map()) msg.resources[key] = units;
  unsent_starts_[trial.trial_id] = trial.attempt;
  journal_.AfterDurable([this, worker = trial.worker_id, payload = proto::Encode(msg), trial]() mutable {
    SendStart(worker, std::move(payload), trial, kStartTries);
  });
}

bool BusExecutor::StartUnsent(const std::string& trial_id, int64_t attempt) const {
  auto it = unsent_starts_.find(trial_id);
  return it != unsent_starts_.end() && it->second == attempt;
}

void BusExecutor::SendStart(const std::string& worker_id, std::string payload, const Trial& trial, int tries_left) {
  const Trial* now = runner_ != nullptr ? runner_->FindTrial(trial.trial_id) : nullptr;
  if (!StartUnsent(trial.trial_id, trial.attempt) || now == nullptr || now->attempt != trial.attempt ||
      now->status != TrialStatus::kRunning) {
    return;  // the attempt ended (stopped, requeued) before its start went out
  }
  const bool registered = !is_registered_ || is_registered_(worker_id);
  if (registered && workers_.Send(worker_id, payload)) {
    unsent_starts_.erase(trial.trial_id);
    return;
  }
  if (tries_left <= 0) {
    unsent_starts_.erase(trial.trial_id);
    if (on_unreachable_) on_unreachable_(trial);
    return;
  }
  loop_.AddTimer(kStartRetry, [this, worker_id, payload = std::move(payload), trial, tries_left]() mutable {
    SendStart(worker_id, std::move(payload), trial, tries_left - 1);
  });
}

void BusExecutor::SendDecision(const Trial& trial, int64_t seq, const char* action) {
  journal_.AfterDurable([this, worker = trial.worker_id,
                         decision = proto::DecisionItem{trial.trial_id, trial.attempt, seq, action}]() mutable {
    workers_.QueueDecision(worker, std::move(decision));
  });
}

void BusExecutor::StopTrial(const Trial& trial) {
  proto::StopTrialRequest msg;
  msg.trial_id = trial.trial_id;
  msg.attempt = trial.attempt;
  journal_.AfterDurable([this, worker = trial.worker_id, payload = proto::Encode(msg)] {
    if (!workers_.Send(worker, payload)) spdlog::warn("Dropping stop for worker {}: not connected", worker);
  });
}

void BusExecutor::ReleaseResources(const Trial& trial) {
  proto::Release req;
  req.trial_id = trial.trial_id;
  req.attempt = trial.attempt;
  journal_.AfterDurable([this, req] {
    rm_.Request(req, [this, trial_id = req.trial_id](Result<proto::Decoded> reply) {
      if (!reply.ok()) spdlog::warn("Release of {} failed: {}", trial_id, reply.status().ToString());
      blocked_ = false;
    });
    // The resource-manager answers requests in order: an Allocate sent after this Release
    // already sees the freed resources, so placement need not wait for the reply.
    blocked_ = false;
  });
}

void BusExecutor::DeleteCheckpoint(const std::string& checkpoint_id) {
  proto::CheckpointDelete req;
  req.checkpoint_id = checkpoint_id;
  journal_.AfterDurable([this, req] {
    store_.Request(req, [id = req.checkpoint_id](Result<proto::Decoded> reply) {
      if (!reply.ok()) spdlog::warn("Deleting checkpoint {} failed: {}", id, reply.status().ToString());
    });
  });
}

}  // namespace tunebus
