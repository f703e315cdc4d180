// The command-line flags every service has for its metrics endpoint (CLI11), in one place.
#pragma once

#include <CLI/CLI.hpp>

#include "libs/metrics/metrics_publisher.hpp"

namespace tunebus::metrics {

/// --metrics-port (TUNEBUS_METRICS_PORT, 0 = off) and --metrics-host (TUNEBUS_METRICS_HOST).
inline void AddMetricsFlags(CLI::App& app, MetricsOptions& options) {
  app.add_option("--metrics-port", options.port, "Prometheus metrics HTTP port (0 = off)")
      ->envname("TUNEBUS_METRICS_PORT")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--metrics-host", options.host, "address the metrics endpoint binds")
      ->envname("TUNEBUS_METRICS_HOST")
      ->capture_default_str();
}

}  // namespace tunebus::metrics
