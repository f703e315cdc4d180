#include "services/scheduler/dashboard/server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "libs/bus/domains.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/version.hpp"
#include "services/scheduler/dashboard/assets.hpp"
#include "services/scheduler/dashboard/body.hpp"
#include "services/scheduler/dashboard/http.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kForbidden:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

void SendJson(httplib::Response& res, const json& body) {
  res.set_header("Cache-Control", "no-store");
  SetBody(res, body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void SendError(httplib::Response& res, const Status& s) {
  res.status = HttpStatusOf(s);
  SendJson(res, {{"error", s.message()}});
}

int64_t IntParam(const httplib::Request& req, const char* name, int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  return v.empty() || *end != '\0' ? -1 : int64_t(n);  // -1: refused by CheckTrialQuery
}

std::string PageWithVersion(std::string_view page) {
  std::string out(page);
  // No escaping needed: cmake/Version.cmake admits only [A-Za-z0-9._+-] in the commit.
  if (const size_t at = out.find(kVersionMark); at != std::string::npos) {
    out.replace(at, kVersionMark.size(), VersionText());
  }
  return out;
}

void SendAsset(httplib::Response& res, std::string_view name) {
  const std::string_view* body = FindAsset(name);
  if (body == nullptr) {
    res.status = 404;
    return SetBody(res, fmt::format("{} is not in this build\n", name), "text/plain");
  }
  res.set_header("Cache-Control", "no-cache");
  if (name.ends_with(".html")) return SetBody(res, PageWithVersion(*body), ContentTypeOf(name));
  SetStaticBody(res, *body, ContentTypeOf(name));
}

std::string_view ContentTypeOf(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

void Router::Get(const char* pattern, Handler handler) { server_.Get(pattern, std::move(handler)); }

void Router::Post(const char* pattern, Handler handler) {
  server_.Post(pattern, std::move(handler));
}

void Router::Page(const char* pattern, const char* asset) {
  server_.Get(pattern,
              [asset](const httplib::Request&, httplib::Response& res) { SendAsset(res, asset); });
}

static_assert(ControlPool::kMaxIdle == DashboardServer::kHttpThreads,
              "one idle control client per HTTP thread at most");

DashboardServer::DashboardServer(zmq::context_t& ctx, DashboardOptions options)
    : options_(std::move(options)),
      server_(std::make_unique<httplib::Server>()),
      control_(ctx, options_.control_endpoint, options_.security, options_.request_timeout),
      experiments_(control_),
      trials_(control_),
      controls_(control_, sessions_, actions_),
      analysis_(control_, events_),
      whatif_(control_) {}

Result<std::unique_ptr<DashboardServer>> DashboardServer::Start(zmq::context_t& ctx,
                                                                DashboardOptions options) {
  std::unique_ptr<DashboardServer> s(new DashboardServer(ctx, std::move(options)));
  auto sub = bus::Connect(ctx, zmq::socket_type::sub, s->options_.events_endpoint,
                          *s->options_.security, bus::kSchedulerKey);
  if (!sub.ok()) return sub.status();
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  s->server_->set_keep_alive_timeout(2);
  s->AddRoutes();
  const HttpAddress& a = s->options_.address;
  s->port_ = a.port == 0 ? s->server_->bind_to_any_port(a.host)
                         : (s->server_->bind_to_port(a.host, a.port) ? a.port : -1);
  if (s->port_ <= 0) {
    return Status::Unavailable(
        fmt::format("the dashboard cannot listen on {}:{} (--http)", a.host, a.port));
  }
  DashboardServer* raw = s.get();
  s->relay_thread_ =
      std::thread([raw, sub = std::move(*sub)]() mutable { raw->events_.Relay(std::move(sub)); });
  s->http_thread_ = std::thread([raw] { raw->server_->listen_after_bind(); });
  spdlog::info("Dashboard at {} (control {}, events {})", s->url(), s->options_.control_endpoint,
               s->options_.events_endpoint);
  return s;
}

DashboardServer::~DashboardServer() {
  events_.Stop();
  server_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (relay_thread_.joinable()) relay_thread_.join();
}

std::string DashboardServer::url() const {
  const std::string& host = options_.address.host;
  return host.find(':') != std::string::npos ? fmt::format("http://[{}]:{}/", host, port_)
                                             : fmt::format("http://{}:{}/", host, port_);
}

void DashboardServer::AddRoutes() {
  // A strict policy: the pages load only their own scripts and styles (Chart.js is embedded).
  server_->set_default_headers(
      {{"Content-Security-Policy", "default-src 'self'; img-src 'self' data:"},
       {"X-Content-Type-Options", "nosniff"},
       {"Referrer-Policy", "no-referrer"}});
  Router router(*server_);
  experiments_.AddTo(router);
  analysis_.AddTo(router);
  events_.AddTo(router);
  controls_.AddTo(router);
  trials_.AddTo(router);
  whatif_.AddTo(router);
}

}  // namespace tunebus::dashboard
