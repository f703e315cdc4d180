// DashboardHandlers: the control socket's dashboard requests (proto/dashboard.hpp,
// docs/how-to/dashboard.md "Control"): login tokens are issued and checked here, with the secret
// the scheduler alone holds, and a dashboard action runs as the tunectl request it names (answered
// by that request's handler in TrialHandlers or ExperimentHandlers) once its token grants
// operator. Each issue, refusal and action is logged with the token's name and role.
//
// Owns the login-token secret (dashboard/tokens.hpp), loaded or made by LoadTokens. Uses the
// ControlContext and the two handler groups (all outlive it). Threads: the scheduler's loop.
#pragma once

#include <memory>
#include <string>

#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/control/control_context.hpp"

namespace tunebus {

class ExperimentHandlers;
class TrialHandlers;
namespace dashboard {
class LoginTokens;
}  // namespace dashboard

class DashboardHandlers {
 public:
  DashboardHandlers(ControlContext& control, TrialHandlers& trials,
                    ExperimentHandlers& experiments);
  ~DashboardHandlers();
  DashboardHandlers(const DashboardHandlers&) = delete;
  DashboardHandlers& operator=(const DashboardHandlers&) = delete;

  /// Reads or makes the token secret: the file options().dashboard_secret_file (made if absent),
  /// else with CURVE keys <keys-dir>/dashboard_token.secret (in memory when it cannot be made
  /// there), else in memory. Errors: the secret file's (an explicit one, or one that exists,
  /// that does not load). REQUIRES: called once, before the first request.
  Status LoadTokens();
  /// The dashboard's "http://HOST:PORT/" (named in issued tokens' login_url); "" = none.
  void set_http_url(std::string url) { http_url_ = std::move(url); }

  Status HandleIssueDashboardToken(bus::Incoming& in, const proto::Decoded& d);
  Status HandleVerifyDashboardToken(bus::Incoming& in, const proto::Decoded& d);
  Status HandleDashboardAction(bus::Incoming& in, const proto::Decoded& d);

 private:
  ControlContext& control_;
  TrialHandlers& trials_;
  ExperimentHandlers& experiments_;
  std::unique_ptr<dashboard::LoginTokens> tokens_;
  std::string http_url_;
};

}  // namespace tunebus
