// `tunectl dashboard-token`: asks the scheduler for a dashboard login token (an operator's
// request, proto::IssueDashboardToken) and prints the sign-in URL (docs/how-to/dashboard.md
// "Sign-in").
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "proto/dashboard.hpp"
#include "services/scheduler/dashboard/tokens.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"

namespace tunebus {

void AddDashboardTokenCommand(CLI::App& app, Commands& commands) {
  auto flags = std::make_shared<DashboardTokenFlags>();
  auto* cmd = app.add_subcommand(
      "dashboard-token",
      "make a login token for the scheduler's web dashboard and print its sign-in URL");
  cmd->add_option("--role", flags->role,
                  "operator (sees and uses the control buttons) or viewer (reads only)")
      ->check(CLI::IsMember({"operator", "viewer"}))
      ->capture_default_str();
  cmd->add_option("--ttl", flags->ttl, "how long the token is valid: 90s, 30m, 12h, 7d (<= 30d)")
      ->capture_default_str();
  cmd->add_option("--name", flags->name,
                  "who the token names in the logs (default: your CURVE key's name, else "
                  "operator)");
  commands.push_back({cmd, CommandNeeds::kServer,
                      [flags](const GlobalFlags& g) { return DashboardTokenCommand(g, *flags); }});
}

int DashboardTokenCommand(const GlobalFlags& g, const DashboardTokenFlags& flags) {
  auto ttl = dashboard::ParseTokenTtl(flags.ttl);
  if (!ttl.ok()) {
    std::cerr << "tunectl: " << ttl.status().message() << "\n";
    return 2;
  }
  proto::IssueDashboardToken request;
  request.role = flags.role;
  request.name = flags.name;
  request.ttl_s = double(*ttl);
  return CallAndPrint(g, request, [](const nlohmann::json& body) {
    const std::string url = body.value("login_url", std::string());
    std::cout << "Dashboard login token for " << body.value("name", std::string()) << " ("
              << body.value("role", std::string()) << "), valid until "
              << dashboard::UtcDateTime(body.value("expires_at", int64_t(0))) << ":\n";
    if (!url.empty()) {
      std::cout << "  " << url << "\n";
    } else {
      std::cout << "  " << body.value("token", std::string())
                << "\n(this scheduler serves no dashboard now; with --http open "
                   "http://HOST:PORT/login?token=<the token>)\n";
    }
    std::cout << "Anyone with this URL acts as " << body.value("name", std::string())
              << " until then: keep it like a password.\n";
  });
}

}  // namespace tunebus
