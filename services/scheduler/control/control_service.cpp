// ControlService's socket, its dispatch table and the replies every handler answers with.
#include "services/scheduler/control/control_service.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "libs/bus/socket.hpp"
#include "libs/journal/records.hpp"
#include "proto/dashboard.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/dashboard/tokens.hpp"

namespace tunebus {

using nlohmann::json;

Result<std::unique_ptr<ControlService>> ControlService::Create(zmq::socket_t socket,
                                                               Options options, Parts parts) {
  std::unique_ptr<ControlService> service(
      new ControlService(std::move(socket), std::move(options), parts));
  if (Status s = service->LoadDashboardTokens(); !s.ok()) return s;
  return service;
}

ControlService::ControlService(zmq::socket_t socket, Options options, Parts parts)
    : socket_(std::move(socket)),
      options_(std::move(options)),
      parts_(parts),
      experiments_(parts.experiments),
      dispatcher_(service::MessageDispatcher::Options{.reply_socket = &socket_,
                                                      .peer_name = "tunectl",
                                                      .refusal_level = spdlog::level::info,
                                                      .security = options_.security,
                                                      .roles = bus::kViewers}) {
  AddHandlers();
}

ControlService::~ControlService() = default;

void ControlService::Start(bus::EventLoop& loop) {
  loop.AddSocket(socket_, [this] { OnReadable(); });
}

void ControlService::OnReadable() {
  bus::Incoming in;
  while (bus::Receive(socket_, in)) dispatcher_.Dispatch(in);
}

void ControlService::AddHandlers() {
  // A request that changes state is refused (unavailable, naming the cause) while the store
  // refuses writes, or (Target) while its experiment's journal cannot take its record; reads
  // are always answered (ReplyRead). HandleSubmit checks itself: following the running
  // experiment is a read.
  const auto mutating = [this](Handler handler) {
    return [this, handler](bus::Incoming& in, const proto::Decoded& d) {
      if (Status s = JournalWritable(nullptr); !s.ok()) return s;
      return (this->*handler)(in, d);
    };
  };
  // Reads are the viewers' (the dispatcher's default roles, bus::kViewers); everything that
  // submits, uploads or changes state needs an operator key (docs/security.md).
  const bus::RoleSet ops = bus::kOperators;
  using C = ControlService;
  dispatcher_.On(proto::SubmitExperiment::kType, ops, this, &C::HandleSubmit)
      .On(proto::ListTrials::kType, this, &C::HandleListTrials)
      .On(proto::ShowTrial::kType, this, &C::HandleShowTrial)
      .On(proto::GetExperiment::kType, this, &C::HandleGetExperiment)
      .On(proto::ListSchedulerDecisions::kType, this, &C::HandleListSchedulerDecisions)
      .On(proto::ListWorkers::kType, this, &C::HandleListWorkers)
      .On(proto::ListExperiments::kType, this, &C::HandleListExperiments)
      .On(proto::FetchCheckpoint::kType, this, &C::HandleFetchCheckpoint)
      .On(proto::WorkingDirStat::kType, ops, this, &C::HandleWorkingDirStat)
      .On(proto::WorkingDirPut::kType, ops, this, &C::HandleWorkingDirPut)
      .On(proto::StopTrialCommand::kType, ops, mutating(&C::HandleStopTrial))
      .On(proto::StopExperiment::kType, ops, mutating(&C::HandleStopExperiment))
      .On(proto::ResumeExperimentCommand::kType, ops, mutating(&C::HandleResumeExperiment))
      .On(proto::PauseTrialCommand::kType, ops, mutating(&C::HandlePauseTrial))
      .On(proto::ResumeTrialCommand::kType, ops, mutating(&C::HandleResumeTrial))
      .On(proto::AddTrialCommand::kType, ops, mutating(&C::HandleAddTrial))
      .On(proto::SetTrialResourcesCommand::kType, ops, mutating(&C::HandleSetTrialResources))
      .On(proto::SetExperimentWeight::kType, ops, mutating(&C::HandleSetExperimentWeight))
      .On(proto::DeleteExperiment::kType, ops, mutating(&C::HandleDeleteExperiment))
      // The dashboard (a viewer) checks tokens; its actions carry an operator's token.
      .On(proto::IssueDashboardToken::kType, ops, this, &C::HandleIssueDashboardToken)
      .On(proto::VerifyDashboardToken::kType, this, &C::HandleVerifyDashboardToken)
      .On(proto::DashboardAction::kType, this, &C::HandleDashboardAction);
}

bus::Incoming ControlService::ReplyTo(const std::vector<std::string>& route) {
  bus::Incoming to;
  to.route = route;
  return to;
}

void ControlService::ReplyJson(Experiment* e, const bus::Incoming& in, uint64_t id,
                               const json& body) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = body.dump();
  auto send = [this, in_route = in.route, payload = proto::Encode(reply)] {
    bus::Incoming route;
    route.route = in_route;
    bus::Reply(socket_, route, payload);
  };
  // A request's records are durable once every record its experiment appended so far is.
  if (e != nullptr && !e->read_only()) {
    e->journal().AfterDurable(std::move(send));
  } else {
    send();
  }
}

