// tunectl commands for operators: ls with sorting and columns, best, export and logs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libs/core/csv.hpp"
#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"
#include "services/tunectl/pareto_view.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// A trial's value for column `column`: "config.a.b" from its config, "metric" (or "score") the
// experiment's metric in its last result, a trial field, else a key of its last result.
json Cell(const json& t, const std::string& column, const std::string& metric) {
  if (column.rfind("config.", 0) == 0) {
    const json* v = &Field(t, "config");
    for (size_t from = 7; from <= column.size();) {  // Field of a non-object is null
      const size_t dot = std::min(column.find('.', from), column.size());
      v = &Field(*v, column.substr(from, dot - from).c_str());
      from = dot + 1;
    }
    return *v;
  }
  const json& own = Field(t, column.c_str());
  if (!own.is_null() && !own.is_object()) return own;
  const json& result = Field(t, "last_result");
  const json& reported = Field(result, column.c_str());
  if (!reported.is_null()) return reported;
  if ((column == "metric" || column == "score") && !metric.empty())
    return Field(result, metric.c_str());
  return nullptr;
}

// Flattens an object into "prefix.key" -> scalar.
void Flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  for (const auto& [k, v] : j.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      Flatten(v, key, out);
    } else {
      out[key] = v;
    }
  }
}

std::string CsvField(const json& v) { return CsvQuote(v.is_null() ? "" : FormatValueExact(v)); }

}  // namespace

int ListCommand(const GlobalFlags& g, const ListFlags& f) {
  auto req = ExperimentRequest<proto::ListTrials>(g);
  req.status = f.status;
  if (f.sort.empty() && !f.pareto) {  // the scheduler pages; sorting needs every trial here
    req.offset = f.offset;
    req.limit = f.limit;
  }
  auto body = Call(g, req);
  if (!body.ok()) return Fail(body.status());
  json trials = std::move(*body);
  auto experiment =
      Call(g, ExperimentRequest<proto::GetExperiment>(g));  // the metric the table shows
  const std::string metric = experiment.ok() ? StringField(*experiment, "metric") : "";
  if (f.pareto) {
    if (!experiment.ok()) return Fail(experiment.status());
    if (!experiment->contains("pareto_front")) {
      std::cerr << "tunectl: --pareto: experiment " << StringField(*experiment, "name")
                << " has one objective (metric " << (metric.empty() ? std::string("none") : metric)
                << "); the Pareto front is for an experiment of several (metric: [a, b])\n";
      return 1;
    }
    // The front's trials (get_experiment's objects), in its order; paged here.
    trials = (*experiment)["pareto_front"];
    if (!f.status.empty()) {
      json kept = json::array();
      for (const json& t : trials) {
        if (StringField(t, "status") == f.status) kept.push_back(t);
      }
      trials = std::move(kept);
    }
  }
  const bool page_here = !f.sort.empty() || f.pareto;
  if (!f.sort.empty()) {
    const bool desc = f.sort[0] == '-';
    const std::string key = desc ? f.sort.substr(1) : f.sort;
    std::stable_sort(trials.begin(), trials.end(), [&](const json& a, const json& b) {
      const json x = Cell(a, key, metric), y = Cell(b, key, metric);
      if (x.is_null() != y.is_null()) return y.is_null();  // trials without the key go last
      return desc ? y < x : x < y;
    });
  }
  if (page_here) {
    trials.erase(trials.begin(),
                 trials.begin() + std::min<int64_t>(f.offset, int64_t(trials.size())));
    if (f.limit > 0 && int64_t(trials.size()) > f.limit)
      trials.erase(trials.begin() + f.limit, trials.end());
  }
  return PrintBody(g, trials, [&](const json& rows) {
    if (f.columns.empty()) {
      json summary = {{"name", "trials"},
                      {"counts", json::object()},
                      {"total", rows.size()},
                      {"metric", metric}};
      if (experiment.ok() && experiment->contains("pareto_front")) {
        summary["objectives"] = (*experiment)["objectives"];
        summary["pareto_front"] = (*experiment)["pareto_front"];
      }
      auto lines = RenderProgressTable(summary, rows, rows.size());
      for (size_t i = 1; i < lines.size(); ++i) std::cout << lines[i] << "\n";
      return;
    }
    std::vector<std::vector<std::string>> table = {f.columns};
    for (const json& t : rows) {
      std::vector<std::string> row;
      for (const std::string& c : f.columns) {
        const json v = Cell(t, c, metric);
        std::string text = v.is_null() ? "-" : FormatValue(v);
        row.push_back(text.substr(0, text.find('\n')));  // an error's first line
      }
      table.push_back(std::move(row));
    }
    std::vector<size_t> width(f.columns.size(), 0);
    for (const auto& row : table) {
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : table) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}  ", row[i], width[i]);
      std::cout << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
    }
  });
}

