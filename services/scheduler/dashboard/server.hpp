// DashboardServer: the scheduler's web dashboard (docs/how-to/dashboard.md), served over HTTP
// by cpp-httplib on threads of its own. It never touches the scheduler's state: it is a client
// of the scheduler like `tunectl`, so the page costs the event loop only the control requests
// it sends, and the roles of the control socket apply to it.
//
//   HTTP threads  (httplib's pool)  each request borrows a ControlClient (a DEALER to the control
//                                   socket, as a viewer: ListExperiments, GetExperiment,
//                                   ListTrials, ShowTrial) from the ControlPool; a trial's curve
//                                   is read from its result.json (the results folder is on this
//                                   host)
//   relay thread                    EventRoutes::Relay: a SUB to the event stream, subscribed
//                                   only while a page listens, feeding the /events streams
//
// The server keeps the listener, its threads, the signed-in sessions and the action log, and
// registers the route groups of dashboard/routes/, each a class owning its handlers (JSON errors
// are {"error": message} with 400, 403, 404, 409, 503 or 500):
//   ExperimentRoutes  the pages, /static/FILE, /api/experiments[/NAME[/trials[/ID/curve]]]
//   TrialRoutes       /experiments/NAME/trials/ID and /api/experiments/NAME/trials/ID/...
//   ControlRoutes     /login, /logout, /api/session, /api/actions and the control POSTs
//   AnalysisRoutes    GET /api/experiments/NAME/{analysis,importance,searcher,decisions}
//   WhatIfRoutes      GET /api/experiments/NAME/whatif (a finished experiment's what-if replay)
//   EventRoutes       GET /events (text/event-stream)
//
// Start order: routes registered, address bound, relay thread, HTTP thread; the destructor ends
// the streams and the relay, stops the listener and joins both threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"
#include "services/scheduler/dashboard/routes/analysis_routes.hpp"
#include "services/scheduler/dashboard/routes/control_pool.hpp"
#include "services/scheduler/dashboard/routes/control_routes.hpp"
#include "services/scheduler/dashboard/routes/event_routes.hpp"
#include "services/scheduler/dashboard/routes/experiment_routes.hpp"
#include "services/scheduler/dashboard/routes/trial_routes.hpp"
#include "services/scheduler/dashboard/routes/whatif_routes.hpp"
#include "services/scheduler/dashboard/sessions.hpp"
#include "services/scheduler/dashboard/views/views.hpp"

namespace httplib {
class Server;
}  // namespace httplib

namespace tunebus::dashboard {

struct DashboardOptions {
  HttpAddress address;           // where to listen (port 0: any free port; port() names it)
  std::string control_endpoint;  // the scheduler's control socket, as a client connects to it
  std::string events_endpoint;   // its event stream (PUB), likewise
  /// The clients' security: plaintext, or CURVE with the dashboard's viewer key (the scheduler's
  /// key is <keys-dir>/scheduler.key).
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  std::chrono::milliseconds request_timeout{5000};  // per control request
};

class DashboardServer {
 public:
  /// httplib's worker threads: the /events streams hold one each while open.
  static constexpr size_t kHttpThreads = 12;

  /// Binds `options.address` and starts the HTTP and relay threads. `ctx` outlives the server.
  /// Errors: Unavailable if the address cannot be bound; bus::Connect's for the event stream.
  static Result<std::unique_ptr<DashboardServer>> Start(zmq::context_t& ctx,
                                                        DashboardOptions options);
  /// Ends the /events streams, stops the HTTP server and the relay, joins their threads.
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  int port() const { return port_; }
  /// "http://HOST:PORT/" as bound (an IPv6 host in brackets).
  std::string url() const;

 private:
  DashboardServer(zmq::context_t& ctx, DashboardOptions options);
  /// The security headers of every answer, then every route group's routes.
  void AddRoutes();

  DashboardOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread http_thread_;
  std::thread relay_thread_;
  int port_ = 0;
  ControlPool control_;    // the HTTP threads' clients of the control socket
  SessionTable sessions_;  // signed-in browsers (ControlRoutes signs in and out)
  ActionLog actions_;      // the actions taken in the pages
  EventRoutes events_;
  ExperimentRoutes experiments_;
  TrialRoutes trials_;
  ControlRoutes controls_;
  AnalysisRoutes analysis_;
  WhatIfRoutes whatif_;
};

}  // namespace tunebus::dashboard
