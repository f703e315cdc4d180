// ControlRoutes: the dashboard's sign-in and control routes (docs/how-to/dashboard.md "Control"), a
// handler each, registered by AddTo:
//
//   GET  /login                      the sign-in page (a form posting the token)
//   GET  /login?token=T              signs in with T (the URL `tunectl dashboard-token` prints)
//   POST /login  token=T             the form's sign-in (same-origin only)
//        both: the scheduler verifies T (VerifyDashboardToken); on success a session cookie
//        (HttpOnly, SameSite=Strict) and 303 to /; else 403 with the reason
//   POST /logout                     ends the session (CSRF header when signed in)
//   GET  /api/session                {signed_in: false} or {signed_in: true, name, role,
//                                     expires_at, csrf}
//   GET  /api/actions?experiment=J   the action log of experiment J (as the page names it),
//                                     newest first: [{time, who, role, action, experiment,
//                                     trial_id, weight?, ok, result}]
//   POST /api/experiments/J/trials/ID/{stop,pause,resume}
//   POST /api/experiments/J/{stop,interrupt}
//   POST /api/experiments/J/weight   body {"weight": W} (application/json)
//        each: same-origin, signed in, header X-CSRF-Token = the session's, an operator's
//        session (CheckControlPost; else 403 and nothing changes); then DashboardAction with the
//        session's token, which the scheduler checks again and logs. Answer: {ok, entry, body}
//        (the request's reply body) or {error, entry} with the status of the scheduler's error.
//
// The sessions and the action log are the server's (it owns them; these routes create and end
// sessions and add the log's entries). Thread-safety: handlers run on several HTTP threads at
// once; SessionTable and ActionLog are thread-safe.
#pragma once

#include <optional>
#include <string>

#include "proto/dashboard.hpp"
#include "services/scheduler/dashboard/http.hpp"
#include "services/scheduler/dashboard/routes/control_pool.hpp"
#include "services/scheduler/dashboard/sessions.hpp"

namespace tunebus::dashboard {

class ControlRoutes {
 public:
  /// REQUIRES: every reference outlives this.
  ControlRoutes(ControlPool& control, SessionTable& sessions, ActionLog& actions)
      : control_(control), sessions_(sessions), actions_(actions) {}
  void AddTo(Router& router);

 private:
  void ServeLoginPage(const httplib::Request& req, httplib::Response& res);
  void ServeLogin(const httplib::Request& req, httplib::Response& res);
  void ServeLogout(const httplib::Request& req, httplib::Response& res);
  void ServeSession(const httplib::Request& req, httplib::Response& res);
  void ServeActions(const httplib::Request& req, httplib::Response& res);
  void ServeTrialAction(const httplib::Request& req, httplib::Response& res);
  void ServeExperimentAction(const httplib::Request& req, httplib::Response& res);
  /// The session of the request's cookie, if it names a live one.
  std::optional<Session> SessionOf(const httplib::Request& req);
  /// Signs in with `token` (the scheduler verifies it): a session cookie and 303 to /, or the
  /// refused page.
  void SignIn(const std::string& token, httplib::Response& res);
  /// One action: the gate (CheckControlPost), then the scheduler decides with the session's
  /// token; the action log gets its entry.
  void Act(const httplib::Request& req, httplib::Response& res, proto::DashboardAction action);

  ControlPool& control_;
  SessionTable& sessions_;  // signed-in browsers
  ActionLog& actions_;      // the actions taken in the pages
};

}  // namespace tunebus::dashboard
