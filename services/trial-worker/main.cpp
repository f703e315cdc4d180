// trial-worker: runs trainables for the scheduler on this node (see trial_worker.hpp).
//
//   trial-worker --scheduler tcp://sched:5559 --rm tcp://rm:5556 --cpus 8 --gpus 2
//                --resource tpu=4 --resource bigmem=1 --allow-command '/usr/bin/python3*'
// Every flag has an environment fallback (TUNEBUS_...); logging, signals and exit codes are
// libs/service's RunService. SIGTERM/SIGINT stop it: every trainable is killed (its whole
// process group) and it exits 0.
#include <cstdlib>
#include <string>
#include <vector>

#include "libs/service/chunk_heap.hpp"
#include "libs/service/service_main.hpp"
#include "services/trial-worker/trial_worker.hpp"

namespace {

// --resource's "name=amount", stored into `custom`. Throws CLI::ValidationError (exit 2).
void AddResource(const std::string& pair, std::map<std::string, double>& custom) {
  if (pair.empty()) return;
  const auto eq = pair.find('=');
  char* end = nullptr;
  const double amount = eq == std::string::npos ? 0 : std::strtod(pair.c_str() + eq + 1, &end);
  if (eq == std::string::npos || eq == 0 || end == pair.c_str() + eq + 1 || *end != '\0') {
    throw CLI::ValidationError("--resource", "'" + pair + "' must look like name=amount");
  }
  custom[pair.substr(0, eq)] = amount;
}

void AddFlags(CLI::App& app, tunebus::TrialWorkerOptions& o) {
  app.add_option("--node-ip", o.node_ip,
                 "this host's address in results' node_ip (default: the address it reaches the "
                 "scheduler from)");
  app.add_option("--worker-id", o.worker_id, "worker id (default <hostname>-<pid>)")
      ->envname("TUNEBUS_WORKER_ID");
  app.add_option("--scheduler", o.scheduler_endpoint, "the scheduler's worker endpoint")
      ->envname("TUNEBUS_SCHEDULER_WORKER_ENDPOINT")
      ->capture_default_str();
  app.add_option("--rm", o.rm_endpoint, "the resource-manager endpoint")
      ->envname("TUNEBUS_RM_ENDPOINT")
      ->capture_default_str();
  app.add_option("--store", o.store_endpoint, "the checkpoint-store endpoint")
      ->envname("TUNEBUS_STORE_ENDPOINT")
      ->capture_default_str();
  app.add_option("--cache-dir", o.cache_dir,
                 "where shipped working_dirs are unpacked, one folder per digest (default "
                 "<temp dir>/tunebus-working-dirs)")
      ->envname("TUNEBUS_CACHE_DIR");
  app.add_option("--cpus", o.cpus, "CPUs offered")
      ->envname("TUNEBUS_CPUS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--gpus", o.gpus, "whole GPUs offered (ids 0..n-1)")
      ->envname("TUNEBUS_GPUS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--memory", o.memory_bytes, "memory offered, bytes (0 = not offered)")
      ->envname("TUNEBUS_MEMORY_BYTES")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option_function<std::vector<std::string>>(
         "--resource",
         [&o](const std::vector<std::string>& pairs) {
           for (const std::string& pair : pairs) AddResource(pair, o.custom);
         },
         "custom resource name=amount (repeatable; env: comma-separated)")
      ->envname("TUNEBUS_RESOURCES")
      ->delimiter(',');
  app.add_option("--allow-command", o.allow_commands,
                 "run only command trainables whose program (argv[0] found as execvp would, "
                 "matched by its path and by its real path) matches this fnmatch glob, e.g. "
                 "'/usr/bin/python3*' ('*' also matches '/'); repeatable (env: comma-separated); "
                 "none = every command (docs/explanation/security.md)")
      ->envname("TUNEBUS_ALLOW_COMMANDS")
      ->delimiter(',');
  app.add_option("--stop-grace-ms", o.stop_grace_ms,
                 "time a trainable told to stop gets to exit before SIGKILL, ms")
      ->envname("TUNEBUS_STOP_GRACE_MS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--heartbeat-interval-ms", o.heartbeat_interval_ms, "heartbeat interval, ms")
      ->envname("TUNEBUS_HEARTBEAT_INTERVAL_MS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  tunebus::service::KeepChunkBuffersInHeap();  // checkpoint chunks: libs/service/chunk_heap.hpp
  return tunebus::service::RunService<tunebus::TrialWorker>(
      argc, argv, "trial-worker", "tunebus trial-worker: runs trainables for the scheduler",
      AddFlags);
}
