#include "libs/tune/warm_start_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "libs/tune/variant_generator.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

void CollectKeys(const json& space, const std::string& path, std::vector<std::string>* keys) {
  for (const auto& [key, node] : space.items()) {
    const std::string where = path.empty() ? key : path + "." + key;
    if (node.is_object() && !node.empty() && !VariantGenerator::IsSampler(node)) {
      CollectKeys(node, where, keys);
    } else {
      keys->push_back(where);
    }
  }
}

}  // namespace

std::vector<std::string> ParamSpaceKeys(const json& param_space) {
  std::vector<std::string> keys;
  if (param_space.is_object()) CollectKeys(param_space, "", &keys);
  std::sort(keys.begin(), keys.end());
  return keys;
}

Result<json> CollectWarmStart(const WarmStartExperiment& earlier, const WarmStartTarget& target,
                              size_t index) {
  const std::string where = fmt::format("warm_start[{}]", index);
  if (!earlier.ended) {
    return Status::InvalidArgument(fmt::format(
        "{}: experiment '{}' has not finished; warm start reads finished experiments (wait for "
        "it, or stop it with `tunectl stop -e {}`)",
        where, earlier.name, earlier.name));
  }
  const std::vector<std::string> theirs = ParamSpaceKeys(earlier.param_space);
  const std::vector<std::string> ours = ParamSpaceKeys(target.param_space);
  if (theirs != ours) {
    return Status::InvalidArgument(
        fmt::format("{}: experiment '{}' has keys {}; this param space "
                    "has {}",
                    where, earlier.name, fmt::join(theirs, ", "), fmt::join(ours, ", ")));
  }
  if (earlier.metric != target.metric) {
    return Status::InvalidArgument(fmt::format(
        "{}: experiment '{}' has metric '{}'; this experiment's metric is '{}' (warm start feeds "
        "values of the same metric)",
        where, earlier.name, earlier.metric, target.metric));
  }
  json observations = json::array();
  for (const Trial& t : *earlier.trials) {
    if (t.status != TrialStatus::kTerminated || !t.error.empty()) continue;
    const json last = t.LastResult();
    if (!last.is_object()) continue;
    auto value = last.find(target.metric);
    if (value == last.end() || !value->is_number() || !std::isfinite(value->get<double>())) {
      continue;
    }
    json o = {{"config", t.config}, {"value", *value}};
    if (auto it = last.find("training_iteration"); it != last.end() && it->is_number())
      o["budget"] = *it;
    observations.push_back(std::move(o));
  }
  return json{{"experiment", earlier.name},
              {"journal", earlier.journal},
              {"observations", std::move(observations)}};
}

}  // namespace tunebus
