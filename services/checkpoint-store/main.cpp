// checkpoint-store: experiment journals and trial checkpoints in RocksDB, served on a ROUTER
// socket. Flags fall back to TUNEBUS_* environment variables. SIGTERM/SIGINT stop it cleanly:
// the loop finishes its round, RocksDB is closed, exit 0.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <string>
#include <zmq.hpp>

#include "libs/bus/service_guard.hpp"
#include "libs/metrics/metrics_flags.hpp"
#include "services/checkpoint-store/checkpoint_store.hpp"

namespace {

std::atomic<tunebus::CheckpointStore*> g_service{nullptr};
std::atomic<bool> g_stop_requested{false};

extern "C" void OnSignal(int) {
  g_stop_requested.store(true);
  if (auto* s = g_service.load()) s->Stop();  // EventLoop::Stop is an atomic store
}

}  // namespace

int main(int argc, char** argv) {
  tunebus::CheckpointStoreOptions options;
  bool no_sync = false;
  std::string log_level = "info";
  CLI::App app{"tunebus checkpoint-store: experiment journals and trial checkpoints (RocksDB)"};
  app.add_option("--endpoint", options.endpoint, "ROUTER endpoint to bind")
      ->envname("TUNEBUS_STORE_ENDPOINT")
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir, "RocksDB directory (created if missing)")
      ->envname("TUNEBUS_STORE_DATA_DIR")
      ->capture_default_str();
  app.add_flag("--no-sync", no_sync,
               "do not fsync before acknowledging writes (faster; acked writes can be lost on a "
               "machine crash, not on a process crash)")
      ->envname("TUNEBUS_STORE_NO_SYNC");
  tunebus::metrics::AddMetricsFlags(app, options.metrics);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));
  options.sync = !no_sync;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return tunebus::bus::GuardMain("checkpoint-store", [&] {
    zmq::context_t ctx;
    auto service = tunebus::CheckpointStore::Create(ctx, options);
    if (!service.ok()) {
      spdlog::critical("checkpoint-store cannot start: {}", service.status().ToString());
      return 1;
    }
    g_service.store(service->get());
    if (!g_stop_requested.load()) (*service)->Run();  // a signal before this point stops it
    g_service.store(nullptr);
    return 0;  // `service` is destroyed here: socket closed (linger 0), RocksDB closed.
  });
}
