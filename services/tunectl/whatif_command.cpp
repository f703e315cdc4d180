// tunectl whatif NAME --scheduler '{type: asha, grace_period: 2}': replays a finished
// experiment's recorded results through another trial scheduler (libs/tune/whatif.hpp) and
// prints what it would have spent and found beside what the run did.
//
// What it reads over the control socket: get_experiment (metric, mode, finished), list_trials
// (ids, configs, statuses) and list_results for every trial (its result.json rows, in pages).
// The replay needs, per trial, how its record ends (RecordedEnd), which the rows do not say, so
// it is taken as: ERROR status -> errored; a last training_iteration below the experiment's
// longest trial's -> stopped early (by its trial scheduler, a stop criterion on a metric or the
// user: the replay then never runs it past its record); else finished on its own (a trial the
// actual scheduler stopped at its max_t counts as finished there).
// The arrival order is the rows' `timestamp` (ArrivalOrderByTimestamp).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "libs/tune/whatif.hpp"
#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

struct WhatIfFlags {
  std::string experiment;  // NAME
  std::string scheduler;   // a YAML (or JSON) map with `type`
  uint64_t seed = 0;
};

// A YAML node as JSON: maps, sequences, and scalars typed as JSON would type them (numbers,
// true / false, null), other scalars and quoted ones as strings. Throws YAML::Exception.
json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& v : node) out.push_back(YamlToJson(v));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() != "!") {  // plain, not quoted
        json typed = json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (!typed.is_discarded() && !typed.is_object() && !typed.is_array()) return typed;
      }
      return text;
    }
    default:
      return nullptr;
  }
}

// The --scheduler map: its `type` and the other parameters. Errors: InvalidArgument.
Result<std::pair<std::string, json>> ParseSchedulerFlag(const std::string& text) {
  json map;
  try {
    map = YamlToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("--scheduler: not YAML: ") + e.what());
  }
  if (!map.is_object()) {
    return Status::InvalidArgument("--scheduler: expected a map such as '{type: asha}'");
  }
  const json type = map.contains("type") ? map["type"] : json("fifo");
  if (!type.is_string()) return Status::InvalidArgument("--scheduler: type must be a name");
  map.erase("type");
  return std::make_pair(type.get<std::string>(), std::move(map));
}

// Every row of a trial's result.json, oldest first (list_results, page by page), keeping the
// numbers under `keys` only (what the replay reads: the rest of a row is not needed).
Result<std::vector<TrainingResult>> ReadResults(const GlobalFlags& g, const std::string& experiment,
                                                const std::string& trial_id,
                                                const std::vector<std::string>& keys) {
  std::vector<TrainingResult> out;
  proto::ListResults req;
  req.experiment = experiment;
  req.trial_id = trial_id;
  for (;;) {
    Result<json> page = Call(g, req);
    if (!page.ok()) return page.status();
    for (const json& row : Field(*page, "results")) {
      TrainingResult r;
      for (const std::string& key : keys) {
        const json& v = Field(row, key.c_str());
        if (v.is_number_integer()) {
          r.SetInt(key, v.get<int64_t>());
        } else if (v.is_number()) {
          r.SetDouble(key, v.get<double>());
        }
      }
      out.push_back(std::move(r));
    }
    const json& next = Field(*page, "next_offset");
    if (!next.is_number_integer() || next.get<int64_t>() <= req.offset) return out;
    req.offset = next.get<int64_t>();
  }
}

std::string OrDash(const std::optional<double>& v) {
  return v ? FormatValue(json(*v)) : std::string("-");
}

std::vector<std::string> RenderReport(const std::string& name, const WhatIfReport& r) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("whatif {}: {} {} against the actual run ({} {}, {} trials)", name,
                              r.scheduler, r.scheduler_config.dump(), r.metric, r.mode, r.trials));
  const auto percent = [](double part, double whole) {
    return whole > 0 ? fmt::format(" ({:.1f}%)", 100 * part / whole) : std::string();
  };
  const double saved_iters = double(r.actual.training_iterations - r.replay.training_iterations);
  const double saved_s = r.actual.trial_seconds - r.replay.trial_seconds;
  lines.push_back(fmt::format("{:<22}{:>16}{:>16}{:>22}", "", "actual", "replay", "saved"));
  lines.push_back(
      fmt::format("{:<22}{:>16}{:>16}{:>22}", "training iterations", r.actual.training_iterations,
                  r.replay.training_iterations,
                  fmt::format("{}{}", int64_t(saved_iters),
                              percent(saved_iters, double(r.actual.training_iterations)))));
  lines.push_back(
      fmt::format("{:<22}{:>16.1f}{:>16.1f}{:>22}", "trial-seconds", r.actual.trial_seconds,
                  r.replay.trial_seconds,
                  fmt::format("{:.1f}{}", saved_s, percent(saved_s, r.actual.trial_seconds))));
  lines.push_back(fmt::format("{:<22}{:>16}{:>16}{:>22}", "best final " + r.metric,
                              OrDash(r.actual.best_final), OrDash(r.replay.best_final),
                              "regret " + OrDash(r.regret)));
  lines.push_back(fmt::format("{:<22}{:>16}{:>16}", "best trial", r.actual.best_trial_id,
                              r.replay.best_trial_id));
  if (r.actual_best) {
    const TrialReplay& b = *r.actual_best;
    std::string fate;
    switch (b.fate) {
      case ReplayFate::kAsRecorded:
        fate = "kept, as it ran";
        break;
      case ReplayFate::kStopped:
        fate = fmt::format("stopped at training_iteration {}", b.last_training_iteration);
        if (b.stop_detail.is_object() && b.stop_detail.contains("rung")) {
          fate += fmt::format(" (rung {})", FormatValue(b.stop_detail["rung"]));
        } else if (!b.stop_detail.is_null()) {
          fate += " " + b.stop_detail.dump();
        }
        break;
      case ReplayFate::kUnknownBeyond:
        fate = fmt::format("run past its record (unknown beyond training_iteration {})",
                           b.last_training_iteration);
        break;
      case ReplayFate::kLeftPaused:
        fate = fmt::format("left paused at training_iteration {}", b.last_training_iteration);
        break;
    }
    lines.push_back(fmt::format("the actual best trial {}: {}", b.trial_id, fate));
  }
  lines.push_back(fmt::format(
      "trials: {} stopped, {} unknown beyond their record (not counted past it), {} left paused; "
      "{} pauses, {} resumes",
      r.trials_stopped, r.trials_unknown_beyond, r.trials_left_paused, r.pauses, r.resumes));
  return lines;
}

