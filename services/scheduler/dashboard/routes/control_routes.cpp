#include "services/scheduler/dashboard/routes/control_routes.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "services/scheduler/dashboard/assets.hpp"

namespace tunebus::dashboard {

// Named (not anonymous): the unity build compiles this file with the other routes' files.
namespace control_routes {

using nlohmann::json;

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  SendJson(res, body);
}

PostHeaders HeadersOf(const httplib::Request& req) {
  return {req.get_header_value("Host"), req.get_header_value("Origin"),
          req.get_header_value("Sec-Fetch-Site"), req.get_header_value(std::string(kCsrfHeader))};
}

// A short page for a refused sign-in (the browser came from a link, not from the page's script).
void RefusedPage(httplib::Response& res, const Status& s) {
  res.status = HttpStatusOf(s);
  res.set_header("Cache-Control", "no-store");
  std::string escaped;
  for (char c : s.message()) {
    switch (c) {
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '&':
        escaped += "&amp;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  res.set_content(fmt::format("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                              "<title>tunebus · sign-in refused</title><link rel=\"stylesheet\" "
                              "href=\"/static/dashboard.css\"></head><body><main><h1>Sign-in "
                              "refused</h1><p id=\"error\" class=\"error\">{}</p><p><a "
                              "href=\"/login\">Sign in again</a> · <a href=\"/\">experiments</a>"
                              "</p></main></body></html>",
                              escaped),
                  "text/html; charset=utf-8");
}

// The action log's entry of `action` asked by `session` (its outcome is added later).
json EntryOf(const std::optional<Session>& session, const proto::DashboardAction& action) {
  json entry = {{"time", NowUnix()},
                {"who", session ? session->claims.name : std::string()},
                {"role", session ? std::string(bus::RoleName(session->claims.role)) : ""},
                {"action", action.action},
                {"experiment", action.experiment},
                {"trial_id", action.trial_id}};
  if (action.action == "set_weight") entry["weight"] = action.weight;
  return entry;
}

// The log's words for the scheduler's answer `reply` to `action`.
std::string ResultText(const json& reply, const proto::DashboardAction& action) {
  if (action.action == "set_weight") {
    return fmt::format("weight {} (share {:.0f}%)", reply.value("weight", 0.0),
                       100 * reply.value("share", 0.0));
  }
  std::string result = reply.value("message", std::string());
  if (result.empty() && reply.contains("status")) {
    result = fmt::format("experiment {} is {}", reply.value("name", action.experiment),
                         reply.value("status", std::string()));
  }
  return result;
}

// Who sent a refused POST, for the log line.
std::string WhoOf(const std::optional<Session>& session) {
  return session ? fmt::format("{} ({})", session->claims.name, bus::RoleName(session->claims.role))
                 : std::string("a browser that is not signed in");
}

}  // namespace control_routes

using nlohmann::json;

void ControlRoutes::AddTo(Router& router) {
  router.Get("/login", Router::Bind(this, &ControlRoutes::ServeLoginPage));
  router.Post("/login", Router::Bind(this, &ControlRoutes::ServeLogin));
  router.Post("/logout", Router::Bind(this, &ControlRoutes::ServeLogout));
  router.Get("/api/session", Router::Bind(this, &ControlRoutes::ServeSession));
  router.Get("/api/actions", Router::Bind(this, &ControlRoutes::ServeActions));
  router.Post(R"(/api/experiments/([^/]+)/trials/([^/]+)/(stop|pause|resume))",
              Router::Bind(this, &ControlRoutes::ServeTrialAction));
  router.Post(R"(/api/experiments/([^/]+)/(stop|interrupt|weight))",
              Router::Bind(this, &ControlRoutes::ServeExperimentAction));
}

std::optional<Session> ControlRoutes::SessionOf(const httplib::Request& req) {
  return sessions_.Find(CookieValue(req.get_header_value("Cookie"), kSessionCookie),
                        control_routes::NowUnix());
}

void ControlRoutes::SignIn(const std::string& token, httplib::Response& res) {
  proto::VerifyDashboardToken verify;
  verify.token = token;
  auto verified = control_.Call(verify);
  if (!verified.ok()) return control_routes::RefusedPage(res, verified.status());
  TokenClaims claims;
  claims.name = verified->value("name", std::string());
  claims.role = bus::ParseRole(verified->value("role", std::string())).value_or(bus::Role::kViewer);
  claims.issued_at = verified->value("issued_at", int64_t(0));
  claims.expires_at = verified->value("expires_at", int64_t(0));
  const Session session = sessions_.Create(token, claims);
  spdlog::info("Dashboard: {} ({}) signed in; the session ends with the token", claims.name,
               bus::RoleName(claims.role));
  res.status = 303;
  res.set_header("Set-Cookie",
                 SessionCookie(session.id, claims.expires_at - control_routes::NowUnix()));
  res.set_header("Location", "/");
  res.set_header("Cache-Control", "no-store");
}

