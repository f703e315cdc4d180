// tunectl watch: the experiment live from the scheduler's PUB event stream (proto/events.hpp).
// One snapshot over the control socket to start from, then only events: no polling.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "libs/bus/domains.hpp"
#include "libs/bus/socket.hpp"
#include "proto/control.hpp"
#include "proto/events.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"
#include "services/tunectl/progress_table.hpp"
#include "services/tunectl/watch_state.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// "[#########-----------] 9/20 trials, ETA 12 s"
std::string ProgressBar(int64_t finished, int64_t total, double elapsed_s) {
  constexpr int kWidth = 30;
  if (total <= 0) return fmt::format("{} trials finished (unbounded)", finished);
  const int filled = int(kWidth * std::min(finished, total) / total);
  std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '-');
  std::string eta =
      finished > 0 && finished < total
          ? fmt::format(", ETA {:.0f} s", elapsed_s / double(finished) * double(total - finished))
          : "";
  return fmt::format("[{}] {}/{} trials{}", bar, finished, total, eta);
}

// Status words in colour on a terminal, never with NO_COLOR (https://no-color.org).
std::string Colour(const std::string& line, bool colour) {
  if (!colour) return line;
  static const std::map<std::string, const char*> kColours = {{"RUNNING", "\033[34m"},
                                                              {"TERMINATED", "\033[32m"},
                                                              {"ERROR", "\033[31m"},
                                                              {"PAUSED", "\033[33m"}};
  std::string out = line;
  for (const auto& [word, code] : kColours) {
    for (size_t at = out.find(word); at != std::string::npos;
         at = out.find(word, at + word.size() + 9)) {
      out.replace(at, word.size(), std::string(code) + word + "\033[0m");
    }
  }
  return out;
}

}  // namespace

int WatchCommand(const GlobalFlags& g, std::string events, double for_s) {
  auto experiment = Call(g, ExperimentRequest<proto::GetExperiment>(g));
  if (!experiment.ok()) return Fail(experiment.status());
  if (events.empty()) {
    auto told = WatchEndpoint(g.connect, *experiment);
    if (!told.ok()) return Fail(told.status());
    events = *told;
  }
  zmq::context_t ctx;
  auto sub = bus::Connect(ctx, zmq::socket_type::sub, events, *g.security, bus::kSchedulerKey);
  if (!sub.ok()) return Fail(sub.status());
  sub->set(zmq::sockopt::subscribe, "");
  // Subscribed first, then the snapshot: an event between the two is applied twice, harmlessly.
  experiment = Call(g, ExperimentRequest<proto::GetExperiment>(g));
  if (!experiment.ok()) return Fail(experiment.status());
  auto listed = Call(g, ExperimentRequest<proto::ListTrials>(g));
  if (!listed.ok()) return Fail(listed.status());
  WatchState state(*experiment, *listed);

  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  const bool colour = tty && std::getenv("NO_COLOR") == nullptr;
  const Clock& clock = Clock::Real();
  const SteadyTime start = clock.Now();
  const double elapsed0 = NumberField(*experiment, "elapsed_s");
  InPlaceRenderer renderer;
  auto draw = [&] {
    json summary = state.Summary();
    const double elapsed = elapsed0 + clock.SecondsSince(start);
    summary["elapsed_s"] = elapsed;
    std::vector<std::string> lines = RenderProgressTable(summary, state.Trials(), 20);
    lines.insert(lines.begin() + 1, ProgressBar(state.Finished(), state.Total(), elapsed));
    for (std::string& l : lines) l = Colour(l, colour);
    renderer.Draw(lines);
  };
  if (g.output != "json") {
    if (tty)
      draw();
    else
      std::cout << RenderSummaryLine(*experiment) << std::endl;
  }
  if (Field(*experiment, "finished") == true)
    return StringField(*experiment, "status") == "FINISHED" ? 0 : 1;

  for (;;) {
    if (for_s > 0 && clock.SecondsSince(start) >= for_s) {
      return 0;
    }
    zmq::pollitem_t item{sub->handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(200)) == 0) continue;
    bus::Incoming in;
    while (bus::Receive(*sub, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      auto e = d.ok() ? d->As<proto::SchedulerEvent>() : Result<proto::SchedulerEvent>(d.status());
      if (!e.ok()) continue;
      const std::optional<std::string> line = state.Apply(*e);
      if (g.output == "json") {
        const json body = json::parse(e->body_json, nullptr, /*allow_exceptions=*/false);
        std::cout << json{{"event", e->event}, {"trial_id", e->trial_id}, {"body", body}}.dump()
                  << std::endl;
      } else if (!tty && line) {
        std::cout << *line << std::endl;
      }
      if (state.ended()) {
        if (g.output != "json") {
          if (tty) draw();
          std::cout << "Experiment " << e->experiment << " ended: " << state.ended_status()
                    << std::endl;
        }
        return state.ended_status() == "FINISHED" ? 0 : 1;
      }
    }
    if (g.output != "json" && tty) draw();
  }
}

void AddWatchCommand(CLI::App& app, GlobalFlags& g, Commands& commands) {
  struct WatchFlags {
    std::string events;
    double for_s = 0;
  };
  auto flags = std::make_shared<WatchFlags>();
  auto* cmd = app.add_subcommand("watch", "live progress from the scheduler's event stream");
  cmd->add_option("--events", flags->events,
                  "event stream endpoint (default: the one the scheduler names in its status)")
      ->envname("TUNEBUS_EVENTS_ENDPOINT");
  cmd->add_option("--for-s", flags->for_s,
                  "return after this many seconds (0: when the experiment ends)");
  AddReadExperimentFlag(*cmd, g);
  commands.push_back({cmd, CommandNeeds::kServer, [flags](const GlobalFlags& g) {
                        return WatchCommand(g, flags->events, flags->for_s);
                      }});
}

}  // namespace tunebus
