// DashboardServer::AddAnalysisRoutes: the JSON routes of the experiment page's analysis panels
// (docs/dashboard.md): the trials as columns with the importance, the searcher's phase and the
// trial scheduler's decisions.
//
// The columns of an experiment are computed from one ListTrials of every trial and kept per
// experiment (journal name) with the key they were computed for: the summary's counts, created
// trials, status and best trial, and the relay's event sequence (frames that entered the
// /events feed) while a page listens. A request that finds the same key gets the kept answer;
// without a listening page (no event sequence) a kept answer serves for kMaxAge; a finished
// experiment's answer is kept while its summary is the same. So a 10,000-trial experiment costs
// the scheduler one ListTrials per change, at most once per page refresh (the page asks at most
// once a second), never one request per trial.
#include <httplib.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "proto/control.hpp"
#include "services/scheduler/dashboard_analysis.hpp"
#include "services/scheduler/dashboard_http.hpp"
#include "services/scheduler/dashboard_server.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

struct AnalysisCache {
  struct Entry {
    std::string signature;           // the summary's part that changes with the trials
    std::optional<uint64_t> events;  // the feed's sequence then, when a page listened
    std::chrono::steady_clock::time_point at;
    std::shared_ptr<const json> body;  // AnalysisColumns + "importance"
    double compute_ms = 0;
  };
  static constexpr std::chrono::milliseconds kMaxAge{1000};
  static constexpr size_t kMaxEntries = 64;  // experiments kept (the oldest leaves)
  std::mutex mu;
  std::map<std::string, Entry> entries;  // guarded by mu; by journal name
};

namespace {

std::string Signature(const json& summary) {
  json best = summary.value("best", json());
  return json{{"counts", summary.value("counts", json())},
              {"created", summary.value("created", json())},
              {"status", summary.value("status", json())},
              {"best", best.is_object() ? best.value("last_result", json()) : json()}}
      .dump();
}

}  // namespace

void DashboardServer::AddAnalysisRoutes() {
  httplib::Server& s = *server_;
  analysis_cache_ = std::make_shared<AnalysisCache>();

  // The summary of the experiment `name` and its columns (kept or computed now), with
  // "cached" and "compute_ms".
  auto analysis = [this](const std::string& name) -> Result<std::pair<json, json>> {
    proto::GetExperiment get;
    get.experiment = name;
    auto summary = Call(get);
    if (!summary.ok()) return summary.status();
    const std::string journal = summary->value("journal", name);
    const std::string signature = Signature(*summary);
    const bool finished = summary->value("finished", false);
    std::optional<uint64_t> events;
    {
      std::lock_guard<std::mutex> lock(feed_mu_);
      if (subscribed_) events = feed_first_ + feed_.size();
    }
    const auto now = std::chrono::steady_clock::now();
    AnalysisCache& cache = *analysis_cache_;
    {
      std::lock_guard<std::mutex> lock(cache.mu);
      auto it = cache.entries.find(journal);
      if (it != cache.entries.end() && it->second.signature == signature &&
          (finished || (events && it->second.events == events) ||
           (!events && now - it->second.at < AnalysisCache::kMaxAge))) {
        json body = *it->second.body;
        body["cached"] = true;
        body["compute_ms"] = it->second.compute_ms;
        return std::make_pair(std::move(*summary), std::move(body));
      }
    }
    proto::ListTrials list;
    list.experiment = journal;
    auto trials = Call(list);
    if (!trials.ok()) return trials.status();
    const std::string metric = summary->value("metric", std::string());
    json body = AnalysisColumns(*trials, metric);
    body["importance"] = ImportanceJson(body);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - now).count();
    {
      std::lock_guard<std::mutex> lock(cache.mu);
      if (cache.entries.size() >= AnalysisCache::kMaxEntries && !cache.entries.contains(journal)) {
        auto oldest = cache.entries.begin();
        for (auto it = cache.entries.begin(); it != cache.entries.end(); ++it) {
          if (it->second.at < oldest->second.at) oldest = it;
        }
        cache.entries.erase(oldest);
      }
      cache.entries[journal] = {signature, events, now, std::make_shared<const json>(body), ms};
    }
    body["cached"] = false;
    body["compute_ms"] = ms;
    return std::make_pair(std::move(*summary), std::move(body));
  };

  s.Get(R"(/api/experiments/([^/]+)/analysis)",
        [analysis](const httplib::Request& req, httplib::Response& res) {
          auto got = analysis(req.matches[1].str());
          if (!got.ok()) return SendError(res, got.status());
          auto& [summary, body] = *got;
          body["experiment"] = summary.value("name", std::string());
          body["journal"] = summary.value("journal", std::string());
          body["metric"] = summary.value("metric", std::string());
          body["mode"] = summary.value("mode", std::string());
          body["searcher"] = SearcherPhase(summary);
          SendJson(res, body);
        });

  s.Get(R"(/api/experiments/([^/]+)/importance)",
        [analysis](const httplib::Request& req, httplib::Response& res) {
          auto got = analysis(req.matches[1].str());
          if (!got.ok()) return SendError(res, got.status());
          json body = got->second["importance"];
          body["metric"] = got->first.value("metric", std::string());
          SendJson(res, body);
        });

  s.Get(R"(/api/experiments/([^/]+)/searcher)",
        [this](const httplib::Request& req, httplib::Response& res) {
          proto::GetExperiment get;
          get.experiment = req.matches[1].str();
          auto summary = Call(get);
          if (!summary.ok()) return SendError(res, summary.status());
          SendJson(res, SearcherPhase(*summary));
        });

  s.Get(R"(/api/experiments/([^/]+)/decisions)",
        [this](const httplib::Request& req, httplib::Response& res) {
          proto::ListSchedulerDecisions list;
          list.experiment = req.matches[1].str();
          auto decisions = Call(list);
          if (!decisions.ok()) return SendError(res, decisions.status());
          SendJson(res, *decisions);
        });
}

}  // namespace tunebus::dashboard
