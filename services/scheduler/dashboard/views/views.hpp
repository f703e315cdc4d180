// What the dashboard (dashboard/server.hpp, docs/how-to/dashboard.md) makes of the control socket's
// answers and the event stream: pure functions of JSON and text, no I/O, unit-tested
// (tests/unit/dashboard_views_test.cpp). Trial objects and experiment summaries have the shapes
// proto/PROTOCOL.md gives them ("Control socket").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus::dashboard {

/// Where the dashboard listens (--http).
struct HttpAddress {
  std::string host;  // an address or host name httplib binds ("127.0.0.1", "0.0.0.0", "::1")
  int port = 0;      // 0: any free port
};

/// Parses --http: "PORT" (on 127.0.0.1: loopback unless a host is given), "HOST:PORT", or
/// "[V6]:PORT". PORT is 0-65535 (0: any free port). Errors: InvalidArgument naming the text.
Result<HttpAddress> ParseHttpAddress(std::string_view text);

/// The endpoint a client in this process connects to for a socket bound at `bound` (as
/// zmq's last endpoint names it): a wildcard tcp host (0.0.0.0, *, [::]) becomes loopback;
/// anything else is returned as is.
std::string LocalConnectEndpoint(const std::string& bound);

/// A page of an experiment's trial table, as GET /api/experiments/NAME/trials asks for it.
struct TrialQuery {
  std::string status;  // "" = every status, else a status name (PENDING, RUNNING, ...)
  int64_t offset = 0;  // >= 0: rows skipped (after filtering and sorting)
  int64_t limit = 50;  // 1..kMaxLimit rows
  /// "" = creation order; else a key, "-KEY" descending: trial_id, status, training_iteration,
  /// time_total_s, metric (the experiment's metric in the last result), config.NAME, result.NAME
  /// (a key of the last result). Rows without the key come last either way.
  std::string sort;
  static constexpr int64_t kMaxLimit = 1000;
};

/// Checks a query's fields (status a known name, any case; offset >= 0; limit in 1..kMaxLimit;
/// sort a key above) and upper-cases the status. Errors: InvalidArgument naming the field.
Result<TrialQuery> CheckTrialQuery(TrialQuery query);

/// The table row of a trial object: {trial_id, status, config, training_iteration,
/// time_total_s (s), last_result, error, num_failures, experiment_tag}.
nlohmann::json TrialRow(const nlohmann::json& trial);

/// Sorts `rows` (TrialRow shapes) by query.sort, stably; `metric` names the experiment's metric
/// for the key "metric". The scheduler cuts the table's pages itself in this order
/// (services/scheduler/control/trial_page.hpp, tested against this function). Numbers compare as
/// numbers, strings as strings; a row whose value is missing, null or of the other kind sorts after
/// the others in both directions.
void SortRows(std::vector<nlohmann::json>& rows, std::string_view sort, const std::string& metric);

/// {"total": rows.size(), "offset", "limit", "sort", "status", "trials": the page} of `trials`
/// (a JSON array of trial objects, already filtered by status): sorted by query.sort, then
/// sliced, from every matching trial. The dashboard asks the control socket for the page
/// itself (PassThroughPage).
nlohmann::json SortedPage(const nlohmann::json& trials, const TrialQuery& query,
                          const std::string& metric);

/// The same shape for a page the control socket cut itself: `page` is ListTrials' answer for
/// sort/offset/limit, `total` the matching trials' count.
nlohmann::json PassThroughPage(const nlohmann::json& page, int64_t total, const TrialQuery& query);

/// The learning curve of a trial from its result.json text (JSON lines,
/// docs/reference/results-folder.md):
/// {"points": [{training_iteration, time_total_s, and every other numeric top-level key}],
///  "rows": lines read, "truncated": true when only every k-th row (and the last) was kept to
/// stay within `max_points`}. A line that is not a JSON object (a torn last line while the
/// writer appends) is skipped.
nlohmann::json CurveFromResultLines(std::string_view text, size_t max_points);

/// An experiment's row on the experiments page: the lsx row ({name, journal, status, counts,
/// total, submitted_at, weight?, share?}) plus from its summary (GetExperiment; null when it
/// could not be read) "metric", "mode", "best_trial_id", "best_metric" (number or null),
/// "created" (trials created), "elapsed_s".
nlohmann::json ExperimentRow(const nlohmann::json& lsx_row, const nlohmann::json& summary);

/// The data of a Server-Sent Event for a scheduler event: {"event", "experiment", "trial_id",
/// "trial": TrialRow of the body} for trial events, {"event", "experiment", "summary": body} for
/// experiment events. `body_json` that is not JSON gives a null trial / summary.
nlohmann::json EventData(const std::string& event, const std::string& experiment,
                         const std::string& trial_id, const std::string& body_json);

/// One Server-Sent Event (WHATWG HTML "Server-sent events"): "event: E\ndata: D\n\n"; `data`
/// must hold no newline (compact JSON does not).
std::string SseFrame(std::string_view event, std::string_view data);

}  // namespace tunebus::dashboard
