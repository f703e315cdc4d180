// MetricsPublisher: the per-service glue between a service's event loop and MetricsServer. Every
// second (a periodic timer on the service's loop, so rendering reads the service's state on its
// own thread) it renders the service's figures and its health text and publishes them.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "libs/bus/event_loop.hpp"
#include "libs/metrics/metrics_server.hpp"

namespace tunebus::metrics {

struct MetricsOptions {
  std::string host = "127.0.0.1";  // 0.0.0.0 in containers
  int port = 0;                    // 0 = no metrics endpoint; kAnyPort = one the kernel picks
  bool healthcheck = false;        // --healthcheck: check the running service, start nothing
  /// A server already listening on host:port (RunService binds it before it creates the
  /// service, so that its --ready-file can name the port); null: Start binds one itself.
  std::shared_ptr<MetricsServer> server;
};

class MetricsPublisher {
 public:
  /// Publishes on options.server if set, else binds options.host:port (kAnyPort: a free port);
  /// a no-op when neither (port 0). `health` (optional) gives /healthz's body while the loop
  /// publishes, one line ("ok" when not given). Errors: Unavailable when the port cannot be bound.
  Status Start(bus::EventLoop& loop, const MetricsOptions& options,
               std::function<void(MetricsText&)> render, std::function<std::string()> health = {});
  /// The bound port, 0 when off.
  int port() const { return server_ ? server_->port() : 0; }

 private:
  void Render();
  std::shared_ptr<MetricsServer> server_;
  std::function<void(MetricsText&)> render_;
  std::function<std::string()> health_;
};

}  // namespace tunebus::metrics
