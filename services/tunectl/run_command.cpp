// `tunectl run` and `tunectl up`.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "libs/spec/experiment_spec.hpp"
#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_client.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {

namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }

void PrintFinal(const nlohmann::json& e, bool json_output) {
  if (json_output) {
    std::cout << e.dump(2) << std::endl;
    return;
  }
  std::cout << "\nExperiment " << e.value("name", std::string()) << " " << e.value("status", std::string()) << ": "
            << e.value("reason", std::string()) << "\n";
  const nlohmann::json& best = e["best"];
  if (best.is_object()) {
    const std::string metric = e.value("metric", std::string());
    std::cout << "Best trial: " << best.value("trial_id", std::string()) << "\n"
              << "  " << metric << " = " << FormatValue(best["last_result"][metric]) << " (mode "
              << e.value("mode", std::string()) << ")\n"
              << "  config: " << best["config"].dump() << "\n"
              << "  results: " << best.value("dir", std::string()) << "\n";
  }
  std::cout << "Results directory: " << e.value("results_dir", std::string()) << std::endl;
}

// Submits and (unless detached) follows the experiment to its end. Returns the exit code.
int SubmitAndFollow(ControlClient& client, const ExperimentSpec& spec, const RunFlags& r, bool json_output) {
  proto::SubmitExperiment submit;
  submit.spec_yaml = spec.source_yaml;
  submit.base_dir = spec.trainable.working_dir;
  submit.source_name = spec.source_path;
  auto submitted = client.Call(submit);
  if (!submitted.ok()) {
    std::cerr << "tunectl: the scheduler refused the experiment: " << submitted.status().ToString() << "\n";
    return submitted.status().code() == StatusCode::kUnavailable ? 3 : 1;
  }
  if (r.detach) {
    std::cout << (json_output ? submitted->dump(2) : fmt::format("Submitted experiment {} ({} trials)",
                                                                  spec.name, (*submitted)["total"].dump()))
              << std::endl;
    return 0;
  }
  const bool tty = ::isatty(STDOUT_FILENO) && !json_output;
  const double refresh_s = r.refresh_s > 0 ? r.refresh_s : (tty ? 1.0 : 10.0);
  InPlaceRenderer renderer;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  bool stop_sent = false;
  while (true) {
    if (g_signal.load() != 0 && !stop_sent) {
      std::cerr << "\ntunectl: stopping the experiment (signal " << g_signal.load() << ")\n";
      (void)client.Call(proto::StopExperiment{});
      stop_sent = true;
    }
    auto e = client.Call(proto::GetExperiment{});
    if (!e.ok()) {
      std::cerr << "tunectl: lost the scheduler: " << e.status().ToString() << "\n";
      return 3;
    }
    const bool finished = (*e)["finished"].get<bool>();
    const auto now = std::chrono::steady_clock::now();
    if (!json_output && (finished || now - last_print >= std::chrono::duration<double>(refresh_s))) {
      last_print = now;
      auto trials = client.Call(proto::ListTrials{});
      if (trials.ok()) {
        if (tty) {
          renderer.Draw(RenderProgressTable(*e, *trials, 20));
        } else if (finished) {
          for (const auto& line : RenderProgressTable(*e, *trials, 1000)) std::cout << line << "\n";
        } else {
          std::cout << RenderSummaryLine(*e) << std::endl;
        }
      }
    }
    if (finished) {
      PrintFinal(*e, json_output);
      const auto& counts = (*e)["counts"];
      if ((*e)["status"] != "FINISHED") return 1;
      if (counts.value("ERROR", 0) > 0) {
        std::cerr << "tunectl: " << counts["ERROR"] << " trial(s) ended in ERROR (see error.txt in their folders)\n";
        return 1;
      }
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

int RunCommand(const GlobalFlags& g, RunFlags r) {
  auto spec = ParseExperimentFile(r.experiment_file);
  if (!spec.ok()) {
    std::cerr << "tunectl: invalid experiment file: " << spec.status().message() << "\n";
    return 2;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  zmq::context_t ctx;
  const bool json_output = g.output == "json";
  if (!g.connect.empty()) {
    auto client = ControlClient::Connect(ctx, g.connect, std::chrono::milliseconds(g.timeout_ms));
    if (!client.ok()) {
      std::cerr << "tunectl: " << client.status().ToString() << "\n";
      return 3;
    }
    return SubmitAndFollow(*client, *spec, r, json_output);
  }
  if (r.detach) {
    std::cerr << "tunectl: --detach needs --connect (an embedded run ends with tunectl)\n";
    return 2;
  }
  r.suite.data_dir = spec->results_dir + "/.tunebus/store";
  std::filesystem::create_directories(r.suite.data_dir);
  auto suite = EmbeddedSuite::Start(ctx, r.suite);
  if (!suite.ok()) {
    std::cerr << "tunectl: cannot start the embedded suite: " << suite.status().ToString() << "\n";
    return 1;
  }
  auto client = ControlClient::Connect(ctx, (*suite)->control_endpoint(), std::chrono::milliseconds(g.timeout_ms));
  if (!client.ok()) {
    std::cerr << "tunectl: " << client.status().ToString() << "\n";
    return 1;
  }
  const int code = SubmitAndFollow(*client, *spec, r, json_output);
  (*suite)->Stop();
  return code;
}

int UpCommand(const GlobalFlags& g, SuiteOptions suite) {
  (void)g;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::filesystem::create_directories(suite.data_dir);
  zmq::context_t ctx;
  auto s = EmbeddedSuite::Start(ctx, suite);
  if (!s.ok()) {
    std::cerr << "tunectl up: " << s.status().ToString() << "\n";
    return 1;
  }
  std::cout << "tunebus is up; control socket " << (*s)->control_endpoint() << " (Ctrl-C to stop)" << std::endl;
  while (g_signal.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*s)->Stop();
  return 0;
}

}  // namespace tunebus