void ControlService::ReplyRead(const bus::Incoming& in, uint64_t id, const json& body) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = body.dump();
  bus::Reply(socket_, in, proto::Encode(reply));
}

void ControlService::ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                                const Status& status) {
  dispatcher_.Refuse(in, id, type, status);
}

void ControlService::AnswerRead(const bus::Incoming& in, const proto::Decoded& d,
                                const std::string& experiment,
                                std::function<Result<json>(Result<Experiment*>)> answer) {
  experiments_.FindExperiment(experiment, [this, route = in.route, id = d.id(), type = d.type(),
                                           answer = std::move(answer)](Result<Experiment*> e) {
    Result<json> body = answer(std::move(e));
    if (!body.ok()) return ReplyError(ReplyTo(route), id, type, body.status());
    ReplyRead(ReplyTo(route), id, *body);
  });
}

json ControlService::JournalHealthJson(const Experiment& e) {
  const journal::JournalWriter& w = e.journal();
  const bool failing = w.state() == journal::JournalWriter::State::kFailing;
  json health = {{"state", failing ? "failing" : "ok"},
                 {"not_durable_records", w.appended() - w.durable()}};
  if (failing) {
    health["since_unix_s"] = w.failing_since_wall_s();
    health["error"] = w.last_error().ToString();
    health["failed_tries"] = w.failed_tries();
  }
  return health;
}

void ControlService::MarkNotDurable(const Experiment& e, const Trial& t, json& view) {
  if (!e.read_only() && !e.recorder().IsDurable(t)) view["durable"] = false;
}

Status ControlService::JournalWritable(const Experiment* e) const {
  if (e != nullptr && !e->read_only() &&
      e->journal().state() == journal::JournalWriter::State::kFailing) {
    return Status::Unavailable(fmt::format(
        "journal writes of experiment {} are failing since {}: {}; nothing acknowledged is "
        "lost; try again once the checkpoint-store takes writes",
        e->name(), FormatTimeOfDayUtc(e->journal().failing_since_wall_s()),
        e->journal().last_error().ToString()));
  }
  if (parts_.store_health.state() == StoreHealth::State::kDegraded) {
    const json h = parts_.store_health.ToJson();
    return Status::Unavailable(fmt::format(
        "the checkpoint-store refuses writes (degraded since {}: {}); try again once it recovers",
        FormatTimeOfDayUtc(h["since_unix_s"].get<double>()), h["reason"].get<std::string>()));
  }
  return Status::Ok();
}

Result<Experiment*> ControlService::Target(const std::string& experiment,
                                           const std::string& trial_id) {
  auto e = experiments_.Target(experiment, trial_id);
  if (!e.ok()) return e;
  if (Status s = JournalWritable(*e); !s.ok()) return s;
  return e;
}

}  // namespace tunebus
