// Control socket messages of the web dashboard's sign-in and control (docs/how-to/dashboard.md
// "Control"): tunectl asks the scheduler for a login token, the dashboard checks a token at
// sign-in and sends the signed-in operator's actions with it. Answered like every control
// request (proto/control.hpp): ControlReply with a JSON body, or ErrorReply.
#pragma once

#include <string>

#include "proto/envelope.hpp"

namespace tunebus::proto {

/// Make a dashboard login token (`tunectl dashboard-token`). Only an operator may send it (the
/// sender's CURVE key's role; without keys the control socket admits every local client).
/// body: {token, name, role, issued_at, expires_at (seconds since the epoch), http_url ("" when
/// the scheduler serves no dashboard), login_url (http_url + "login?token=" + token, or "")}.
/// Errors: invalid_argument for a role other than viewer or operator, a ttl_s outside
/// (0, 30 days], a name that is empty after defaults or longer than 64 bytes.
struct IssueDashboardToken {
  TUNEBUS_ENVELOPE("issue_dashboard_token");
  std::string role = "operator";  // "viewer" | "operator"
  /// Who the token names in the logs; "" = the sender's key name (CURVE), else "operator".
  std::string name;
  double ttl_s = 12 * 3600;  // seconds the token is valid
  TUNEBUS_DEFINE_MAP(v, type, id, role, name, ttl_s)
};

/// Check a login token (the dashboard's sign-in; a viewer may send it). body: {name, role,
/// issued_at, expires_at}. Errors: invalid_argument "not a dashboard login token" (malformed),
/// forbidden "... does not verify ..." (another scheduler's, tampered, or made before the secret
/// changed) or "... expired at ...".
struct VerifyDashboardToken {
  TUNEBUS_ENVELOPE("verify_dashboard_token");
  std::string token;
  TUNEBUS_DEFINE_MAP(v, type, id, token)
};

/// An action a signed-in operator took in the dashboard: the dashboard's own control client is
/// a viewer, so the scheduler authorizes the action by `token`, which must verify and grant
/// operator. `action` is one of stop_trial, pause_trial, resume_trial (trial_id), stop_experiment,
/// interrupt_experiment, set_weight (weight > 0); each runs as the tunectl request it names
/// (stop_trial_command, pause_trial_command, resume_trial_command, stop_experiment,
/// stop_experiment with interrupt, set_experiment_weight) and answers with that request's body.
/// The scheduler logs each one with the token's name and role, the action and its outcome.
/// Errors: VerifyDashboardToken's; forbidden for a viewer token; invalid_argument for another
/// action; the request's own errors.
struct DashboardAction {
  TUNEBUS_ENVELOPE("dashboard_action");
  std::string token;
  std::string action;
  std::string experiment;  // name or journal name, as in StopTrialCommand
  std::string trial_id;
  double weight = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, token, action, experiment, trial_id, weight)
};

}  // namespace tunebus::proto
