#include "libs/metrics/metrics_server.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <cstdio>

namespace tunebus::metrics {

namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void MetricsText::Add(const char* type, const std::string& name, const std::string& help,
                      double value, const Labels& labels) {
  const std::string full = "tunebus_" + name;
  if (full != last_name_) {
    text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", full, help, full, type);
    last_name_ = full;
  }
  std::string label_text;
  for (const auto& [k, v] : labels)
    label_text += fmt::format("{}{}=\"{}\"", label_text.empty() ? "" : ",", k, Escape(v));
  text_ += label_text.empty() ? fmt::format("{} {}\n", full, value)
                              : fmt::format("{}{{{}}} {}\n", full, label_text, value);
}

void MetricsText::Gauge(const std::string& name, const std::string& help, double value,
                        const Labels& labels) {
  Add("gauge", name, help, value, labels);
}

void MetricsText::Counter(const std::string& name, const std::string& help, double value,
                          const Labels& labels) {
  Add("counter", name, help, value, labels);
}

MetricsServer::MetricsServer() : server_(std::make_unique<httplib::Server>()) {}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& host, int port, std::chrono::milliseconds healthy_within,
    const Clock& clock) {
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  s->healthy_within_ = healthy_within;
  s->clock_ = &clock;
  MetricsServer* raw = s.get();
  s->server_->Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(raw->mu_);
    res.set_content(raw->text_, "text/plain; version=0.0.4");
  });
  s->server_->Get("/healthz", [raw](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(raw->mu_);
    if (!raw->published_at_) {
      res.status = 503;
      return res.set_content("starting: the service has not published its figures yet\n",
                             "text/plain");
    }
    const auto silent = raw->clock_->Now() - *raw->published_at_;
    if (silent > raw->healthy_within_) {
      res.status = 503;
      return res.set_content(
          fmt::format("stuck: the service's loop has not published its figures for {:.1f} s\n",
                      std::chrono::duration<double>(silent).count()),
          "text/plain");
    }
    res.set_content(raw->health_ + "\n", "text/plain");
  });
  s->port_ = port == 0 || port == kAnyPort ? s->server_->bind_to_any_port(host)
                                           : (s->server_->bind_to_port(host, port) ? port : -1);
  if (s->port_ <= 0) {
    return Status::Unavailable(fmt::format("cannot serve metrics on {}:{}", host,
                                           port == kAnyPort ? "*" : std::to_string(port)));
  }
  s->thread_ = std::thread([raw] { raw->server_->listen_after_bind(); });
  return s;
}

void MetricsServer::Publish(std::string text, std::string health) {
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(text);
  health_ = std::move(health);
  published_at_ = clock_->Now();
}

int CheckHealth(const std::string& host, int port) {
  if (port == kAnyPort) {
    std::fprintf(stderr,
                 "unhealthy: --metrics-port * names no port to ask; give the port the service "
                 "bound (its --ready-file names it)\n");
    return 1;
  }
  if (port <= 0) {
    std::fprintf(stderr,
                 "unhealthy: no metrics port (--metrics-port / TUNEBUS_METRICS_PORT) to ask\n");
    return 1;
  }
  const std::string ask =
      host.empty() || host == "0.0.0.0" || host == "::" || host == "*" ? "127.0.0.1" : host;
  httplib::Client client(ask, port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  auto res = client.Get("/healthz");
  if (!res) {
    std::fprintf(stderr, "unhealthy: no answer from http://%s:%d/healthz (%s)\n", ask.c_str(), port,
                 httplib::to_string(res.error()).c_str());
    return 1;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "unhealthy: http://%s:%d/healthz answered %d: %s", ask.c_str(), port,
                 res->status, res->body.c_str());
    return 1;
  }
  std::fputs(res->body.c_str(), stdout);
  return 0;
}

}  // namespace tunebus::metrics
