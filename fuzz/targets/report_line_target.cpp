#include <string>
#include <string_view>

#include "fuzz/fuzz_targets.hpp"
#include "libs/trainable/command_trainable.hpp"
#include "libs/tune/training_result.hpp"
#include "services/trial-worker/report_encoding.hpp"

namespace tunebus::fuzz {

int FuzzReportLine(const uint8_t* data, size_t size) {
  std::string_view pipe(reinterpret_cast<const char*>(data), size);
  while (!pipe.empty()) {
    const size_t nl = pipe.find('\n');
    const std::string_view line = pipe.substr(0, nl);
    pipe.remove_prefix(nl == std::string_view::npos ? pipe.size() : nl + 1);
    (void)TrainingResult::FromJsonText(line);  // a report_result's metrics_json
    Result<std::optional<nlohmann::json>> metrics = trainable::ParseReportLine(line);
    if (!metrics.ok() || !metrics->has_value()) continue;
    std::string bytes;
    AppendReportMetrics(**metrics, "fuzz-host", "10.0.0.1", 4242, bytes);
    Result<TrainingResult> result = TrainingResult::FromMsgpack(bytes);
    Check(result.ok(),
          "the worker's encoding of a report line does not decode: " + result.status().ToString());
  }
  return 0;
}

}  // namespace tunebus::fuzz
