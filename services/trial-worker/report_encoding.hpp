// A report's metrics as the msgpack map a trial-worker sends (proto/worker.hpp ReportResult's
// `metrics`), with Ray Tune's auto-filled keys only the worker knows (`hostname`, `node_ip`,
// `pid`, libs/core/trial.hpp) merged in at their sorted places, replacing reported keys of those
// names.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tunebus {

/// Appends `metrics` (a JSON object; another value is sent as it is, without the keys) to `out`
/// as one msgpack map, keys sorted: the bytes of nlohmann's `to_msgpack` of a copy of `metrics`
/// with the three keys set, written without building that copy (a map node and its key per
/// key and result were a fifth of the worker's CPU per result,
/// docs/explanation/performance/index.md item 36).
void AppendReportMetrics(const nlohmann::json& metrics, std::string_view hostname,
                         std::string_view node_ip, int64_t pid, std::string& out);

}  // namespace tunebus
