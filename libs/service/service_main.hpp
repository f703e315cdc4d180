// RunService: the one main of every service (checkpoint-store, resource-manager, scheduler,
// trial-worker). A service's main.cpp declares its own flags and how to create it; RunService
// does the rest, the same way for all:
//
//   1. flags (CLI11; each flag may fall back to a TUNEBUS_* environment variable) plus the
//      shared ones: the security flags (security_flags.hpp; the Security they load is handed to
//      the service before it is created, and SIGHUP reloads its allow-list), --log-level
//      (TUNEBUS_LOG_LEVEL, checked: trace, debug, info, warn, error, critical, off),
//      --metrics-port, --metrics-host and --healthcheck (metrics_flags.hpp),
//      --ready-file (TUNEBUS_READY_FILE), --version ("tunebus-<name> 0.1.0 (commit abc1234)",
//      libs/core/version.hpp);
//   2. logging at that level;
//   3. SIGTERM/SIGINT handlers, installed BEFORE the service is created, so a signal that arrives
//      while it starts stops it as soon as it exists; the handler requests the stop
//      (stop_request.hpp: it ends every wait outside the service's loop, start-up waits such as
//      the scheduler's journal reads included) and calls Service::Stop(); SIGPIPE ignored (a peer
//      or child that closed its pipe fails a write with EPIPE instead of killing the service);
//   4. inside GuardMain (an exception that escapes is a logged message and exit 1, never an
//      abort): the metrics endpoint is bound (a port that cannot be bound is logged and the
//      service runs without metrics, as before), the service is created (it binds its sockets),
//      the ready file is written (ready_file.hpp: every bound endpoint by flag, wildcard ports
//      resolved, and the metrics port), systemd is told READY=1 (sd_notify; a no-op unless
//      NOTIFY_SOCKET is set, as in a Type=notify unit of deploy/systemd/), and Run() serves;
//      once Run() returns, systemd is told STOPPING=1.
//
// Exit codes: kExitStopped (0) after a clean stop, whenever SIGTERM/SIGINT came (logged "<name>
// stopped", or "<name> stopped during start-up" before the service served), a healthy
// --healthcheck, --help or --version; kExitCannotStart (1) when creation fails ("<name> cannot
// start: <status>"), the ready file cannot be written, an exception escapes, or --healthcheck
// finds the service unhealthy; kExitBadFlags (2) for flags CLI11 or check_flags refuse.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <zmq.hpp>

#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"
#include "libs/metrics/metrics_publisher.hpp"
#include "libs/service/ready_file.hpp"

namespace tunebus::service {

inline constexpr int kExitStopped = 0;
inline constexpr int kExitCannotStart = 1;
inline constexpr int kExitBadFlags = 2;

/// What RunService drives: Run() serves until Stop(). Stop() must be async-signal-safe (an
/// atomic store, as EventLoop::Stop is): the signal handler calls it.
class Service {
 public:
  virtual ~Service() = default;
  virtual void Run() = 0;
  virtual void Stop() = 0;
  /// What it bound, by flag name, wildcard ports resolved (for the ready file). Called after
  /// creation, before Run().
  virtual BoundEndpoints Endpoints() const { return {}; }
};

/// A service's main, as its main.cpp declares it.
struct ServiceMain {
  /// "checkpoint-store": names the service in log lines.
  std::string name;
  /// The --help header.
  std::string description;
  /// Declares the service's own flags on `app`; their variables must outlive RunService.
  std::function<void(CLI::App& app)> add_flags;
  /// The name of this service's keypair when --key-name is not given ("scheduler", "worker").
  std::string key_name;
  /// Receives the loaded Security (plaintext without --keys-dir) before `create` runs.
  std::function<void(std::shared_ptr<bus::Security>)> set_security;
  /// Optional: runs after parsing to check and convert flags. An error is logged as
  /// "<name>: <message>" and exits kExitBadFlags.
  std::function<Status()> check_flags;
  /// Creates the service (binds sockets, opens files) with the parsed flags. Runs on the main
  /// thread after the signal handlers are installed. An error exits kExitCannotStart.
  std::function<Result<std::unique_ptr<Service>>(zmq::context_t& ctx)> create;
};

/// The whole main of a service (see the file comment). `metrics` receives the metrics flags, and
/// the bound metrics server (MetricsOptions::server) before service.create runs. Returns the
/// process exit code.
int RunService(int argc, char** argv, const ServiceMain& service, metrics::MetricsOptions& metrics);

/// The default key name of service `name`: "worker" for "trial-worker", else `name`.
std::string KeyNameOf(std::string_view name);

/// The usual main: `add_flags` declares the service's flags into its options (a free function
/// of the main.cpp), the service is S::Create(ctx, options), and `endpoints` (null for a service
/// that binds no socket) names what it bound by the flags of the main.cpp. For example
///   int main(int argc, char** argv) {
///     return RunService<ResourceManager>(argc, argv, "resource-manager", "...", AddFlags,
///                                        Endpoints);
///   }
template <typename S, typename Options>
int RunService(int argc, char** argv, std::string name, std::string description,
               void (*add_flags)(CLI::App& app, Options& options),
               BoundEndpoints (*endpoints)(const S& service) = nullptr);

/// Adapts a service class with Run() and an async-signal-safe Stop() to Service; `endpoints`
/// (may be null) answers Endpoints().
template <typename S>
class ServiceOf final : public Service {
 public:
  explicit ServiceOf(std::unique_ptr<S> service,
                     BoundEndpoints (*endpoints)(const S& service) = nullptr)
      : service_(std::move(service)), endpoints_(endpoints) {}
  void Run() override { service_->Run(); }
  void Stop() override { service_->Stop(); }
  BoundEndpoints Endpoints() const override {
    return endpoints_ ? endpoints_(*service_) : BoundEndpoints{};
  }

 private:
  std::unique_ptr<S> service_;
  BoundEndpoints (*endpoints_)(const S& service);
};

/// `created` (a service's Create() result) as a Service for ServiceMain::create.
template <typename S>
Result<std::unique_ptr<Service>> Serve(Result<std::unique_ptr<S>> created,
                                       BoundEndpoints (*endpoints)(const S& service) = nullptr) {
  if (!created.ok()) return created.status();
  return std::unique_ptr<Service>(
      std::make_unique<ServiceOf<S>>(std::move(created).value(), endpoints));
}

template <typename S, typename Options>
int RunService(int argc, char** argv, std::string name, std::string description,
               void (*add_flags)(CLI::App& app, Options& options),
               BoundEndpoints (*endpoints)(const S& service)) {
  Options options;
  ServiceMain service{std::move(name), std::move(description)};
  service.key_name = KeyNameOf(service.name);
  service.set_security = [&options](std::shared_ptr<bus::Security> s) {
    options.security = std::move(s);
  };
  service.add_flags = [&options, add_flags](CLI::App& app) { add_flags(app, options); };
  service.create = [&options, endpoints](zmq::context_t& ctx) {
    return Serve(S::Create(ctx, options), endpoints);
  };
  return RunService(argc, argv, service, options.metrics);
}

}  // namespace tunebus::service
