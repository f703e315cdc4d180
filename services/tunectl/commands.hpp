// tunectl subcommands. Each returns the process exit code:
//   0 success; 1 the experiment ended without finishing every trial (errors, stopped) or the
//   server refused the request; 2 invalid usage or experiment file; 3 cannot reach the server.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "services/tunectl/embedded_suite.hpp"

namespace CLI {
class App;
}

namespace tunebus {

struct GlobalFlags {
  std::string connect;           // control endpoint; "" = embedded (run only)
  std::string output = "table";  // "table" | "json"
  int64_t timeout_ms = 10000;
  /// -e NAME of the read commands (ls, show, best, status, export, logs, watch, checkpoint
  /// export): which experiment answers; "" = the current one (proto::ListTrials::experiment).
  std::string experiment;
  /// CURVE keys of the control and event sockets (--keys-dir; key name default "tunectl").
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  std::string keys_dir;  // --keys-dir as given (keygen's default folder)
};

/// What main does before a chosen command runs.
enum class CommandNeeds {
  kNothing,  // keygen: runs before any key is loaded (it writes keys)
  kKeys,     // run, up: the keys are loaded; no --connect means the embedded suite
  kServer,   // the others: the keys are loaded; --connect defaults to tcp://127.0.0.1:5555
};

/// A subcommand a registration function added, and what runs it once the command line names it.
/// A library exception escaping `run` (but keygen's) is printed and exits 1.
struct Command {
  CLI::App* app;  // the subcommand (or checkpoint's sub-subcommand); true once parsing chose it
  CommandNeeds needs;
  std::function<int(const GlobalFlags&)> run;
};
using Commands = std::vector<Command>;

// Registration, one function per command group (in its file): each adds its subcommands and
// their flags to `app` and appends them to `commands`. main calls them in the order `tunectl
// --help` lists the subcommands. `g` outlives `app`: the -e options write g.experiment.
void AddKeygenCommand(CLI::App& app, Commands& commands);  // keygen
void AddRunCommands(CLI::App& app, Commands& commands);    // run, up
void AddOperatorCommands(CLI::App& app, GlobalFlags& g,    // ls, best, export, logs
                         Commands& commands);
void AddWatchCommand(CLI::App& app, GlobalFlags& g, Commands& commands);  // watch
/// show, stop, stop-experiment, status, workers, resources, pause, resume, lsx, add, delete,
/// set-weight, set-resources.
void AddControlCommands(CLI::App& app, GlobalFlags& g, Commands& commands);
void AddDashboardTokenCommand(CLI::App& app, Commands& commands);  // dashboard-token
void AddCheckpointCommands(CLI::App& app, GlobalFlags& g,          // checkpoint export
                           Commands& commands);
void AddWhatIfCommand(CLI::App& app, Commands& commands);  // whatif (whatif_command.cpp)
/// validate, experiment-fields (hidden; validate_command.cpp).
void AddValidateCommands(CLI::App& app, Commands& commands);

/// `-e NAME` of a read command, which answers for a finished experiment too (read from its
/// journal): default the only running experiment, else the newest (main.cpp).
void AddReadExperimentFlag(CLI::App& command, GlobalFlags& g);
/// `-e NAME` of a command that changes an experiment (a trial id names its own experiment):
/// default the only running one (main.cpp).
void AddChangeExperimentFlag(CLI::App& command, GlobalFlags& g);

struct KeygenFlags {
  std::string name;
  std::string role;  // "" = by name: service for the services' names, worker for worker*, viewer
  std::string dir;   // "" = --keys-dir, else ./tunebus-keys
  bool authorize = false;  // also copy the public key into <dir>/authorized
  bool suite = false;      // the keys of a whole suite, all authorized
  bool force = false;      // replace existing key files
};

struct RunFlags {
  std::string experiment_file;
  bool detach = false;
  double refresh_s = 0;  // 0 = 1 s on a terminal, 10 s otherwise
  /// "auto": an experiment of the same name that is unfinished or interrupted is resumed instead
  /// of started again (Ray Tune's resume="AUTO"); "never": always a new run.
  std::string resume = "auto";
  SuiteOptions suite;
};

int RunCommand(const GlobalFlags& g, RunFlags r);
/// `tunectl up`: serves until SIGTERM/SIGINT. With `ready_file`, writes the bound control and
/// events endpoints there once they are bound (libs/service/ready_file.hpp).
int UpCommand(const GlobalFlags& g, SuiteOptions suite, const std::string& ready_file);
/// `tunectl keygen NAME [--role ROLE] [--dir DIR] [--authorize] [--force]`, or `--suite`: writes
/// CURVE keypairs (bus::WriteCurveKeyPair). 0, 1 on an error, 2 on bad flags.
int KeygenCommand(const GlobalFlags& g, const KeygenFlags& flags);
struct ListFlags {
  std::string status;                // only trials with this status
  std::string sort;                  // result key (or trial field); "-key" sorts descending
  std::vector<std::string> columns;  // table columns: trial fields, result keys, "config.<key>"
  int64_t limit = 0;                 // 0 = all
  int64_t offset = 0;                // skip this many first (creation order, or sorted order)
  bool pareto = false;               // only the Pareto front (a multi-objective experiment)
};
/// `tunectl ls`: -o json prints the (sorted, limited) array of trial objects. `--pareto`: only
/// the Pareto front of a multi-objective experiment, in its order (exit 1 for one objective);
/// the plain table marks the front's trials in its "pareto" column.
int ListCommand(const GlobalFlags& g, const ListFlags& flags);
/// `tunectl best`: the best trial by the experiment's metric and mode (trial, config, metric,
/// newest checkpoint id); -o json: the trial object. Exit 1 when there is none yet. A
/// multi-objective experiment: its Pareto front (each trial with its objectives' values and
/// config, best first by the first objective); -o json: the array of its trial objects.
int BestCommand(const GlobalFlags& g);
/// `tunectl export --format csv|json`: every trial with its config and last result; csv has a
/// header of trial_id, status, config.<key>..., <result key>... (flattened, dotted). No
/// --format ("") means json under -o json, else csv.
int ExportCommand(const GlobalFlags& g, const std::string& format);
/// `tunectl logs TRIAL_ID`: the last `lines` lines of the trainable's stdout (or stderr), read
/// from the trial folder the scheduler names (tunectl must see the results folder: same host,
/// or the shared results volume of the compose setup). Exit 1 if the file cannot be read.
int LogsCommand(const GlobalFlags& g, const std::string& trial_id, int64_t lines,
                bool stderr_stream);
/// `tunectl watch`: a live table from the scheduler's event stream (SUB on `events`, no
/// polling): progress bar (finished / total, ETA), counts per status, the trials; redrawn in
/// place on a terminal, one line per event otherwise. Returns when the experiment ends (0 if
/// it finished every trial) or after `for_s` seconds (> 0).
/// `events`: the scheduler's event endpoint; empty = the one its status names (WatchEndpoint).
int WatchCommand(const GlobalFlags& g, std::string events, double for_s);
int ShowCommand(const GlobalFlags& g, const std::string& trial_id);
int StopCommand(const GlobalFlags& g, const std::string& trial_id);
int StopExperimentCommand(const GlobalFlags& g);
int StatusCommand(const GlobalFlags& g);
int WorkersCommand(const GlobalFlags& g);
int PauseCommand(const GlobalFlags& g, const std::string& trial_id);
/// `target`: a PAUSED trial's id (unpause), or an experiment's name (resume it; with
/// `rerun_errored` "restore" / "restart" its ERROR trials run again).
int ResumeCommand(const GlobalFlags& g, const std::string& target,
                  const std::string& rerun_errored);
/// Experiments in this scheduler and in the store's journals (`tunectl lsx`).
int ListExperimentsCommand(const GlobalFlags& g);
/// `config_json`: a JSON object. Exit 2 if it is not one.
int AddCommand(const GlobalFlags& g, const std::string& config_json);
/// `tunectl delete NAME [--keep-results]`: a finished experiment's journal, checkpoints and
/// (unless kept) results folder.
int DeleteCommand(const GlobalFlags& g, const std::string& experiment, bool keep_results);
/// `tunectl set-weight NAME W`: the running experiment's fair-share weight (> 0).
int SetWeightCommand(const GlobalFlags& g, const std::string& experiment, double weight);
/// `pairs`: "name=amount" (amount >= 0). Exit 2 for a malformed pair.
int SetResourcesCommand(const GlobalFlags& g, const std::string& trial_id,
                        const std::vector<std::string>& pairs);
struct CheckpointExportFlags {
  std::string trial_id;
  std::string checkpoint_id;  // "" = the trial's newest; a full id or its last part ("00000020-a1")
  std::string to;             // "" = ./<trial_id>_checkpoint_<iteration>-a<attempt>
};
/// `tunectl checkpoint export TRIAL_ID`: writes the trial's stored checkpoint (the files its
/// trainable saved) into a new or empty folder, through the scheduler's control socket (so from
/// any host). Exit 2 when the folder exists and is not empty (or is a file), 1 when the server
/// refuses (unknown experiment or trial, no such checkpoint) or the folder cannot be written, 3
/// when the server cannot be reached. Nothing is left behind on failure.
int CheckpointExportCommand(const GlobalFlags& g, const CheckpointExportFlags& flags);
struct DashboardTokenFlags {
  std::string role = "operator";  // "operator" | "viewer"
  std::string ttl = "12h";        // dashboard::ParseTokenTtl
  std::string name;               // "" = the scheduler names it (the key's name, else operator)
};
/// Asks the scheduler for a dashboard login token (an operator's request) and prints its sign-in
/// URL (-o json: {token, name, role, issued_at, expires_at, http_url, login_url}). 0; 1 when the
/// scheduler refuses (a viewer's key: forbidden); 2 for a bad --ttl; 3 when it cannot be reached.
int DashboardTokenCommand(const GlobalFlags& g, const DashboardTokenFlags& flags);
/// Capacity, committed and free per worker and in total; -o json: {"total": {capacity,
/// committed, free}, "workers": [list_workers objects]}.
int ResourcesCommand(const GlobalFlags& g);

}  // namespace tunebus
