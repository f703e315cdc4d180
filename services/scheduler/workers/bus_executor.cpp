#include "services/scheduler/workers/bus_executor.hpp"

#include <spdlog/spdlog.h>

#include "libs/tune/trial_runner.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "proto/worker.hpp"

namespace tunebus {

namespace {
constexpr int kStartTries = 50;  // x kStartRetry = how long a worker may take to connect
constexpr bus::Duration kStartRetry{200};
constexpr bus::Duration kRmRetry{1000};
}  // namespace

BusExecutor::BusExecutor(bus::EventLoop& loop, PlacementBatcher& placements,
                         bus::RequestClient& store, WorkerOutbox& workers,
                         journal::JournalWriter& journal, const ExperimentSpec& spec,
                         std::string experiment_dir, std::string journal_name)
    : loop_(loop),
      placements_(placements),
      store_(store),
      workers_(workers),
      journal_(journal),
      spec_(spec),
      experiment_dir_(std::move(experiment_dir)),
      journal_name_(std::move(journal_name)) {}

void BusExecutor::PlaceTrial(const Trial& trial, int64_t attempt) {
  ++placing_;
  for (auto it = reusable_.begin(); it != reusable_.end(); ++it) {
    if (it->resources != trial.resources) continue;
    handovers_.push_back(HandOver{trial.trial_id, attempt, std::move(*it)});
    reusable_.erase(it);
    return;
  }
  allocations_.push_back(proto::AllocateItem{
      trial.trial_id,
      attempt,
      {trial.resources.units_map().begin(), trial.resources.units_map().end()}});
  --budget_;
}

bool BusExecutor::TakeBackHandOver(const Trial& trial) {
  if (starting_ == nullptr || starting_->trial_id != trial.trial_id ||
      starting_->attempt != trial.attempt)
    return false;
  // The runner gave a hand-over straight back (stopped meanwhile): the resource-manager still
  // holds it for the former holder.
  reusable_.push_back(starting_->from);
  return true;
}

void BusExecutor::ReleaseReusable(const Trial& trial) {
  if (TakeBackHandOver(trial)) return;
  const bool gpus_known = trial.resources.units("gpu") == 0 || !trial.gpu_ids.empty();
  if (trial.worker_id.empty() || !gpus_known) return ReleaseResources(trial);
  reusable_.push_back(
      Reusable{trial.trial_id, trial.attempt, trial.worker_id, trial.gpu_ids, trial.resources});
}

void BusExecutor::Flush() {
  if (runner_ == nullptr) return;
  for (size_t i = 0; i < handovers_.size(); ++i) {
    const HandOver h = handovers_[i];  // a copy: starting it may append to reusable_
    --placing_;
    starting_ = &h;
    runner_->OnTrialPlaced(h.trial_id, h.attempt, h.from.worker_id, h.from.gpu_ids);
    starting_ = nullptr;
    const Trial* t = runner_->FindTrial(h.trial_id);
    if (t == nullptr || t->attempt != h.attempt || t->status != TrialStatus::kRunning)
      continue;  // given back
    proto::AllocateItem item{
        h.trial_id,
        h.attempt,
        {h.from.resources.units_map().begin(), h.from.resources.units_map().end()},
        h.from.holder_trial_id,
        h.from.holder_attempt,
        h.from.worker_id,
        h.from.gpu_ids};
    journal_.AfterDurable([this, item = std::move(item)]() mutable {
      rm_ops_.push_back(RmOp{false, std::move(item)});
    });
  }
  handovers_.clear();
  // What no trial took this round returns to the resource-manager once the records that freed
  // it are durable.
  for (Reusable& r : reusable_) {
    journal_.AfterDurable(
        [this, item = proto::AllocateItem{r.holder_trial_id, r.holder_attempt, {}}]() mutable {
          rm_ops_.push_back(RmOp{true, std::move(item)});
          // The resource-manager answers in order and releases leave before this round's
          // allocations: an allocation already sees the freed resources.
          Freed(1);
        });
  }
  reusable_.clear();
  SendRmOps();
  if (allocations_.empty()) return;
  std::vector<proto::AllocateItem> asked = std::exchange(allocations_, {});
  auto done = [this, asked,
               epoch = freed_epoch_](Result<std::vector<proto::Allocation>> allocations) {
    OnAllocations(asked, epoch, std::move(allocations));
  };
  placements_.Allocate(this, std::move(asked), std::move(done));
}

void BusExecutor::SendRmOps() {
  size_t first = 0;
  while (first < rm_ops_.size()) {
    const bool release = rm_ops_[first].release;
    size_t last = first;
    while (last < rm_ops_.size() && rm_ops_[last].release == release &&
           last - first < proto::kMaxPlacementBatchItems) {
      ++last;
    }
    if (release) {
      std::vector<proto::ReleaseItem> items;
      for (size_t i = first; i < last; ++i)
        items.push_back({rm_ops_[i].item.trial_id, rm_ops_[i].item.attempt});
      placements_.Release(this, std::move(items), [](const Status& s) {
        if (!s.ok()) spdlog::warn("Release batch failed: {}", s.ToString());
      });
    } else {
      std::vector<proto::AllocateItem> items;
      for (size_t i = first; i < last; ++i) items.push_back(std::move(rm_ops_[i].item));
      const size_t n = items.size();
      placements_.Allocate(this, std::move(items), [n](Result<std::vector<proto::Allocation>> r) {
        if (!r.ok()) {
          spdlog::warn("Hand-over of {} allocation(s) failed: {}", n, r.status().ToString());
          return;
        }
        for (const proto::Allocation& a : *r) {
          // The trial runs there already; a resource-manager that lost its state re-learns it
          // when the worker registers again.
          if (!a.granted)
            spdlog::warn("Resource-manager refused the hand-over to {}/{}: {}", a.trial_id,
                         a.attempt, a.reason);
        }
      });
    }
    first = last;
  }
  rm_ops_.clear();
}

void BusExecutor::OnAllocations(const std::vector<proto::AllocateItem>& asked, uint64_t epoch,
                                Result<std::vector<proto::Allocation>> r) {
  placing_ -= int(asked.size());
  if (runner_ == nullptr) return;
  if (!r.ok()) {
    spdlog::warn("Placement of {} trial(s) failed: {}; retrying in {} ms", asked.size(),
                 r.status().ToString(), kRmRetry.count());
    budget_ = 0;
    loop_.AddTimer(kRmRetry, [this] { Unblock(); });
    for (const proto::AllocateItem& item : asked)
      runner_->OnPlacementDeferred(item.trial_id, item.attempt);
    return;
  }
  for (const proto::Allocation& a : *r) {
    if (a.granted) {
      AddBudget(1);  // there may be room for more
      runner_->OnTrialPlaced(a.trial_id, a.attempt, a.worker_id, a.gpu_ids);
    } else if (a.infeasible) {
      AddBudget(1);
      runner_->OnPlacementFailed(a.trial_id, a.attempt, a.reason);
    } else {
      spdlog::debug("No room for {} now: {}", a.trial_id, a.reason);
      // Until something is freed, unless something was since this batch left (the
      // resource-manager decided before it saw that).
      if (epoch == freed_epoch_) budget_ = 0;
      runner_->OnPlacementDeferred(a.trial_id, a.attempt);
    }
  }
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
  msg.working_dir_digest = spec_.trainable.working_dir_digest;
  for (const auto& [k, v] : spec_.trainable.env.items()) {
    msg.trainable.env[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  msg.trial_dir = experiment_dir_ + "/" + trial.DirName();
  msg.gpu_ids = trial.gpu_ids;
  msg.start_iteration = trial.training_iteration;
  msg.start_time_total_s = trial.time_total_s;
  msg.report_timeout_s = spec_.report_timeout_s;
  msg.restore_checkpoint_id = trial.restored_checkpoint_id;
  msg.checkpoint_prefix = journal_name_ + "/" + trial.trial_id + "/";
  for (const auto& [key, units] : trial.resources.units_map()) msg.resources[key] = units;
  unsent_starts_[trial.trial_id] = trial.attempt;
  journal_.AfterDurable([this, worker = trial.worker_id, payload = proto::Encode(msg),
                         trial_id = trial.trial_id, attempt = trial.attempt]() mutable {
    SendStart(worker, std::move(payload), trial_id, attempt, kStartTries);
  });
}

bool BusExecutor::StartUnsent(const std::string& trial_id, int64_t attempt) const {
  auto it = unsent_starts_.find(trial_id);
  return it != unsent_starts_.end() && it->second == attempt;
}

void BusExecutor::SendStart(const std::string& worker_id, std::string payload,
                            const std::string& trial_id, int64_t attempt, int tries_left) {
  const Trial* now = runner_ != nullptr ? runner_->FindTrial(trial_id) : nullptr;
  if (!StartUnsent(trial_id, attempt) || now == nullptr || now->attempt != attempt ||
      now->status != TrialStatus::kRunning) {
    return;  // the attempt ended (stopped, requeued) before its start went out
  }
  if (is_registered_ && !is_registered_(worker_id)) {
    return RetryStart(worker_id, std::move(payload), trial_id, attempt, tries_left);
  }
  // Sent with the round's other messages to that worker; the attempt's start stays unsent until
  // it has left (a RegisterWorker handled meanwhile does not count it lost).
  workers_.Queue(worker_id, std::move(payload),
                 [this, worker_id, trial_id, attempt, tries_left](bool sent, std::string payload) {
                   if (!sent)
                     return RetryStart(worker_id, std::move(payload), trial_id, attempt,
                                       tries_left);
                   if (StartUnsent(trial_id, attempt)) unsent_starts_.erase(trial_id);
                 });
}

void BusExecutor::RetryStart(const std::string& worker_id, std::string payload,
                             const std::string& trial_id, int64_t attempt, int tries_left) {
  if (tries_left <= 0) {
    unsent_starts_.erase(trial_id);
    const Trial* now = runner_ != nullptr ? runner_->FindTrial(trial_id) : nullptr;
    if (on_unreachable_ && now != nullptr && now->attempt == attempt) on_unreachable_(*now);
    return;
  }
  loop_.AddTimer(kStartRetry, [this, worker_id, payload = std::move(payload), trial_id, attempt,
                               tries_left]() mutable {
    SendStart(worker_id, std::move(payload), trial_id, attempt, tries_left - 1);
  });
}

void BusExecutor::SendDecision(const Trial& trial, int64_t seq, Action action) {
  journal_.AfterDurable([this, worker = trial.worker_id,
                         decision = proto::DecisionItem{trial.trial_id, trial.attempt, seq,
                                                        ActionName(action)}]() mutable {
    workers_.QueueDecision(worker, std::move(decision));
  });
}

void BusExecutor::StopTrial(const Trial& trial) {
  proto::StopTrialRequest msg;
  msg.trial_id = trial.trial_id;
  msg.attempt = trial.attempt;
  journal_.AfterDurable([this, worker = trial.worker_id, payload = proto::Encode(msg)]() mutable {
    workers_.Queue(worker, std::move(payload), [worker](bool sent, std::string) {
      if (!sent) spdlog::warn("Dropping stop for worker {}: not connected", worker);
    });
  });
}

void BusExecutor::ReleaseResources(const Trial& trial) {
  if (TakeBackHandOver(trial)) return;
  journal_.AfterDurable(
      [this, item = proto::AllocateItem{trial.trial_id, trial.attempt, {}}]() mutable {
        rm_ops_.push_back(RmOp{true, std::move(item)});
        Freed(1);
      });
}

void BusExecutor::DeleteCheckpoint(const std::string& checkpoint_id) {
  proto::CheckpointDelete req;
  req.checkpoint_id = checkpoint_id;
  journal_.AfterDurable([this, req]() mutable {
    store_.Request(req, [id = req.checkpoint_id](Result<proto::Decoded> reply) {
      if (!reply.ok())
        spdlog::warn("Deleting checkpoint {} failed: {}", id, reply.status().ToString());
    });
  });
}

}  // namespace tunebus
