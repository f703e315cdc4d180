// Progress display for `tunectl run` (Ray Tune's CLIReporter, in spirit): a table of trials
// with status, params, last metric, iterations and time, plus a summary line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tunebus {

// The experiment and trial objects come from the network: every accessor below takes any
// shape (a missing field, a field of another type, a body that is not an object) without
// throwing.

/// `j[key]` when `j` is an object holding a string there, else `fallback`.
std::string StringField(const nlohmann::json& j, const char* key, const std::string& fallback = "");
/// `j[key]` when `j` is an object holding an integer there, else `fallback`.
int64_t IntField(const nlohmann::json& j, const char* key, int64_t fallback = 0);
/// `j[key]` when `j` is an object holding a number there, else `fallback`.
double NumberField(const nlohmann::json& j, const char* key, double fallback = 0);
/// `j[key]` when `j` is an object that has `key`, else null.
const nlohmann::json& Field(const nlohmann::json& j, const char* key);

/// A trial's status as shown: "RUNNING (pausing)" while it saves its pause checkpoint
/// (`"pausing": true` in the trial object), else its `status`; " (not durable)" is added while
/// the trial shows a change its journal record does not hold yet (`"durable": false`).
std::string TrialStatusText(const nlohmann::json& trial);

/// Formats a table from the experiment summary and the list_trials array: the summary line, the
/// searcher line (RenderSearcherLine) and the driver line (RenderDriverLine) when there are, the
/// trials. At most `max_rows`
/// trials are shown (RUNNING first, then the most recently created); the rest are counted. A
/// multi-objective experiment ("objectives") has a column per objective and "pareto", which marks
/// the trials of its "pareto_front" with "*".
std::vector<std::string> RenderProgressTable(const nlohmann::json& experiment,
                                             const nlohmann::json& trials, size_t max_rows);

/// One summary line: "digits: 12 trials | 2 RUNNING, 4 TERMINATED, 6 PENDING | best
/// val_accuracy=0.95 | 12.3 s"; "| Pareto front 3 trials" for a multi-objective experiment.
std::string RenderSummaryLine(const nlohmann::json& experiment);
/// "searcher: random (suggested 12, total 20, max_concurrent 4, live_trials 4)": the experiment's
/// `searcher` (Searcher::Describe()), its other fields in key order; "" without one.
std::string RenderSearcherLine(const nlohmann::json& experiment);
/// "driver: tcp://127.0.0.1:5700 (answered 12, held 1, sessions 1, state ready)": the
/// experiment's `driver` (DriverLink::Describe(), proto/PROTOCOL.md section 7b), its other fields
/// in key order; "" for an experiment without a driver link.
std::string RenderDriverLine(const nlohmann::json& experiment);

/// The suite's health, when something is wrong (none when all is well):
///   "journal writes failing since HH:MM:SS UTC: <error>; nothing acknowledged is lost; trials
///    are held (N changes not yet durable)" from `journal_health`, and
///   "checkpoint-store degraded since HH:MM:SS UTC: <reason>" (or "unreachable: <reason>") from
///   `store` (proto/PROTOCOL.md §2, get_experiment).
std::vector<std::string> RenderHealthLines(const nlohmann::json& experiment);

/// Flattens a config to "a.b=1,c=x" with numbers in short form.
std::string FormatParams(const nlohmann::json& config);
/// Short number/JSON form: 0.00123456 -> "0.001235", 3 -> "3", "l2" -> "l2".
std::string FormatValue(const nlohmann::json& v);
/// Full precision: strings raw, everything else as compact JSON (for csv export).
std::string FormatValueExact(const nlohmann::json& v);

/// Redraws `lines` in place on a terminal (ANSI cursor-up + clear-line over the previous draw).
class InPlaceRenderer {
 public:
  void Draw(const std::vector<std::string>& lines);

 private:
  size_t previous_lines_ = 0;
};

}  // namespace tunebus
