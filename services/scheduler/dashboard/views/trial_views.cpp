#include "services/scheduler/dashboard/views/trial_views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace tunebus::dashboard {

using nlohmann::json;

namespace {

// Calls fn(line) for each non-empty line of `text`.
template <typename F>
void ForEachLine(std::string_view text, F&& fn) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty()) fn(line);
  }
}

}  // namespace

Result<ResultsQuery> CheckResultsQuery(ResultsQuery query) {
  if (query.offset && *query.offset < 0) return Status::InvalidArgument("offset must be >= 0");
  if (query.limit < 1 || query.limit > ResultsQuery::kMaxLimit) {
    return Status::InvalidArgument(fmt::format("limit must be 1-{}", ResultsQuery::kMaxLimit));
  }
  return query;
}

json ResultPage(std::string_view text, const ResultsQuery& query, const std::string& metric) {
  // One pass: every row's keys, and where each row's text is (the page's rows are parsed again:
  // no document of every row is kept).
  std::vector<std::string_view> rows;
  std::set<std::string> keys;
  ForEachLine(text, [&](std::string_view line) {
    const json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!row.is_object()) return;
    for (auto it = row.begin(); it != row.end(); ++it) keys.insert(it.key());
    rows.push_back(line);
  });
  const auto total = int64_t(rows.size());
  const int64_t offset = query.offset ? *query.offset : std::max<int64_t>(0, total - query.limit);
  json page = json::array();
  for (int64_t i = offset; i < total && i < offset + query.limit; ++i) {
    page.push_back(json::parse(rows[size_t(i)]));
  }
  json columns = json::array();
  for (const std::string& first :
       {std::string("training_iteration"), metric, std::string("time_total_s")}) {
    if (!first.empty() && keys.erase(first) > 0) columns.push_back(first);
  }
  const bool config = keys.erase("config") > 0;
  for (const std::string& k : keys) columns.push_back(k);
  if (config) columns.push_back("config");
  return {{"total", total},
          {"offset", offset},
          {"limit", query.limit},
          {"columns", std::move(columns)},
          {"rows", std::move(page)}};
}

std::string CheckpointName(std::string_view checkpoint_id) {
  const size_t slash = checkpoint_id.rfind('/');
  return std::string(slash == std::string_view::npos ? checkpoint_id
                                                     : checkpoint_id.substr(slash + 1));
}

json CheckpointRows(const json& trial, std::string_view result_text) {
  const json none = json::array();
  const json& kept = trial.contains("checkpoints") && trial["checkpoints"].is_array()
                         ? trial["checkpoints"]
                         : none;
  // The timestamps of the result rows at the checkpoints' iterations.
  std::map<int64_t, json> timestamps;
  for (const json& c : kept) {
    const json& it = c.value("training_iteration", json());
    if (it.is_number_integer()) timestamps[it.get<int64_t>()] = nullptr;
  }
  if (!timestamps.empty()) {
    ForEachLine(result_text, [&](std::string_view line) {
      const json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!row.is_object()) return;
      const json& it = row.value("training_iteration", json());
      if (!it.is_number_integer()) return;
      auto found = timestamps.find(it.get<int64_t>());
      if (found != timestamps.end()) found->second = row.value("timestamp", json());
    });
  }
  json rows = json::array();
  for (const json& c : kept) {
    if (!c.is_object()) continue;
    const std::string id = c.value("checkpoint_id", std::string());
    const json& it = c.value("training_iteration", json());
    rows.push_back(
        {{"checkpoint_id", id},
         {"name", CheckpointName(id)},
         {"training_iteration", it},
         {"time_total_s", c.value("time_total_s", json())},
         {"score", c.value("score", json())},
         {"size_bytes", c.value("size_bytes", json())},
         {"timestamp", it.is_number_integer() ? timestamps[it.get<int64_t>()] : json(nullptr)}});
  }
  const json& not_stored = trial.value("checkpoints_not_stored", json());
  return {{"checkpoints", std::move(rows)},
          {"not_stored", not_stored.is_array() ? not_stored : json::array()}};
}

std::string ExportFileName(std::string_view trial_id, std::string_view checkpoint_id) {
  std::string name = fmt::format("{}_checkpoint_{}.tar", trial_id, CheckpointName(checkpoint_id));
  for (char& c : name) {
    const bool safe = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  return name;
}

Result<std::string> LogFileName(std::string_view stream) {
  if (stream.empty() || stream == "stdout") return std::string("stdout");
  if (stream == "stderr") return std::string("stderr");
  return Status::InvalidArgument(fmt::format("stream '{}' is not one of stdout, stderr", stream));
}

Result<int64_t> CheckTailBytes(int64_t tail_bytes) {
  if (tail_bytes < 1 || tail_bytes > kMaxTailBytes) {
    return Status::InvalidArgument(fmt::format("tail_bytes must be 1-{}", kMaxTailBytes));
  }
  return tail_bytes;
}

TailWindow TailOf(int64_t size, int64_t tail_bytes) {
  size = std::max<int64_t>(size, 0);
  const int64_t length = std::min(size, std::max<int64_t>(tail_bytes, 0));
  return {size - length, length};
}

std::string_view WholeLines(std::string_view text, int64_t offset) {
  if (offset <= 0) return text;
  const size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return text;
  return text.substr(nl + 1);
}

}  // namespace tunebus::dashboard
