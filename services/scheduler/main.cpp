// scheduler: runs experiments (see scheduler.hpp). Flags fall back to TUNEBUS_* variables;
// logging, signals and exit codes are libs/service's RunService. SIGTERM/SIGINT stop it
// cleanly (exit 0), also while it still waits at start for the checkpoint-store to answer its
// journal reads (libs/service/stop_request.hpp).
#include <limits>

#include "libs/service/chunk_heap.hpp"
#include "libs/service/service_main.hpp"
#include "services/scheduler/dashboard/views/views.hpp"
#include "services/scheduler/scheduler.hpp"

namespace {

void AddFlags(CLI::App& app, tunebus::SchedulerOptions& o) {
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
  app.add_option("--finished-cache-mb", o.finished_cache_mb,
                 "MB of finished experiments read back from their journals (by ls, show, export, "
                 "the dashboard, whatif, warm starts) kept in memory for the next reads, least "
                 "recently read dropped first; 0 keeps none after the reply")
      ->envname("TUNEBUS_FINISHED_CACHE_MB")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--release-after-ms", o.release_after_ms,
                 "how long an ended experiment stays in memory with nothing in flight (journal "
                 "durable, files written) before its state is released and reads of it come from "
                 "its journal, ms; at least 11000, beyond the longest request timeout")
      ->envname("TUNEBUS_RELEASE_AFTER_MS")
      ->check(CLI::Range(int64_t(11000), std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  app.add_option(
         "--http", o.http,
         "serve the web dashboard on PORT (127.0.0.1) or HOST:PORT (0: any free "
         "port, which --ready-file names); default: no dashboard (docs/how-to/dashboard.md)")
      ->envname("TUNEBUS_HTTP")
      ->check(
          [](const std::string& v) {
            auto a = tunebus::dashboard::ParseHttpAddress(v);
            return a.ok() ? std::string() : a.status().message();
          },
          "PORT|HOST:PORT");
  app.add_option("--http-key-name", o.http_key_name,
                 "with --keys-dir: the dashboard's key (a viewer in the allow-list), "
                 "<keys-dir>/NAME.key_secret; required with --http then")
      ->envname("TUNEBUS_HTTP_KEY_NAME");
  app.add_option("--dashboard-secret", o.dashboard_secret_file,
                 "the secret that signs dashboard login tokens (made, 0600, if absent; default "
                 "<keys-dir>/dashboard_token.secret with keys, else in memory)")
      ->envname("TUNEBUS_DASHBOARD_SECRET");
  app.add_option("--retain-experiments", o.retention.keep_newest,
                 "keep the N newest finished experiments and delete older finished ones (their "
                 "journal, checkpoints and results folder, as tunectl delete); 0 = off "
                 "(docs/how-to/retention.md)")
      ->envname("TUNEBUS_RETAIN_EXPERIMENTS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--retain-days", o.retention.max_age_days,
                 "delete finished experiments that ended more than D days ago (fractions "
                 "allowed; an experiment's retention.days replaces it); 0 = off")
      ->envname("TUNEBUS_RETAIN_DAYS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

// What --ready-file names, by the flags above.
tunebus::service::BoundEndpoints Endpoints(const tunebus::Scheduler& s) {
  tunebus::service::BoundEndpoints bound = {{"control", s.control_endpoint()},
                                            {"workers", s.worker_endpoint()},
                                            {"events", s.events_endpoint()}};
  if (!s.http_url().empty()) bound["http"] = s.http_url();
  return bound;
}

}  // namespace

int main(int argc, char** argv) {
  tunebus::service::ReturnFreedHeapToTheSystem();  // libs/service/chunk_heap.hpp
  return tunebus::service::RunService<tunebus::Scheduler>(
      argc, argv, "scheduler", "tunebus scheduler: runs experiments and their trials", AddFlags,
      Endpoints);
}
