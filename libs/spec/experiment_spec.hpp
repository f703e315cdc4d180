// ExperimentSpec: the validated content of an experiment file (YAML).
//
// The file reads like a Ray Tune `tune.run(...)` call; see docs/reference/experiment-file.md for
// the reference. Parsing validates everything before anything starts: an invalid file yields
// InvalidArgument whose message names the file, the line (1-based) and the field path, e.g.
//   "exp.yaml:7: param_space.lr.loguniform: low must be > 0, got -1"
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/checkpoint_failure.hpp"
#include "libs/core/fail_fast.hpp"
#include "libs/core/status.hpp"
#include "libs/tune/pareto.hpp"
#include "libs/workdir/working_dir_archive.hpp"

namespace tunebus {

struct TrainableSpec {
  std::vector<std::string> command;  // argv of a command trainable; empty when builtin is set
  std::string builtin;               // name of a built-in trainable ("mock", "noop"), or empty
  /// Absolute: where the command runs when its working_dir is not shipped (`working_dir: false`,
  /// or a submission without a digest): the experiment file's folder or `working_dir.path`.
  std::string working_dir;
  /// SHA-256 of the shipped working_dir's archive in the checkpoint-store, "" = not shipped.
  /// Not from the file: `tunectl` packs and uploads it, the scheduler journals it.
  std::string working_dir_digest;
  int64_t working_dir_size_bytes = 0;             // of that archive
  nlohmann::json env = nlohmann::json::object();  // extra environment variables (string values)
};

struct StopSpec {
  /// Stop a trial when result[key] >= threshold (Ray Tune's dict stopper), e.g.
  /// {"training_iteration": 20}.
  std::map<std::string, double> thresholds;
  /// Stop the whole experiment after this many seconds of wall time (Ray Tune's time_budget_s).
  std::optional<double> time_budget_s;
};

/// The `driver:` section: the Python driver that runs Ray Tune's driver-side callables
/// (stoppers, PBT mutation functions) over the driver link, proto/PROTOCOL.md section 7b.
struct DriverSpec {
  std::string endpoint;  // the driver's ROUTER (required): tcp://host:port, ipc://path
  /// The driver's CURVE public key on a tcp:// endpoint: 40 Z85 characters or a public key
  /// file's path (relative to the experiment file's folder); "" = <keys-dir>/driver.key.
  std::string server_key;
  bool on_result = true;  // send every result to the driver before deciding
  double timeout_s = 10;  // per request; then unavailable, retried with backoff
};

/// The `retention:` section: when the scheduler deletes this experiment after it finished
/// (services/scheduler/core/retention_policy.hpp, docs/how-to/retention.md). The scheduler's
/// --retain-experiments rule applies to it as to every finished experiment.
struct RetentionSpec {
  /// Delete it once it ended this many days ago (> 0; fractions allowed); replaces the
  /// scheduler's --retain-days for this experiment. nullopt: --retain-days (if given).
  std::optional<double> days;
  /// A deletion by retention removes its journal and checkpoints but keeps its results folder.
  bool keep_results = false;
};

struct ExperimentSpec {
  std::string name;  // [A-Za-z0-9_.-]+, names the results folder
  TrainableSpec trainable;
  /// The param space as written, with samplers as single-key objects:
  /// {"lr": {"loguniform": [1e-4, 1e-1]}, "penalty": {"choice": ["l1", "l2"]}, "k": 3}.
  nlohmann::json param_space = nlohmann::json::object();
  int64_t num_samples = 1;       // >= 1, or -1 for "until time_budget_s or a stop"
  std::optional<uint64_t> seed;  // same seed -> same configs in the same order
  /// The single objective: the result key to optimise and "max" | "min" (`metric: acc`,
  /// `mode: max`); both empty when the file names none, and when it names several (then
  /// `objectives` holds them, and whatever reads one metric finds none: no best trial, no
  /// inherited trial-scheduler metric).
  std::string metric;
  std::string mode;
  /// Several objectives (`metric: [val_accuracy, latency_ms]`, `mode: [max, min]`,
  /// docs/reference/search.md "Many objectives"): two or more, distinct names, in the file's order;
  /// empty for one.
  std::vector<Objective> objectives;
  StopSpec stop;
  /// `working_dir`: the folder shipped to every worker (Ray's runtime_env working_dir). Absent:
  /// the file's folder, shipped for a command trainable (a builtin ships nothing); a string: that
  /// folder (relative to the file's); a map {path, excludes, max_size_mb}; false: not shipped,
  /// the command runs at the file's folder on every worker host.
  WorkingDirSpec working_dir;
  std::map<std::string, double> resources_per_trial = {{"cpu", 1.0}};  // amounts, cpu/gpu/custom
  int64_t max_concurrent_trials = 0;                                   // 0 = no limit
  /// Its share of a suite that runs several experiments: weighted Dominant Resource Fairness
  /// (services/scheduler/core/fair_share.hpp, docs/explanation/fair-share.md); > 0. `tunectl
  /// set-weight` changes it while it runs.
  double weight = 1;
  /// Whether another experiment's pending trials may PAUSE (checkpoint, free) this one's running
  /// trials above its fair share; they continue from that checkpoint once it is under its share
  /// again (docs/explanation/fair-share.md). Off by default: a quota then only stops new
  /// placements.
  bool preemptible = false;
  std::string results_dir;  // absolute; default "<working_dir>/results"
  /// False when the file gives an absolute results_dir; true when it gives a relative one or none
  /// (results_dir then names a folder beside the file, on the host that submitted it).
  bool results_dir_beside_file = true;
  int64_t max_failures = 0;        // retries per trial after trainable errors; -1 = forever
  int64_t max_worker_losses = -1;  // requeues per trial after losing its worker; -1 = no limit
  /// A running trainable that reports no result for this long (seconds; time spent waiting for
  /// a decision does not count) fails with that reason (then max_failures applies). 0 = off.
  double report_timeout_s = 0;
  /// Ray Tune's fail_fast: false (off), true (at the first ERROR trial stop every unfinished
  /// trial, the experiment ends ERROR) or raise (abort at once, leaving other trials as they
  /// were).
  FailFast fail_fast = FailFast::kOff;
  /// Keep a trial that fits no worker PENDING until a big enough worker registers (Ray Tune's
  /// queue_trials) instead of making it ERROR.
  bool queue_trials = false;
  int64_t checkpoint_freq = 0;       // checkpoint every N training iterations; 0 = never
  bool checkpoint_at_end = false;    // checkpoint when a trial stops (decision/stopper/user)
  int64_t keep_checkpoints_num = 0;  // keep at most N per trial; 0 = keep all
  /// Result key ranking checkpoints for keep_checkpoints_num ("min-" prefix = lower is better);
  /// empty = newest are best.
  std::string checkpoint_score_attr;
  /// What a running trial does when the checkpoint-store refuses a checkpoint asked of it
  /// (e.g. its disk is full): continue (default; noted on the trial, which runs on), pause (as
  /// `tunectl pause`) or fail (a trial failure: max_failures retries, then ERROR).
  CheckpointFailureMode checkpoint_failure = CheckpointFailureMode::kContinue;
  /// Checkpoint id (from `tunectl show`) every trial of this experiment starts from; results
  /// continue its training_iteration. Empty = from scratch.
  std::string restore_from;
  std::string scheduler = "fifo";                              // trial scheduler name
  nlohmann::json scheduler_config = nlohmann::json::object();  // its parameters
  /// The search algorithm (`search:`, docs/reference/search.md): "random" (default), "tpe" or
  /// "bohb", and the section's other keys (max_concurrent, points_to_evaluate, evaluated_rewards,
  /// the searcher's own parameters) as MakeSearcher / SearchOptions::Parse read them.
  std::string search = "random";
  /// `driver:` (absent: no driver link).
  std::optional<DriverSpec> driver;
  /// `retention:` (absent: only the scheduler's --retain-experiments / --retain-days apply).
  std::optional<RetentionSpec> retention;
  nlohmann::json search_config = nlohmann::json::object();
  std::string source_yaml;  // the file's text, kept for the journal and resubmission
  std::string source_path;  // the file's path as given (for error messages)
  std::string base_dir;     // absolute: the folder relative paths resolve against (the file's)
};

/// Parses and validates an experiment file. Relative paths (results_dir, the command's
/// working folder) resolve against the file's folder.
/// Errors: NotFound if the file cannot be read; InvalidArgument "<file>:<line>: <field>: <why>".
Result<ExperimentSpec> ParseExperimentFile(const std::string& path);

/// Same, from text. `base_dir` is the absolute folder relative paths resolve against and
/// `source_name` is used as "<file>" in error messages.
Result<ExperimentSpec> ParseExperimentYaml(const std::string& yaml_text,
                                           const std::string& base_dir,
                                           const std::string& source_name);

}  // namespace tunebus
