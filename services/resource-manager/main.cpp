// resource-manager: tracks workers, their capacity and per-trial allocations; detects lost
// workers by heartbeats. Flags fall back to TUNEBUS_* environment variables. SIGTERM/SIGINT
// stop it cleanly (exit 0).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <zmq.hpp>

#include "libs/bus/service_guard.hpp"
#include "libs/metrics/metrics_flags.hpp"
#include "services/resource-manager/resource_manager.hpp"

namespace {

std::atomic<tunebus::ResourceManager*> g_service{nullptr};
std::atomic<bool> g_stop_requested{false};

extern "C" void OnSignal(int) {
  g_stop_requested.store(true);
  if (auto* s = g_service.load()) s->Stop();  // EventLoop::Stop is an atomic store
}

}  // namespace

int main(int argc, char** argv) {
  tunebus::ResourceManagerOptions options;
  std::string log_level = "info";
  CLI::App app{"tunebus resource-manager: worker capacity, placement and liveness"};
  app.add_option("--endpoint", options.endpoint, "ROUTER endpoint to bind")
      ->envname("TUNEBUS_RM_ENDPOINT")
      ->capture_default_str();
  app.add_option("--events-endpoint", options.events_endpoint, "PUB endpoint for node events")
      ->envname("TUNEBUS_RM_EVENTS_ENDPOINT")
      ->capture_default_str();
  app.add_option("--heartbeat-interval-ms", options.heartbeat_interval_ms,
                 "worker heartbeat interval (ms)")
      ->envname("TUNEBUS_HEARTBEAT_INTERVAL_MS")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness, "missed intervals before a worker is lost")
      ->envname("TUNEBUS_HEARTBEAT_LIVENESS")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
  tunebus::metrics::AddMetricsFlags(app, options.metrics);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return tunebus::bus::GuardMain("resource-manager", [&] {
    zmq::context_t ctx;
    auto service = tunebus::ResourceManager::Create(ctx, options);
    if (!service.ok()) {
      spdlog::critical("resource-manager cannot start: {}", service.status().ToString());
      return 1;
    }
    g_service.store(service->get());
    if (!g_stop_requested.load()) (*service)->Run();  // a signal before this point stops it
    g_service.store(nullptr);
    return 0;
  });
}
