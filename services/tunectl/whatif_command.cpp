// tunectl whatif NAME --scheduler '{type: asha, grace_period: 2}' [--sweep '{grace_period: [1,
// 2, 4]}']: what another trial scheduler would have done with a finished experiment's recorded
// results, beside what the run did (libs/tune/whatif.hpp, libs/tune/whatif_sweep.hpp).
//
// The scheduler replays the experiment's journal (control request `whatif`, proto/control.hpp):
// every result in the order it arrived, through a fresh trial scheduler, off its event loop; this
// command checks the flags, asks get_experiment first (an unknown or running experiment is said
// at once) and prints the report, or with --sweep one row per setting with the cheapest setting
// that keeps the actual best trial marked.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

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
  std::string sweep;       // a YAML (or JSON) map {param: [values...]}; "" = none
  uint64_t seed = 0;
  int64_t timeout_s = 600;  // the replay's answer (the other requests take --timeout-ms)
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

// A --scheduler or --sweep flag's YAML (or JSON) map as JSON. Errors: InvalidArgument naming
// the flag.
Result<json> ParseMapFlag(const std::string& text, const char* flag, const char* example) {
  json map;
  try {
    map = YamlToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}: not YAML: {}", flag, e.what()));
  }
  if (!map.is_object()) {
    return Status::InvalidArgument(fmt::format("{}: expected a map such as '{}'", flag, example));
  }
  return map;
}

std::string OrDash(const json& v) { return v.is_null() ? std::string("-") : FormatValue(v); }

std::string Percent(double part, double whole) {
  return whole > 0 ? fmt::format(" ({:.1f}%)", 100 * part / whole) : std::string();
}

// Where the actual best trial ended in a replay: its fate, the training_iteration it stopped at
// and the rung (ASHA), bracket (HyperBand) or median (median stopping rule) that stopped it.
std::string FateText(const std::string& fate, const json& stopped_at, const json& detail) {
  if (fate == "as_recorded") return "kept, as it ran";
  if (fate == "unknown_beyond") return "kept (run past its record: unknown beyond)";
  if (fate == "left_paused") return "left paused";
  if (fate != "stopped") return fate.empty() ? "-" : fate;
  std::string out = fmt::format("stopped at training_iteration {}", OrDash(stopped_at));
  if (detail.is_object() && detail.contains("rung")) {
    out += fmt::format(" (rung {})", FormatValue(detail["rung"]));
  } else if (detail.is_object() && detail.contains("median")) {
    out += fmt::format(" (median {}, its best {})", FormatValue(detail["median"]),
                       FormatValue(detail.value("best", json())));
  } else if (!detail.is_null()) {
    out += " " + detail.dump();
  }
  return out;
}

std::vector<std::string> RenderReport(const json& r) {
  std::vector<std::string> lines;
  const json& actual = Field(r, "actual");
  const json& replay = Field(r, "replay");
  lines.push_back(fmt::format(
      "whatif {}: {} {} against the actual run ({} {}, {} trials, {} results replayed)",
      StringField(r, "journal"), StringField(r, "scheduler"), Field(r, "scheduler_config").dump(),
      StringField(r, "metric"), StringField(r, "mode"), OrDash(Field(r, "trials")),
      OrDash(Field(Field(r, "record"), "results"))));
  const int64_t iters_actual = IntField(actual, "training_iterations");
  const int64_t iters_replay = IntField(replay, "training_iterations");
  const double s_actual = NumberField(actual, "trial_seconds");
  const double s_replay = NumberField(replay, "trial_seconds");
  lines.push_back(fmt::format("{:<22}{:>16}{:>16}{:>22}", "", "actual", "replay", "saved"));
  lines.push_back(
      fmt::format("{:<22}{:>16}{:>16}{:>22}", "training iterations", iters_actual, iters_replay,
                  fmt::format("{}{}", iters_actual - iters_replay,
                              Percent(double(iters_actual - iters_replay), double(iters_actual)))));
  lines.push_back(fmt::format(
      "{:<22}{:>16.1f}{:>16.1f}{:>22}", "trial-seconds", s_actual, s_replay,
      fmt::format("{:.1f}{}", s_actual - s_replay, Percent(s_actual - s_replay, s_actual))));
  lines.push_back(fmt::format("{:<22}{:>16}{:>16}{:>22}", "best final " + StringField(r, "metric"),
                              OrDash(Field(actual, "best_final")),
                              OrDash(Field(replay, "best_final")),
                              "regret " + OrDash(Field(r, "regret"))));
  lines.push_back(fmt::format("{:<22}{:>16}{:>16}", "best trial",
                              OrDash(Field(actual, "best_trial_id")),
                              OrDash(Field(replay, "best_trial_id"))));
  if (const json& b = Field(r, "actual_best"); b.is_object()) {
    const std::string fate = StringField(b, "fate");
    lines.push_back(
        fmt::format("the actual best trial {}: {}", StringField(b, "trial_id"),
                    FateText(fate, fate == "stopped" ? Field(b, "last_training_iteration") : json(),
                             Field(b, "stop_detail"))));
  }
  lines.push_back(fmt::format(
      "trials: {} stopped, {} unknown beyond their record (not counted past it), {} left paused; "
      "{} pauses, {} resumes",
      OrDash(Field(r, "trials_stopped")), OrDash(Field(r, "trials_unknown_beyond")),
      OrDash(Field(r, "trials_left_paused")), OrDash(Field(r, "pauses")),
      OrDash(Field(r, "resumes"))));
  return lines;
}

