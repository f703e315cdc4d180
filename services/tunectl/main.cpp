// tunectl: run experiments (embedded or against a cluster) and control a running scheduler.
// main holds the global flags; each command group adds its subcommands (commands.hpp).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>

#include "libs/core/version.hpp"
#include "libs/service/chunk_heap.hpp"
#include "libs/service/security_flags.hpp"
#include "services/tunectl/commands.hpp"

namespace tunebus {

void AddReadExperimentFlag(CLI::App& command, GlobalFlags& g) {
  command.add_option("--experiment,-e", g.experiment,
                     "the experiment (name, or journal name NAME-ID); default: the only running "
                     "one, else the newest");
}

void AddChangeExperimentFlag(CLI::App& command, GlobalFlags& g) {
  command.add_option("--experiment,-e", g.experiment,
                     "the experiment (name, or journal name NAME-ID); default: the only "
                     "running one (with several, name one)");
}

namespace {

// The flags every subcommand takes (before or after its name: `tunectl ls -o json`).
void AddGlobalFlags(CLI::App& app, GlobalFlags& g, std::string& log_level,
                    bus::SecurityOptions& security) {
  app.require_subcommand(1);
  app.fallthrough();
  // "tunectl 0.1.0 (commit abc1234)" on stdout, exit 0 (libs/core/version.hpp).
  app.set_version_flag("--version", std::string("tunectl ") + VersionText());
  app.add_option("--connect,-c", g.connect, "scheduler control endpoint")
      ->envname("TUNEBUS_CONTROL_ENDPOINT");
  app.add_option("--output,-o", g.output, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  app.add_option("--timeout-ms", g.timeout_ms, "control request timeout")->capture_default_str();
  app.add_option("--log-level", log_level, "service log level in embedded mode")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->capture_default_str();
  service::AddSecurityFlags(app, security);
}

// Runs the chosen command (see CommandNeeds) and returns the exit code.
int Run(const Command& command, GlobalFlags& g, const bus::SecurityOptions& security) {
  g.keys_dir = security.keys_dir;
  if (command.needs == CommandNeeds::kNothing) return command.run(g);
  if (auto loaded = service::LoadSecurity(security, "tunectl"); loaded.ok()) {
    g.security = std::move(loaded).value();
  } else {
    std::cerr << "tunectl: " << loaded.status().message() << "\n";
    return 2;
  }
  // A library error that escapes a command (a file system or socket failure) is a message and
  // exit 1, never an abort.
  try {
    if (command.needs == CommandNeeds::kServer && g.connect.empty()) {
      g.connect = "tcp://127.0.0.1:5555";
    }
    return command.run(g);
  } catch (const std::exception& e) {
    std::cerr << "tunectl: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace tunebus

int main(int argc, char** argv) {
  using namespace tunebus;
  service::ReturnFreedHeapToTheSystem();  // `up` and `run` embed a suite:
                                          // libs/service/chunk_heap.hpp
  CLI::App app{"tunectl: run and control tunebus hyperparameter-tuning experiments"};
  GlobalFlags g;
  std::string log_level = "warn";
  bus::SecurityOptions security;
  AddGlobalFlags(app, g, log_level, security);
  Commands commands;
  AddKeygenCommand(app, commands);
  AddRunCommands(app, commands);
  AddValidateCommands(app, commands);
  AddOperatorCommands(app, g, commands);
  AddWatchCommand(app, g, commands);
  AddControlCommands(app, g, commands);
  AddDashboardTokenCommand(app, commands);
  AddCheckpointCommands(app, g, commands);
  AddWhatIfCommand(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // Logs (the embedded services' too) go to stderr: stdout holds only what the command prints,
  // so `-o json` output is one JSON document.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  spdlog::set_level(spdlog::level::from_str(log_level));
  for (const Command& command : commands) {
    if (*command.app) return Run(command, g, security);
  }
  return 2;
}
