// RunService: the one main of every service (checkpoint-store, resource-manager, scheduler,
// trial-worker). A service's main.cpp declares its own flags and how to create it; RunService
// does the rest, the same way for all:
//
//   1. flags (CLI11; each flag may fall back to a TUNEBUS_* environment variable) plus the
//      shared ones: --log-level (TUNEBUS_LOG_LEVEL, checked: trace, debug, info, warn, error,
//      critical, off), --metrics-port, --metrics-host and --healthcheck (metrics_flags.hpp);
//   2. logging at that level;
//   3. SIGTERM/SIGINT handlers, installed BEFORE the service is created, so a signal that arrives
//      while it starts stops it as soon as it exists; SIGPIPE ignored (a peer or child that
//      closed its pipe fails a write with EPIPE instead of killing the service);
//   4. creation and Run() inside GuardMain: an exception that escapes is a logged message and
//      exit 1, never an abort.
//
// Exit codes: kExitStopped (0) after a clean stop (or a healthy --healthcheck, or --help),
// kExitCannotStart (1) when creation fails ("<name> cannot start: <status>"), an exception
// escapes, or --healthcheck finds the service unhealthy, kExitBadFlags (2) for flags CLI11 or
// check_flags refuse.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <zmq.hpp>

#include "libs/core/status.hpp"
#include "libs/metrics/metrics_publisher.hpp"

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
};

/// A service's main, as its main.cpp declares it.
struct ServiceMain {
  /// "checkpoint-store": names the service in log lines.
  std::string name;
  /// The --help header.
  std::string description;
  /// Declares the service's own flags on `app`; their variables must outlive RunService.
  std::function<void(CLI::App& app)> add_flags;
  /// Optional: runs after parsing to check and convert flags. An error is logged as
  /// "<name>: <message>" and exits kExitBadFlags.
  std::function<Status()> check_flags;
  /// Creates the service (binds sockets, opens files) with the parsed flags. Runs on the main
  /// thread after the signal handlers are installed. An error exits kExitCannotStart.
  std::function<Result<std::unique_ptr<Service>>(zmq::context_t& ctx)> create;
};

/// The whole main of a service (see the file comment). `metrics` receives the metrics flags.
/// Returns the process exit code.
int RunService(int argc, char** argv, const ServiceMain& service, metrics::MetricsOptions& metrics);

/// The usual main: `add_flags` declares the service's flags into its options (a free function
/// of the main.cpp), and the service is S::Create(ctx, options). For example
///   int main(int argc, char** argv) {
///     return RunService<ResourceManager>(argc, argv, "resource-manager", "...", AddFlags);
///   }
template <typename S, typename Options>
int RunService(int argc, char** argv, std::string name, std::string description,
               void (*add_flags)(CLI::App& app, Options& options));

/// Adapts a service class with Run() and an async-signal-safe Stop() to Service.
template <typename S>
class ServiceOf final : public Service {
 public:
  explicit ServiceOf(std::unique_ptr<S> service) : service_(std::move(service)) {}
  void Run() override { service_->Run(); }
  void Stop() override { service_->Stop(); }

 private:
  std::unique_ptr<S> service_;
};

/// `created` (a service's Create() result) as a Service for ServiceMain::create.
template <typename S>
Result<std::unique_ptr<Service>> Serve(Result<std::unique_ptr<S>> created) {
  if (!created.ok()) return created.status();
  return std::unique_ptr<Service>(std::make_unique<ServiceOf<S>>(std::move(created).value()));
}

template <typename S, typename Options>
int RunService(int argc, char** argv, std::string name, std::string description,
               void (*add_flags)(CLI::App& app, Options& options)) {
  Options options;
  ServiceMain service{std::move(name), std::move(description)};
  service.add_flags = [&options, add_flags](CLI::App& app) { add_flags(app, options); };
  service.create = [&options](zmq::context_t& ctx) { return Serve(S::Create(ctx, options)); };
  return RunService(argc, argv, service, options.metrics);
}

}  // namespace tunebus::service
