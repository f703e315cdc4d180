#include "libs/spec/spec_fields.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <stdexcept>

namespace tunebus {
namespace {

namespace fs = std::filesystem;

// The folder the defaults' files are parsed as if they were in (relative defaults are shown
// relative to it).
constexpr const char* kDefaultsDir = "/experiment";

std::string Bool(bool b) { return b ? "true" : "false"; }
std::string Number(double x) { return fmt::format("{}", x); }
std::string Relative(const std::string& path, const std::string& base) {
  return fs::path(path).lexically_relative(base).string();
}
// A flow map {cpu: 1, gpu: 0.5}.
std::string FlowMap(const std::map<std::string, double>& amounts) {
  std::vector<std::string> items;
  for (const auto& [key, amount] : amounts) items.push_back(fmt::format("{}: {}", key, amount));
  return fmt::format("{{{}}}", fmt::join(items, ", "));
}
const DriverSpec& Driver(const ExperimentSpec& s) {
  static const DriverSpec kNone;
  return s.driver ? *s.driver : kNone;
}

constexpr std::string_view kMinimal = "name: defaults\ntrainable: {builtin: noop}\n";

std::vector<SpecSection> MakeSections() {
  std::vector<SpecSection> sections;
  sections.push_back(SpecSection{
      .name = "",
      .meaning = "The experiment file is one YAML map; it reads like a Ray Tune tune.run(...) "
                 "call. A key not below is refused, listing the known ones.",
      .defaults_from = kMinimal,
      .fields = {
          {.name = "name",
           .type = "string",
           .meaning = "The experiment's name; it names the results folder.",
           .rule = "must match [A-Za-z0-9_.-]+ (it names the results folder)",
           .required = true},
          {.name = "trainable",
           .type = "map",
           .meaning = "What each trial runs: a command or a builtin (see trainable below).",
           .rule = "a map with 'command' or 'builtin', and optionally 'env'",
           .required = true},
          {.name = "param_space",
           .type = "map",
           .meaning = "The config each trial gets: Ray Tune's sampling functions as single-key "
                      "maps ({loguniform: [low, high]}), grid_search, nested maps, constants.",
           .rule = "a map of config keys; each sampler's arguments are checked (low < high, ...)",
           .default_of = [](const ExperimentSpec& s) { return s.param_space.dump(); }},
          {.name = "num_samples",
           .type = "integer",
           .meaning = "Samples of the param space (per grid point); -1 = until a stop.",
           .rule = "must be >= 1, or -1 for unbounded (which needs stop.time_budget_s or a stop "
                   "threshold)",
           .default_of = [](const ExperimentSpec& s) { return std::to_string(s.num_samples); }},
          {.name = "seed",
           .type = "integer",
           .meaning = "The same seed gives the same configs in the same order.",
           .rule = "an integer >= 0",
           .when_absent = "a random seed"},
          {.name = "metric",
           .type = "string or list of strings",
           .meaning = "The result key that defines the best trial; a list gives several "
                      "objectives (a Pareto front).",
           .rule = "needs mode; a list names two or more distinct keys, as many as mode's",
           .when_absent = "none: no best trial, and a trial scheduler names its own"},
          {.name = "mode",
           .type = "max | min, or a list of them",
           .meaning = "Whether the metric is maximised or minimised.",
           .rule = "required with metric; max or min",
           .when_absent = "none (required with metric)"},
          {.name = "stop",
           .type = "map",
           .meaning = "When trials and the experiment stop (see stop below).",
           .rule = "a map of result key -> number, and time_budget_s",
           .when_absent = "a trial runs until its trainable returns"},
          {.name = "resources_per_trial",
           .type = "map of resource -> number",
           .meaning = "What one trial holds on its worker: cpu, gpu, memory (bytes) or custom "
                      "resources.",
           .rule = "names cpu, gpu, memory or a custom [A-Za-z_][A-Za-z0-9_]* (lower case), "
                   "amounts >= 0; cpu is 1 when left out, as Ray",
           .default_of = [](const ExperimentSpec& s) { return FlowMap(s.resources_per_trial); }},
          {.name = "max_concurrent_trials",
           .type = "integer",
           .meaning = "At most this many trials run at once (also limits a tpe, bohb or "
                      "external searcher, as Ray).",
           .rule = "must be >= 0 (0 = no limit)",
           .default_of =
               [](const ExperimentSpec& s) { return std::to_string(s.max_concurrent_trials); }},
          {.name = "weight",
           .type = "number",
           .meaning = "The experiment's share of a suite that runs several (weighted Dominant "
                      "Resource Fairness); tunectl set-weight changes it while it runs.",
           .rule = "must be a number > 0 (the experiment's fair-share weight)",
           .default_of = [](const ExperimentSpec& s) { return Number(s.weight); }},
          {.name = "preemptible",
           .type = "boolean",
           .meaning = "Whether another experiment's pending trials may pause this one's trials "
                      "above its fair share (they continue from a checkpoint later).",
           .rule = "true or false",
           .default_of = [](const ExperimentSpec& s) { return Bool(s.preemptible); }},
          {.name = "results_dir",
           .type = "folder",
           .meaning = "A run writes <results_dir>/<name> (<name>-<id> when that holds an "
                      "earlier run); relative to the file's folder.",
           .rule = "a non-empty path",
           .default_of =
               [](const ExperimentSpec& s) { return Relative(s.results_dir, s.base_dir); }},
          {.name = "max_failures",
           .type = "integer",
           .meaning = "Retries per trial after a trainable error, from its newest checkpoint.",
           .rule = "must be >= 0, or -1 to retry forever",
           .default_of = [](const ExperimentSpec& s) { return std::to_string(s.max_failures); }},
          {.name = "max_worker_losses",
           .type = "integer",
           .meaning = "Requeues per trial after losing its worker (not counted in max_failures).",
           .rule = "must be >= 0, or -1 for no limit",
           .default_of =
               [](const ExperimentSpec& s) { return std::to_string(s.max_worker_losses); }},
          {.name = "fail_fast",
           .type = "true | false | raise",
           .meaning = "Ray Tune's fail_fast: true stops every unfinished trial at the first "
                      "ERROR trial; raise ends the experiment at once.",
           .rule = "expected true, false or raise",
           .default_of =
               [](const ExperimentSpec& s) { return std::string(FailFastName(s.fail_fast)); }},
          {.name = "scheduler",
           .type = "name, or a map with type",
           .meaning = "The trial scheduler: fifo, asha, hyperband, hyperband_bohb, "
                      "median_stopping or pbt; a map's other keys are its Ray Tune parameters.",
           .rule = "a known scheduler (the error names the near miss); every parameter is checked",
           .default_of = [](const ExperimentSpec& s) { return s.scheduler; }},
          {.name = "search",
           .type = "name, or a map with type",
           .meaning = "The search algorithm: random, tpe, bohb or external; a map adds "
                      "max_concurrent, points_to_evaluate, evaluated_rewards and its parameters.",
           .rule = "a known searcher; points are checked against the param space",
           .default_of = [](const ExperimentSpec& s) { return s.search; }},
          {.name = "queue_trials",
           .type = "boolean",
           .meaning = "A trial no worker can hold waits for a big enough worker instead of "
                      "ending ERROR (Ray Tune's queue_trials).",
           .rule = "true or false",
           .default_of = [](const ExperimentSpec& s) { return Bool(s.queue_trials); }},
          {.name = "checkpoint_freq",
           .type = "integer",
           .unit = "training iterations",
           .meaning = "Checkpoint every N training iterations.",
           .rule = "must be >= 0 (0 = never)",
           .default_of = [](const ExperimentSpec& s) { return std::to_string(s.checkpoint_freq); }},
          {.name = "checkpoint_at_end",
           .type = "boolean",
           .meaning = "Checkpoint when a trial is stopped (by a decision, a stopper or a user).",
           .rule = "true or false",
           .default_of = [](const ExperimentSpec& s) { return Bool(s.checkpoint_at_end); }},
          {.name = "keep_checkpoints_num",
           .type = "integer",
           .meaning = "Keep at most N checkpoints per trial, the best by checkpoint_score_attr "
                      "(the newest is always kept).",
           .rule = "must be >= 0 (0 = keep all)",
           .default_of =
               [](const ExperimentSpec& s) { return std::to_string(s.keep_checkpoints_num); }},
          {.name = "checkpoint_score_attr",
           .type = "string",
           .meaning = "The result key that ranks checkpoints; a min- prefix means lower is "
                      "better.",
           .rule = "must not be empty",
           .when_absent = "the newest checkpoints are the best"},
          {.name = "checkpoint_failure",
           .type = "continue | pause | fail",
           .meaning = "What a running trial does when the checkpoint-store refuses a checkpoint "
                      "(e.g. its disk is full).",
           .rule = "expected continue, pause or fail",
           .default_of =
               [](const ExperimentSpec& s) {
                 return std::string(CheckpointFailureModeName(s.checkpoint_failure));
               }},
          {.name = "restore_from",
           .type = "string",
           .meaning = "A checkpoint id (tunectl show) every trial starts from; results continue "
                      "its training_iteration.",
           .rule = "must not be empty",
           .when_absent = "trials start from scratch"},
          {.name = "report_timeout_s",
           .type = "number",
           .unit = "s",
           .meaning = "A running trainable silent this long (not counting waits for a decision) "
                      "fails; then max_failures applies.",
           .rule = "must be >= 0 seconds (0 = off)",
           .default_of = [](const ExperimentSpec& s) { return Number(s.report_timeout_s); }},
          {.name = "driver",
           .type = "map",
           .meaning = "The Python driver that runs Ray Tune's driver-side callables (stoppers, "
                      "PBT functions); the tunebus package's Tuner writes it (see driver below).",
           .rule = "a map with endpoint",
           .when_absent = "no driver link"},
          {.name = "working_dir",
           .type = "folder, map or boolean",
           .meaning = "The folder shipped to every worker, where the command runs (Ray's "
                      "runtime_env working_dir); false: not shipped (see working_dir below).",
           .rule = "a folder (relative to the file's), a map {path, excludes, max_size_mb}, true "
                   "or false",
           .when_absent = "the file's folder, shipped for a command trainable (a builtin ships "
                          "nothing)"},
          {.name = "retention",
           .type = "map",
           .meaning = "When the scheduler deletes this experiment after it finished (its journal, "
                      "checkpoints and results folder; see retention below, "
                      "docs/how-to/retention.md).",
           .rule = "a map with days, keep_results or both",
           .when_absent = "only the scheduler's --retain-experiments and --retain-days apply"},
      }});
  sections.push_back(SpecSection{
      .name = "trainable",
      .meaning = "What each trial runs: a command (any language, proto/PROTOCOL.md) or a builtin.",
      .defaults_from = kMinimal,
      .fields = {
          {.name = "command",
           .type = "list of strings, or a string",
           .meaning = "The program and its arguments (a string is split on whitespace), run in "
                      "the working_dir.",
           .rule = "not empty; set either command or builtin, not both",
           .when_absent = "builtin is required instead"},
          {.name = "builtin",
           .type = "mock | noop",
           .meaning = "A trainable built into the worker: mock reports a synthetic curve, noop "
                      "returns at once.",
           .rule = "one of mock, noop",
           .when_absent = "command is required instead"},
          {.name = "env",
           .type = "map of name -> string",
           .meaning = "Extra environment variables for the trainable.",
           .rule = "names [A-Za-z_][A-Za-z0-9_]*; names starting with TUNEBUS_ are reserved",
           .default_of = [](const ExperimentSpec& s) { return s.trainable.env.dump(); }},
      }});
  sections.push_back(SpecSection{
      .name = "working_dir",
      .meaning = "The map form of working_dir: the folder shipped to every worker.",
      .defaults_from = "name: defaults\ntrainable: {command: [./train.sh]}\n",
      .fields = {
          {.name = "path",
           .type = "folder",
           .meaning = "The folder to ship, relative to the experiment file's.",
           .rule = "a non-empty path",
           .default_of =
               [](const ExperimentSpec& s) { return Relative(s.working_dir.path, s.base_dir); }},
          {.name = "excludes",
           .type = "list of patterns",
           .meaning = "gitignore-like patterns left out ('*.ckpt', data/, /build); a "
                      ".tunebusignore file at the folder's root adds more.",
           .rule = "a list of valid patterns",
           .default_of =
               [](const ExperimentSpec& s) {
                 return fmt::format("[{}]", fmt::join(s.working_dir.excludes, ", "));
               }},
          {.name = "max_size_mb",
           .type = "number",
           .unit = "MiB",
           .meaning = "The most the shipped files may hold (Ray's working_dir cap).",
           .rule = "must be > 0 (MiB)",
           .default_of =
               [](const ExperimentSpec& s) {
                 return Number(double(s.working_dir.max_size_bytes) / double(1 << 20));
               }},
      }});
  sections.push_back(SpecSection{
      .name = "stop",
      .meaning = "When trials and the experiment stop. Any key other than time_budget_s is a "
                 "result key: a trial stops when result[key] >= value (Ray Tune's dict stopper).",
      .defaults_from = kMinimal,
      .fields =
          {
              {.name = "time_budget_s",
               .type = "number",
               .unit = "s",
               .meaning = "Stop the whole experiment after this much wall time (Ray Tune's "
                          "time_budget_s).",
               .rule = "must be > 0 seconds",
               .when_absent = "no time budget"},
              {.name = "<result key>",
               .type = "number",
               .meaning = "Stop a trial when its result's key reaches this value "
                          "(training_iteration: 20).",
               .rule = "a number; a key no result carries errors the trial, naming the near miss",
               .when_absent = "no threshold"},
          },
      .open = true});
  sections.push_back(SpecSection{
      .name = "retention",
      .meaning = "The experiment's own retention: the scheduler's --retain-experiments rule "
                 "applies to it as to every finished experiment.",
      .defaults_from = "name: defaults\ntrainable: {builtin: noop}\nretention: {days: 30}\n",
      .fields = {
          {.name = "days",
           .type = "number",
           .unit = "days",
           .meaning = "Delete it once it ended more than this many days ago; replaces the "
                      "scheduler's --retain-days for it.",
           .rule = "must be a number of days > 0 (fractions allowed)",
           .when_absent = "the scheduler's --retain-days (if given)"},
          {.name = "keep_results",
           .type = "boolean",
           .meaning = "A deletion by retention keeps its results folder.",
           .rule = "true or false",
           .default_of =
               [](const ExperimentSpec& s) {
                 return Bool(s.retention ? s.retention->keep_results : false);
               }},
      }});
  sections.push_back(SpecSection{
      .name = "driver",
      .meaning = "The Python driver's link (proto/PROTOCOL.md section 7b); the tunebus "
                 "package's Tuner writes this section.",
      .defaults_from = "name: defaults\ntrainable: {builtin: noop}\ndriver: {endpoint: "
                       "'tcp://127.0.0.1:5700'}\n",
      .fields = {
          {.name = "endpoint",
           .type = "string",
           .meaning = "The driver's ROUTER: tcp://host:port or ipc://path.",
           .rule = "a ZeroMQ endpoint (tcp://host:port, ipc://path)",
           .required = true},
          {.name = "server_key",
           .type = "string",
           .meaning = "The driver's CURVE public key on a tcp:// endpoint: 40 Z85 characters or "
                      "a key file's path (relative to the file's folder).",
           .rule = "not empty; only with a tcp:// endpoint",
           .when_absent = "<keys-dir>/driver.key"},
          {.name = "on_result",
           .type = "boolean",
           .meaning = "Send every result to the driver before deciding on it.",
           .rule = "true or false",
           .default_of = [](const ExperimentSpec& s) { return Bool(Driver(s).on_result); }},
          {.name = "timeout_s",
           .type = "number",
           .unit = "s",
           .meaning = "Per request; then the driver is unavailable and retried with backoff.",
           .rule = "must be > 0 seconds",
           .default_of = [](const ExperimentSpec& s) { return Number(Driver(s).timeout_s); }},
      }});
  return sections;
}

}  // namespace

const std::vector<SpecSection>& SpecSections() {
  static const std::vector<SpecSection> sections = MakeSections();
  return sections;
}

const SpecSection& FindSpecSection(std::string_view name) {
  for (const SpecSection& section : SpecSections()) {
    if (section.name == name) return section;
  }
  throw std::out_of_range(fmt::format("no experiment-file section '{}'", name));
}

std::vector<std::string_view> SpecFieldNames(const SpecSection& section) {
  std::vector<std::string_view> names;
  for (const SpecField& f : section.fields) names.push_back(f.name);
  return names;
}

const SpecField& FindSpecField(const SpecSection& section, std::string_view name) {
  for (const SpecField& f : section.fields) {
    if (f.name == name) return f;
  }
  throw std::out_of_range(fmt::format("no field '{}' in section '{}'", name, section.name));
}

Result<nlohmann::json> SpecFieldDefaults() {
  nlohmann::json defaults = nlohmann::json::object();
  for (const SpecSection& section : SpecSections()) {
    const std::string source = fmt::format("<defaults of '{}'>", section.name);
    Result<ExperimentSpec> spec =
        ParseExperimentYaml(std::string(section.defaults_from), kDefaultsDir, source);
    if (!spec.ok()) return Status::Internal(spec.status().message());
    nlohmann::json& values = defaults[std::string(section.name)] = nlohmann::json::object();
    for (const SpecField& f : section.fields) {
      if (f.default_of != nullptr) values[std::string(f.name)] = f.default_of(*spec);
    }
  }
  return defaults;
}

Result<nlohmann::json> SpecFieldsJson() {
  Result<nlohmann::json> defaults = SpecFieldDefaults();
  if (!defaults.ok()) return defaults.status();
  nlohmann::json sections = nlohmann::json::array();
  for (const SpecSection& section : SpecSections()) {
    const nlohmann::json& values = (*defaults)[std::string(section.name)];
    nlohmann::json fields = nlohmann::json::array();
    for (const SpecField& f : section.fields) {
      const auto value = values.find(std::string(f.name));
      fields.push_back({{"name", f.name},
                        {"type", f.type},
                        {"unit", f.unit},
                        {"meaning", f.meaning},
                        {"rule", f.rule},
                        {"required", f.required},
                        {"default", value == values.end() ? nlohmann::json() : *value},
                        {"when_absent", f.when_absent}});
    }
    sections.push_back({{"name", section.name},
                        {"meaning", section.meaning},
                        {"open", section.open},
                        {"fields", std::move(fields)}});
  }
  return nlohmann::json{{"sections", std::move(sections)}};
}

}  // namespace tunebus
