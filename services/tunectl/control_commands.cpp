// tunectl commands that query or steer a running scheduler over its control socket.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <vector>

#include "libs/bus/control_client.hpp"
#include "libs/core/version.hpp"
#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"
#include "services/tunectl/progress_table.hpp"
#include "services/tunectl/show_trial.hpp"

namespace tunebus {

namespace {

void PrintTrial(const nlohmann::json& t) {
  std::cout << "trial_id:     " << t.value("trial_id", std::string()) << "\n"
            << "status:       " << TrialStatusText(t) << "\n"
            << "config:       " << t["config"].dump() << "\n"
            << "iterations:   " << t.value("training_iteration", int64_t(0)) << "\n"
            << "attempt:      " << t.value("attempt", int64_t(0)) << "\n"
            << "num_failures: " << t.value("num_failures", int64_t(0)) << "\n"
            << "resources:    " << t["resources"].dump() << "\n"
            << "worker:       " << (t["worker"].is_string() ? t["worker"].get<std::string>() : "-")
            << "\n"
            << "error:        " << (t["error"].is_string() ? t["error"].get<std::string>() : "-")
            << "\n"
            << "dir:          " << t.value("dir", std::string()) << "\n"
            << "last_result:  " << t["last_result"].dump() << "\n";
  const nlohmann::json failures = t.value("failures", nlohmann::json::array());
  std::cout << "failures:     " << (failures.empty() ? "-" : "") << "\n";
  for (const auto& f : failures) {
    std::cout << fmt::format("  attempt {} -> {}: {}\n", f.value("attempt", int64_t(0)),
                             f.value("then", std::string()), f.value("error", std::string()));
  }
  const nlohmann::json checkpoints = t.value("checkpoints", nlohmann::json::array());
  std::cout << "checkpoints:  " << (checkpoints.empty() ? "-" : "") << "\n";
  for (const auto& c : checkpoints) {
    std::cout << fmt::format("  {}  iteration {}  score {}  {} bytes\n",
                             c.value("checkpoint_id", std::string()),
                             c.value("training_iteration", int64_t(0)), c["score"].dump(),
                             c.value("size_bytes", int64_t(0)));
  }
  for (const std::string& line : RenderCheckpointsNotStored(t)) std::cout << "  " << line << "\n";
  std::cout << std::flush;
}

void PrintMessage(const nlohmann::json& r) {
  std::cout << r.value("message", std::string()) << std::endl;
}

}  // namespace

int ShowCommand(const GlobalFlags& g, const std::string& trial_id) {
  auto req = ExperimentRequest<proto::ShowTrial>(g);
  req.trial_id = trial_id;
  return CallAndPrint(g, req, PrintTrial);
}

int StopCommand(const GlobalFlags& g, const std::string& trial_id) {
  auto req = ExperimentRequest<proto::StopTrialCommand>(g);
  req.trial_id = trial_id;
  return CallAndPrint(g, req, PrintMessage);
}

int PauseCommand(const GlobalFlags& g, const std::string& trial_id) {
  auto req = ExperimentRequest<proto::PauseTrialCommand>(g);
  req.trial_id = trial_id;
  return CallAndPrint(g, req, PrintMessage);
}

int ResumeCommand(const GlobalFlags& g, const std::string& target,
                  const std::string& rerun_errored) {
  auto print_experiment = [](const nlohmann::json& e) {
    std::cout << "Experiment " << e.value("name", std::string()) << " resumed ("
              << e.value("rerun", int64_t(0)) << " errored trials rerun)" << std::endl;
  };
  proto::ResumeExperimentCommand experiment;
  experiment.name = target;
  experiment.rerun_errored = rerun_errored;
  if (!rerun_errored.empty()) return CallAndPrint(g, experiment, print_experiment);
  // A trial id unpauses that trial; otherwise the name of an experiment.
  auto trial = ExperimentRequest<proto::ResumeTrialCommand>(g);
  trial.trial_id = target;
  auto body = Call(g, trial);
  if (!body.ok() && body.status().code() == StatusCode::kNotFound) {
    return CallAndPrint(g, experiment, print_experiment);
  }
  return body.ok() ? PrintBody(g, *body, PrintMessage) : Fail(body.status());
}

int ListExperimentsCommand(const GlobalFlags& g) {
  return CallAndPrint(g, proto::ListExperiments{}, [](const nlohmann::json& experiments) {
    std::cout << fmt::format("{:<24} {:<20} {:<12} {:<20} {:>6} {:>6} {:>6}  {:<22} {}\n", "name",
                             "journal", "status", "started (UTC)", "trials", "weight", "share",
                             "expires", "counts");
    for (const auto& e : experiments) {
      std::string counts;
      for (const auto& [status, n] : e["counts"].items()) {
        if (n.get<int64_t>() > 0) counts += fmt::format("{}={} ", status, n.get<int64_t>());
      }
      const auto started = std::time_t(e.value("submitted_at", 0.0));
      // Weight and share: of the experiments this scheduler holds ("-" for journal-only ones).
      const bool held = e.contains("weight");
      // Expires: when retention deletes it (finished ones; "-" for the others).
      std::cout << fmt::format(
          "{:<24} {:<20} {:<12} {:<20} {:>6} {:>6} {:>6}  {:<22} {}\n",
          e.value("name", std::string()), e.value("journal", std::string()),
          e.value("status", std::string()),
          started > 0 ? fmt::format("{:%Y-%m-%d %H:%M:%S}", fmt::gmtime(started)) : "-",
          e.value("total", int64_t(0)), held ? fmt::format("{:g}", e.value("weight", 1.0)) : "-",
          held ? fmt::format("{:.2f}", e.value("share", 0.0)) : "-",
          e.value("expires", std::string("-")), counts);
    }
  });
}

int AddCommand(const GlobalFlags& g, const std::string& config_json) {
  const auto config = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) {
    std::cerr << "tunectl: --config must be a JSON object, e.g. '{\"lr\": 0.01}'\n";
    return 2;
  }
  auto req = ExperimentRequest<proto::AddTrialCommand>(g);
  req.config_json = config.dump();
  return CallAndPrint(g, req, [](const nlohmann::json& t) {
    std::cout << "added trial " << t.value("trial_id", std::string()) << " ("
              << t.value("status", std::string()) << ")" << std::endl;
  });
}