int BestCommand(const GlobalFlags& g) {
  auto status = Call(g, ExperimentRequest<proto::GetExperiment>(g));
  if (!status.ok()) return Fail(status.status());
  if (status->contains("pareto_front")) {
    const json& front = (*status)["pareto_front"];
    if (!front.is_array() || front.empty()) {
      std::cerr << "tunectl: no Pareto front yet (it holds TERMINATED trials whose last result "
                   "has every objective: "
                << DescribeObjectivesOf(*status) << ")\n";
      return 1;
    }
    return PrintBody(g, front, [&](const json&) {
      for (const std::string& line : RenderParetoFront(*status)) std::cout << line << "\n";
      std::cout << std::flush;
    });
  }
  const json& best = (*status)["best"];
  if (!best.is_object()) {
    std::cerr
        << "tunectl: no best trial yet (the experiment needs a metric and a result that has it)\n";
    return 1;
  }
  const std::string metric = status->value("metric", std::string());
  return PrintBody(g, best, [&](const json& t) {
    const json checkpoints = t.value("checkpoints", json::array());
    std::cout << "trial:      " << t.value("trial_id", std::string()) << " ("
              << t.value("status", std::string()) << ")\n"
              << "config:     " << t["config"].dump() << "\n"
              << "metric:     " << metric << " = "
              << (t["last_result"].contains(metric) ? FormatValue(t["last_result"][metric]) : "-")
              << " (mode " << status->value("mode", std::string()) << ")\n"
              << "checkpoint: "
              << (checkpoints.empty() ? std::string("-")
                                      : checkpoints.back().value("checkpoint_id", std::string()))
              << "\n"
              << "dir:        " << t.value("dir", std::string()) << std::endl;
  });
}

