// trial-worker: runs trainables for the scheduler on this node (see trial_worker.hpp).
//
//   trial-worker --scheduler tcp://sched:5559 --rm tcp://rm:5556 --cpus 8 --gpus 2
//                --resource tpu=4 --resource bigmem=1
// Every flag has an environment fallback (TUNEBUS_...). SIGTERM/SIGINT stop it: every trainable
// is killed (its whole process group) and it exits 0.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "libs/bus/service_guard.hpp"
#include "libs/metrics/metrics_flags.hpp"
#include "services/trial-worker/trial_worker.hpp"

namespace {

std::atomic<tunebus::TrialWorker*> g_worker{nullptr};

extern "C" void OnSignal(int /*signo*/) {
  if (tunebus::TrialWorker* w = g_worker.load()) w->Stop();
}

}  // namespace

int main(int argc, char** argv) {
  tunebus::TrialWorkerOptions options;
  std::vector<std::string> resources;
  std::string log_level = "info";

  CLI::App app{"tunebus trial-worker: runs trainables for the scheduler"};
  app.add_option("--node-ip", options.node_ip,
                 "this host's address in results' node_ip (default: the address it reaches the "
                 "scheduler from)");
  app.add_option("--worker-id", options.worker_id, "worker id (default <hostname>-<pid>)")
      ->envname("TUNEBUS_WORKER_ID");
  app.add_option("--scheduler", options.scheduler_endpoint, "the scheduler's worker endpoint")
      ->envname("TUNEBUS_SCHEDULER_WORKER_ENDPOINT")
      ->capture_default_str();
  app.add_option("--rm", options.rm_endpoint, "the resource-manager endpoint")
      ->envname("TUNEBUS_RM_ENDPOINT")
      ->capture_default_str();
  app.add_option("--store", options.store_endpoint, "the checkpoint-store endpoint")
      ->envname("TUNEBUS_STORE_ENDPOINT")
      ->capture_default_str();
  app.add_option("--cpus", options.cpus, "CPUs offered")
      ->envname("TUNEBUS_CPUS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--gpus", options.gpus, "whole GPUs offered (ids 0..n-1)")
      ->envname("TUNEBUS_GPUS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--memory", options.memory_bytes, "memory offered, bytes (0 = not offered)")
      ->envname("TUNEBUS_MEMORY_BYTES")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--resource", resources,
                 "custom resource name=amount (repeatable; env: comma-separated)")
      ->envname("TUNEBUS_RESOURCES")
      ->delimiter(',');
  app.add_option("--heartbeat-interval-ms", options.heartbeat_interval_ms, "heartbeat interval, ms")
      ->envname("TUNEBUS_HEARTBEAT_INTERVAL_MS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tunebus::metrics::AddMetricsFlags(app, options.metrics);
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::from_str(log_level));
  for (const std::string& r : resources) {
    if (r.empty()) continue;
    const auto eq = r.find('=');
    char* end = nullptr;
    const double amount = eq == std::string::npos ? 0 : std::strtod(r.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == r.c_str() + eq + 1 || *end != '\0') {
      spdlog::error("--resource '{}' must look like name=amount", r);
      return 2;
    }
    options.custom[r.substr(0, eq)] = amount;
  }

  return tunebus::bus::GuardMain("trial-worker", [&] {
    zmq::context_t ctx(1);
    auto worker = tunebus::TrialWorker::Create(ctx, options);
    if (!worker.ok()) {
      spdlog::error("Cannot start trial-worker: {}", worker.status().ToString());
      return 1;
    }
    g_worker.store(worker->get());
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    (*worker)->Run();
    g_worker.store(nullptr);
    spdlog::info("trial-worker {} stopped", (*worker)->worker_id());
    return 0;
  });
}
