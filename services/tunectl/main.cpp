// tunectl: run experiments (embedded or against a cluster) and control a running scheduler.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>

#include "libs/core/version.hpp"
#include "libs/service/security_flags.hpp"
#include "services/tunectl/commands.hpp"

int main(int argc, char** argv) {
  using namespace tunebus;
  CLI::App app{"tunectl: run and control tunebus hyperparameter-tuning experiments"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags may follow the subcommand: `tunectl ls -o json`
  // "tunectl 0.1.0 (commit abc1234)" on stdout, exit 0 (libs/core/version.hpp).
  app.set_version_flag("--version", std::string("tunectl ") + VersionText());
  GlobalFlags g;
  std::string log_level = "warn";
  app.add_option("--connect,-c", g.connect, "scheduler control endpoint")
      ->envname("TUNEBUS_CONTROL_ENDPOINT");
  app.add_option("--output,-o", g.output, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  app.add_option("--timeout-ms", g.timeout_ms, "control request timeout")->capture_default_str();
  app.add_option("--log-level", log_level, "service log level in embedded mode")
      ->envname("TUNEBUS_LOG_LEVEL")
      ->capture_default_str();
  bus::SecurityOptions security;
  service::AddSecurityFlags(app, security);

  KeygenFlags keygen;
  auto* keygen_cmd = app.add_subcommand(
      "keygen", "write a CURVE keypair: <dir>/NAME.key (public) and NAME.key_secret (0600)");
  keygen_cmd->add_option("name", keygen.name, "key name (a file name): alice, worker-a, ...");
  keygen_cmd->add_option("--role", keygen.role,
                         "viewer, operator, worker, service or searcher (default: service for "
                         "scheduler, checkpoint-store, resource-manager; worker for worker*; "
                         "else viewer)");
  keygen_cmd->add_option("--dir", keygen.dir,
                         "key folder (default: --keys-dir, else ./tunebus-keys)");
  keygen_cmd->add_flag("--authorize", keygen.authorize,
                       "also put the public key in <dir>/authorized, the allow-list");
  keygen_cmd->add_flag("--suite", keygen.suite,
                       "the keys of a whole suite (scheduler, checkpoint-store, resource-manager, "
                       "worker, tunectl), all authorized");
  keygen_cmd->add_flag("--force", keygen.force, "replace existing key files");

  RunFlags run;
  auto* run_cmd =
      app.add_subcommand("run", "run an experiment: embedded (no --connect) or on a running suite");
  run_cmd->add_option("experiment", run.experiment_file, "experiment file (YAML)")->required();
  run_cmd->add_flag("--detach,-d", run.detach, "submit and return at once (needs --connect)");
  run_cmd->add_option("--refresh-s", run.refresh_s, "progress refresh period in seconds");
  run_cmd
      ->add_option("--resume", run.resume,
                   "auto: continue an unfinished or interrupted experiment of the same name; "
                   "never: a new run")
      ->check(CLI::IsMember({"auto", "never"}))
      ->capture_default_str();
  run_cmd->add_option("--cpus", run.suite.cpus, "embedded worker CPUs (default: all cores)");
  run_cmd->add_option("--gpus", run.suite.gpus, "embedded worker GPUs");

  SuiteOptions up;
  up.control_endpoint = "tcp://127.0.0.1:5555";
  up.events_endpoint = "tcp://127.0.0.1:*";  // a free port; `watch` learns it from `status`
  auto* up_cmd =
      app.add_subcommand("up", "run the embedded suite as a server until SIGTERM/SIGINT");
  up_cmd->add_option("--control", up.control_endpoint, "control endpoint to bind")
      ->capture_default_str();
  up_cmd->add_option("--events", up.events_endpoint, "event stream endpoint to bind")
      ->capture_default_str();
  up_cmd->add_option("--data-dir", up.data_dir, "checkpoint-store folder")->capture_default_str();
  std::string up_ready_file;
  up_cmd->add_option("--ready-file", up_ready_file,
                     "once the control and events endpoints are bound, write them to this file as "
                     "JSON (atomically: {service, pid, endpoints: {control, events, http}}), so "
                     "ports given as tcp://host:* or --http 0 can be learned");
  up_cmd->add_option("--cpus", up.cpus, "embedded worker CPUs (default: all cores)");
  up_cmd->add_option("--gpus", up.gpus, "embedded worker GPUs");
  up_cmd
      ->add_option("--http", up.http,
                   "serve the scheduler's web dashboard on PORT (127.0.0.1) or "
                   "HOST:PORT (0: any free port, which --ready-file names; docs/dashboard.md)")
      ->envname("TUNEBUS_HTTP");
  up_cmd
      ->add_option("--http-key-name", up.http_key_name,
                   "with --keys-dir: the dashboard's viewer key (<keys-dir>/NAME.key_secret)")
      ->envname("TUNEBUS_HTTP_KEY_NAME");

  std::string trial_id;
  ListFlags list;
  auto* ls_cmd = app.add_subcommand("ls", "list the trials of an experiment");
  ls_cmd->add_option("--status", list.status,
                     "only trials with this status (PENDING, RUNNING, ...)");
  ls_cmd->add_option("--sort", list.sort,
                     "sort by a result key or trial field; -KEY sorts descending");
  ls_cmd
      ->add_option("--columns", list.columns,
                   "table columns: trial fields, result keys, config.KEY")
      ->delimiter(',');
  ls_cmd->add_option("--limit", list.limit, "at most this many trials")
      ->check(CLI::NonNegativeNumber);
  ls_cmd->add_option("--offset", list.offset, "skip this many trials first (with --limit: a page)")
      ->check(CLI::NonNegativeNumber);
  auto* best_cmd = app.add_subcommand("best", "the best trial: config, metric, checkpoint");
  std::string export_format;  // "" = csv, or json with -o json
  auto* export_cmd = app.add_subcommand("export", "every trial with its config and last result");
  export_cmd
      ->add_option("--format", export_format, "csv (default) or json (the default with -o json)")
      ->check(CLI::IsMember({"csv", "json"}));
  int64_t log_lines = 50;
  bool log_stderr = false;
  auto* logs_cmd = app.add_subcommand("logs", "the tail of a trial's stdout (or --stderr)");
  logs_cmd->add_option("trial_id", trial_id)->required();
  logs_cmd->add_option("--lines,-n", log_lines)->check(CLI::PositiveNumber)->capture_default_str();
  logs_cmd->add_flag("--stderr", log_stderr, "show stderr instead of stdout");
  std::string watch_events;
  double watch_for_s = 0;
  auto* watch_cmd = app.add_subcommand("watch", "live progress from the scheduler's event stream");
  watch_cmd
      ->add_option("--events", watch_events,
                   "event stream endpoint (default: the one the scheduler names in its status)")
      ->envname("TUNEBUS_EVENTS_ENDPOINT");
  watch_cmd->add_option("--for-s", watch_for_s,
                        "return after this many seconds (0: when the experiment ends)");
  auto* show_cmd = app.add_subcommand("show", "show one trial");
  show_cmd->add_option("trial_id", trial_id)->required();
  auto* stop_cmd = app.add_subcommand("stop", "stop one trial");
  stop_cmd->add_option("trial_id", trial_id)->required();
  auto* stopx_cmd =
      app.add_subcommand("stop-experiment", "stop every unfinished trial and end the experiment");
  auto* status_cmd = app.add_subcommand("status", "summary of an experiment");
  auto* workers_cmd = app.add_subcommand("workers", "workers and their resources");
  auto* resources_cmd = app.add_subcommand(
      "resources", "capacity, committed and free resources per worker and in total");
  auto* pause_cmd = app.add_subcommand("pause", "pause a trial (checkpoint, free its resources)");
  pause_cmd->add_option("trial_id", trial_id)->required();
  std::string rerun_errored;
  auto* resume_cmd =
      app.add_subcommand("resume", "resume a paused trial (TRIAL_ID) or an experiment (NAME)");
  resume_cmd->add_option("target", trial_id, "trial id or experiment name")->required();
  resume_cmd
      ->add_option("--rerun-errored", rerun_errored, "also rerun the experiment's ERROR trials")
      ->check(CLI::IsMember({"restore", "restart"}));
  auto* lsx_cmd = app.add_subcommand("lsx", "list experiments (name, status, trial counts)");
  std::string config_json;
  auto* add_cmd =
      app.add_subcommand("add", "add a trial with an explicit config to the running experiment");
  add_cmd->add_option("--config", config_json, "the trial's config as a JSON object")->required();
  std::string delete_experiment;
  bool keep_results = false;
  auto* delete_cmd = app.add_subcommand(
      "delete", "delete a finished experiment: its journal and checkpoints, and its results");
  delete_cmd->add_option("experiment", delete_experiment, "experiment name or journal name")
      ->required();
  delete_cmd->add_flag("--keep-results", keep_results, "keep its results folder");
  std::string weight_experiment;
  double weight = 1;
  auto* weight_cmd = app.add_subcommand(
      "set-weight", "change a running experiment's fair share of the suite (weighted DRF)");
  weight_cmd->add_option("experiment", weight_experiment, "experiment name or journal name")
      ->required();
  weight_cmd->add_option("weight", weight, "a number > 0 (the file's `weight`, default 1)")
      ->required()
      ->check(CLI::PositiveNumber);
  std::vector<std::string> resource_pairs;
  auto* setres_cmd = app.add_subcommand(
      "set-resources", "change the resources a trial that is not running asks for");
  setres_cmd->add_option("trial_id", trial_id)->required();
  setres_cmd->add_option("resources", resource_pairs, "name=amount ... (cpu=2 gpu=0 custom=1)")
      ->required();

  DashboardTokenFlags dashboard_token;
  auto* dashboard_token_cmd = AddDashboardTokenCommand(app, dashboard_token);

  CheckpointExportFlags checkpoint_export;
  auto* checkpoint_cmd = app.add_subcommand("checkpoint", "stored checkpoints");
  checkpoint_cmd->require_subcommand(1);
  auto* ckpt_export_cmd = checkpoint_cmd->add_subcommand(
      "export", "write a trial's checkpoint (the files its trainable saved) into a folder");
  ckpt_export_cmd->add_option("trial_id", checkpoint_export.trial_id)->required();
  ckpt_export_cmd->add_option(
      "--checkpoint", checkpoint_export.checkpoint_id,
      "checkpoint id (or its last part, e.g. 00000020-a1); default: the newest");
  ckpt_export_cmd->add_option(
      "--to", checkpoint_export.to,
      "a new or empty folder; default ./<trial_id>_checkpoint_<iteration>-a<attempt>");
  // The read commands answer for a finished experiment too (read from its journal).
  for (CLI::App* read :
       {ls_cmd, best_cmd, export_cmd, logs_cmd, watch_cmd, show_cmd, status_cmd, ckpt_export_cmd}) {
    read->add_option("--experiment,-e", g.experiment,
                     "the experiment (name, or journal name NAME-ID); default: the only running "
                     "one, else the newest");
  }
  // The commands that change an experiment: a trial id names its own experiment.
  for (CLI::App* change : {stop_cmd, stopx_cmd, pause_cmd, resume_cmd, add_cmd, setres_cmd}) {
    change->add_option("--experiment,-e", g.experiment,
                       "the experiment (name, or journal name NAME-ID); default: the only "
                       "running one (with several, name one)");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // Logs (the embedded services' too) go to stderr: stdout holds only what the command prints,
  // so `-o json` output is one JSON document.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (up.data_dir.empty()) up.data_dir = "./tunebus-data/store";
  g.keys_dir = security.keys_dir;
  if (*keygen_cmd) return KeygenCommand(g, keygen);
  if (auto loaded = service::LoadSecurity(security, "tunectl"); loaded.ok()) {
    g.security = std::move(loaded).value();
  } else {
    std::cerr << "tunectl: " << loaded.status().message() << "\n";
    return 2;
  }

  // A library error that escapes a command (a file system or socket failure) is a message and
  // exit 1, never an abort.
  try {
    if (*run_cmd) return RunCommand(g, run);
    if (*up_cmd) return UpCommand(g, up, up_ready_file);
    if (g.connect.empty()) g.connect = "tcp://127.0.0.1:5555";
    if (*ls_cmd) return ListCommand(g, list);
    if (*best_cmd) return BestCommand(g);
    if (*export_cmd) return ExportCommand(g, export_format);
    if (*logs_cmd) return LogsCommand(g, trial_id, log_lines, log_stderr);
    if (*watch_cmd) return WatchCommand(g, watch_events, watch_for_s);
    if (*show_cmd) return ShowCommand(g, trial_id);
    if (*stop_cmd) return StopCommand(g, trial_id);
    if (*stopx_cmd) return StopExperimentCommand(g);
    if (*status_cmd) return StatusCommand(g);
    if (*workers_cmd) return WorkersCommand(g);
    if (*resources_cmd) return ResourcesCommand(g);
    if (*pause_cmd) return PauseCommand(g, trial_id);
    if (*resume_cmd) return ResumeCommand(g, trial_id, rerun_errored);
    if (*lsx_cmd) return ListExperimentsCommand(g);
    if (*add_cmd) return AddCommand(g, config_json);
    if (*setres_cmd) return SetResourcesCommand(g, trial_id, resource_pairs);
    if (*weight_cmd) return SetWeightCommand(g, weight_experiment, weight);
    if (*delete_cmd) return DeleteCommand(g, delete_experiment, keep_results);
    if (*ckpt_export_cmd) return CheckpointExportCommand(g, checkpoint_export);
    if (*dashboard_token_cmd) return DashboardTokenCommand(g, dashboard_token);
  } catch (const std::exception& e) {
    std::cerr << "tunectl: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
