// SpecParser's `metric:` and `mode:` (docs/reference/search.md "Many objectives"): one objective as
// two strings (`metric: acc`, `mode: max`), or several as two lists of equal length, Ray Tune's and
// Optuna's list form (`metric: [val_accuracy, latency_ms]`, `mode: [max, min]`).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "libs/spec/spec_parser.hpp"

namespace tunebus::spec_internal {

Status SpecParser::ParseObjectiveField(const MapEntry& e) {
  const std::string& k = e.key;
  const bool is_metric = k == "metric";
  std::vector<std::string>& out = is_metric ? metrics_ : modes_;
  out.clear();
  auto check_mode = [&](const YAML::Node& node, const std::string& field,
                        const std::string& word) -> Status {
    if (is_metric || word == "max" || word == "min") return Status::Ok();
    return r_.Error(node, field, "expected 'max' or 'min', got '" + word + "'");
  };
  if (!e.value.IsSequence()) {
    Result<std::string> text = r_.String(e.value, k);
    if (!text.ok()) return text.status();
    if (Status st = check_mode(e.value, k, *text); !st.ok()) return st;
    out.push_back(*text);
    return Status::Ok();
  }
  listed_objectives_ = true;
  if (e.value.size() < 2) {
    return r_.Error(e.value, k,
                    fmt::format("a list names 2 or more objectives, got {}; for one write "
                                "`{}: {}`",
                                e.value.size(), k, is_metric ? "val_accuracy" : "max"));
  }
  for (size_t i = 0; i < e.value.size(); ++i) {
    const std::string field = fmt::format("{}[{}]", k, i);
    Result<std::string> text = r_.String(e.value[i], field);
    if (!text.ok()) return text.status();
    if (Status st = check_mode(e.value[i], field, *text); !st.ok()) return st;
    if (is_metric && std::find(out.begin(), out.end(), *text) != out.end()) {
      return r_.Error(e.value[i], field,
                      fmt::format("'{}' is named twice (each objective once)", *text));
    }
    out.push_back(*text);
  }
  return Status::Ok();
}

Status SpecParser::CheckObjectives() {
  if (!metrics_.empty() && modes_.empty()) {
    return r_.Error(given_["metric"], "metric",
                    listed_objectives_
                        ? "needs 'mode' as well: a list of max or min, one per metric"
                        : "needs 'mode' (max or min) as well");
  }
  if (metrics_.empty() && !modes_.empty()) {
    return r_.Error(given_["mode"], "mode", "needs 'metric' as well");
  }
  if (metrics_.size() != modes_.size()) {
    return r_.Error(
        given_["mode"], "mode",
        fmt::format("has {} {} for {} {}", modes_.size(), modes_.size() == 1 ? "entry" : "entries",
                    metrics_.size(), metrics_.size() == 1 ? "metric" : "metrics"));
  }
  spec_.metric.clear();
  spec_.mode.clear();
  spec_.objectives.clear();
  if (metrics_.size() == 1) {
    spec_.metric = metrics_[0];
    spec_.mode = modes_[0];
  } else {
    for (size_t i = 0; i < metrics_.size(); ++i) {
      spec_.objectives.push_back(Objective{metrics_[i], modes_[i]});
    }
  }
  return Status::Ok();
}

}  // namespace tunebus::spec_internal
