#include "libs/tune/objective_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tunebus {

std::string DescribeObjectives(const std::vector<Objective>& objectives) {
  std::vector<std::string> parts;
  parts.reserve(objectives.size());
  for (const Objective& o : objectives) parts.push_back(o.metric + " " + o.mode);
  return fmt::format("{}", fmt::join(parts, ", "));
}

bool SearchesManyObjectives(const std::string& search_type) {
  return search_type == "random" || search_type == "nsga2" || search_type == "motpe";
}

Status CheckSearchObjectives(const std::string& search_type, bool has_evaluated_rewards,
                             const std::vector<Objective>& objectives) {
  if (objectives.size() < 2) return Status::Ok();
  if (!SearchesManyObjectives(search_type)) {
    return Status::InvalidArgument(fmt::format(
        "type: {} optimises one metric, and the experiment has {} objectives ({}): use search: "
        "nsga2 or motpe (or random)",
        search_type, objectives.size(), DescribeObjectives(objectives)));
  }
  if (has_evaluated_rewards) {
    return Status::InvalidArgument(fmt::format(
        "evaluated_rewards: one reward per point is one metric's, and the experiment has {} "
        "objectives ({}): leave evaluated_rewards out (the points then run as trials)",
        objectives.size(), DescribeObjectives(objectives)));
  }
  return Status::Ok();
}

Result<nlohmann::json> SchedulerConfigForObjectives(const std::string& scheduler,
                                                    nlohmann::json config,
                                                    const std::vector<Objective>& objectives) {
  if (scheduler.empty() || scheduler == "fifo" || objectives.size() < 2) return config;
  if (!config.is_object()) config = nlohmann::json::object();
  const std::string described = DescribeObjectives(objectives);
  auto metric = config.find("metric");
  if (metric == config.end() || !metric->is_string() || metric->get<std::string>().empty()) {
    return Status::InvalidArgument(fmt::format(
        "metric: the experiment has {} objectives ({}); {} compares one: set scheduler.metric to "
        "one of them",
        objectives.size(), described, scheduler));
  }
  const std::string name = metric->get<std::string>();
  const auto objective = std::find_if(objectives.begin(), objectives.end(),
                                      [&](const Objective& o) { return o.metric == name; });
  if (objective == objectives.end()) {
    return Status::InvalidArgument(
        fmt::format("metric: '{}' is not one of the experiment's objectives ({}); {} compares one "
                    "of them",
                    name, described, scheduler));
  }
  auto mode = config.find("mode");
  if (mode != config.end() && mode->is_string() && mode->get<std::string>() != objective->mode) {
    return Status::InvalidArgument(fmt::format(
        "mode: '{}' contradicts the experiment's mode for {} ({}); leave scheduler.mode out",
        mode->get<std::string>(), name, objective->mode));
  }
  if (mode == config.end()) config["mode"] = objective->mode;
  return config;
}

}  // namespace tunebus