void ControlRoutes::ServeLoginPage(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("token")) {
    const std::string_view* page = FindAsset("login.html");
    if (page == nullptr) {
      return control_routes::Reply(res, 404, {{"error", "login.html is not in this build"}});
    }
    return res.set_content(PageWithVersion(*page), "text/html; charset=utf-8");
  }
  SignIn(req.get_param_value("token"), res);
}

void ControlRoutes::ServeLogin(const httplib::Request& req, httplib::Response& res) {
  if (Status st = CheckSameOrigin(control_routes::HeadersOf(req)); !st.ok()) {
    return control_routes::RefusedPage(res, st);
  }
  httplib::Params form;  // application/x-www-form-urlencoded
  httplib::detail::parse_query_text(req.body, form);
  auto token = form.find("token");
  SignIn(token == form.end() ? std::string() : token->second, res);
}

void ControlRoutes::ServeLogout(const httplib::Request& req, httplib::Response& res) {
  using control_routes::Reply;
  auto session = SessionOf(req);
  const PostHeaders h = control_routes::HeadersOf(req);
  if (Status st = CheckSameOrigin(h); !st.ok()) return Reply(res, 403, {{"error", st.message()}});
  if (session) {
    if (!SameSecret(h.csrf, session->csrf)) {
      return Reply(res, 403, {{"error", "missing or wrong CSRF token"}});
    }
    sessions_.Erase(session->id);
    spdlog::info("Dashboard: {} ({}) signed out", session->claims.name,
                 bus::RoleName(session->claims.role));
  }
  res.set_header("Set-Cookie", SessionCookie("", 0));
  Reply(res, 200, {{"signed_in", false}});
}

void ControlRoutes::ServeSession(const httplib::Request& req, httplib::Response& res) {
  auto session = SessionOf(req);
  if (!session) return control_routes::Reply(res, 200, {{"signed_in", false}});
  control_routes::Reply(res, 200,
                        {{"signed_in", true},
                         {"name", session->claims.name},
                         {"role", std::string(bus::RoleName(session->claims.role))},
                         {"expires_at", session->claims.expires_at},
                         {"csrf", session->csrf}});
}

void ControlRoutes::ServeActions(const httplib::Request& req, httplib::Response& res) {
  control_routes::Reply(res, 200, actions_.For(req.get_param_value("experiment"), 100));
}

void ControlRoutes::ServeTrialAction(const httplib::Request& req, httplib::Response& res) {
  proto::DashboardAction a;
  a.experiment = req.matches[1].str();
  a.trial_id = req.matches[2].str();
  a.action = req.matches[3].str() + "_trial";
  Act(req, res, std::move(a));
}

void ControlRoutes::ServeExperimentAction(const httplib::Request& req, httplib::Response& res) {
  proto::DashboardAction a;
  a.experiment = req.matches[1].str();
  const std::string verb = req.matches[2].str();
  a.action = verb == "weight" ? "set_weight" : verb + "_experiment";
  if (verb == "weight") {
    // Not a number: weight 0, which the scheduler refuses (after the gate).
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_object() && body.contains("weight") && body["weight"].is_number()) {
      a.weight = body["weight"].get<double>();
    }
  }
  Act(req, res, std::move(a));
}

void ControlRoutes::Act(const httplib::Request& req, httplib::Response& res,
                        proto::DashboardAction action) {
  using control_routes::Reply;
  auto session = SessionOf(req);
  json entry = control_routes::EntryOf(session, action);
  if (Status st = CheckControlPost(session, control_routes::HeadersOf(req)); !st.ok()) {
    spdlog::warn("Dashboard: refused POST {} from {}: {}", req.path, control_routes::WhoOf(session),
                 st.message());
    entry["ok"] = false;
    entry["result"] = st.message();
    // Only signed-in attempts enter the page's log: anyone may send the others.
    if (session) actions_.Add(entry);
    return Reply(res, 403, {{"error", st.message()}, {"entry", entry}});
  }
  action.token = session->token;
  auto reply = control_.Call(action);
  entry["ok"] = reply.ok();
  entry["result"] =
      reply.ok() ? control_routes::ResultText(*reply, action) : reply.status().message();
  actions_.Add(entry);
  if (!reply.ok()) {
    return Reply(res, HttpStatusOf(reply.status()),
                 {{"error", reply.status().message()}, {"entry", entry}});
  }
  Reply(res, 200, {{"ok", true}, {"entry", entry}, {"body", *reply}});
}

}  // namespace tunebus::dashboard