int SetResourcesCommand(const GlobalFlags& g, const std::string& trial_id,
                        const std::vector<std::string>& pairs) {
  auto req = ExperimentRequest<proto::SetTrialResourcesCommand>(g);
  req.trial_id = trial_id;
  for (const std::string& pair : pairs) {
    const auto eq = pair.find('=');
    char* end = nullptr;
    const double amount = eq == std::string::npos ? 0 : std::strtod(pair.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == pair.c_str() + eq + 1 || *end != '\0' ||
        !(amount >= 0)) {
      std::cerr << "tunectl: '" << pair
                << "' must look like name=amount with amount >= 0, e.g. cpu=2 gpu=0.5\n";
      return 2;
    }
    req.resources[pair.substr(0, eq)] = amount;
  }
  return CallAndPrint(g, req, [](const nlohmann::json& t) {
    std::cout << "trial " << t.value("trial_id", std::string()) << " now asks "
              << t["resources"].dump() << std::endl;
  });
}

int DeleteCommand(const GlobalFlags& g, const std::string& experiment, bool keep_results) {
  proto::DeleteExperiment req;
  req.experiment = experiment;
  req.keep_results = keep_results;
  return CallAndPrint(g, req, [](const nlohmann::json& d) {
    std::cout << fmt::format(
                     "Deleted experiment {} (journal {}): {} journal records, {} checkpoints; the "
                     "store's data went from {} to {} bytes; results {} {}",
                     d.value("name", std::string()), d.value("journal", std::string()),
                     d.value("records", int64_t(0)), d.value("checkpoints", int64_t(0)),
                     d.value("store_bytes_before", int64_t(0)),
                     d.value("store_bytes_after", int64_t(0)),
                     d.value("results_dir", std::string()),
                     d.value("results_removed", false) ? "removed" : "kept")
              << std::endl;
  });
}

int SetWeightCommand(const GlobalFlags& g, const std::string& experiment, double weight) {
  proto::SetExperimentWeight req;
  req.experiment = experiment;
  req.weight = weight;
  return CallAndPrint(g, req, [](const nlohmann::json& e) {
    std::cout << fmt::format("Experiment {}: weight {:g}, share {:.2f}",
                             e.value("name", std::string()), e.value("weight", 1.0),
                             e.value("share", 0.0))
              << std::endl;
  });
}

int StopExperimentCommand(const GlobalFlags& g) {
  return CallAndPrint(g, ExperimentRequest<proto::StopExperiment>(g), [](const nlohmann::json& e) {
    std::cout << "Experiment " << e.value("name", std::string()) << " "
              << e.value("status", std::string()) << std::endl;
  });
}

