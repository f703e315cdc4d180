#include "services/tunectl/progress_table.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace tunebus {

using nlohmann::json;

std::string FormatValue(const json& v) {
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string FormatValueExact(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

namespace {

void Flatten(const json& config, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [k, v] : config.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      Flatten(v, key, out);
    } else {
      out.emplace_back(key, FormatValue(v));
    }
  }
}

std::string Pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

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
  const json status_counts = e.value("counts", json::object());
  for (const auto& [status, n] : status_counts.items()) {
    if (n.get<int64_t>() == 0) continue;
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n.get<int64_t>(), status);
  }
  const int64_t total = e.value("total", int64_t(-1));
  std::string line = fmt::format("{}: {} trials | {} | {:.1f} s", e.value("name", std::string("?")),
                                 total < 0 ? std::string("unbounded") : std::to_string(total), counts,
                                 e.value("elapsed_s", 0.0));
  const std::string metric = e.value("metric", std::string());
  const json& best = e.contains("best") ? e["best"] : json(nullptr);
  if (!metric.empty() && best.is_object() && best["last_result"].contains(metric)) {
    line += fmt::format(" | best {}={} ({})", metric, FormatValue(best["last_result"][metric]),
                        best.value("trial_id", std::string()));
  }
  return line;
}

std::vector<std::string> RenderProgressTable(const json& e, const json& trials, size_t max_rows) {
  const std::string metric = e.value("metric", std::string());
  std::vector<const json*> rows;
  for (const auto& t : trials) rows.push_back(&t);
  std::stable_sort(rows.begin(), rows.end(), [](const json* a, const json* b) {
    return ((*a)["status"] == "RUNNING") > ((*b)["status"] == "RUNNING");
  });
  const size_t shown = std::min(rows.size(), max_rows);

  std::vector<std::vector<std::string>> cells;
  cells.push_back({"trial", "status", "params", metric.empty() ? "metric" : metric, "iter", "time (s)"});
  for (size_t i = 0; i < shown; ++i) {
    const json& t = *rows[i];
    const json& r = t["last_result"];
    std::string m = (!metric.empty() && r.contains(metric)) ? FormatValue(r[metric]) : "";
    std::string params = FormatParams(t["config"]);
    if (params.size() > 60) params = params.substr(0, 57) + "...";
    cells.push_back({t.value("trial_id", std::string()), t.value("status", std::string()), params, m,
                     std::to_string(t.value("training_iteration", int64_t(0))),
                     fmt::format("{:.1f}", t.value("time_total_s", 0.0))});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::vector<std::string> lines{RenderSummaryLine(e)};
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
