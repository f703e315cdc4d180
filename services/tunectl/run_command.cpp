// `tunectl run` and `tunectl up`.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <thread>

#include "libs/bus/control_client.hpp"
#include "libs/bus/service_guard.hpp"
#include "libs/service/ready_file.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/pareto_view.hpp"
#include "services/tunectl/progress_table.hpp"
#include "services/tunectl/working_dir_upload.hpp"

namespace tunebus {

namespace {

std::atomic<int> g_signals{0};  // SIGINT / SIGTERM received so far

// How long a run waits for a scheduler that stopped answering (a restart resumes the experiment).
constexpr std::chrono::duration<double> kSchedulerReturnS{60};
void OnSignal(int) { g_signals.fetch_add(1); }

// Creates `dir` (and its parents). False, after a message naming `what` and why, if it cannot
// be created or written.
bool MakeFolder(const std::string& dir, const char* what) {
  const Status made = bus::MakeWritableDir(dir, what);
  if (!made.ok()) std::cerr << "tunectl: " << made.message() << "\n";
  return made.ok();
}

// The command that continues experiment `name` after an interruption.
std::string ResumeHint(const GlobalFlags& g, const RunFlags& r, const std::string& name) {
  if (g.connect.empty()) return "tunectl run " + r.experiment_file;  // resumes (--resume auto)
  return fmt::format("tunectl --connect {} resume {}", g.connect, name);
}

// --resume auto: asks the scheduler to continue an unfinished or interrupted experiment of the
// same name. Returns true if it did (then the run follows it), false if a new run is to be
// submitted; `exit_code` is set when neither can go on.
bool ResumeExisting(ControlClient& client, const ExperimentSpec& spec, int* exit_code) {
  proto::ResumeExperimentCommand resume;
  resume.name = spec.name;
  auto resumed = client.Call(resume);
  if (resumed.ok()) {
    std::cerr << fmt::format(
                     "Resuming experiment {}: {} trials so far (--resume never starts a new run)",
                     spec.name, (*resumed)["total"].dump())
              << std::endl;
    return true;
  }
  const Status& s = resumed.status();
  if (s.code() == StatusCode::kUnavailable) {
    std::cerr << "tunectl: " << s.ToString() << "\n";
    *exit_code = 3;
  } else if (s.code() == StatusCode::kFailedPrecondition &&
             s.message().find(" is finished") != std::string::npos) {
    std::cerr << fmt::format("Experiment {} ended before; starting a new run", spec.name)
              << std::endl;
  }
  return false;
}

void PrintFinal(const nlohmann::json& e, bool json_output) {
  if (json_output) {
    std::cout << e.dump(2) << std::endl;
    return;
  }
  std::cout << "\nExperiment " << e.value("name", std::string()) << " "
            << e.value("status", std::string()) << ": " << e.value("reason", std::string()) << "\n";
  const nlohmann::json& best = e["best"];
  if (best.is_object()) {
    const std::string metric = e.value("metric", std::string());
    std::cout << "Best trial: " << best.value("trial_id", std::string()) << "\n"
              << "  " << metric << " = " << FormatValue(best["last_result"][metric]) << " (mode "
              << e.value("mode", std::string()) << ")\n"
              << "  config: " << best["config"].dump() << "\n"
              << "  results: " << best.value("dir", std::string()) << "\n";
  }
  if (e.contains("pareto_front")) {
    for (const std::string& line : RenderParetoFront(e)) std::cout << line << "\n";
  }
  std::cout << "Results directory: " << e.value("results_dir", std::string()) << std::endl;
}

// Ray Tune's closing table of errored trials: each with the first line of its error and the
// path of its error.txt (the whole error and the trainable's stderr tail).
void PrintErrored(ControlClient& client, const std::string& experiment) {
  proto::ListTrials errored;
  errored.status = "ERROR";
  errored.experiment = experiment;
  auto trials = client.Call(errored);
  if (!trials.ok() || !trials->is_array() || trials->empty()) return;
  std::cout << "Errored trials (" << trials->size() << "):\n";
  for (const nlohmann::json& t : *trials) {
    const std::string error = StringField(t, "error");
    std::cout << "  " << StringField(t, "trial_id") << ": " << error.substr(0, error.find('\n'))
              << "\n"
              << "    " << StringField(t, "dir") << "/error.txt\n";
  }
  std::cout << std::flush;
}

// Packs the experiment's working_dir when it is shipped (nullopt when it is not). Errors name
// the file, line and field ("exp.yaml:4: working_dir.path: no such folder /x").
Result<std::optional<WorkingDirArchive>> PackWorkingDirOf(const ExperimentSpec& spec) {
  if (!spec.working_dir.shipped) return std::optional<WorkingDirArchive>();
  auto archive = PackExperimentWorkingDir(spec.working_dir, spec.results_dir);
  if (!archive.ok()) return archive.status();
  return std::optional<WorkingDirArchive>(std::move(*archive));
}

// Submits and (unless detached) follows the experiment to its end. Returns the exit code.
int SubmitAndFollow(ControlClient& client, const ExperimentSpec& spec,
                    const std::optional<WorkingDirArchive>& working_dir, const GlobalFlags& g,
                    const RunFlags& r, bool json_output) {
  int exit_code = 0;
  const bool resumed = r.resume == "auto" && !r.detach && ResumeExisting(client, spec, &exit_code);
  if (exit_code != 0) return exit_code;
  proto::SubmitExperiment submit;
  submit.spec_yaml = spec.source_yaml;
  submit.base_dir = spec.base_dir;
  submit.source_name = spec.source_path;
  if (working_dir && !resumed) {
    auto uploaded = UploadWorkingDir(client, *working_dir);
    if (!uploaded.ok()) {
      std::cerr << fmt::format("tunectl: cannot upload the working_dir {}: {}",
                               spec.working_dir.path, uploaded.status().ToString())
                << "\n";
      return uploaded.status().code() == StatusCode::kUnavailable ? 3 : 1;
    }
    std::cerr << fmt::format("Shipping working_dir {}: {} files, {} ({} archive, sha256 {}){}",
                             spec.working_dir.path, working_dir->files,
                             HumanBytes(working_dir->content_bytes),
                             HumanBytes(int64_t(working_dir->data.size())),
                             working_dir->digest.substr(0, 12),
                             *uploaded ? "" : ", already in the checkpoint-store")
              << std::endl;
    submit.working_dir_digest = working_dir->digest;
    submit.working_dir_size_bytes = int64_t(working_dir->data.size());
  }
  auto submitted = resumed ? Result<nlohmann::json>(nlohmann::json::object()) : client.Call(submit);
  if (!submitted.ok()) {
    std::cerr << "tunectl: the scheduler refused the experiment: " << submitted.status().ToString()
              << "\n";
    return submitted.status().code() == StatusCode::kUnavailable ? 3 : 1;
  }
  if (const std::string dir = submitted->value("results_dir", std::string());
      !resumed && !dir.empty() && std::filesystem::path(dir).filename() != spec.name) {
    std::cerr << fmt::format("{}/{} holds an earlier run; this run writes to {}",
                             std::filesystem::path(dir).parent_path().string(), spec.name, dir)
              << std::endl;
  }
  if (r.detach) {
    std::cout << (json_output ? submitted->dump(2)
                              : fmt::format("Submitted experiment {} ({} trials)", spec.name,
                                            (*submitted)["total"].dump()))
              << std::endl;
    return 0;
  }
  // The run follows its own experiment, whatever else the suite runs: by journal name once
  // submitted (names are unique only among unfinished experiments), by name when resumed.
  const std::string followed =
      submitted->contains("experiment_id")
          ? fmt::format("{}-{}", spec.name, submitted->value("experiment_id", std::string()))
          : spec.name;
  const bool tty = ::isatty(STDOUT_FILENO) && !json_output;
  const double refresh_s = r.refresh_s > 0 ? r.refresh_s : (tty ? 1.0 : 10.0);
  InPlaceRenderer renderer;
  const Clock& clock = Clock::Real();
  auto last_print = clock.Now() - std::chrono::hours(1);
  bool interrupt_sent = false;
  bool lost = false;      // the scheduler stopped answering ...
  SteadyTime lost_since;  // ... at this time
  while (true) {
    if (g_signals.load() >= 2) {
      std::cerr << "\ntunectl: exiting at once; the experiment stays resumable: "
                << ResumeHint(g, r, spec.name) << "\n";
      return 130;
    }
    if (g_signals.load() == 1 && !interrupt_sent) {
      std::cerr << "\ntunectl: interrupting the experiment: running trials stop and wait to be "
                   "resumed from their "
                   "newest checkpoint (Ctrl-C again to exit at once)\n";
      proto::StopExperiment interrupt;
      interrupt.interrupt = true;
      interrupt.experiment = followed;
      if (auto sent = client.Call(interrupt); !sent.ok()) {
        std::cerr << "tunectl: the scheduler cannot interrupt now: " << sent.status().ToString()
                  << "\n";
      }
      interrupt_sent = true;
    }
    proto::GetExperiment get;
    get.experiment = followed;
    auto e = client.Call(get);
    if (!e.ok() && e.status().code() == StatusCode::kUnavailable) {
      // A scheduler killed and started again (or taken over on another host) resumes the
      // experiment from its journal (docs/explanation/recovery.md): the run waits for it that long.
      if (!lost) {
        lost = true;
        lost_since = clock.Now();
        std::cerr << fmt::format("tunectl: lost the scheduler: {}; waiting up to {:.0f} s for it\n",
                                 e.status().ToString(), kSchedulerReturnS.count());
      }
      if (clock.Now() - lost_since < kSchedulerReturnS) continue;
    }
    if (!e.ok()) {
      std::cerr << "tunectl: lost the scheduler: " << e.status().ToString() << "\n";
      return 3;
    }
    if (lost) {
      std::cerr << "tunectl: the scheduler answers again; following " << followed << "\n";
      lost = false;
    }
    const bool finished = (*e)["finished"].get<bool>();
    const auto now = clock.Now();
    if (!json_output &&
        (finished || now - last_print >= std::chrono::duration<double>(refresh_s))) {
      last_print = now;
      proto::ListTrials list;
      list.experiment = followed;
      auto trials = client.Call(list);
      if (trials.ok()) {
        if (tty) {
          renderer.Draw(RenderProgressTable(*e, *trials, 20));
        } else if (finished) {
          for (const auto& line : RenderProgressTable(*e, *trials, 1000)) std::cout << line << "\n";
        } else {
          std::cout << RenderSummaryLine(*e) << std::endl;
          for (const std::string& health : RenderHealthLines(*e)) std::cout << health << std::endl;
        }
      }
    }
    if (finished) {
      PrintFinal(*e, json_output);
      if (!json_output) PrintErrored(client, followed);
      if ((*e)["status"] == "INTERRUPTED") {
        std::cerr << "tunectl: interrupted; resume with: " << ResumeHint(g, r, spec.name) << "\n";
        return 130;
      }
      const auto& counts = (*e)["counts"];
      if ((*e)["status"] != "FINISHED") return 1;
      if (counts.value("ERROR", 0) > 0) {
        std::cerr << "tunectl: " << counts["ERROR"]
                  << " trial(s) ended in ERROR (see error.txt in their folders)\n";
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
  auto working_dir = PackWorkingDirOf(*spec);
  if (!working_dir.ok()) {
    std::cerr << "tunectl: cannot ship the working_dir: " << working_dir.status().message() << "\n";
    return 2;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  zmq::context_t ctx;
  const bool json_output = g.output == "json";
  if (!g.connect.empty()) {
    auto client = ControlClient::Connect(ctx, g.connect, *g.security,
                                         std::chrono::milliseconds(g.timeout_ms));
    if (!client.ok()) {
      std::cerr << "tunectl: " << client.status().ToString() << "\n";
      return 3;
    }
    return SubmitAndFollow(*client, *spec, *working_dir, g, r, json_output);
  }
  if (r.detach) {
    std::cerr << "tunectl: --detach needs --connect (an embedded run ends with tunectl)\n";
    return 2;
  }
  r.suite.data_dir = spec->results_dir + "/.tunebus/store";
  if (!MakeFolder(r.suite.data_dir, "the results folder")) return 1;
  auto suite = EmbeddedSuite::Start(ctx, r.suite);
  if (!suite.ok()) {
    std::cerr << "tunectl: cannot start the embedded suite: " << suite.status().ToString() << "\n";
    return 1;
  }
  auto client = ControlClient::Connect(ctx, (*suite)->control_endpoint(), *g.security,
                                       std::chrono::milliseconds(g.timeout_ms));
  if (!client.ok()) {
    std::cerr << "tunectl: " << client.status().ToString() << "\n";
    return 1;
  }
  const int code = SubmitAndFollow(*client, *spec, *working_dir, g, r, json_output);
  (*suite)->Stop();
  return code;
}

int UpCommand(const GlobalFlags& g, SuiteOptions suite, const std::string& ready_file) {
  suite.security = g.security;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGHUP, [](int) { bus::Security::RequestReload(); });  // reload the allow-list
  if (!MakeFolder(suite.data_dir, "the data folder")) return 1;
  zmq::context_t ctx;
  auto s = EmbeddedSuite::Start(ctx, suite);
  if (!s.ok()) {
    std::cerr << "tunectl up: " << s.status().ToString() << "\n";
    return 1;
  }
  if (!ready_file.empty()) {
    service::BoundEndpoints bound = {{"control", (*s)->control_endpoint()},
                                     {"events", (*s)->events_endpoint()}};
    if (!(*s)->http_url().empty()) bound["http"] = (*s)->http_url();
    const Status written = service::WriteReadyFile(ready_file, "tunectl", bound, 0);
    if (!written.ok()) {
      std::cerr << "tunectl up: " << written.ToString() << "\n";
      (*s)->Stop();
      return 1;
    }
  }
  std::cout << "tunebus is up; control socket " << (*s)->control_endpoint();
  if (!(*s)->http_url().empty()) std::cout << ", dashboard " << (*s)->http_url();
  std::cout << " (Ctrl-C to stop)" << std::endl;
  while (g_signals.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*s)->Stop();
  return 0;
}

void AddRunCommands(CLI::App& app, Commands& commands) {
  auto run = std::make_shared<RunFlags>();
  auto* run_cmd =
      app.add_subcommand("run", "run an experiment: embedded (no --connect) or on a running suite");
  run_cmd->add_option("experiment", run->experiment_file, "experiment file (YAML)")->required();
  run_cmd->add_flag("--detach,-d", run->detach, "submit and return at once (needs --connect)");
  run_cmd->add_option("--refresh-s", run->refresh_s, "progress refresh period in seconds");
  run_cmd
      ->add_option("--resume", run->resume,
                   "auto: continue an unfinished or interrupted experiment of the same name; "
                   "never: a new run")
      ->check(CLI::IsMember({"auto", "never"}))
      ->capture_default_str();
  run_cmd->add_option("--cpus", run->suite.cpus, "embedded worker CPUs (default: all cores)");
  run_cmd->add_option("--gpus", run->suite.gpus, "embedded worker GPUs");
  commands.push_back(
      {run_cmd, CommandNeeds::kKeys, [run](const GlobalFlags& g) { return RunCommand(g, *run); }});

  struct UpFlags {
    SuiteOptions suite;
    std::string ready_file;
  };
  auto up = std::make_shared<UpFlags>();
  up->suite.control_endpoint = "tcp://127.0.0.1:5555";
  up->suite.events_endpoint = "tcp://127.0.0.1:*";  // a free port; `watch` learns it from `status`
  auto* up_cmd =
      app.add_subcommand("up", "run the embedded suite as a server until SIGTERM/SIGINT");
  up_cmd->add_option("--control", up->suite.control_endpoint, "control endpoint to bind")
      ->capture_default_str();
  up_cmd->add_option("--events", up->suite.events_endpoint, "event stream endpoint to bind")
      ->capture_default_str();
  up_cmd->add_option("--data-dir", up->suite.data_dir, "checkpoint-store folder")
      ->capture_default_str();
  up_cmd->add_option("--ready-file", up->ready_file,
                     "once the control and events endpoints are bound, write them to this file as "
                     "JSON (atomically: {service, pid, endpoints: {control, events, http}}), so "
                     "ports given as tcp://host:* or --http 0 can be learned");
  up_cmd->add_option("--cpus", up->suite.cpus, "embedded worker CPUs (default: all cores)");
  up_cmd->add_option("--gpus", up->suite.gpus, "embedded worker GPUs");
  up_cmd
      ->add_option(
          "--http", up->suite.http,
          "serve the scheduler's web dashboard on PORT (127.0.0.1) or "
          "HOST:PORT (0: any free port, which --ready-file names; docs/how-to/dashboard.md)")
      ->envname("TUNEBUS_HTTP");
  up_cmd
      ->add_option("--http-key-name", up->suite.http_key_name,
                   "with --keys-dir: the dashboard's viewer key (<keys-dir>/NAME.key_secret)")
      ->envname("TUNEBUS_HTTP_KEY_NAME");
  up_cmd
      ->add_option("--finished-cache-mb", up->suite.finished_cache_mb,
                   "MB of finished experiments read back from their journals (by ls, show, "
                   "export, the dashboard, whatif, warm starts) kept in memory for the next "
                   "reads, least recently read dropped first; 0 keeps none after the reply")
      ->envname("TUNEBUS_FINISHED_CACHE_MB")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  up_cmd
      ->add_option("--release-after-ms", up->suite.release_after_ms,
                   "how long an ended experiment stays in memory with nothing in flight before "
                   "its state is released and reads of it come from its journal, ms (at least "
                   "11000, beyond the longest request timeout)")
      ->envname("TUNEBUS_RELEASE_AFTER_MS")
      ->check(CLI::Range(int64_t(11000), std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  up_cmd
      ->add_option("--retain-experiments", up->suite.retention.keep_newest,
                   "keep the N newest finished experiments, delete older finished ones; 0 = off "
                   "(docs/how-to/retention.md)")
      ->check(CLI::NonNegativeNumber)
      ->envname("TUNEBUS_RETAIN_EXPERIMENTS");
  up_cmd
      ->add_option("--retain-days", up->suite.retention.max_age_days,
                   "delete finished experiments that ended more than D days ago; 0 = off")
      ->check(CLI::NonNegativeNumber)
      ->envname("TUNEBUS_RETAIN_DAYS");
  commands.push_back({up_cmd, CommandNeeds::kKeys, [up](const GlobalFlags& g) {
                        SuiteOptions suite = up->suite;
                        if (suite.data_dir.empty()) suite.data_dir = "./tunebus-data/store";
                        return UpCommand(g, std::move(suite), up->ready_file);
                      }});
}

}  // namespace tunebus
