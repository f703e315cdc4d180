// tunectl watch: the experiment live from the scheduler's PUB event stream (proto/events.hpp).
// One snapshot over the control socket to start from, then only events: no polling.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "libs/bus/socket.hpp"
#include "proto/control.hpp"
#include "proto/events.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

bool Finished(const std::string& status) {
  return status == "TERMINATED" || status == "ERROR";
}

// "[#########-----------] 9/20 trials, ETA 12 s"
std::string ProgressBar(int64_t finished, int64_t total, double elapsed_s) {
  constexpr int kWidth = 30;
  if (total <= 0) return fmt::format("{} trials finished (unbounded)", finished);
  const int filled = int(kWidth * finished / total);
  std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '-');
  std::string eta = finished > 0 && finished < total
                        ? fmt::format(", ETA {:.0f} s", elapsed_s / double(finished) * double(total - finished))
                        : "";
  return fmt::format("[{}] {}/{} trials{}", bar, finished, total, eta);
}

// Status words in colour on a terminal, never with NO_COLOR (https://no-color.org).
std::string Colour(const std::string& line, bool colour) {
  if (!colour) return line;
  static const std::map<std::string, const char*> kColours = {
      {"RUNNING", "\033[34m"}, {"TERMINATED", "\033[32m"}, {"ERROR", "\033[31m"}, {"PAUSED", "\033[33m"}};
  std::string out = line;
  for (const auto& [word, code] : kColours) {
    for (size_t at = out.find(word); at != std::string::npos; at = out.find(word, at + word.size() + 9)) {
      out.replace(at, word.size(), std::string(code) + word + "\033[0m");
    }
  }
  return out;
}

}  // namespace

int WatchCommand(const GlobalFlags& g, const std::string& events, double for_s) {
  zmq::context_t ctx;
  auto sub = bus::Connect(ctx, zmq::socket_type::sub, events);
  if (!sub.ok()) return Fail(sub.status());
  sub->set(zmq::sockopt::subscribe, "");
  // Subscribed first, then the snapshot: an event between the two is applied twice, harmlessly.
  auto experiment = Call(g, proto::GetExperiment{});
  if (!experiment.ok()) return Fail(experiment.status());
  auto listed = Call(g, proto::ListTrials{});
  if (!listed.ok()) return Fail(listed.status());
  std::map<std::string, json> trials;
  for (const json& t : *listed) trials[t.value("trial_id", "")] = t;

  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  const bool colour = tty && std::getenv("NO_COLOR") == nullptr;
  const auto start = std::chrono::steady_clock::now();
  const double elapsed0 = experiment->value("elapsed_s", 0.0);
  InPlaceRenderer renderer;
  auto draw = [&] {
    json list = json::array();
    std::map<std::string, int64_t> counts;
    int64_t finished = 0;
    for (const auto& [id, t] : trials) {
      list.push_back(t);
      const std::string status = t.value("status", "");
      ++counts[status];
      finished += Finished(status);
    }
    json summary = *experiment;
    summary["counts"] = counts;
    const double elapsed = elapsed0 + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary["elapsed_s"] = elapsed;
    std::vector<std::string> lines = RenderProgressTable(summary, list, 20);
    lines.insert(lines.begin() + 1, ProgressBar(finished, summary.value("total", int64_t(-1)), elapsed));
    for (std::string& l : lines) l = Colour(l, colour);
    renderer.Draw(lines);
  };
  if (g.output != "json") {
    if (tty) draw();
    else std::cout << RenderSummaryLine(*experiment) << std::endl;
  }
  if (experiment->value("finished", false)) return experiment->value("status", "") == "FINISHED" ? 0 : 1;

  for (;;) {
    if (for_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= for_s) {
      return 0;
    }
    zmq::pollitem_t item{sub->handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(200)) == 0) continue;
    bus::Incoming in;
    while (bus::Receive(*sub, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      auto e = d.ok() ? d->As<proto::SchedulerEvent>() : Result<proto::SchedulerEvent>(d.status());
      if (!e.ok()) continue;
      const json body = json::parse(e->body_json, nullptr, /*allow_exceptions=*/false);
      if (g.output == "json") {
        std::cout << json{{"event", e->event}, {"trial_id", e->trial_id}, {"body", body}}.dump() << std::endl;
      }
      if (e->event == "experiment_ended") {
        if (g.output != "json") {
          if (tty) draw();
          std::cout << "Experiment " << e->experiment << " ended: " << body.dump() << std::endl;
        }
        return body.value("status", "") == "FINISHED" ? 0 : 1;
      }
      if (!e->trial_id.empty() && body.is_object() && body.contains("status")) {
        const std::string before = trials[e->trial_id].value("status", "");
        trials[e->trial_id] = body;
        if (g.output != "json" && !tty && (e->event != "trial_result" || before != body.value("status", ""))) {
          std::cout << fmt::format("{} {} {} iter {}", e->event, e->trial_id, body.value("status", ""),
                                   body.value("training_iteration", int64_t(0)))
                    << std::endl;
        }
      }
    }
    if (g.output != "json" && tty) draw();
  }
}

}  // namespace tunebus
