// What an experiment of several objectives (`metric: [val_accuracy, latency_ms]`, `mode: [max,
// min]`; docs/reference/search.md "Many objectives") asks of the searcher and the trial scheduler
// that were written for one metric:
//
// - a searcher optimises all of them (nsga2, motpe) or none (random: its suggestions ignore the
//   results); tpe, bohb and external optimise one metric and are refused, naming nsga2 / motpe.
//   `evaluated_rewards` (one value per point) are refused: a point's value would be a vector.
// - a trial scheduler that compares trials (asha, hyperband, hyperband_bohb, median_stopping,
//   pbt) compares one metric: its own `metric:` (Ray Tune's rule: a scheduler has its own
//   metric and mode), which must be one of the objectives; its mode is that objective's. Without
//   it the choice is ambiguous and refused. fifo compares nothing.
//
// Every error reads "<param>: <why>", so the spec parser points at the parameter's line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/pareto.hpp"

namespace tunebus {

/// "val_accuracy max, latency_ms min": the objectives as messages name them.
std::string DescribeObjectives(const std::vector<Objective>& objectives);

/// True for the search types that take several objectives: random, nsga2, motpe.
bool SearchesManyObjectives(const std::string& search_type);

/// OK when `search_type` (with `evaluated_rewards` given or not) serves `objectives`; always OK
/// for fewer than two objectives. Errors: InvalidArgument "type: tpe optimises one metric; ..."
/// or "evaluated_rewards: ...".
Status CheckSearchObjectives(const std::string& search_type, bool has_evaluated_rewards,
                             const std::vector<Objective>& objectives);

/// The trial scheduler `scheduler`'s parameters `config` for an experiment of `objectives` (two
/// or more): unchanged for fifo; else with `mode` set to the objective its `metric` names.
/// Errors: InvalidArgument "metric: the experiment has 2 objectives (...); asha compares one:
/// set scheduler.metric to one of them" (no metric), "metric: 'loss' is not one of ..." or
/// "mode: ..." (a mode that contradicts the objective's).
Result<nlohmann::json> SchedulerConfigForObjectives(const std::string& scheduler,
                                                    nlohmann::json config,
                                                    const std::vector<Objective>& objectives);

}  // namespace tunebus