int ExportCommand(const GlobalFlags& g, const std::string& format_flag) {
  const std::string format = !format_flag.empty() ? format_flag
                             : g.output == "json" ? "json"
                                                  : "csv";
  auto trials = Call(g, ExperimentRequest<proto::ListTrials>(g));
  if (!trials.ok()) return Fail(trials.status());
  if (format == "json") {
    std::cout << trials->dump(2) << std::endl;
    return 0;
  }
  std::vector<std::map<std::string, json>> rows;
  std::set<std::string> config_keys, result_keys;
  for (const json& t : *trials) {
    std::map<std::string, json> config, result, row;
    Flatten(t.value("config", json::object()), "", config);
    Flatten(t.value("last_result", json::object()), "", result);
    row["trial_id"] = t.value("trial_id", "");
    row["status"] = TrialStatusText(t);
    for (auto& [k, v] : config) {
      config_keys.insert(k);
      row["config." + k] = v;
    }
    for (auto& [k, v] : result) {
      result_keys.insert(k);
      row[k] = v;
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"trial_id", "status"};
  for (const std::string& k : config_keys) header.push_back("config." + k);
  for (const std::string& k : result_keys) {
    if (k != "trial_id") header.push_back(k);
  }
  std::string line;
  for (const std::string& h : header) {
    if (!line.empty()) line.push_back(',');
    line.append(CsvField(h));
  }
  std::cout << line << "\n";
  for (const auto& row : rows) {
    line.clear();
    for (size_t i = 0; i < header.size(); ++i) {
      auto it = row.find(header[i]);
      if (i) line.push_back(',');
      line.append(CsvField(it == row.end() ? json(nullptr) : it->second));
    }
    std::cout << line << "\n";
  }
  std::cout << std::flush;
  return 0;
}

int LogsCommand(const GlobalFlags& g, const std::string& trial_id, int64_t lines,
                bool stderr_stream) {
  auto req = ExperimentRequest<proto::ShowTrial>(g);
  req.trial_id = trial_id;
  auto t = Call(g, req);
  if (!t.ok()) return Fail(t.status());
  const std::string path = t->value("dir", std::string()) + (stderr_stream ? "/stderr" : "/stdout");
  std::ifstream in(path);
  if (!in) {
    std::cerr << "tunectl: cannot read " << path
              << " (tunectl reads the trial folder directly: run it where the results folder is)\n";
    return 1;
  }
  std::deque<std::string> tail;
  for (std::string l; std::getline(in, l);) {
    tail.push_back(std::move(l));
    if (int64_t(tail.size()) > lines) tail.pop_front();
  }
  if (g.output == "json") {
    std::cout << json{{"trial_id", trial_id}, {"path", path}, {"lines", tail}}.dump(2) << std::endl;
  } else {
    for (const std::string& l : tail) std::cout << l << "\n";
    std::cout << std::flush;
  }
  return 0;
}

void AddOperatorCommands(CLI::App& app, GlobalFlags& g, Commands& commands) {
  auto list = std::make_shared<ListFlags>();
  auto* ls_cmd = app.add_subcommand("ls", "list the trials of an experiment");
  ls_cmd->add_option("--status", list->status,
                     "only trials with this status (PENDING, RUNNING, ...)");
  ls_cmd->add_option("--sort", list->sort,
                     "sort by a result key or trial field; -KEY sorts descending");
  ls_cmd
      ->add_option("--columns", list->columns,
                   "table columns: trial fields, result keys, config.KEY")
      ->delimiter(',');
  ls_cmd->add_option("--limit", list->limit, "at most this many trials")
      ->check(CLI::NonNegativeNumber);
  ls_cmd->add_option("--offset", list->offset, "skip this many trials first (with --limit: a page)")
      ->check(CLI::NonNegativeNumber);
  ls_cmd->add_flag("--pareto", list->pareto,
                   "only the Pareto front of a multi-objective experiment (best first by its "
                   "first objective)");
  AddReadExperimentFlag(*ls_cmd, g);
  commands.push_back({ls_cmd, CommandNeeds::kServer,
                      [list](const GlobalFlags& g) { return ListCommand(g, *list); }});

  auto* best_cmd = app.add_subcommand(
      "best", "the best trial: config, metric, checkpoint (several objectives: the Pareto front)");
  AddReadExperimentFlag(*best_cmd, g);
  commands.push_back({best_cmd, CommandNeeds::kServer, BestCommand});

  auto format = std::make_shared<std::string>();  // "" = csv, or json with -o json
  auto* export_cmd = app.add_subcommand("export", "every trial with its config and last result");
  export_cmd->add_option("--format", *format, "csv (default) or json (the default with -o json)")
      ->check(CLI::IsMember({"csv", "json"}));
  AddReadExperimentFlag(*export_cmd, g);
  commands.push_back({export_cmd, CommandNeeds::kServer,
                      [format](const GlobalFlags& g) { return ExportCommand(g, *format); }});

  struct LogsFlags {
    std::string trial_id;
    int64_t lines = 50;
    bool stderr_stream = false;
  };
  auto logs = std::make_shared<LogsFlags>();
  auto* logs_cmd = app.add_subcommand("logs", "the tail of a trial's stdout (or --stderr)");
  logs_cmd->add_option("trial_id", logs->trial_id)->required();
  logs_cmd->add_option("--lines,-n", logs->lines)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  logs_cmd->add_flag("--stderr", logs->stderr_stream, "show stderr instead of stdout");
  AddReadExperimentFlag(*logs_cmd, g);
  commands.push_back({logs_cmd, CommandNeeds::kServer, [logs](const GlobalFlags& g) {
                        return LogsCommand(g, logs->trial_id, logs->lines, logs->stderr_stream);
                      }});
}

}  // namespace tunebus