int WhatIfCommand(const GlobalFlags& g, const WhatIfFlags& f) {
  Result<std::pair<std::string, json>> scheduler = ParseSchedulerFlag(f.scheduler);
  if (!scheduler.ok()) {
    std::cerr << "tunectl: " << scheduler.status().message() << "\n";
    return 2;
  }
  proto::GetExperiment get;
  get.experiment = f.experiment;
  Result<json> experiment = Call(g, get);
  if (!experiment.ok()) return Fail(experiment.status());
  if (!Field(*experiment, "finished").is_boolean() || !(*experiment)["finished"].get<bool>()) {
    std::cerr << fmt::format(
        "tunectl: experiment {} is not finished ({}): whatif replays finished experiments\n",
        f.experiment, StringField(*experiment, "status", "?"));
    return 1;
  }
  // The journal name: every later read answers for exactly this experiment.
  const std::string journal = StringField(*experiment, "journal", f.experiment);
  proto::ListTrials list;
  list.experiment = journal;
  Result<json> trials = Call(g, list);
  if (!trials.ok()) return Fail(trials.status());
  RecordedExperiment e;
  e.metric = StringField(*experiment, "metric");
  e.mode = StringField(*experiment, "mode", "max");
  // What a trial scheduler reads of a result: the auto-filled time keys, the experiment's metric,
  // and the scheduler's own time_attr and metric when it names them.
  std::vector<std::string> keys = {"training_iteration", "time_this_iter_s", "time_total_s",
                                   "timestamp", e.metric};
  for (const char* key : {"time_attr", "metric"}) {
    if (const json& v = Field(scheduler->second, key); v.is_string()) {
      keys.push_back(v.get<std::string>());
    }
  }
  int64_t longest = 0;
  for (const json& t : *trials) {
    RecordedTrial r;
    r.trial_id = StringField(t, "trial_id");
    r.config = Field(t, "config");
    Result<std::vector<TrainingResult>> results = ReadResults(g, journal, r.trial_id, keys);
    if (!results.ok()) return Fail(results.status());
    r.results = std::move(*results);
    if (!r.results.empty()) {
      longest =
          std::max(longest, int64_t(r.results.back().Number("training_iteration").value_or(0.0)));
    }
    if (StringField(t, "status") == "ERROR") r.end = RecordedEnd::kErrored;
    e.trials.push_back(std::move(r));
  }
  for (RecordedTrial& r : e.trials) {
    if (r.end == RecordedEnd::kErrored || r.results.empty()) continue;
    const int64_t last = int64_t(r.results.back().Number("training_iteration").value_or(0.0));
    if (last < longest) r.end = RecordedEnd::kStopped;
  }
  e.arrival = ArrivalOrderByTimestamp(e.trials);
  Result<WhatIfReport> report = ReplayExperiment(e, scheduler->first, scheduler->second, f.seed);
  if (!report.ok()) {
    std::cerr << "tunectl: " << report.status().message() << "\n";
    return report.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return PrintBody(g, report->ToJson(), [&](const json&) {
    for (const std::string& line : RenderReport(journal, *report)) std::cout << line << "\n";
  });
}

}  // namespace

void AddWhatIfCommand(CLI::App& app, Commands& commands) {
  auto flags = std::make_shared<WhatIfFlags>();
  auto* cmd = app.add_subcommand(
      "whatif", "replay a finished experiment's results through another trial scheduler");
  cmd->add_option("NAME", flags->experiment, "the experiment (name or journal name)")->required();
  cmd->add_option("--scheduler", flags->scheduler,
                  "the trial scheduler as a YAML map, e.g. '{type: asha, grace_period: 2, "
                  "reduction_factor: 4}' (fifo, asha, hyperband, hyperband_bohb, "
                  "median_stopping; not pbt)")
      ->required();
  cmd->add_option("--seed", flags->seed, "seeds ASHA's bracket draw")->capture_default_str();
  commands.push_back({cmd, CommandNeeds::kServer,
                      [flags](const GlobalFlags& g) { return WhatIfCommand(g, *flags); }});
}

}  // namespace tunebus
