// DashboardHandlers: login tokens and dashboard actions (dashboard_handlers.hpp).
#include "services/scheduler/control/handlers/dashboard_handlers.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

#include "proto/control.hpp"
#include "proto/dashboard.hpp"
#include "services/scheduler/control/handlers/experiment_handlers.hpp"
#include "services/scheduler/control/handlers/trial_handlers.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/dashboard/tokens.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

constexpr const char* kSecretFileName = "dashboard_token.secret";

json ClaimsJson(const dashboard::TokenClaims& c) {
  return {{"name", c.name},
          {"role", std::string(bus::RoleName(c.role))},
          {"issued_at", c.issued_at},
          {"expires_at", c.expires_at}};
}

// A handler of `group` as the dispatcher's table holds it.
template <typename G>
service::MessageHandler Bind(G& group,
                             Status (G::*handler)(bus::Incoming&, const proto::Decoded&)) {
  return [&group, handler](bus::Incoming& in, const proto::Decoded& d) {
    return (group.*handler)(in, d);
  };
}

}  // namespace

DashboardHandlers::DashboardHandlers(ControlContext& control, TrialHandlers& trials,
                                     ExperimentHandlers& experiments)
    : control_(control), trials_(trials), experiments_(experiments) {}

DashboardHandlers::~DashboardHandlers() = default;

Status DashboardHandlers::LoadTokens() {
  // An explicit file must load; the keys folder's default may be read-only (a mounted secret):
  // when the file cannot be made there, the secret is kept in memory, and a restart ends the
  // tokens made before it.
  std::string path = control_.options().dashboard_secret_file;
  const bool explicit_file = !path.empty();
  if (!explicit_file && control_.options().security->curve()) {
    path =
        (std::filesystem::path(control_.options().security->keys_dir()) / kSecretFileName).string();
  }
  if (!path.empty()) {
    auto loaded = dashboard::LoginTokens::Load(path);
    if (loaded.ok()) {
      tokens_ = std::make_unique<dashboard::LoginTokens>(std::move(*loaded));
      spdlog::info("Dashboard login tokens are signed with the secret in {}", path);
      return Status::Ok();
    }
    // Only a file that could not be made falls back; one that exists must load.
    if (explicit_file || std::filesystem::exists(path)) return loaded.status();
    spdlog::warn(
        "{}; dashboard login tokens are signed with a secret kept in memory instead "
        "(they end when the scheduler stops)",
        loaded.status().message());
  }
  tokens_ = std::make_unique<dashboard::LoginTokens>(dashboard::LoginTokens::InMemory());
  return Status::Ok();
}

Status DashboardHandlers::HandleIssueDashboardToken(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::IssueDashboardToken>();
  if (!msg.ok()) return msg.status();
  const auto role = bus::ParseRole(msg->role);
  if (!role || (*role != bus::Role::kViewer && *role != bus::Role::kOperator)) {
    return Status::InvalidArgument(fmt::format(
        "a dashboard token's role is viewer or operator, not '{}'", msg->role.substr(0, 40)));
  }
  if (!(msg->ttl_s > 0) || !(msg->ttl_s <= double(dashboard::LoginTokens::kMaxTtlS))) {
    return Status::InvalidArgument(fmt::format(
        "a dashboard token is valid for more than 0 s and at most 30 days, not {} s", msg->ttl_s));
  }
  const std::string issuer =
      in.key.empty() ? std::string("a local client") : control_.options().security->KeyName(in.key);
  dashboard::TokenClaims claims;
  claims.name = !msg->name.empty() ? msg->name : in.key.empty() ? "operator" : issuer;
  claims.role = *role;
  claims.issued_at = int64_t(control_.parts().clock.WallSeconds());
  claims.expires_at = claims.issued_at + std::max<int64_t>(1, std::llround(msg->ttl_s));
  if (Status s = dashboard::LoginTokens::CheckClaims(claims); !s.ok()) return s;
  const std::string token = tokens_->Issue(claims);
  spdlog::info("Dashboard login token for {} ({}) issued by {}, valid until {}", claims.name,
               bus::RoleName(claims.role), issuer, dashboard::UtcDateTime(claims.expires_at));
  json body = ClaimsJson(claims);
  body["token"] = token;
  body["http_url"] = http_url_;
  body["login_url"] = http_url_.empty() ? "" : http_url_ + "login?token=" + token;
  control_.ReplyRead(in, d.id(), body);
  return Status::Ok();
}

