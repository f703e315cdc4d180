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
// Routes (JSON errors are {"error": message} with 400, 403, 404, 409, 503 or 500), each a
// handler of its own (a Serve* member), registered one line each by its file's Add*Routes:
//   the pages, /static/FILE, /api/experiments[/NAME[/trials[/ID/curve]]]
//                                              dashboard/routes/experiment_routes.cpp
//   /experiments/NAME/trials/ID and /api/experiments/NAME/trials/ID/...
//                                              the trial page: dashboard/routes/trial_routes.cpp
//   /login, /logout, /api/session, /api/actions and the control POSTs
//                                              dashboard/routes/control_routes.cpp
//   GET /api/experiments/NAME/{analysis,importance,searcher,decisions}
//                                              the analysis panels:
//                                              dashboard/routes/analysis_routes.cpp
//   GET /events                                text/event-stream: "hello" once the stream is
//                                              subscribed, then one event per scheduler event
//                                              (EventData), "reset" when this stream fell more
//                                              than kFeedFrames behind (refetch), a comment every
//                                              kKeepAlive (ServeEvents, dashboard/server.cpp)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/control_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"
#include "proto/dashboard.hpp"
#include "services/scheduler/dashboard/sessions.hpp"
#include "services/scheduler/dashboard/views/views.hpp"

namespace httplib {
class Server;
class DataSink;
struct Request;
struct Response;
}  // namespace httplib

namespace tunebus::dashboard {

struct AnalysisCache;  // dashboard/routes/analysis_routes.cpp

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

  // ---- routes: each is one handler (a member below), registered by its file's Add*Routes

  /// A route's handler: it answers `req` in `res` (errors as SendError's JSON).
  using Handler = void (DashboardServer::*)(const httplib::Request& req, httplib::Response& res);
  enum class Method { kGet, kPost };
  struct Route {
    Method method;
    const char* pattern;  // a regular expression over the whole path; groups: req.matches[i]
    Handler handler;
  };
  /// The security headers of every answer, then every file's routes.
  void AddRoutes();
  void Add(const Route& route);
  /// GET `pattern` answers with the embedded page `asset` (SendAsset).
  void AddPage(const char* pattern, const char* asset);

  /// The experiments' routes (dashboard/routes/experiment_routes.cpp): the pages, the static files,
  /// /api/experiments, one experiment's summary, its trial table and a trial's curve.
  void AddExperimentRoutes();
  void ServeStaticFile(const httplib::Request& req, httplib::Response& res);
  void ServeExperiments(const httplib::Request& req, httplib::Response& res);
  void ServeExperiment(const httplib::Request& req, httplib::Response& res);
  void ServeTrials(const httplib::Request& req, httplib::Response& res);
  void ServeCurve(const httplib::Request& req, httplib::Response& res);
  /// The experiments page's row of the lsx row `row`, with its progress: the summary of an
  /// experiment read from its journal is kept while its row is the same (journal_summaries_).
  nlohmann::json ShownExperimentRow(const nlohmann::json& row);

  /// The trial page's routes (dashboard/routes/trial_routes.cpp).
  void AddTrialRoutes();
  void ServeTrial(const httplib::Request& req, httplib::Response& res);
  void ServeResults(const httplib::Request& req, httplib::Response& res);
  void ServeCheckpoints(const httplib::Request& req, httplib::Response& res);
  void ServeLogs(const httplib::Request& req, httplib::Response& res);
  void ServeCheckpointExport(const httplib::Request& req, httplib::Response& res);
  /// The trial object of the route's NAME and ID (req.matches[1], [2]; ShowTrial).
  Result<nlohmann::json> TrialOf(const httplib::Request& req);
  /// The same with its experiment's summary (GetExperiment), or the first of the two errors.
  Result<std::pair<nlohmann::json, nlohmann::json>> TrialAndSummaryOf(const httplib::Request& req);

  /// Sign-in, sign-out and the control POSTs (dashboard/routes/control_routes.cpp,
  /// docs/dashboard.md "Control").
  void AddControlRoutes();
  void ServeLoginPage(const httplib::Request& req, httplib::Response& res);
  void ServeLogin(const httplib::Request& req, httplib::Response& res);
  void ServeLogout(const httplib::Request& req, httplib::Response& res);
  void ServeSession(const httplib::Request& req, httplib::Response& res);
  void ServeActions(const httplib::Request& req, httplib::Response& res);
  void ServeTrialAction(const httplib::Request& req, httplib::Response& res);
  void ServeExperimentAction(const httplib::Request& req, httplib::Response& res);
  /// The session of the request's cookie, if it names a live one.
  std::optional<Session> SessionOf(const httplib::Request& req);
  /// Signs in with `token` (the scheduler verifies it): a session cookie and 303 to /, or the
  /// refused page.
  void SignIn(const std::string& token, httplib::Response& res);
  /// One action: the gate (CheckControlPost), then the scheduler decides with the session's
  /// token; the action log gets its entry.
  void Act(const httplib::Request& req, httplib::Response& res, proto::DashboardAction action);

  /// The analysis panels' routes (dashboard/routes/analysis_routes.cpp): GET /api/experiments/NAME/
  /// analysis, /importance, /searcher, /decisions.
  void AddAnalysisRoutes();
  void ServeAnalysis(const httplib::Request& req, httplib::Response& res);
  void ServeImportance(const httplib::Request& req, httplib::Response& res);
  void ServeSearcher(const httplib::Request& req, httplib::Response& res);
  void ServeDecisions(const httplib::Request& req, httplib::Response& res);
  /// The summary of the experiment `name` and its columns (kept or computed now), with
  /// "cached" and "compute_ms".
  Result<std::pair<nlohmann::json, nlohmann::json>> Analysis(const std::string& name);

  /// GET /events (dashboard/server.cpp): a chunked text/event-stream fed by NextEventChunk.
  void ServeEvents(const httplib::Request& req, httplib::Response& res);
  /// A stream's place in the feed: the first frame it has not sent (set at its hello) and when
  /// it last wrote.
  struct EventCursor {
    std::optional<uint64_t> next;
    std::chrono::steady_clock::time_point last_write;
  };
  /// Writes the stream's next chunk (hello, frames or a keep-alive) to `sink`, after waiting up
  /// to 250 ms for one; false ends the stream.
  bool NextEventChunk(EventCursor& cursor, httplib::DataSink& sink);
  /// The feed's next sequence number while the relay is subscribed (a page listens).
  std::optional<uint64_t> FeedSequence();

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
  SessionTable sessions_;         // signed-in browsers (dashboard/routes/control_routes.cpp)
  ActionLog actions_;             // the actions taken in the pages
  std::shared_ptr<AnalysisCache> analysis_cache_;  // the analysis routes' kept answers
};

}  // namespace tunebus::dashboard
