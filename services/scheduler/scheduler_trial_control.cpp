// Scheduler control handlers that change one trial: pause, resume, add, set resources (Ray
// Tune's pause_trial / unpause_trial / add_trial), and the worker's CheckpointSaved.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proto/control.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/experiment.hpp"
#include "services/scheduler/trial_json.hpp"

namespace tunebus {

using nlohmann::json;

namespace {
json TrialReply(const TrialRunner& runner, const std::string& trial_id,
                const std::string& message) {
  const Trial* t = runner.FindTrial(trial_id);
  return {{"trial_id", trial_id},
          {"status", t ? TrialStatusName(t->status) : "UNKNOWN"},
          {"message", message}};
}
}  // namespace

void Scheduler::HandlePauseTrial(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::PauseTrialCommand>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  Experiment* e = Current();
  if (e == nullptr)
    return ReplyError(in, d.id(), d.type(), Status::NotFound("no trial " + msg->trial_id));
  auto r = e->runner->PauseTrial(msg->trial_id);
  if (!r.ok()) return ReplyError(in, d.id(), d.type(), r.status());
  ReplyJson(in, d.id(), TrialReply(*e->runner, msg->trial_id, *r));
}

void Scheduler::HandleResumeTrial(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeTrialCommand>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  Experiment* e = Current();
  if (e == nullptr)
    return ReplyError(in, d.id(), d.type(), Status::NotFound("no trial " + msg->trial_id));
  if (Status s = e->runner->UnpauseTrial(msg->trial_id); !s.ok())
    return ReplyError(in, d.id(), d.type(), s);
  e->runner->Step();
  ReplyJson(in, d.id(),
            TrialReply(*e->runner, msg->trial_id, "trial " + msg->trial_id + " resumed"));
}

void Scheduler::HandleAddTrial(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::AddTrialCommand>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  Experiment* e = Current();
  if (e == nullptr)
    return ReplyError(in, d.id(), d.type(), Status::FailedPrecondition("no experiment is running"));
  if (e->runner->IsFinished()) {
    return ReplyError(
        in, d.id(), d.type(),
        Status::FailedPrecondition(fmt::format("experiment {} is finished", e->spec.name)));
  }
  json config = json::parse(msg->config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) {
    return ReplyError(in, d.id(), d.type(),
                      Status::InvalidArgument("config_json is not valid JSON"));
  }
  auto added = e->runner->AddTrial(std::move(config));
  if (!added.ok()) return ReplyError(in, d.id(), d.type(), added.status());
  const std::string trial_id = (*added)->trial_id;
  e->runner->Step();
  ReplyJson(in, d.id(), TrialToJson(*e->runner->FindTrial(trial_id), e->experiment_dir));
}

void Scheduler::HandleSetTrialResources(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SetTrialResourcesCommand>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  Experiment* e = Current();
  const Trial* t = e ? e->runner->FindTrial(msg->trial_id) : nullptr;
  if (t == nullptr)
    return ReplyError(in, d.id(), d.type(), Status::NotFound("no trial " + msg->trial_id));
  std::map<std::string, double> amounts = t->resources.ToAmounts();
  for (const auto& [name, amount] : msg->resources) amounts[name] = amount;
  auto resources = Resources::FromAmounts(amounts);
  if (!resources.ok()) return ReplyError(in, d.id(), d.type(), resources.status());
  if (Status s = e->runner->SetTrialResources(msg->trial_id, *resources); !s.ok()) {
    return ReplyError(in, d.id(), d.type(), s);
  }
  e->runner->Step();
  ReplyJson(in, d.id(), TrialToJson(*e->runner->FindTrial(msg->trial_id), e->experiment_dir));
}

void Scheduler::HandleCheckpointSaved(const std::string& peer, const proto::Decoded& d) {
  auto msg = d.As<proto::CheckpointSaved>();
  if (!msg.ok()) {
    spdlog::warn("Dropping checkpoint_saved from {}: {}", peer, msg.status().ToString());
    return;
  }
  Experiment* e = Current();
  if (e == nullptr) return;
  Status s = e->runner->OnCheckpointSaved(msg->trial_id, msg->attempt, msg->checkpoint_id,
                                          msg->training_iteration, msg->size_bytes);
  if (s.ok()) return;
  if (e->runner->ReferencesCheckpoint(msg->checkpoint_id)) {
    spdlog::debug("Checkpoint {} from {} is already kept (adopted at the takeover)",
                  msg->checkpoint_id, peer);
    return;
  }
  // No trial will ever restore it: delete it rather than leak it in the store.
  spdlog::warn("Deleting checkpoint {} from {} because {}", msg->checkpoint_id, peer, s.message());
  e->executor->DeleteCheckpoint(msg->checkpoint_id);
}

}  // namespace tunebus
