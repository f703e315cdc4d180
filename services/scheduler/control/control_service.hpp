// ControlService: the scheduler's control socket (proto/control.hpp, proto/dashboard.hpp):
// tunectl's requests, the dashboard's reads, login tokens and actions, the Python package's
// requests.
//
// Owns:
//   - the control ROUTER (bound by the scheduler) and its MessageDispatcher table, one entry per
//     request type (control_service.cpp AddHandlers) with the roles it needs: reads are the
//     viewers', everything that submits, uploads or changes state the operators';
//   - the handler groups the table routes to (control/handlers/): TrialHandlers,
//     ExperimentHandlers, AnalysisHandlers, DashboardHandlers (which holds the dashboard's
//     login-token secret, loaded or made by Create), WorkingDirHandlers, WhatIfHandlers (whose
//     replays run on threads of their own);
//   - the ControlContext they share: the replies and which experiment a request names;
//   - the RetentionSweeper (control/retention_sweeper.hpp), which deletes finished experiments
//     by the retention rules through ExperimentHandlers::Delete, started with the socket.
// Every request gets exactly one reply (control_context.hpp says which and when). A request that
// changes state is refused (unavailable, naming the cause) while the checkpoint-store refuses
// writes (checked by the table before its handler runs) or its experiment's journal fails.
//
// Uses (handed to Create, all outliving it): the ExperimentRegistry, the FairShareArbiter, the
// workers' WorkerRegistry, the store and resource-manager clients, the store's health (Parts).
//
// Threads: all on the scheduler's loop thread (its socket is the loop's; every callback it
// registers runs there).
//
// Invariants: one reply per request, whatever path it takes; a name claimed while a submission
// or resume waits for the store is released on every path that ends the wait
// (ExperimentHandlers).
#pragma once

#include <memory>
#include <string>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/core/status.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "services/scheduler/control/control_context.hpp"

namespace tunebus {

class AnalysisHandlers;
class DashboardHandlers;
class ExperimentHandlers;
class RetentionSweeper;
class TrialHandlers;
class WhatIfHandlers;
class WorkingDirHandlers;

class ControlService {
 public:
  using Options = ControlOptions;
  using Parts = ControlParts;

  /// Takes the bound control ROUTER `socket` and loads the login-token secret
  /// (DashboardHandlers::LoadTokens). Errors: the secret file's.
  static Result<std::unique_ptr<ControlService>> Create(zmq::socket_t socket, Options options,
                                                        Parts parts);
  ~ControlService();
  ControlService(const ControlService&) = delete;
  ControlService& operator=(const ControlService&) = delete;

  /// Serves the socket on `loop`.
  void Start(bus::EventLoop& loop);
  /// Handles every queued request.
  void OnReadable();
  /// The dashboard's "http://HOST:PORT/" (named in issued tokens' login_url); "" = none.
  void set_http_url(std::string url);
  const service::MessageDispatcher& dispatcher() const { return dispatcher_; }

 private:
  ControlService(zmq::socket_t socket, Options options, Parts parts);
  /// The dispatcher's table: each request type, the roles it needs, its handler.
  void AddHandlers();

  zmq::socket_t socket_;
  Options options_;
  Parts parts_;
  service::MessageDispatcher dispatcher_;
  ControlContext context_;
  std::unique_ptr<TrialHandlers> trials_;
  std::unique_ptr<ExperimentHandlers> experiments_;
  std::unique_ptr<AnalysisHandlers> analysis_;
  std::unique_ptr<WorkingDirHandlers> working_dir_;
  std::unique_ptr<WhatIfHandlers> whatif_;
  std::unique_ptr<DashboardHandlers> dashboard_;
  std::unique_ptr<RetentionSweeper> retention_;  // deletes through experiments_
};

}  // namespace tunebus
