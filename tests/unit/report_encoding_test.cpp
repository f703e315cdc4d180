// Tests for AppendReportMetrics (services/trial-worker/report_encoding.hpp): the map a worker
// sends is, byte for byte, nlohmann's msgpack of the report with `hostname`, `node_ip` and `pid`
// set (the form the worker sent before, which the scheduler and its tests decode).
#include "services/trial-worker/report_encoding.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tunebus {
namespace {

using nlohmann::json;

std::string Reference(json metrics, const std::string& hostname, const std::string& node_ip,
                      int64_t pid) {
  if (metrics.is_object()) {
    metrics["hostname"] = hostname;
    metrics["node_ip"] = node_ip;
    metrics["pid"] = pid;
  }
  std::string bytes;
  json::to_msgpack(metrics, bytes);
  return bytes;
}

TEST(ReportEncodingTest, TheMapIsNlohmannsWithTheWorkersKeysSetAtTheirSortedPlaces) {
  const std::vector<json> reports = {
      json::object(),
      {{"value", 1}},
      {{"a", 1}, {"z", 2}},  // before the first and after the last auto-filled key
      {{"hostname", "mine"}, {"pid", "x"}, {"node_ip", 3}, {"loss", 0.5}},  // replaced
      {{"info", {{"nested", {1, 2.5, "s"}}}}, {"ok", true}, {"none", nullptr}},
      {{"h", 1}, {"hostnamf", 2}, {"node", 3}, {"node_iq", 4}, {"pi", 5}, {"pie", 6}},
      {{std::string(40, 'k'), std::string(300, 'v')}, {"f32", 0.25}, {"f64", 0.1}},
      {{"decision_latency_s", 0.0017}, {"value", -7}},
  };
  for (int64_t pid :
       {int64_t(0), int64_t(1), int64_t(127), int64_t(128), int64_t(65535), int64_t(65536),
        int64_t(1) << 32, int64_t(-1), int64_t(-33), std::numeric_limits<int64_t>::min()}) {
    for (const json& report : reports) {
      for (const std::string& host : {std::string("vm"), std::string(40, 'h')}) {
        std::string ours;
        AppendReportMetrics(report, host, "192.0.2.2", pid, ours);
        EXPECT_EQ(ours, Reference(report, host, "192.0.2.2", pid)) << report.dump() << " " << pid;
      }
    }
  }
}

TEST(ReportEncodingTest, AReportThatIsNotAnObjectIsSentAsItIsAndAppended) {
  std::string out = "prefix";
  AppendReportMetrics(json::array({1, 2}), "vm", "192.0.2.2", 7, out);
  std::string expected = "prefix";
  json::to_msgpack(json::array({1, 2}), expected);
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace tunebus
