#include "libs/metrics/metrics_server.hpp"

#include <fmt/format.h>
#include <httplib.h>

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

void MetricsText::Add(const char* type, const std::string& name, const std::string& help, double value,
                      const Labels& labels) {
  const std::string full = "tunebus_" + name;
  if (full != last_name_) {
    text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", full, help, full, type);
    last_name_ = full;
  }
  std::string label_text;
  for (const auto& [k, v] : labels) label_text += fmt::format("{}{}=\"{}\"", label_text.empty() ? "" : ",", k, Escape(v));
  text_ += label_text.empty() ? fmt::format("{} {}\n", full, value) : fmt::format("{}{{{}}} {}\n", full, label_text, value);
}

void MetricsText::Gauge(const std::string& name, const std::string& help, double value, const Labels& labels) {
  Add("gauge", name, help, value, labels);
}

void MetricsText::Counter(const std::string& name, const std::string& help, double value, const Labels& labels) {
  Add("counter", name, help, value, labels);
}

MetricsServer::MetricsServer() : server_(std::make_unique<httplib::Server>()) {}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host, int port) {
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  MetricsServer* raw = s.get();
  s->server_->Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(raw->mu_);
    res.set_content(raw->text_, "text/plain; version=0.0.4");
  });
  s->server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  s->port_ = port == 0 ? s->server_->bind_to_any_port(host) : (s->server_->bind_to_port(host, port) ? port : -1);
  if (s->port_ <= 0) return Status::Unavailable(fmt::format("cannot serve metrics on {}:{}", host, port));
  s->thread_ = std::thread([raw] { raw->server_->listen_after_bind(); });
  return s;
}

void MetricsServer::Publish(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(text);
}

}  // namespace tunebus::metrics
