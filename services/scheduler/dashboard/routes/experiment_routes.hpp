// ExperimentRoutes: the dashboard's experiment pages and their JSON routes
// (docs/how-to/dashboard.md), a handler each, registered by AddTo:
//
//   GET /                                      the experiments page (index.html)
//   GET /experiments/NAME                      one experiment's page (experiment.html)
//   GET /static/FILE                           an embedded file (ServeStaticFile)
//   GET /api/experiments                       [ExperimentRow with its progress]
//                                              (ServeExperiments)
//   GET /api/experiments/NAME                  the experiment summary, its "best" as a TrialRow
//                                              (ServeExperiment)
//   GET /api/experiments/NAME/trials?status=&offset=&limit=&sort=
//                                              one page of the trial table (ServeTrials)
//   GET /api/experiments/NAME/trials/ID/curve  CurveFromResultLines of the trial's result.json
//                                              (ServeCurve)
//   GET /api/experiments/NAME/pareto           ParetoView: every trial's objective values and
//                                              the Pareto front (ServePareto)
//
// It keeps the summaries of experiments read from journals (not in the scheduler's memory,
// unchanging) while their lsx row is the same, so the experiments page asks the scheduler once
// per such experiment. Thread-safety: handlers run on several HTTP threads at once.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "services/scheduler/dashboard/http.hpp"
#include "services/scheduler/dashboard/routes/control_pool.hpp"

namespace tunebus::dashboard {

class ExperimentRoutes {
 public:
  /// REQUIRES: `control` outlives this.
  explicit ExperimentRoutes(ControlPool& control) : control_(control) {}
  void AddTo(Router& router);

 private:
  void ServeStaticFile(const httplib::Request& req, httplib::Response& res);
  void ServeExperiments(const httplib::Request& req, httplib::Response& res);
  void ServeExperiment(const httplib::Request& req, httplib::Response& res);
  void ServeTrials(const httplib::Request& req, httplib::Response& res);
  void ServeCurve(const httplib::Request& req, httplib::Response& res);
  void ServePareto(const httplib::Request& req, httplib::Response& res);
  /// The experiments page's row of the lsx row `row`, with its progress: the summary of an
  /// experiment read from its journal is kept while its row is the same (journal_summaries_).
  nlohmann::json ShownExperimentRow(const nlohmann::json& row);

  ControlPool& control_;
  std::mutex summaries_mu_;
  /// GetExperiment answers of experiments not in the scheduler's memory (read from journals,
  /// unchanging), by journal name, with the lsx row they were read for.
  std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> journal_summaries_;
};

}  // namespace tunebus::dashboard