// The sweep's table: one row per setting; '*' marks the cheapest that keeps the actual best.
std::vector<std::string> RenderSweep(const json& r) {
  std::vector<std::string> lines;
  const json& actual = Field(r, "actual");
  lines.push_back(
      fmt::format("whatif {}: {} {} swept over {} ({} {}, {} trials)", StringField(r, "journal"),
                  StringField(r, "scheduler"), Field(r, "base").dump(), Field(r, "sweep").dump(),
                  StringField(r, "metric"), StringField(r, "mode"), OrDash(Field(r, "trials"))));
  lines.push_back(fmt::format(
      "actual run: {} training iterations, {:.1f} trial-seconds, best "
      "final {} ({})",
      OrDash(Field(actual, "training_iterations")), NumberField(actual, "trial_seconds"),
      OrDash(Field(actual, "best_final")), OrDash(Field(actual, "best_trial_id"))));
  const json& grid = Field(r, "sweep");
  std::vector<std::string> params;
  for (const auto& [param, values] : grid.items()) params.push_back(param);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {""};
  for (const std::string& p : params) header.push_back(p);
  for (const char* h :
       {"iterations", "trial-seconds", "best final", "keeps best", "regret", "the actual best"}) {
    header.emplace_back(h);
  }
  cells.push_back(header);
  const json& cheapest = Field(r, "cheapest_keeping");
  const json& rows = Field(r, "rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    std::vector<std::string> c = {cheapest.is_number_integer() && cheapest.get<size_t>() == i ? "*"
                                                                                              : ""};
    for (const std::string& p : params)
      c.push_back(OrDash(Field(Field(row, "setting"), p.c_str())));
    c.push_back(OrDash(Field(row, "training_iterations")));
    c.push_back(fmt::format("{:.1f}", NumberField(row, "trial_seconds")));
    c.push_back(OrDash(Field(row, "best_final")));
    c.push_back(Field(row, "keeps_actual_best") == json(true) ? "yes" : "no");
    c.push_back(OrDash(Field(row, "regret")));
    c.push_back(FateText(StringField(row, "actual_best_fate"), Field(row, "actual_best_stopped_at"),
                         Field(row, "actual_best_stop_detail")));
    cells.push_back(std::move(c));
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& c : cells) {
    for (size_t k = 0; k < c.size(); ++k) width[k] = std::max(width[k], c[k].size());
  }
  for (const auto& c : cells) {
    std::string line;
    for (size_t k = 0; k < c.size(); ++k) {
      line += k + 1 == c.size() ? c[k] : fmt::format("{:<{}}  ", c[k], width[k]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
  }
  lines.push_back(cheapest.is_number_integer()
                      ? "* the cheapest setting (fewest trial-seconds) that keeps the actual best "
                        "trial"
                      : "no setting keeps the actual best trial");
  return lines;
}

int WhatIfCommand(const GlobalFlags& g, const WhatIfFlags& f) {
  Result<json> scheduler =
      ParseMapFlag(f.scheduler, "--scheduler", "{type: asha, grace_period: 2}");
  if (!scheduler.ok()) {
    std::cerr << "tunectl: " << scheduler.status().message() << "\n";
    return 2;
  }
  json sweep;
  if (!f.sweep.empty()) {
    Result<json> parsed =
        ParseMapFlag(f.sweep, "--sweep", "{grace_period: [1, 2, 4], reduction_factor: [2, 3]}");
    if (!parsed.ok()) {
      std::cerr << "tunectl: " << parsed.status().message() << "\n";
      return 2;
    }
    sweep = std::move(*parsed);
  }
  // An unknown or running experiment is said at once (the replay itself may take longer).
  proto::GetExperiment get;
  get.experiment = f.experiment;
  Result<json> experiment = Call(g, get);
  if (!experiment.ok()) return Fail(experiment.status());
  if (!Field(*experiment, "finished").is_boolean() || !(*experiment)["finished"].get<bool>()) {
    std::cerr << fmt::format(
        "tunectl: experiment {} is still running ({}): whatif replays a finished experiment's "
        "record; wait for it to end, or stop it (tunectl stop-experiment -e {})\n",
        StringField(*experiment, "journal", f.experiment), StringField(*experiment, "status", "?"),
        f.experiment);
    return 1;
  }
  proto::WhatIf req;
  req.experiment = StringField(*experiment, "journal", f.experiment);
  req.scheduler_json = scheduler->dump();
  if (!sweep.is_null()) req.sweep_json = sweep.dump();
  req.seed = f.seed;
  GlobalFlags long_call = g;  // a sweep replays once per setting
  long_call.timeout_ms = std::max<int64_t>(g.timeout_ms, f.timeout_s * 1000);
  Result<json> report = Call(long_call, req);
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kInvalidArgument) {
      std::cerr << "tunectl: " << report.status().message() << "\n";
      return 2;
    }
    return Fail(report.status());
  }
  return PrintBody(g, *report, [&](const json& body) {
    for (const std::string& line : sweep.is_null() ? RenderReport(body) : RenderSweep(body)) {
      std::cout << line << "\n";
    }
  });
}

}  // namespace

