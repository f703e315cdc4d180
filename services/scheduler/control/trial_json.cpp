#include "services/scheduler/control/trial_json.hpp"

#include <iterator>

#include "libs/tune/pareto_trials.hpp"
#include "libs/tune/runner_queries.hpp"

namespace tunebus {

using nlohmann::json;

json TrialCountsJson(const std::vector<Trial>& trials) {
  constexpr TrialStatus kStatuses[] = {TrialStatus::kPending, TrialStatus::kRunning,
                                       TrialStatus::kPaused, TrialStatus::kTerminated,
                                       TrialStatus::kError};
  int64_t n[std::size(kStatuses)] = {};
  for (const Trial& t : trials) ++n[size_t(t.status)];
  json counts = json::object();
  for (TrialStatus s : kStatuses) counts[TrialStatusName(s)] = n[size_t(s)];
  return counts;
}

json ExperimentToJson(const std::string& name, const TrialRunner& runner,
                      const std::string& experiment_dir, double elapsed_s,
                      const DriverLink* driver) {
  const json counts = TrialCountsJson(runner.trials());
  const Trial* best = BestTrial(runner);
  json summary = {{"name", name},
                  {"experiment_id", runner.options().experiment_id},
                  {"status", ExperimentStatusName(runner.status())},
                  {"reason", runner.end_reason()},
                  {"counts", counts},
                  {"total", runner.TotalTrials()},
                  {"created", runner.trials().size()},
                  {"finished", runner.IsFinished()},
                  {"metric", runner.options().metric},
                  {"mode", runner.options().mode},
                  {"results_dir", experiment_dir},
                  {"best", best ? TrialToJson(*best, experiment_dir) : json(nullptr)},
                  {"searcher", runner.searcher().Describe()},
                  {"elapsed_s", elapsed_s}};
  // A multi-objective experiment (metric and mode empty): its objectives, and in place of one
  // best trial the Pareto front (libs/tune/pareto_trials.hpp), best first by the first objective.
  if (const std::vector<Objective>& objectives = runner.options().objectives;
      objectives.size() >= 2) {
    json listed = json::array();
    for (const Objective& o : objectives)
      listed.push_back({{"metric", o.metric}, {"mode", o.mode}});
    json front = json::array();
    for (const Trial* t : ParetoTrials(runner.trials(), objectives)) {
      front.push_back(TrialToJson(*t, experiment_dir));
    }
    summary["objectives"] = std::move(listed);
    summary["pareto_front"] = std::move(front);
  }
  // The wall-time budget (Ray Tune's time_budget_s), seconds, for the dashboard's progress.
  if (runner.options().time_budget_s) summary["time_budget_s"] = *runner.options().time_budget_s;
  // The driver link's state (proto/PROTOCOL.md section 7b), for an experiment that has one.
  if (driver != nullptr) summary["driver"] = driver->Describe();
  return summary;
}

}  // namespace tunebus