int StatusCommand(const GlobalFlags& g) {
  return CallAndPrint(g, ExperimentRequest<proto::GetExperiment>(g), [](const nlohmann::json& e) {
    std::cout << RenderSummaryLine(e) << std::endl;
    if (const std::string searcher = RenderSearcherLine(e); !searcher.empty())
      std::cout << searcher << std::endl;
    if (const std::string driver = RenderDriverLine(e); !driver.empty())
      std::cout << driver << std::endl;
    for (const std::string& health : RenderHealthLines(e)) std::cout << health << std::endl;
    // The scheduler's version (since v1.12; none from an older one), and tunectl's if another.
    if (const std::string v = StringField(e, "version"); !v.empty()) {
      std::cout << "scheduler " << v
                << (v == Version() ? "" : std::string(", tunectl ") + Version()) << std::endl;
    }
  });
}

int ResourcesCommand(const GlobalFlags& g) {
  auto nodes = Call(g, proto::ListWorkers{});
  if (!nodes.ok()) return Fail(nodes.status());
  // Totals over alive workers: capacity, committed, free (amounts per resource name).
  nlohmann::json total = {{"capacity", nlohmann::json::object()},
                          {"committed", nlohmann::json::object()},
                          {"free", nlohmann::json::object()}};
  for (const auto& n : *nodes) {
    if (!n.value("alive", false)) continue;
    for (const char* part : {"capacity", "committed", "free"}) {
      for (const auto& [name, amount] : n[part].items()) {
        total[part][name] = total[part].value(name, 0.0) + amount.get<double>();
      }
    }
  }
  nlohmann::json body = {{"total", total}, {"workers", *nodes}};
  if (g.output == "json") {
    std::cout << body.dump(2) << std::endl;
    return 0;
  }
  std::cout << fmt::format("{:<24} {:<40} {:<40} {}\n", "worker", "capacity", "committed", "free");
  for (const auto& n : *nodes) {
    std::cout << fmt::format(
        "{:<24} {:<40} {:<40} {}\n",
        n.value("worker_id", std::string()) + (n.value("alive", false) ? "" : " (lost)"),
        n["capacity"].dump(), n["committed"].dump(), n["free"].dump());
  }
  std::cout << fmt::format("{:<24} {:<40} {:<40} {}\n", "total", total["capacity"].dump(),
                           total["committed"].dump(), total["free"].dump());
  return 0;
}

int WorkersCommand(const GlobalFlags& g) {
  return CallAndPrint(g, proto::ListWorkers{}, [](const nlohmann::json& nodes) {
    for (const auto& n : nodes) {
      std::cout << fmt::format("{:<24} {:<6} capacity {} committed {} free {}\n",
                               n.value("worker_id", std::string()),
                               n.value("alive", false) ? "alive" : "lost", n["capacity"].dump(),
                               n["committed"].dump(), n["free"].dump());
    }
  });
}

namespace {

using ExperimentFlag = void (*)(CLI::App&, GlobalFlags&);

// A subcommand without arguments; `experiment_flag` adds its -e (null: none).
void AddPlainCommand(CLI::App& app, GlobalFlags& g, Commands& commands, const char* name,
                     const char* help, ExperimentFlag experiment_flag,
                     int (*run)(const GlobalFlags&)) {
  auto* cmd = app.add_subcommand(name, help);
  if (experiment_flag != nullptr) experiment_flag(*cmd, g);
  commands.push_back({cmd, CommandNeeds::kServer, run});
}

// A subcommand whose one argument is a trial id (required).
void AddTrialCommand(CLI::App& app, GlobalFlags& g, Commands& commands, const char* name,
                     const char* help, ExperimentFlag experiment_flag,
                     int (*run)(const GlobalFlags&, const std::string&)) {
  auto trial_id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(name, help);
  cmd->add_option("trial_id", *trial_id)->required();
  experiment_flag(*cmd, g);
  commands.push_back({cmd, CommandNeeds::kServer,
                      [trial_id, run](const GlobalFlags& g) { return run(g, *trial_id); }});
}

// delete and set-weight: commands on a named experiment.
void AddExperimentCommands(CLI::App& app, Commands& commands) {
  struct DeleteFlags {
    std::string experiment;
    bool keep_results = false;
  };
  auto del = std::make_shared<DeleteFlags>();
  auto* delete_cmd = app.add_subcommand(
      "delete", "delete a finished experiment: its journal and checkpoints, and its results");
  delete_cmd->add_option("experiment", del->experiment, "experiment name or journal name")
      ->required();
  delete_cmd->add_flag("--keep-results", del->keep_results, "keep its results folder");
  commands.push_back({delete_cmd, CommandNeeds::kServer, [del](const GlobalFlags& g) {
                        return DeleteCommand(g, del->experiment, del->keep_results);
                      }});

  struct WeightFlags {
    std::string experiment;
    double weight = 1;
  };
  auto weight = std::make_shared<WeightFlags>();
  auto* weight_cmd = app.add_subcommand(
      "set-weight", "change a running experiment's fair share of the suite (weighted DRF)");
  weight_cmd->add_option("experiment", weight->experiment, "experiment name or journal name")
      ->required();
  weight_cmd->add_option("weight", weight->weight, "a number > 0 (the file's `weight`, default 1)")
      ->required()
      ->check(CLI::PositiveNumber);
  commands.push_back({weight_cmd, CommandNeeds::kServer, [weight](const GlobalFlags& g) {
                        return SetWeightCommand(g, weight->experiment, weight->weight);
                      }});
}

}  // namespace

