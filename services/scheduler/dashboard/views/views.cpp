#include "services/scheduler/dashboard/views/views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "libs/core/trial.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

namespace {

Result<int> ParsePort(std::string_view text, std::string_view whole) {
  int port = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port < 0 ||
      port > 65535) {
    return Status::InvalidArgument(fmt::format(
        "--http '{}': the port must be 0-65535 (0: any free port), as PORT or HOST:PORT", whole));
  }
  return port;
}

bool ValidSortKey(std::string_view key) {
  if (key.starts_with('-')) key.remove_prefix(1);
  if (key == "trial_id" || key == "status" || key == "training_iteration" ||
      key == "time_total_s" || key == "metric") {
    return true;
  }
  for (std::string_view prefix : {"config.", "result."}) {
    if (key.starts_with(prefix) && key.size() > prefix.size()) return true;
  }
  return false;
}

// The value `row` sorts by under `key` (without its '-'); null when it has none.
json SortValue(const json& row, std::string_view key, const std::string& metric) {
  const auto member = [](const json& object, std::string_view name) -> json {
    if (!object.is_object()) return nullptr;
    auto it = object.find(std::string(name));
    return it == object.end() ? json(nullptr) : *it;
  };
  if (key == "metric") return member(row.value("last_result", json()), metric);
  if (key.starts_with("config.")) return member(row.value("config", json()), key.substr(7));
  if (key.starts_with("result.")) return member(row.value("last_result", json()), key.substr(7));
  return member(row, key);
}

}  // namespace

Result<HttpAddress> ParseHttpAddress(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    auto port = ParsePort(text, text);
    if (!port.ok()) return port.status();
    return HttpAddress{"127.0.0.1", *port};
  }
  std::string_view host = text.substr(0, colon);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (host.empty() || (host.find(':') != std::string_view::npos && text[0] != '[')) {
    return Status::InvalidArgument(fmt::format(
        "--http '{}': give PORT, HOST:PORT or [IPV6]:PORT (e.g. 8265, 127.0.0.1:8265)", text));
  }
  auto port = ParsePort(text.substr(colon + 1), text);
  if (!port.ok()) return port.status();
  return HttpAddress{std::string(host), *port};
}

std::string LocalConnectEndpoint(const std::string& bound) {
  constexpr std::string_view kTcp = "tcp://";
  if (!bound.starts_with(kTcp)) return bound;
  const size_t colon = bound.rfind(':');
  if (colon == std::string::npos || colon < kTcp.size()) return bound;
  const std::string host = bound.substr(kTcp.size(), colon - kTcp.size());
  const std::string port = bound.substr(colon);
  if (host == "0.0.0.0" || host == "*") return "tcp://127.0.0.1" + port;
  if (host == "[::]" || host == "::") return "tcp://[::1]" + port;
  return bound;
}

Result<TrialQuery> CheckTrialQuery(TrialQuery query) {
  if (!query.status.empty()) {
    const auto status = ParseTrialStatus(query.status);
    if (!status) {
      return Status::InvalidArgument(fmt::format(
          "status '{}' is not one of PENDING, RUNNING, PAUSED, TERMINATED, ERROR", query.status));
    }
    query.status = TrialStatusName(*status);
  }
  if (query.offset < 0) return Status::InvalidArgument("offset must be >= 0");
  if (query.limit < 1 || query.limit > TrialQuery::kMaxLimit) {
    return Status::InvalidArgument(fmt::format("limit must be 1-{}", TrialQuery::kMaxLimit));
  }
  if (!query.sort.empty() && !ValidSortKey(query.sort)) {
    return Status::InvalidArgument(fmt::format(
        "sort '{}' is not one of trial_id, status, training_iteration, time_total_s, metric, "
        "config.NAME, result.NAME (a leading '-' sorts descending)",
        query.sort));
  }
  return query;
}

json TrialRow(const json& trial) {
  json row = json::object();
  for (const char* key : {"trial_id", "status", "config", "training_iteration", "time_total_s",
                          "last_result", "error", "num_failures", "experiment_tag"}) {
    auto it = trial.find(key);
    row[key] = it == trial.end() ? json(nullptr) : *it;
  }
  return row;
}

