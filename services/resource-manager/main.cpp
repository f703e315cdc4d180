// resource-manager: tracks workers, their capacity and per-trial allocations; detects lost
// workers by heartbeats. Flags fall back to TUNEBUS_* environment variables; logging, signals
// and exit codes are libs/service's RunService. SIGTERM/SIGINT stop it cleanly (exit 0).
#include "libs/service/service_main.hpp"
#include "services/resource-manager/resource_manager.hpp"

namespace {

void AddFlags(CLI::App& app, tunebus::ResourceManagerOptions& o) {
  app.add_option("--endpoint", o.endpoint, "ROUTER endpoint to bind")
      ->envname("TUNEBUS_RM_ENDPOINT")
      ->capture_default_str();
  app.add_option("--events-endpoint", o.events_endpoint, "PUB endpoint for node events")
      ->envname("TUNEBUS_RM_EVENTS_ENDPOINT")
      ->capture_default_str();
  app.add_option("--heartbeat-interval-ms", o.heartbeat_interval_ms,
                 "worker heartbeat interval (ms)")
      ->envname("TUNEBUS_HEARTBEAT_INTERVAL_MS")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
  app.add_option("--liveness", o.liveness, "missed intervals before a worker is lost")
      ->envname("TUNEBUS_HEARTBEAT_LIVENESS")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
}

// What --ready-file names, by the flags above.
tunebus::service::BoundEndpoints Endpoints(const tunebus::ResourceManager& rm) {
  return {{"endpoint", rm.endpoint()}, {"events-endpoint", rm.events_endpoint()}};
}

}  // namespace

int main(int argc, char** argv) {
  return tunebus::service::RunService<tunebus::ResourceManager>(
      argc, argv, "resource-manager",
      "tunebus resource-manager: worker capacity, placement and liveness", AddFlags, Endpoints);
}
