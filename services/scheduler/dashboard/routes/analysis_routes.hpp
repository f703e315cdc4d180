// AnalysisRoutes: the JSON routes of the experiment page's analysis panels
// (docs/how-to/dashboard.md): the trials as columns with the importance, the searcher's phase and
// the trial scheduler's decisions, a handler each, registered by AddTo:
//
//   GET /api/experiments/NAME/analysis     the columns (AnalysisColumns), the importance, the
//                                          searcher's phase, "cached" and "compute_ms"
//   GET /api/experiments/NAME/importance   the importance alone, with the metric
//   GET /api/experiments/NAME/searcher     SearcherPhase of the summary
//   GET /api/experiments/NAME/decisions    the trial scheduler's decision log
//
// The columns of an experiment are computed from one ListTrials of every trial and kept per
// experiment (journal name) with the key they were computed for: the summary's counts, created
// trials, status and best trial, and the relay's event sequence (frames that entered the
// /events feed) while a page listens. A request that finds the same key gets the kept answer;
// without a listening page (no event sequence) a kept answer serves for kMaxAge; a finished
// experiment's answer is kept while its summary is the same. An experiment has at most one
// computation under way: a request that finds no kept answer waits for the next computation
// to start after it arrived, and every request waiting meanwhile shares that one. So a
// 10,000-trial experiment costs the scheduler one ListTrials per change at most, and pages
// reloaded faster than a computation (each left page's request still runs to its end) queue
// one computation, never one each.
//
// Thread-safety: handlers run on several HTTP threads at once; the cache (AnalysisCache, in
// analysis_routes.cpp) is guarded by its own mutex.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "libs/core/status.hpp"
#include "services/scheduler/dashboard/http.hpp"
#include "services/scheduler/dashboard/routes/control_pool.hpp"
#include "services/scheduler/dashboard/routes/event_routes.hpp"

namespace tunebus::dashboard {

struct AnalysisCache;

class AnalysisRoutes {
 public:
  /// `events` gives the feed's sequence the kept answers are keyed on while a page listens.
  /// REQUIRES: `control` and `events` outlive this.
  AnalysisRoutes(ControlPool& control, EventRoutes& events);
  ~AnalysisRoutes();
  void AddTo(Router& router);

 private:
  void ServeAnalysis(const httplib::Request& req, httplib::Response& res);
  void ServeImportance(const httplib::Request& req, httplib::Response& res);
  void ServeSearcher(const httplib::Request& req, httplib::Response& res);
  void ServeDecisions(const httplib::Request& req, httplib::Response& res);
  /// The summary of the experiment `name` and its columns (kept or computed now), with
  /// "cached" and "compute_ms".
  Result<std::pair<nlohmann::json, nlohmann::json>> Analysis(const std::string& name);

  ControlPool& control_;
  EventRoutes& events_;
  std::unique_ptr<AnalysisCache> cache_;  // the kept answers
};

}  // namespace tunebus::dashboard