void SortRows(std::vector<json>& rows, std::string_view sort, const std::string& metric) {
  if (sort.empty()) return;
  const bool descending = sort.starts_with('-');
  if (descending) sort.remove_prefix(1);
  std::vector<std::pair<json, size_t>> keyed;  // (value, index): one lookup per row
  keyed.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) keyed.emplace_back(SortValue(rows[i], sort, metric), i);
  // Numbers before strings before anything else; within a kind by value.
  const auto rank = [](const json& v) { return v.is_number() ? 0 : v.is_string() ? 1 : 2; };
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    const int ra = rank(a.first), rb = rank(b.first);
    if (ra != rb || ra == 2) return ra < rb;
    if (ra == 0) {
      const double x = a.first.template get<double>(), y = b.first.template get<double>();
      return descending ? x > y : x < y;
    }
    const auto& x = a.first.template get_ref<const std::string&>();
    const auto& y = b.first.template get_ref<const std::string&>();
    return descending ? x > y : x < y;
  });
  std::vector<json> sorted;
  sorted.reserve(rows.size());
  for (auto& [value, i] : keyed) sorted.push_back(std::move(rows[i]));
  rows = std::move(sorted);
}

json SortedPage(const json& trials, const TrialQuery& query, const std::string& metric) {
  std::vector<json> rows;
  if (trials.is_array()) {
    rows.reserve(trials.size());
    for (const json& t : trials) rows.push_back(TrialRow(t));
  }
  SortRows(rows, query.sort, metric);
  json page = json::array();
  const auto total = int64_t(rows.size());
  for (int64_t i = query.offset; i < total && i < query.offset + query.limit; ++i) {
    page.push_back(std::move(rows[size_t(i)]));
  }
  return {{"total", total},     {"offset", query.offset}, {"limit", query.limit},
          {"sort", query.sort}, {"status", query.status}, {"trials", std::move(page)}};
}

json PassThroughPage(const json& page, int64_t total, const TrialQuery& query) {
  json rows = json::array();
  if (page.is_array()) {
    for (const json& t : page) rows.push_back(TrialRow(t));
  }
  return {{"total", total},     {"offset", query.offset}, {"limit", query.limit},
          {"sort", query.sort}, {"status", query.status}, {"trials", std::move(rows)}};
}

json CurveFromResultLines(std::string_view text, size_t max_points) {
  std::vector<json> points;
  size_t rows = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty()) continue;
    json result = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!result.is_object()) continue;
    ++rows;
    json point = json::object();
    for (auto it = result.begin(); it != result.end(); ++it) {
      const json& v = it.value();
      if (v.is_number() && (!v.is_number_float() || std::isfinite(v.get<double>()))) {
        point[it.key()] = v;
      }
    }
    points.push_back(std::move(point));
  }
  const bool truncated = max_points > 0 && points.size() > max_points;
  json out = json::array();
  if (truncated) {
    const size_t step = (points.size() + max_points - 2) / (max_points - 1);
    for (size_t i = 0; i + 1 < points.size(); i += step) out.push_back(std::move(points[i]));
    out.push_back(std::move(points.back()));
  } else {
    for (json& p : points) out.push_back(std::move(p));
  }
  return {{"points", std::move(out)}, {"rows", rows}, {"truncated", truncated}};
}

json ExperimentRow(const json& lsx_row, const json& summary) {
  json row = lsx_row;
  row["metric"] = nullptr;
  row["mode"] = nullptr;
  row["best_trial_id"] = nullptr;
  row["best_metric"] = nullptr;
  row["created"] = nullptr;
  row["elapsed_s"] = nullptr;
  if (!summary.is_object()) return row;
  for (const char* key : {"metric", "mode", "created", "elapsed_s"}) {
    if (auto it = summary.find(key); it != summary.end()) row[key] = *it;
  }
  const json& best = summary.contains("best") ? summary["best"] : json();
  if (best.is_object()) {
    row["best_trial_id"] = best.value("trial_id", json());
    const json result = best.value("last_result", json());
    const std::string metric = summary.value("metric", std::string());
    if (result.is_object() && result.contains(metric) && result[metric].is_number()) {
      row["best_metric"] = result[metric];
    }
  }
  return row;
}

json EventData(const std::string& event, const std::string& experiment, const std::string& trial_id,
               const std::string& body_json) {
  json body = json::parse(body_json, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) body = nullptr;
  json data = {{"event", event}, {"experiment", experiment}};
  if (trial_id.empty()) {
    data["summary"] = std::move(body);
  } else {
    data["trial_id"] = trial_id;
    data["trial"] = body.is_object() ? TrialRow(body) : json(nullptr);
  }
  return data;
}

std::string SseFrame(std::string_view event, std::string_view data) {
  return fmt::format("event: {}\ndata: {}\n\n", event, data);
}

}  // namespace tunebus::dashboard