Status DashboardHandlers::HandleVerifyDashboardToken(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::VerifyDashboardToken>();
  if (!msg.ok()) return msg.status();
  auto claims = tokens_->Verify(msg->token, int64_t(control_.parts().clock.WallSeconds()));
  if (!claims.ok()) {
    spdlog::warn("Dashboard sign-in refused: {}", claims.status().message());
    return claims.status();
  }
  control_.ReplyRead(in, d.id(), ClaimsJson(*claims));
  return Status::Ok();
}

Status DashboardHandlers::HandleDashboardAction(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::DashboardAction>();
  if (!msg.ok()) return msg.status();
  const std::string target = msg->trial_id.empty() ? fmt::format("experiment {}", msg->experiment)
                                                   : fmt::format("trial {} of experiment {}",
                                                                 msg->trial_id, msg->experiment);
  const std::string what = msg->action == "set_weight"
                               ? fmt::format("set_weight {} of {}", msg->weight, target)
                               : fmt::format("{} of {}", msg->action.substr(0, 40), target);
  auto claims = tokens_->Verify(msg->token, int64_t(control_.parts().clock.WallSeconds()));
  if (!claims.ok()) {
    spdlog::warn("Dashboard action {} refused: {}", what, claims.status().message());
    return claims.status();
  }
  const std::string who = fmt::format("{} ({})", claims->name, bus::RoleName(claims->role));
  auto refuse = [&](Status s) {
    spdlog::warn("Dashboard action by {}: {}: refused: {}", who, what, s.message());
    return s;
  };
  if (claims->role != bus::Role::kOperator) {
    return refuse(Status::Forbidden(
        fmt::format("the login token of {} has role {}; dashboard actions need operator",
                    claims->name, bus::RoleName(claims->role))));
  }
  // The action as the tunectl request it names, answered by that request's handler.
  std::string payload;
  service::MessageHandler handler;
  if (msg->action == "stop_trial" || msg->action == "pause_trial" ||
      msg->action == "resume_trial") {
    if (msg->trial_id.empty())
      return refuse(Status::InvalidArgument(msg->action + " needs a trial_id"));
    auto request = [&](auto m, service::MessageHandler h) {
      m.id = d.id();
      m.trial_id = msg->trial_id;
      m.experiment = msg->experiment;
      payload = proto::Encode(m);
      handler = h;
    };
    if (msg->action == "stop_trial") {
      request(proto::StopTrialCommand{}, Bind(trials_, &TrialHandlers::HandleStopTrial));
    } else if (msg->action == "pause_trial") {
      request(proto::PauseTrialCommand{}, Bind(trials_, &TrialHandlers::HandlePauseTrial));
    } else {
      request(proto::ResumeTrialCommand{}, Bind(trials_, &TrialHandlers::HandleResumeTrial));
    }
  } else if (msg->action == "stop_experiment" || msg->action == "interrupt_experiment") {
    proto::StopExperiment m;
    m.id = d.id();
    m.experiment = msg->experiment;
    m.interrupt = msg->action == "interrupt_experiment";
    payload = proto::Encode(m);
    handler = Bind(experiments_, &ExperimentHandlers::HandleStopExperiment);
  } else if (msg->action == "set_weight") {
    proto::SetExperimentWeight m;
    m.id = d.id();
    m.experiment = msg->experiment;
    m.weight = msg->weight;
    payload = proto::Encode(m);
    handler = Bind(experiments_, &ExperimentHandlers::HandleSetExperimentWeight);
  } else {
    return refuse(Status::InvalidArgument(
        fmt::format("unknown dashboard action '{}'; one of stop_trial, pause_trial, resume_trial, "
                    "stop_experiment, interrupt_experiment, set_weight",
                    msg->action.substr(0, 40))));
  }
  if (msg->experiment.empty()) {
    return refuse(Status::InvalidArgument("a dashboard action names its experiment"));
  }
  if (Status s = control_.JournalWritable(nullptr); !s.ok()) return refuse(s);
  auto inner = proto::Decode(payload.data(), payload.size());
  if (!inner.ok()) return refuse(inner.status());
  if (Status s = handler(in, *inner); !s.ok()) return refuse(s);
  std::string outcome = "done";
  if (!msg->trial_id.empty()) {
    Experiment* e = control_.experiments().ForTrial(msg->trial_id);
    const Trial* t = e ? e->runner().FindTrial(msg->trial_id) : nullptr;
    if (t) outcome = fmt::format("done, trial {} is {}", t->trial_id, TrialStatusName(t->status));
  } else if (Experiment* e = control_.experiments().InMemory(msg->experiment)) {
    outcome = fmt::format("done, experiment {} is {}", e->name(),
                          ExperimentStatusName(e->runner().status()));
  }
  spdlog::info("Dashboard action by {}: {}: {}", who, what, outcome);
  return Status::Ok();
}

}  // namespace tunebus
