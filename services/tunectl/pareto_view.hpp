// The Pareto front of a multi-objective experiment as tunectl shows it (`tunectl best`, `tunectl
// ls`, `tunectl run`'s end summary), from get_experiment's "objectives" and "pareto_front"
// (proto/PROTOCOL.md §2). Every accessor takes any shape of the (network) body without throwing.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace tunebus {

/// The objectives' metric names of an experiment body ("objectives": [{"metric", "mode"}]); empty
/// for an experiment of one objective.
std::vector<std::string> ObjectiveMetrics(const nlohmann::json& experiment);
/// "val_accuracy max, latency_ms min".
std::string DescribeObjectivesOf(const nlohmann::json& experiment);
/// The trial ids of its "pareto_front".
std::set<std::string> ParetoTrialIds(const nlohmann::json& experiment);
/// "Pareto front (val_accuracy max, latency_ms min): 3 trials", then a table of the front's
/// trials in the body's order (best first by the first objective): trial id, each objective's
/// value, the config. `indent` starts every line.
std::vector<std::string> RenderParetoFront(const nlohmann::json& experiment,
                                           const std::string& indent = "");

}  // namespace tunebus
