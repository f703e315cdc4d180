// ControlService: its socket, its dispatch table and the handler groups it routes to.
#include "services/scheduler/control/control_service.hpp"

#include <spdlog/spdlog.h>

#include <utility>

#include "libs/bus/socket.hpp"
#include "proto/control.hpp"
#include "proto/dashboard.hpp"
#include "services/scheduler/control/handlers/analysis_handlers.hpp"
#include "services/scheduler/control/handlers/dashboard_handlers.hpp"
#include "services/scheduler/control/handlers/experiment_handlers.hpp"
#include "services/scheduler/control/handlers/trial_handlers.hpp"
#include "services/scheduler/control/handlers/whatif_handlers.hpp"
#include "services/scheduler/control/handlers/working_dir_handlers.hpp"
#include "services/scheduler/control/retention_sweeper.hpp"

namespace tunebus {

Result<std::unique_ptr<ControlService>> ControlService::Create(zmq::socket_t socket,
                                                               Options options, Parts parts) {
  std::unique_ptr<ControlService> service(
      new ControlService(std::move(socket), std::move(options), parts));
  if (Status s = service->dashboard_->LoadTokens(); !s.ok()) return s;
  return service;
}

ControlService::ControlService(zmq::socket_t socket, Options options, Parts parts)
    : socket_(std::move(socket)),
      options_(std::move(options)),
      parts_(parts),
      dispatcher_(service::MessageDispatcher::Options{.reply_socket = &socket_,
                                                      .peer_name = "tunectl",
                                                      .refusal_level = spdlog::level::info,
                                                      .security = options_.security,
                                                      .roles = bus::kViewers}),
      context_(socket_, dispatcher_, options_, parts_),
      trials_(std::make_unique<TrialHandlers>(context_)),
      experiments_(std::make_unique<ExperimentHandlers>(context_)),
      analysis_(std::make_unique<AnalysisHandlers>(context_)),
      working_dir_(std::make_unique<WorkingDirHandlers>(context_)),
      whatif_(std::make_unique<WhatIfHandlers>(context_)),
      dashboard_(std::make_unique<DashboardHandlers>(context_, *trials_, *experiments_)),
      retention_(std::make_unique<RetentionSweeper>(
          options_.retention, parts_.experiments, parts_.clock,
          [this](const std::string& journal, bool keep_results, std::function<void(Status)> done) {
            Status s = experiments_->Delete(
                journal, keep_results,
                [done](Result<nlohmann::json> deleted) { done(deleted.status()); });
            if (!s.ok()) done(s);
          })) {
  experiments_->set_retention(retention_.get());
  AddHandlers();
}

ControlService::~ControlService() = default;

void ControlService::Start(bus::EventLoop& loop) {
  loop.AddSocket(socket_, [this] { OnReadable(); });
  retention_->Start(loop);
}

void ControlService::OnReadable() {
  bus::Incoming in;
  while (bus::Receive(socket_, in)) dispatcher_.Dispatch(in);
}

void ControlService::set_http_url(std::string url) { dashboard_->set_http_url(std::move(url)); }

void ControlService::AddHandlers() {
  // A request that changes state is refused (unavailable, naming the cause) while the store
  // refuses writes, or (Target) while its experiment's journal cannot take its record; reads
  // are always answered (ReplyRead). HandleSubmit checks itself: following the running
  // experiment is a read.
  const auto mutating = [this](auto& group, auto handler) -> service::MessageHandler {
    return [this, &group, handler](bus::Incoming& in, const proto::Decoded& d) {
      if (Status s = context_.JournalWritable(nullptr); !s.ok()) return s;
      return (group.*handler)(in, d);
    };
  };
  // Reads are the viewers' (the dispatcher's default roles, bus::kViewers); everything that
  // submits, uploads or changes state needs an operator key (docs/explanation/security.md).
  const bus::RoleSet ops = bus::kOperators;
  TrialHandlers* t = trials_.get();
  ExperimentHandlers* e = experiments_.get();
  AnalysisHandlers* a = analysis_.get();
  WorkingDirHandlers* w = working_dir_.get();
  DashboardHandlers* dash = dashboard_.get();
  using T = TrialHandlers;
  using E = ExperimentHandlers;
  dispatcher_.On(proto::SubmitExperiment::kType, ops, e, &E::HandleSubmit)
      .On(proto::ListTrials::kType, t, &T::HandleListTrials)
      .On(proto::ShowTrial::kType, t, &T::HandleShowTrial)
      .On(proto::GetExperiment::kType, e, &E::HandleGetExperiment)
      .On(proto::ListResults::kType, a, &AnalysisHandlers::HandleListResults)
      .On(proto::ListSchedulerDecisions::kType, a, &AnalysisHandlers::HandleListSchedulerDecisions)
      .On(proto::ListWorkers::kType, a, &AnalysisHandlers::HandleListWorkers)
      .On(proto::WhatIf::kType, whatif_.get(), &WhatIfHandlers::HandleWhatIf)
      .On(proto::ListExperiments::kType, e, &E::HandleListExperiments)
      .On(proto::FetchCheckpoint::kType, t, &T::HandleFetchCheckpoint)
      .On(proto::WorkingDirStat::kType, ops, w, &WorkingDirHandlers::HandleWorkingDirStat)
      .On(proto::WorkingDirPut::kType, ops, w, &WorkingDirHandlers::HandleWorkingDirPut)
      .On(proto::StopTrialCommand::kType, ops, mutating(*t, &T::HandleStopTrial))
      .On(proto::StopExperiment::kType, ops, mutating(*e, &E::HandleStopExperiment))
      .On(proto::ResumeExperimentCommand::kType, ops, mutating(*e, &E::HandleResumeExperiment))
      .On(proto::PauseTrialCommand::kType, ops, mutating(*t, &T::HandlePauseTrial))
      .On(proto::ResumeTrialCommand::kType, ops, mutating(*t, &T::HandleResumeTrial))
      .On(proto::AddTrialCommand::kType, ops, mutating(*t, &T::HandleAddTrial))
      .On(proto::SetTrialResourcesCommand::kType, ops, mutating(*t, &T::HandleSetTrialResources))
      .On(proto::SetExperimentWeight::kType, ops, mutating(*e, &E::HandleSetExperimentWeight))
      .On(proto::DeleteExperiment::kType, ops, mutating(*e, &E::HandleDeleteExperiment))
      // The dashboard (a viewer) checks tokens; its actions carry an operator's token.
      .On(proto::IssueDashboardToken::kType, ops, dash,
          &DashboardHandlers::HandleIssueDashboardToken)
      .On(proto::VerifyDashboardToken::kType, dash, &DashboardHandlers::HandleVerifyDashboardToken)
      .On(proto::DashboardAction::kType, dash, &DashboardHandlers::HandleDashboardAction);
}

}  // namespace tunebus
