// DashboardServer: the scheduler's web dashboard (docs/dashboard.md), served over HTTP
// by cpp-httplib on threads of its own. It never touches the scheduler's state: it is a client
// of the scheduler like `tunectl`, so the page costs the event loop only the control requests
// it sends, and the roles of the control socket apply to it.
//
//   HTTP threads  (httplib's pool)  each request borrows a ControlClient (a DEALER to the control
//                                   socket, as a viewer: ListExperiments, GetExperiment,
//                                   ListTrials, ShowTrial) from a pool; a trial's curve is read
//                                   from its result.json (the results folder is on this host)
//   relay thread                    a SUB to the event stream, subscribed only while a page
//                                   listens (the scheduler builds no event nobody subscribed
//                                   to); it turns each SchedulerEvent into a Server-Sent Event
//                                   frame kept in a bounded in-memory feed the /events streams
//                                   read
//
// Routes (JSON errors are {"error": message} with 400, 403, 404, 409, 503 or 500):
//   GET /                                      the experiments page
//   GET /experiments/NAME                      one experiment's page (NAME or journal name)
//   GET /static/FILE                           embedded assets (dashboard/assets.hpp)
//   GET /api/experiments                       [ExperimentRow] (dashboard/views/views.hpp)
//   GET /api/experiments/NAME                  the experiment summary (GetExperiment), its
//                                              "best" as a TrialRow
//   GET /api/experiments/NAME/trials?status=&offset=&limit=&sort=
//                                              {total, offset, limit, sort, status, metric, mode,
//                                               trials: [TrialRow]} (TrialQuery)
//   GET /api/experiments/NAME/trials/ID/curve  CurveFromResultLines of the trial's result.json
//   GET /experiments/NAME/trials/ID, /api/experiments/NAME/trials/ID/...
//                                              the trial page and its routes (AddTrialRoutes,
//                                              dashboard/trial_routes.cpp)
//   /login, /logout, /api/session, /api/actions and the control POSTs: dashboard/control_routes.cpp
//   GET /api/experiments/NAME/{analysis,importance,searcher,decisions}
//                                              the analysis panels' data (AddAnalysisRoutes)
//   GET /events                                text/event-stream: "hello" once the stream is
//                                              subscribed, then one event per scheduler event
//                                              (EventData), "reset" when this stream fell more
//                                              than kFeedFrames behind (refetch), a comment every
//                                              kKeepAlive
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/control_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"
#include "services/scheduler/dashboard/sessions.hpp"
#include "services/scheduler/dashboard/views/views.hpp"

namespace httplib {
class Server;
}

namespace tunebus::dashboard {

struct AnalysisCache;  // dashboard/analysis_routes.cpp

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
  /// At most this many /events streams at once (503 beyond), so pages and API calls always
  /// find a thread.
  static constexpr int kMaxStreams = 8;
  /// Event frames kept for streams that have not sent them yet.
  static constexpr size_t kFeedFrames = 4096;
  static constexpr std::chrono::seconds kKeepAlive{5};

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
  void AddRoutes();
  /// The trial page's routes (dashboard/trial_routes.cpp).
  void AddTrialRoutes();
  /// Sign-in, sign-out and the control POSTs (dashboard/control_routes.cpp, docs/dashboard.md
  /// "Control").
  void AddControlRoutes();
  /// The analysis panels' routes (dashboard/analysis_routes.cpp): GET /api/experiments/NAME/
  /// analysis, /importance, /searcher, /decisions.
  void AddAnalysisRoutes();
  void Relay(zmq::socket_t sub);

  /// A control request on a pooled client: one is taken (or connected), used by this thread
  /// alone, and given back unless the request timed out.
  template <typename M>
  Result<nlohmann::json> Call(M request) {
    auto client = TakeClient();
    if (!client.ok()) return client.status();
    Result<nlohmann::json> reply = client->Call(std::move(request));
    // A client whose request timed out may still get that answer later: it is not reused.
    if (reply.ok() || reply.status().code() != StatusCode::kUnavailable) {
      ReturnClient(std::move(*client));
    }
    return reply;
  }
  /// A client for this thread alone: a pooled one, or a new connection. Errors:
  /// ControlClient::Connect's.
  Result<ControlClient> TakeClient();
  /// Gives `client` back to the pool; pass only a client whose last request was answered (one
  /// that timed out may still receive that answer later).
  void ReturnClient(ControlClient client);

  /// The frames after `next` (advanced past them), "" when none came within `wait`, a "reset"
  /// frame when `next` fell out of the feed.
  std::string FramesAfter(uint64_t& next, std::chrono::milliseconds wait);

  zmq::context_t& ctx_;
  DashboardOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread http_thread_;
  std::thread relay_thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> streams_{0};          // open /events streams
  std::atomic<bool> subscribed_{false};  // the relay's SUB is subscribed
  std::mutex clients_mu_;
  std::vector<ControlClient> idle_clients_;  // guarded by clients_mu_
  std::mutex summaries_mu_;
  /// GetExperiment answers of experiments not in the scheduler's memory (read from journals,
  /// unchanging), by journal name, with the lsx row they were read for.
  std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> journal_summaries_;
  std::mutex feed_mu_;
  std::condition_variable feed_cv_;
  std::deque<std::string> feed_;  // guarded by feed_mu_; frame i has sequence feed_first_ + i
  uint64_t feed_first_ = 0;       // guarded by feed_mu_
  SessionTable sessions_;         // signed-in browsers (dashboard/control_routes.cpp)
  ActionLog actions_;             // the actions taken in the pages
  std::shared_ptr<AnalysisCache> analysis_cache_;  // the analysis routes' kept answers
};

}  // namespace tunebus::dashboard
