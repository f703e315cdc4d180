// Prometheus metrics over HTTP (DESIGN.md: every service serves its metrics). A service renders
// its figures into MetricsText on its own loop thread (a timer) and hands the text to
// MetricsServer::Publish; cpp-httplib serves the newest text on a thread of its own, so the
// service's state is never read from another thread.
//
//   GET /metrics  -> 200, text/plain; version=0.0.4 (Prometheus text exposition format)
//   GET /healthz  -> 200 while the service's loop publishes (it does every second), with the
//                    service's health text as the body: "ok", or what the service says of
//                    itself while its loop runs (the checkpoint-store's "degraded: <reason>");
//                    else 503 naming how long it has been silent: a loop stuck in a handler or a
//                    service still starting is not healthy (container healthchecks; CheckHealth)
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"

namespace httplib {
class Server;
}

namespace tunebus::metrics {

/// Builds the text exposition. Names get the "tunebus_" prefix; label values are escaped.
class MetricsText {
 public:
  using Labels = std::map<std::string, std::string>;
  /// A value that goes up and down (e.g. trials by status).
  void Gauge(const std::string& name, const std::string& help, double value,
             const Labels& labels = {});
  /// A monotonically increasing count (name should end in _total).
  void Counter(const std::string& name, const std::string& help, double value,
               const Labels& labels = {});
  const std::string& str() const { return text_; }

 private:
  void Add(const char* type, const std::string& name, const std::string& help, double value,
           const Labels& labels);
  std::string text_;
  std::string last_name_;  // HELP/TYPE are written once per metric family
};

/// The port number that asks for any free port (`--metrics-port *`): 0 already means "no metrics
/// endpoint" in MetricsOptions and the TUNEBUS_METRICS_PORT variable.
inline constexpr int kAnyPort = -1;

class MetricsServer {
 public:
  /// /healthz fails when the last Publish is older than this (the loop publishes every second).
  static constexpr std::chrono::milliseconds kHealthyWithin{10000};

  /// Listens on host:port (port 0 or kAnyPort: any free port; port() names it) and serves on a
  /// thread of its own. `clock` (thread-safe, outlives the server) times /healthz's age of the
  /// last Publish.
  /// Errors: Unavailable if it cannot bind.
  static Result<std::unique_ptr<MetricsServer>> Start(
      const std::string& host, int port, std::chrono::milliseconds healthy_within = kHealthyWithin,
      const Clock& clock = Clock::Real());
  ~MetricsServer();  // stops the server and joins its thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Replaces the text /metrics serves and the health text /healthz answers (one line, no
  /// newline). Thread-safe.
  void Publish(std::string text, std::string health = "ok");
  int port() const { return port_; }

 private:
  MetricsServer();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::string text_;                        // guarded by mu_
  std::string health_ = "ok";               // guarded by mu_
  std::optional<SteadyTime> published_at_;  // guarded by mu_
  std::chrono::milliseconds healthy_within_ = kHealthyWithin;
  const Clock* clock_ = &Clock::Real();
};

/// The healthcheck client (`<service> --healthcheck`): GET http://<host>:<port>/healthz (a
/// wildcard host asks 127.0.0.1) with a 2 s timeout. Prints the health text ("ok", or e.g.
/// "degraded: …") and returns 0 on 200; prints the reason to stderr and returns 1 otherwise (no
/// metrics port or kAnyPort, nobody listening, 503, timeout).
int CheckHealth(const std::string& host, int port);

}  // namespace tunebus::metrics