void AddWhatIfCommand(CLI::App& app, Commands& commands) {
  auto flags = std::make_shared<WhatIfFlags>();
  auto* cmd = app.add_subcommand(
      "whatif",
      "replay a finished experiment's recorded results through another trial scheduler and "
      "print what it would have spent and found beside what the run did");
  cmd->footer(
      "The replay feeds every recorded result, in the order it arrived, to a fresh trial "
      "scheduler; a trial it stops saves the rest of its record, a trial it would run past its "
      "record (the actual run stopped it early) is counted as unknown beyond, never invented. "
      "pbt cannot be replayed. Exit codes: 0 answered; 1 unknown or running experiment, or the "
      "scheduler refused; 2 a malformed --scheduler or --sweep, a bad parameter, pbt; 3 the "
      "scheduler cannot be reached. docs/how-to/whatif.md has the details.\n"
      "Examples:\n"
      "  tunectl whatif digits --scheduler '{type: asha, grace_period: 2, reduction_factor: 4}'\n"
      "  tunectl whatif digits --scheduler '{type: asha, max_t: 100}' \\\n"
      "      --sweep '{grace_period: [1, 2, 4], reduction_factor: [2, 3, 4]}'");
  cmd->add_option("NAME", flags->experiment, "the experiment (name or journal name)")->required();
  cmd->add_option("--scheduler", flags->scheduler,
                  "the trial scheduler as a YAML map, e.g. '{type: asha, grace_period: 2, "
                  "reduction_factor: 4}' (fifo, asha, hyperband, hyperband_bohb, "
                  "median_stopping; not pbt)")
      ->required();
  cmd->add_option("--sweep", flags->sweep,
                  "a grid of the scheduler's parameters as a YAML map of lists, e.g. "
                  "'{grace_period: [1, 2, 4], reduction_factor: [2, 3, 4]}': one replay per "
                  "combination over --scheduler's parameters, printed as a table");
  cmd->add_option("--seed", flags->seed, "seeds ASHA's bracket draw")->capture_default_str();
  cmd->add_option("--timeout-s", flags->timeout_s, "how long to wait for the replay's answer")
      ->capture_default_str();
  commands.push_back({cmd, CommandNeeds::kServer,
                      [flags](const GlobalFlags& g) { return WhatIfCommand(g, *flags); }});
}

}  // namespace tunebus
