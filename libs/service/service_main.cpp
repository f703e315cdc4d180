#include "libs/service/service_main.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <string>

#include "libs/bus/service_guard.hpp"
#include "libs/core/version.hpp"
#include "libs/metrics/metrics_flags.hpp"
#include "libs/service/security_flags.hpp"
#include "libs/service/stop_request.hpp"

namespace tunebus::service {

namespace {

// The running service, for the signal handler. One per process.
std::atomic<Service*> g_service{nullptr};

// SIGTERM/SIGINT: the stop request ends any wait outside the loop (stop_request.hpp), Stop() the
// loop.
extern "C" void OnStopSignal(int) {
  RequestStop();
  if (Service* s = g_service.load()) s->Stop();
}

// SIGHUP: the allow-list is reloaded by the ZAP handler's thread (bus::Security).
extern "C" void OnReloadSignal(int) { bus::Security::RequestReload(); }

void InstallSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  struct sigaction hup {};
  hup.sa_handler = OnReloadSignal;
  sigemptyset(&hup.sa_mask);
  hup.sa_flags = SA_RESTART;
  sigaction(SIGHUP, &hup, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// Tells systemd `state` ("READY=1", "STOPPING=1") through sd_notify(3): a Type=notify unit
// (deploy/systemd/) is started once the service sends READY=1, so After= orders the units. A
// no-op when NOTIFY_SOCKET is unset (not under systemd, or not Type=notify); a send that fails is
// logged and the service goes on. NOTIFY_SOCKET stays set, so STOPPING=1 can be sent later: the
// trainables a trial-worker starts inherit it, and the units' NotifyAccess=main makes systemd
// ignore what they send.
void NotifySystemd(const std::string& name, const char* state) {
  const int sent = sd_notify(0, state);
  if (sent > 0) {
    spdlog::debug("{} told systemd {}", name, state);
  } else if (sent < 0) {
    spdlog::warn("{} could not tell systemd {}: {}", name, state, std::strerror(-sent));
  }
}

// CLI11's verdict as an exit code: --help, --version and a healthy --healthcheck are 0, an
// unhealthy --healthcheck is the code it carries (1), every other parse error is a bad flag.
int ParseExitCode(CLI::App& app, const CLI::ParseError& e) {
  const int code = app.exit(e);
  if (code == 0) return kExitStopped;
  if (dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr) return code;
  return kExitBadFlags;
}

}  // namespace

std::string KeyNameOf(std::string_view name) {
  return name == "trial-worker" ? "worker" : std::string(name);
}

int RunService(int argc, char** argv, const ServiceMain& service,
               metrics::MetricsOptions& metrics) {
  CLI::App app{service.description};
  std::string log_level = "info";
  std::string ready_file;
  bus::SecurityOptions security;
  if (service.add_flags) service.add_flags(app);
  AddSecurityFlags(app, security);
  metrics::AddMetricsFlags(app, metrics);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--ready-file", ready_file,
                 "once every socket and the metrics port are bound, write them to this file as "
                 "JSON (atomically: {service, pid, endpoints: {flag: endpoint}, metrics_port}), "
                 "so ports given as tcp://host:* or --metrics-port * can be learned")
      ->envname("TUNEBUS_READY_FILE");
  // "tunebus-scheduler 0.1.0 (commit abc1234)" on stdout, exit 0 (libs/core/version.hpp).
  app.set_version_flag("--version", "tunebus-" + service.name + " " + VersionText());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ParseExitCode(app, e);
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (service.check_flags) {
    if (Status s = service.check_flags(); !s.ok()) {
      spdlog::error("{}: {}", service.name, s.message());
      return kExitBadFlags;
    }
  }

  auto loaded = LoadSecurity(security, service.key_name.empty() ? service.name : service.key_name);
  if (!loaded.ok()) {
    spdlog::critical("{} cannot start: {}", service.name, loaded.status().ToString());
    return kExitCannotStart;
  }
  if (service.set_security) service.set_security(std::move(loaded).value());

  InstallSignals();  // before Create: a SIGTERM while it starts is not lost
  return bus::GuardMain(service.name, [&] {
    // Bound before the service exists, so the ready file can name the port; the service
    // publishes on this server (MetricsOptions::server).
    if (metrics.port != 0) {
      auto server = metrics::MetricsServer::Start(metrics.host, metrics.port);
      if (server.ok()) {
        metrics.server = std::move(*server);
      } else {
        spdlog::error("No metrics endpoint: {}", server.status().ToString());
        metrics.port = 0;
      }
    }
    zmq::context_t ctx;
    auto created = service.create(ctx);
    if (!created.ok()) {
      spdlog::critical("{} cannot start: {}", service.name, created.status().ToString());
      return kExitCannotStart;
    }
    if (!ready_file.empty()) {
      const BoundEndpoints bound = (*created)->Endpoints();
      const int metrics_port = metrics.server ? metrics.server->port() : 0;
      if (Status s = WriteReadyFile(ready_file, service.name, bound, metrics_port); !s.ok()) {
        spdlog::critical("{} cannot start: {}", service.name, s.ToString());
        return kExitCannotStart;
      }
      std::string text = ReadyFileText(service.name, ::getpid(), bound, metrics_port);
      text.pop_back();  // the newline
      spdlog::info("{} wrote its ready file {}: {}", service.name, ready_file, text);
    }
    g_service.store(created->get());
    const bool stopped_before_run = StopRequested();  // a signal before this point stops it
    if (!stopped_before_run) {
      NotifySystemd(service.name, "READY=1");  // bound, ready file written: it serves now
      (*created)->Run();
    }
    g_service.store(nullptr);
    // The loop has ended; the service is destroyed below (its store closed, its trainables
    // killed), which systemd shows as "deactivating" from here.
    NotifySystemd(service.name, "STOPPING=1");
    metrics.server.reset();  // the service holds the last reference
    if (stopped_before_run) {
      spdlog::info("{} stopped during start-up", service.name);
    } else if (std::optional<std::string> what = StartUpWaitStopped()) {
      spdlog::info("{} stopped during start-up (waiting for {})", service.name, *what);
    } else {
      spdlog::info("{} stopped", service.name);
    }
    return kExitStopped;  // the service is destroyed here, before the context
  });
}

}  // namespace tunebus::service
