#include "libs/metrics/metrics_publisher.hpp"

#include <spdlog/spdlog.h>

namespace tunebus::metrics {

Status MetricsPublisher::Start(bus::EventLoop& loop, const MetricsOptions& options,
                               std::function<void(MetricsText&)> render,
                               std::function<std::string()> health) {
  if (options.server) {
    server_ = options.server;
  } else {
    if (options.port == 0) return Status::Ok();
    auto server = MetricsServer::Start(options.host, options.port, MetricsServer::kHealthyWithin,
                                       loop.clock());
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
  }
  render_ = std::move(render);
  health_ = std::move(health);
  Render();
  loop.AddPeriodic(bus::Duration{1000}, [this] { Render(); });
  spdlog::info("metrics on http://{}:{}/metrics", options.host, server_->port());
  return Status::Ok();
}

void MetricsPublisher::Render() {
  MetricsText text;
  render_(text);
  server_->Publish(text.str(), health_ ? health_() : "ok");
}

}  // namespace tunebus::metrics