void AddControlCommands(CLI::App& app, GlobalFlags& g, Commands& commands) {
  AddTrialCommand(app, g, commands, "show", "show one trial", AddReadExperimentFlag, ShowCommand);
  AddTrialCommand(app, g, commands, "stop", "stop one trial", AddChangeExperimentFlag, StopCommand);
  AddPlainCommand(app, g, commands, "stop-experiment",
                  "stop every unfinished trial and end the experiment", AddChangeExperimentFlag,
                  StopExperimentCommand);
  AddPlainCommand(app, g, commands, "status", "summary of an experiment", AddReadExperimentFlag,
                  StatusCommand);
  AddPlainCommand(app, g, commands, "workers", "workers and their resources", nullptr,
                  WorkersCommand);
  AddPlainCommand(app, g, commands, "resources",
                  "capacity, committed and free resources per worker and in total", nullptr,
                  ResourcesCommand);
  AddTrialCommand(app, g, commands, "pause", "pause a trial (checkpoint, free its resources)",
                  AddChangeExperimentFlag, PauseCommand);

  struct ResumeFlags {
    std::string target, rerun_errored;
  };
  auto resume = std::make_shared<ResumeFlags>();
  auto* resume_cmd =
      app.add_subcommand("resume", "resume a paused trial (TRIAL_ID) or an experiment (NAME)");
  resume_cmd->add_option("target", resume->target, "trial id or experiment name")->required();
  resume_cmd
      ->add_option("--rerun-errored", resume->rerun_errored,
                   "also rerun the experiment's ERROR trials")
      ->check(CLI::IsMember({"restore", "restart"}));
  AddChangeExperimentFlag(*resume_cmd, g);
  commands.push_back({resume_cmd, CommandNeeds::kServer, [resume](const GlobalFlags& g) {
                        return ResumeCommand(g, resume->target, resume->rerun_errored);
                      }});

  AddPlainCommand(app, g, commands, "lsx",
                  "list experiments (name, status, trial counts, when retention deletes each)",
                  nullptr, ListExperimentsCommand);

  auto config_json = std::make_shared<std::string>();
  auto* add_cmd =
      app.add_subcommand("add", "add a trial with an explicit config to the running experiment");
  add_cmd->add_option("--config", *config_json, "the trial's config as a JSON object")->required();
  AddChangeExperimentFlag(*add_cmd, g);
  commands.push_back({add_cmd, CommandNeeds::kServer,
                      [config_json](const GlobalFlags& g) { return AddCommand(g, *config_json); }});

  AddExperimentCommands(app, commands);

  struct SetResourcesFlags {
    std::string trial_id;
    std::vector<std::string> pairs;
  };
  auto setres = std::make_shared<SetResourcesFlags>();
  auto* setres_cmd = app.add_subcommand(
      "set-resources", "change the resources a trial that is not running asks for");
  setres_cmd->add_option("trial_id", setres->trial_id)->required();
  setres_cmd->add_option("resources", setres->pairs, "name=amount ... (cpu=2 gpu=0 custom=1)")
      ->required();
  AddChangeExperimentFlag(*setres_cmd, g);
  commands.push_back({setres_cmd, CommandNeeds::kServer, [setres](const GlobalFlags& g) {
                        return SetResourcesCommand(g, setres->trial_id, setres->pairs);
                      }});
}

}  // namespace tunebus
