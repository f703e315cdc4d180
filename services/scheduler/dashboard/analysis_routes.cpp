// DashboardServer::AddAnalysisRoutes: the JSON routes of the experiment page's analysis panels
// (docs/dashboard.md): the trials as columns with the importance, the searcher's phase and the
// trial scheduler's decisions.
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
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "proto/control.hpp"
#include "services/scheduler/dashboard/views/analysis.hpp"
#include "services/scheduler/dashboard/http.hpp"
#include "services/scheduler/dashboard/server.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

struct AnalysisCache {
  struct Entry {
    std::string signature;           // the summary's part that changes with the trials
    std::optional<uint64_t> events;  // the feed's sequence then, when a page listened
    std::chrono::steady_clock::time_point at;
    Result<std::shared_ptr<const json>> body = Status::Unavailable("not computed yet");
    double compute_ms = 0;
    bool computing = false;  // a computation is under way (one at a time)
    uint64_t started = 0;    // computations started; `body` is the answer of number `done`
    uint64_t done = 0;
    int waiting = 0;  // requests waiting for a computation: the entry is not evicted
  };
  static constexpr std::chrono::milliseconds kMaxAge{1000};
  static constexpr size_t kMaxEntries = 64;  // experiments kept (the oldest idle one leaves)
  std::mutex mu;
  std::condition_variable computed;      // an entry's computation ended
  std::map<std::string, Entry> entries;  // guarded by mu; by journal name

  /// The entry of `journal`, made room for.
  Entry& At(const std::string& journal) {
    if (entries.size() >= kMaxEntries && !entries.contains(journal)) {
      auto oldest = entries.end();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        const Entry& e = it->second;
        if (!e.computing && e.waiting == 0 &&
            (oldest == entries.end() || e.at < oldest->second.at)) {
          oldest = it;
        }
      }
      if (oldest != entries.end()) entries.erase(oldest);
    }
    return entries[journal];
  }
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
    AnalysisCache& cache = *analysis_cache_;
    std::unique_lock<std::mutex> lock(cache.mu);
    AnalysisCache::Entry& e = cache.At(journal);
    // Called with `lock` held; copies the kept answer after releasing it.
    auto answer = [&](bool cached) -> Result<std::pair<json, json>> {
      const Result<std::shared_ptr<const json>> kept = e.body;
      const double ms = e.compute_ms;
      lock.unlock();
      if (!kept.ok()) return kept.status();
      json body = **kept;
      body["cached"] = cached;
      body["compute_ms"] = ms;
      return std::make_pair(std::move(*summary), std::move(body));
    };
    const auto arrived = std::chrono::steady_clock::now();
    if (e.done > 0 && e.body.ok() && e.signature == signature &&
        (finished || (events && e.events == events) ||
         (!events && arrived - e.at < AnalysisCache::kMaxAge))) {
      return answer(true);
    }
    const uint64_t wanted = e.started + 1;  // the first computation to start after now
    ++e.waiting;
    cache.computed.wait(lock, [&] { return e.done >= wanted || !e.computing; });
    --e.waiting;
    if (e.done >= wanted) return answer(false);  // shared with the request that computed it
    e.computing = true;
    const uint64_t number = ++e.started;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    proto::ListTrials list;
    list.experiment = journal;
    auto trials = Call(list);
    Result<std::shared_ptr<const json>> body =
        trials.ok() ? Result<std::shared_ptr<const json>>(nullptr) : trials.status();
    if (trials.ok()) {
      json columns = AnalysisColumns(*trials, summary->value("metric", std::string()));
      columns["importance"] = ImportanceJson(columns);
      body = std::make_shared<const json>(std::move(columns));
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    e.signature = signature;
    e.events = events;
    e.at = start;
    e.body = std::move(body);
    e.compute_ms = ms;
    e.computing = false;
    e.done = number;
    cache.computed.notify_all();
    return answer(false);
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
