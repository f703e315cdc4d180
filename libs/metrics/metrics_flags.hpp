// The command-line flags every service has for its metrics endpoint (CLI11), in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>

#include "libs/metrics/metrics_publisher.hpp"
#include "libs/metrics/metrics_server.hpp"

namespace tunebus::metrics {

/// --metrics-port (TUNEBUS_METRICS_PORT, 0 = off, `*` = a free port the kernel picks: kAnyPort),
/// --metrics-host (TUNEBUS_METRICS_HOST) and --healthcheck: instead of starting the service, ask
/// the running one's /healthz on that host and port (CheckHealth) and exit 0 if it is healthy,
/// else 1 — a container healthcheck that needs nothing but the service's own binary and
/// variables. Uses the app's final callback.
inline void AddMetricsFlags(CLI::App& app, MetricsOptions& options) {
  app.add_flag(
      "--healthcheck", options.healthcheck,
      "ask the running service's /healthz on --metrics-host/--metrics-port and exit 0 if it "
      "answers ok within 2 s, else 1 (container healthchecks)");
  app.final_callback([&options] {
    if (!options.healthcheck) return;
    if (CheckHealth(options.host, options.port) == 0) throw CLI::Success();
    throw CLI::RuntimeError(1);
  });
  app.add_option("--metrics-port", options.port,
                 "Prometheus metrics HTTP port (0 = off; * = a free port, which --ready-file "
                 "names)")
      ->envname("TUNEBUS_METRICS_PORT")
      ->transform(
          [](std::string value) {
            if (value == "*") return std::to_string(kAnyPort);
            char* end = nullptr;
            const long port = std::strtol(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || port < 0 || port > 65535)
              throw CLI::ValidationError("'" + value + "' is not a port (0-65535) or *");
            return value;
          },
          "PORT|*")
      ->capture_default_str();
  app.add_option("--metrics-host", options.host, "address the metrics endpoint binds")
      ->envname("TUNEBUS_METRICS_HOST")
      ->capture_default_str();
}

}  // namespace tunebus::metrics
