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
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/dashboard.hpp"
#include "proto/events.hpp"
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

DashboardServer::DashboardServer(zmq::context_t& ctx, DashboardOptions options)
    : ctx_(ctx), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {}

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
      std::thread([raw, sub = std::move(*sub)]() mutable { raw->Relay(std::move(sub)); });
  s->http_thread_ = std::thread([raw] { raw->server_->listen_after_bind(); });
  spdlog::info("Dashboard at {} (control {}, events {})", s->url(), s->options_.control_endpoint,
               s->options_.events_endpoint);
  return s;
}

DashboardServer::~DashboardServer() {
  {
    std::lock_guard<std::mutex> lock(feed_mu_);
    stopping_ = true;
  }
  feed_cv_.notify_all();
  server_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (relay_thread_.joinable()) relay_thread_.join();
}

std::string DashboardServer::url() const {
  const std::string& host = options_.address.host;
  return host.find(':') != std::string::npos ? fmt::format("http://[{}]:{}/", host, port_)
                                             : fmt::format("http://{}:{}/", host, port_);
}

Result<ControlClient> DashboardServer::TakeClient() {
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    if (!idle_clients_.empty()) {
      ControlClient client = std::move(idle_clients_.back());
      idle_clients_.pop_back();
      return client;
    }
  }
  return ControlClient::Connect(ctx_, options_.control_endpoint, *options_.security,
                                options_.request_timeout);
}

void DashboardServer::ReturnClient(ControlClient client) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (idle_clients_.size() < kHttpThreads) idle_clients_.push_back(std::move(client));
}

// The sign-in and control routes' requests (dashboard/routes/control_routes.cpp).
template Result<json> DashboardServer::Call(proto::VerifyDashboardToken);
template Result<json> DashboardServer::Call(proto::DashboardAction);
// The analysis routes' requests (dashboard/routes/analysis_routes.cpp).
template Result<json> DashboardServer::Call(proto::GetExperiment);
template Result<json> DashboardServer::Call(proto::ListTrials);
template Result<json> DashboardServer::Call(proto::ListSchedulerDecisions);

void DashboardServer::Relay(zmq::socket_t sub) {
  bool subscribed = false;
  while (!stopping_) {
    const bool want = streams_ > 0;
    if (want != subscribed) {
      // Both topics ("trial", "experiment"): the empty prefix.
      if (want) {
        sub.set(zmq::sockopt::subscribe, "");
      } else {
        sub.set(zmq::sockopt::unsubscribe, "");
      }
      subscribed = want;
      subscribed_ = want;
      feed_cv_.notify_all();  // streams waiting to say hello
    }
    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
    bus::Incoming in;
    std::vector<std::string> frames;
    while (bus::Receive(sub, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      auto e = d.ok() ? d->As<proto::SchedulerEvent>() : Result<proto::SchedulerEvent>(d.status());
      if (!e.ok()) {
        spdlog::warn("Dashboard: dropping an event-stream message because {}",
                     e.status().ToString());
        continue;
      }
      frames.push_back(
          SseFrame(e->event, EventData(e->event, e->experiment, e->trial_id, e->body_json)
                                 .dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    if (frames.empty() || !subscribed) continue;
    {
      std::lock_guard<std::mutex> lock(feed_mu_);
      for (std::string& f : frames) feed_.push_back(std::move(f));
      while (feed_.size() > kFeedFrames) {
        feed_.pop_front();
        ++feed_first_;
      }
    }
    feed_cv_.notify_all();
  }
}

std::string DashboardServer::FramesAfter(uint64_t& next, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(feed_mu_);
  feed_cv_.wait_for(lock, wait, [&] { return stopping_ || feed_first_ + feed_.size() > next; });
  const uint64_t end = feed_first_ + feed_.size();
  if (stopping_ || end <= next) return "";
  if (next < feed_first_) {
    next = end;
    return SseFrame("reset", "{}");
  }
  std::string out;
  for (uint64_t i = next; i < end; ++i) out += feed_[size_t(i - feed_first_)];
  next = end;
  return out;
}

std::optional<uint64_t> DashboardServer::FeedSequence() {
  std::lock_guard<std::mutex> lock(feed_mu_);
  if (!subscribed_) return std::nullopt;
  return feed_first_ + feed_.size();
}

void DashboardServer::Add(const Route& route) {
  auto handler = [this, h = route.handler](const httplib::Request& req, httplib::Response& res) {
    (this->*h)(req, res);
  };
  if (route.method == Method::kGet) {
    server_->Get(route.pattern, std::move(handler));
  } else {
    server_->Post(route.pattern, std::move(handler));
  }
}

void DashboardServer::AddPage(const char* pattern, const char* asset) {
  server_->Get(pattern,
               [asset](const httplib::Request&, httplib::Response& res) { SendAsset(res, asset); });
}

void DashboardServer::AddRoutes() {
  // A strict policy: the pages load only their own scripts and styles (Chart.js is embedded).
  server_->set_default_headers(
      {{"Content-Security-Policy", "default-src 'self'; img-src 'self' data:"},
       {"X-Content-Type-Options", "nosniff"},
       {"Referrer-Policy", "no-referrer"}});
  AddExperimentRoutes();
  AddAnalysisRoutes();
  Add({Method::kGet, "/events", &DashboardServer::ServeEvents});
  AddControlRoutes();
  AddTrialRoutes();
}

void DashboardServer::ServeEvents(const httplib::Request&, httplib::Response& res) {
  if (++streams_ > kMaxStreams) {
    --streams_;
    return SendError(res, Status::Unavailable(fmt::format(
                              "{} event streams are open already; close a page", kMaxStreams)));
  }
  res.set_header("Cache-Control", "no-store");
  auto cursor = std::make_shared<EventCursor>();
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, cursor](size_t, httplib::DataSink& sink) { return NextEventChunk(*cursor, sink); },
      [this](bool) { --streams_; });
}

bool DashboardServer::NextEventChunk(EventCursor& cursor, httplib::DataSink& sink) {
  // A closed page ends its stream here, within one wait (250 ms): httplib's chunked loop finds
  // a closed connection only when a write fails, up to two keep-alives (10 s) later, and
  // meanwhile the stream holds a thread and one of kMaxStreams.
  if (stopping_ || !sink.is_writable()) return false;
  std::string out;
  if (!cursor.next.has_value()) {
    // Hello once the relay's SUB is subscribed: what the page fetches after it, the stream
    // completes.
    std::unique_lock<std::mutex> lock(feed_mu_);
    feed_cv_.wait_for(lock, std::chrono::milliseconds(250),
                      [this] { return stopping_ || subscribed_; });
    if (stopping_) return false;
    if (!subscribed_) return true;
    cursor.next = feed_first_ + feed_.size();
    out = "retry: 1000\n" + SseFrame("hello", "{}");
  } else {
    out = FramesAfter(*cursor.next, std::chrono::milliseconds(250));
    if (stopping_) return false;
    if (out.empty() && std::chrono::steady_clock::now() - cursor.last_write > kKeepAlive) {
      out = ": keep-alive\n\n";  // also finds a closed page
    }
  }
  if (out.empty()) return true;
  cursor.last_write = std::chrono::steady_clock::now();
  return sink.write(out.data(), out.size());
}

}  // namespace tunebus::dashboard
