#include "services/tunectl/progress_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "libs/core/clock.hpp"
#include "services/tunectl/pareto_view.hpp"

namespace tunebus {

using nlohmann::json;

std::string FormatValue(const json& v) {
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string FormatValueExact(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string StringField(const json& j, const char* key, const std::string& fallback) {
  const json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

std::string TrialStatusText(const json& trial) {
  const std::string status = StringField(trial, "status");
  const json& pausing = Field(trial, "pausing");
  std::string text = pausing.is_boolean() && pausing.get<bool>() ? status + " (pausing)" : status;
  const json& durable = Field(trial, "durable");
  if (durable.is_boolean() && !durable.get<bool>()) text += " (not durable)";
  return text;
}

std::vector<std::string> RenderHealthLines(const json& e) {
  std::vector<std::string> lines;
  const json& journal = Field(e, "journal_health");
  if (StringField(journal, "state") == "failing") {
    lines.push_back(fmt::format(
        "journal writes failing since {}: {}; nothing acknowledged is lost; trials are held ({} "
        "changes not yet durable)",
        FormatTimeOfDayUtc(NumberField(journal, "since_unix_s")), StringField(journal, "error"),
        IntField(journal, "not_durable_records")));
  }
  const json& store = Field(e, "store");
  const std::string state = StringField(store, "state");
  if (state == "degraded") {
    const double since = NumberField(store, "since_unix_s");
    lines.push_back(fmt::format(
        "checkpoint-store degraded{}: {} (writes refused, reads served; "
        "it recovers by itself when space returns)",
        since > 0 ? " since " + FormatTimeOfDayUtc(since) : "", StringField(store, "reason")));
  } else if (state == "unreachable") {
    lines.push_back("checkpoint-store unreachable: " + StringField(store, "reason"));
  }
  return lines;
}

int64_t IntField(const json& j, const char* key, int64_t fallback) {
  const json& v = Field(j, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

double NumberField(const json& j, const char* key, double fallback) {
  const json& v = Field(j, key);
  return v.is_number() ? v.get<double>() : fallback;
}

namespace {

void Flatten(const json& config, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [k, v] : config.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      Flatten(v, key, out);
    } else {
      out.emplace_back(key, FormatValue(v));
    }
  }
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string FormatParams(const json& config) {
  std::vector<std::pair<std::string, std::string>> kv;
  if (config.is_object()) Flatten(config, "", kv);
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

std::string RenderSummaryLine(const json& e) {
  std::string counts;
  const json& status_counts = Field(e, "counts");
  if (status_counts.is_object()) {
    for (const auto& [status, n] : status_counts.items()) {
      if (!n.is_number_integer() || n.get<int64_t>() == 0) continue;
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n.get<int64_t>(), status);
    }
  }
  const int64_t total = IntField(e, "total", -1);
  std::string line = fmt::format("{}: {} trials | {} | {:.1f} s", StringField(e, "name", "?"),
                                 total < 0 ? std::string("unbounded") : std::to_string(total),
                                 counts, NumberField(e, "elapsed_s"));
  const std::string metric = StringField(e, "metric");
  const json& best_value = Field(Field(Field(e, "best"), "last_result"), metric.c_str());
  if (!metric.empty() && !best_value.is_null()) {
    line += fmt::format(" | best {}={} ({})", metric, FormatValue(best_value),
                        StringField(Field(e, "best"), "trial_id"));
  }
  if (const json& front = Field(e, "pareto_front"); front.is_array()) {
    line +=
        fmt::format(" | Pareto front {} {}", front.size(), front.size() == 1 ? "trial" : "trials");
  }
  return line;
}

namespace {

// "<field>: <described[name_key]> (key value, ...)": the other fields of `experiment[field]` in
// key order; "" when it has no such object.
std::string RenderDescribedLine(const json& e, const char* field, const char* name_key) {
  const json& described = Field(e, field);
  if (!described.is_object()) return "";
  std::string fields;
  for (const auto& [key, value] : described.items()) {
    if (key == name_key) continue;
    fields += fmt::format("{}{} {}", fields.empty() ? "" : ", ", key,
                          value.is_string() ? value.get<std::string>() : value.dump());
  }
  return fmt::format("{}: {}{}", field, StringField(described, name_key, "?"),
                     fields.empty() ? "" : " (" + fields + ")");
}

}  // namespace

std::string RenderSearcherLine(const json& e) {
  return RenderDescribedLine(e, "searcher", "searcher");
}

std::string RenderDriverLine(const json& e) { return RenderDescribedLine(e, "driver", "endpoint"); }

std::vector<std::string> RenderProgressTable(const json& e, const json& trials, size_t max_rows) {
  const std::string metric = StringField(e, "metric");
  std::vector<const json*> rows;
  if (trials.is_array()) {
    for (const auto& t : trials) rows.push_back(&t);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json* a, const json* b) {
    return (StringField(*a, "status") == "RUNNING") > (StringField(*b, "status") == "RUNNING");
  });
  const size_t shown = std::min(rows.size(), max_rows);
  // One column per objective of a multi-objective experiment, and "pareto" marking its front.
  std::vector<std::string> metrics = ObjectiveMetrics(e);
  const bool many = !metrics.empty();
  if (!many) metrics.push_back(metric);
  const std::set<std::string> front = ParetoTrialIds(e);

  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"trial", "status", "params"};
  for (const std::string& m : metrics) header.push_back(m.empty() ? "metric" : m);
  header.insert(header.end(), {"iter", "time (s)"});
  if (many) header.push_back("pareto");
  cells.push_back(std::move(header));
  for (size_t i = 0; i < shown; ++i) {
    const json& t = *rows[i];
    std::string params = FormatParams(Field(t, "config"));
    if (params.size() > 60) params = params.substr(0, 57) + "...";
    std::vector<std::string> row = {StringField(t, "trial_id"), TrialStatusText(t), params};
    for (const std::string& m : metrics) {
      const json& value = Field(Field(t, "last_result"), m.c_str());
      row.push_back(!m.empty() && !value.is_null() ? FormatValue(value) : "");
    }
    row.push_back(std::to_string(IntField(t, "training_iteration")));
    row.push_back(fmt::format("{:.1f}", NumberField(t, "time_total_s")));
    if (many) row.push_back(front.contains(StringField(t, "trial_id")) ? "*" : "");
    cells.push_back(std::move(row));
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::vector<std::string> lines{RenderSummaryLine(e)};
  if (std::string searcher = RenderSearcherLine(e); !searcher.empty())
    lines.push_back(std::move(searcher));
  if (std::string driver = RenderDriverLine(e); !driver.empty()) lines.push_back(std::move(driver));
  for (std::string& health : RenderHealthLines(e)) lines.push_back(std::move(health));
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) line += (c ? " | " : "") + Pad(row[c], width[c]);
    lines.push_back(line);
  }
  if (rows.size() > shown) lines.push_back(fmt::format("... {} more trials", rows.size() - shown));
  return lines;
}

void InPlaceRenderer::Draw(const std::vector<std::string>& lines) {
  std::string out;
  if (previous_lines_ > 0) out += fmt::format("\033[{}A", previous_lines_);
  for (const auto& l : lines) out += "\033[2K" + l + "\n";
  // Clear lines left over from a taller previous draw.
  for (size_t i = lines.size(); i < previous_lines_; ++i) out += "\033[2K\n";
  const size_t drawn = std::max(lines.size(), previous_lines_);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  previous_lines_ = drawn;
}

}  // namespace tunebus
