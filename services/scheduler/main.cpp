// scheduler: runs experiments (see scheduler.hpp). Flags fall back to TUNEBUS_* variables.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>

#include "libs/bus/service_guard.hpp"
#include "libs/metrics/metrics_flags.hpp"
#include "services/scheduler/scheduler.hpp"

namespace {
tunebus::Scheduler* g_scheduler = nullptr;
void OnSignal(int) {
  if (g_scheduler) g_scheduler->Stop();
}
}  // namespace

int main(int argc, char** argv) {
  tunebus::SchedulerOptions o;
  std::string log_level = "info";
  CLI::App app{"tunebus scheduler: runs experiments and their trials"};
  app.add_option("--control", o.control_endpoint, "control socket (tunectl), ROUTER bind")
      ->envname("TUNEBUS_CONTROL_ENDPOINT")
      ->capture_default_str();
  app.add_option("--workers", o.worker_endpoint, "trial-worker socket, ROUTER bind")
      ->envname("TUNEBUS_SCHEDULER_WORKER_ENDPOINT")
      ->capture_default_str();
  app.add_option("--events", o.events_endpoint, "event stream, XPUB bind (SUB clients)")
      ->envname("TUNEBUS_EVENTS_ENDPOINT")
      ->capture_default_str();
  app.add_option("--rm", o.rm_endpoint, "resource-manager endpoint")
      ->envname("TUNEBUS_RM_ENDPOINT")
      ->capture_default_str();
  app.add_option("--rm-events", o.rm_events_endpoint, "resource-manager node events (PUB)")
      ->envname("TUNEBUS_RM_EVENTS_ENDPOINT")
      ->capture_default_str();
  app.add_option("--store", o.store_endpoint, "checkpoint-store endpoint")
      ->envname("TUNEBUS_STORE_ENDPOINT")
      ->capture_default_str();
  app.add_option("--results-dir", o.results_dir,
                 "results folder of experiments whose file sets no absolute results_dir: "
                 "<dir>/<name> on this host "
                 "(default: as the file says, relative to its folder on the submitting host)")
      ->envname("TUNEBUS_RESULTS_DIR");
  app.add_option("--snapshot-every", o.snapshot_every_records,
                 "journal records between experiment snapshots")
      ->envname("TUNEBUS_SNAPSHOT_EVERY")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tunebus::metrics::AddMetricsFlags(app, o.metrics);
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  return tunebus::bus::GuardMain("scheduler", [&] {
    zmq::context_t ctx;
    auto scheduler = tunebus::Scheduler::Create(ctx, o);
    if (!scheduler.ok()) {
      spdlog::critical("scheduler cannot start: {}", scheduler.status().ToString());
      return 1;
    }
    g_scheduler = scheduler->get();
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGINT, OnSignal);
    (*scheduler)->Run();
    g_scheduler = nullptr;
    return 0;
  });
}
