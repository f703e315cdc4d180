// tunectl commands that query or steer a running scheduler over its control socket.
#include <iostream>

#include <fmt/format.h>

#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_client.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {

namespace {

// Sends one request and prints its body: as JSON with -o json, else through `print`.
template <typename M, typename Print>
int CallAndPrint(const GlobalFlags& g, M request, Print print) {
  zmq::context_t ctx;
  auto client = ControlClient::Connect(ctx, g.connect, std::chrono::milliseconds(g.timeout_ms));
  if (!client.ok()) {
    std::cerr << "tunectl: " << client.status().ToString() << "\n";
    return 3;
  }
  auto body = client->Call(request);
  if (!body.ok()) {
    std::cerr << "tunectl: " << body.status().ToString() << "\n";
    return body.status().code() == StatusCode::kUnavailable ? 3 : 1;
  }
  if (g.output == "json") {
    std::cout << body->dump(2) << std::endl;
  } else {
    print(*body);
  }
  return 0;
}

void PrintTrial(const nlohmann::json& t) {
  std::cout << "trial_id:     " << t.value("trial_id", std::string()) << "\n"
            << "status:       " << t.value("status", std::string()) << "\n"
            << "config:       " << t["config"].dump() << "\n"
            << "iterations:   " << t.value("training_iteration", int64_t(0)) << "\n"
            << "attempt:      " << t.value("attempt", int64_t(0)) << "\n"
            << "num_failures: " << t.value("num_failures", int64_t(0)) << "\n"
            << "resources:    " << t["resources"].dump() << "\n"
            << "worker:       " << (t["worker"].is_string() ? t["worker"].get<std::string>() : "-") << "\n"
            << "error:        " << (t["error"].is_string() ? t["error"].get<std::string>() : "-") << "\n"
            << "dir:          " << t.value("dir", std::string()) << "\n"
            << "last_result:  " << t["last_result"].dump() << std::endl;
}

}  // namespace

int ListCommand(const GlobalFlags& g, const std::string& status) {
  proto::ListTrials req;
  req.status = status;
  return CallAndPrint(g, req, [](const nlohmann::json& trials) {
    nlohmann::json summary = {{"name", "trials"}, {"counts", nlohmann::json::object()}, {"total", trials.size()}};
    auto lines = RenderProgressTable(summary, trials, trials.size());
    for (size_t i = 1; i < lines.size(); ++i) std::cout << lines[i] << "\n";
  });
}

int ShowCommand(const GlobalFlags& g, const std::string& trial_id) {
  proto::ShowTrial req;
  req.trial_id = trial_id;
  return CallAndPrint(g, req, PrintTrial);
}

int StopCommand(const GlobalFlags& g, const std::string& trial_id) {
  proto::StopTrialCommand req;
  req.trial_id = trial_id;
  return CallAndPrint(g, req, [](const nlohmann::json& r) { std::cout << r.value("message", std::string()) << std::endl; });
}

int StopExperimentCommand(const GlobalFlags& g) {
  return CallAndPrint(g, proto::StopExperiment{}, [](const nlohmann::json& e) {
    std::cout << "Experiment " << e.value("name", std::string()) << " " << e.value("status", std::string()) << std::endl;
  });
}

int StatusCommand(const GlobalFlags& g) {
  return CallAndPrint(g, proto::GetExperiment{}, [](const nlohmann::json& e) { std::cout << RenderSummaryLine(e) << std::endl; });
}

int WorkersCommand(const GlobalFlags& g) {
  return CallAndPrint(g, proto::ListWorkers{}, [](const nlohmann::json& nodes) {
    for (const auto& n : nodes) {
      std::cout << fmt::format("{:<24} {:<6} capacity {} committed {} free {}\n", n.value("worker_id", std::string()),
                               n.value("alive", false) ? "alive" : "lost", n["capacity"].dump(), n["committed"].dump(),
                               n["free"].dump());
    }
  });
}

}  // namespace tunebus
