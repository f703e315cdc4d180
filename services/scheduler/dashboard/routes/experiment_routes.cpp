#include "services/scheduler/dashboard/routes/experiment_routes.hpp"

#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <mutex>

#include "proto/control.hpp"
#include "services/scheduler/dashboard/views/analysis.hpp"
#include "services/scheduler/dashboard/views/pareto.hpp"
#include "services/scheduler/dashboard/views/views.hpp"

namespace tunebus::dashboard {

// Named (not anonymous): the unity build compiles this file with the other routes' files.
namespace experiment_routes {

using nlohmann::json;

// result.json files are read up to this size for a curve (a longer one shows its beginning).
constexpr std::streamsize kMaxResultFileBytes = 64 << 20;
// Points of a curve sent to the page (CurveFromResultLines keeps every k-th row beyond).
constexpr size_t kMaxCurvePoints = 2000;

// The trial object's results file, read whole (up to kMaxResultFileBytes).
Result<std::string> ReadResultFile(const json& trial) {
  const std::string dir = trial.value("dir", std::string());
  if (dir.empty()) return Status::NotFound("the trial names no results folder");
  const std::string path = dir + "/result.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string();  // no result yet
  // Its size now (the writer may append meanwhile): a buffer of the limit would cost a 64 MiB
  // fill per curve.
  in.seekg(0, std::ios::end);
  const std::streamsize size = std::min<std::streamsize>(in.tellg(), kMaxResultFileBytes);
  in.seekg(0, std::ios::beg);
  std::string text(size_t(std::max<std::streamsize>(size, 0)), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  return text;
}

// The trial table's query from the request's parameters (unchecked).
TrialQuery QueryOf(const httplib::Request& req) {
  TrialQuery q;
  q.status = req.get_param_value("status");
  q.sort = req.get_param_value("sort");
  q.offset = IntParam(req, "offset", 0);
  q.limit = IntParam(req, "limit", q.limit);
  return q;
}

}  // namespace experiment_routes

using nlohmann::json;

void ExperimentRoutes::AddTo(Router& router) {
  router.Page("/", "index.html");
  router.Page(R"(/experiments/([^/]+))", "experiment.html");
  router.Get(R"(/static/([A-Za-z0-9_.-]+))",
             Router::Bind(this, &ExperimentRoutes::ServeStaticFile));
  router.Get("/api/experiments", Router::Bind(this, &ExperimentRoutes::ServeExperiments));
  router.Get(R"(/api/experiments/([^/]+))", Router::Bind(this, &ExperimentRoutes::ServeExperiment));
  router.Get(R"(/api/experiments/([^/]+)/trials)",
             Router::Bind(this, &ExperimentRoutes::ServeTrials));
  router.Get(R"(/api/experiments/([^/]+)/trials/([^/]+)/curve)",
             Router::Bind(this, &ExperimentRoutes::ServeCurve));
  router.Get(R"(/api/experiments/([^/]+)/pareto)",
             Router::Bind(this, &ExperimentRoutes::ServePareto));
}

void ExperimentRoutes::ServeStaticFile(const httplib::Request& req, httplib::Response& res) {
  SendAsset(res, req.matches[1].str());
}

void ExperimentRoutes::ServeExperiments(const httplib::Request&, httplib::Response& res) {
  auto listed = control_.Call(proto::ListExperiments{});
  if (!listed.ok()) return SendError(res, listed.status());
  json rows = json::array();
  for (const json& row : *listed) rows.push_back(ShownExperimentRow(row));
  SendJson(res, rows);
}

json ExperimentRoutes::ShownExperimentRow(const json& row) {
  const std::string journal = row.value("journal", std::string());
  // Experiments in the scheduler's memory (they have a weight) change: asked each time. The
  // others were read from their journals: their summary is kept while the row is the same.
  const bool live = row.contains("weight");
  json summary;
  if (!live) {
    std::lock_guard<std::mutex> lock(summaries_mu_);
    auto it = journal_summaries_.find(journal);
    if (it != journal_summaries_.end() && it->second.first == row) summary = it->second.second;
  }
  if (summary.is_null()) {
    proto::GetExperiment get;
    get.experiment = journal;
    auto got = control_.Call(get);
    if (got.ok()) {
      summary = std::move(*got);
      if (!live) {
        std::lock_guard<std::mutex> lock(summaries_mu_);
        journal_summaries_[journal] = {row, summary};
      }
    }
  }
  json shown = ExperimentRow(row, summary);
  shown["progress"] = Progress(row, summary);
  return shown;
}

void ExperimentRoutes::ServeExperiment(const httplib::Request& req, httplib::Response& res) {
  proto::GetExperiment get;
  get.experiment = req.matches[1].str();
  auto summary = control_.Call(get);
  if (!summary.ok()) return SendError(res, summary.status());
  if (summary->contains("best") && (*summary)["best"].is_object()) {
    (*summary)["best"] = TrialRow((*summary)["best"]);
  }
  SendJson(res, *summary);
}

void ExperimentRoutes::ServePareto(const httplib::Request& req, httplib::Response& res) {
  proto::GetExperiment get;
  get.experiment = req.matches[1].str();
  auto summary = control_.Call(get);
  if (!summary.ok()) return SendError(res, summary.status());
  json trials = json::array();
  if (summary->contains("pareto_front")) {  // one objective: nothing to draw, no trials asked
    proto::ListTrials list;
    list.experiment = summary->value("journal", get.experiment);
    auto listed = control_.Call(list);
    if (!listed.ok()) return SendError(res, listed.status());
    trials = std::move(*listed);
  }
  SendJson(res, ParetoView(*summary, trials));
}

void ExperimentRoutes::ServeTrials(const httplib::Request& req, httplib::Response& res) {
  auto query = CheckTrialQuery(experiment_routes::QueryOf(req));
  if (!query.ok()) return SendError(res, query.status());
  const std::string experiment = req.matches[1].str();
  proto::GetExperiment get;
  get.experiment = experiment;
  auto summary = control_.Call(get);
  if (!summary.ok()) return SendError(res, summary.status());
  const std::string metric = summary->value("metric", std::string());
  proto::ListTrials list;
  list.experiment = summary->value("journal", experiment);
  list.status = query->status;
  // The control socket sorts and cuts the page itself: only its rows move.
  list.sort = query->sort;
  list.offset = query->offset;
  list.limit = query->limit;
  auto trials = control_.Call(list);
  if (!trials.ok()) return SendError(res, trials.status());
  const json& counts = summary->value("counts", json::object());
  const int64_t total = query->status.empty() ? summary->value("created", int64_t(0))
                                              : counts.value(query->status, int64_t(0));
  json page = PassThroughPage(*trials, total, *query);
  page["metric"] = metric;
  page["mode"] = summary->value("mode", std::string());
  page["experiment"] = summary->value("name", experiment);
  page["journal"] = list.experiment;
  SendJson(res, page);
}

void ExperimentRoutes::ServeCurve(const httplib::Request& req, httplib::Response& res) {
  proto::ShowTrial show;
  show.experiment = req.matches[1].str();
  show.trial_id = req.matches[2].str();
  auto trial = control_.Call(show);
  if (!trial.ok()) return SendError(res, trial.status());
  auto text = experiment_routes::ReadResultFile(*trial);
  if (!text.ok()) return SendError(res, text.status());
  json curve = CurveFromResultLines(*text, experiment_routes::kMaxCurvePoints);
  curve["trial_id"] = show.trial_id;
  curve["status"] = trial->value("status", std::string());
  SendJson(res, curve);
}

}  // namespace tunebus::dashboard
