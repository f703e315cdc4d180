#include "services/scheduler/dashboard/routes/analysis_routes.hpp"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "proto/control.hpp"
#include "services/scheduler/dashboard/views/analysis.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

struct AnalysisCache {
  /// The columns' answer as computed: shared by the requests that get it.
  using Body = Result<std::shared_ptr<const json>>;
  /// What a kept answer was computed for.
  struct Key {
    std::string journal;
    std::string signature;           // the summary's part that changes with the trials
    bool finished = false;           // the experiment has ended: its answer never changes
    std::optional<uint64_t> events;  // the feed's sequence, when a page listens
  };
  struct Entry {
    std::string signature;
    std::optional<uint64_t> events;  // the feed's sequence then, when a page listened
    std::chrono::steady_clock::time_point at;
    Body body = Status::Unavailable("not computed yet");
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

  /// The answer for `key`: the kept one if it still holds, else the one of the next
  /// computation to start (this request's own `compute()`, or one it waits for), with
  /// "cached" and "compute_ms". `compute` runs without `mu` held.
  Result<json> Answer(const Key& key, const std::function<Body()>& compute) {
    std::unique_lock<std::mutex> lock(mu);
    Entry& e = At(key.journal);
    const auto arrived = std::chrono::steady_clock::now();
    if (e.done > 0 && e.body.ok() && e.signature == key.signature &&
        (key.finished || (key.events && e.events == key.events) ||
         (!key.events && arrived - e.at < kMaxAge))) {
      return Copy(e, lock, true);
    }
    const uint64_t wanted = e.started + 1;  // the first computation to start after now
    ++e.waiting;
    computed.wait(lock, [&] { return e.done >= wanted || !e.computing; });
    --e.waiting;
    if (e.done >= wanted) return Copy(e, lock, false);  // shared with the one that computed it
    e.computing = true;
    const uint64_t number = ++e.started;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Body body = compute();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    e.signature = key.signature;
    e.events = key.events;
    e.at = start;
    e.body = std::move(body);
    e.compute_ms = ms;
    e.computing = false;
    e.done = number;
    computed.notify_all();
    return Copy(e, lock, false);
  }

 private:
  /// `e`'s kept answer, copied after releasing `lock` (held on entry).
  static Result<json> Copy(const Entry& e, std::unique_lock<std::mutex>& lock, bool cached) {
    const Body kept = e.body;
    const double ms = e.compute_ms;
    lock.unlock();
    if (!kept.ok()) return kept.status();
    json body = **kept;
    body["cached"] = cached;
    body["compute_ms"] = ms;
    return body;
  }

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

// Named (not anonymous): the unity build compiles this file with the other routes' files.
namespace analysis_routes {

std::string Signature(const json& summary) {
  json best = summary.value("best", json());
  return json{{"counts", summary.value("counts", json())},
              {"created", summary.value("created", json())},
              {"status", summary.value("status", json())},
              {"best", best.is_object() ? best.value("last_result", json()) : json()}}
      .dump();
}

}  // namespace analysis_routes

AnalysisRoutes::AnalysisRoutes(ControlPool& control, EventRoutes& events)
    : control_(control), events_(events), cache_(std::make_unique<AnalysisCache>()) {}

AnalysisRoutes::~AnalysisRoutes() = default;

void AnalysisRoutes::AddTo(Router& router) {
  router.Get(R"(/api/experiments/([^/]+)/analysis)",
             Router::Bind(this, &AnalysisRoutes::ServeAnalysis));
  router.Get(R"(/api/experiments/([^/]+)/importance)",
             Router::Bind(this, &AnalysisRoutes::ServeImportance));
  router.Get(R"(/api/experiments/([^/]+)/searcher)",
             Router::Bind(this, &AnalysisRoutes::ServeSearcher));
  router.Get(R"(/api/experiments/([^/]+)/decisions)",
             Router::Bind(this, &AnalysisRoutes::ServeDecisions));
}

Result<std::pair<json, json>> AnalysisRoutes::Analysis(const std::string& name) {
  proto::GetExperiment get;
  get.experiment = name;
  auto summary = control_.Call(get);
  if (!summary.ok()) return summary.status();
  AnalysisCache::Key key;
  key.journal = summary->value("journal", name);
  key.signature = analysis_routes::Signature(*summary);
  key.finished = summary->value("finished", false);
  key.events = events_.Sequence();
  const std::string metric = summary->value("metric", std::string());
  auto body = cache_->Answer(key, [&]() -> AnalysisCache::Body {
    proto::ListTrials list;
    list.experiment = key.journal;
    auto trials = control_.Call(list);
    if (!trials.ok()) return trials.status();
    json columns = AnalysisColumns(*trials, metric);
    columns["importance"] = ImportanceJson(columns);
    return std::make_shared<const json>(std::move(columns));
  });
  if (!body.ok()) return body.status();
  return std::make_pair(std::move(*summary), std::move(*body));
}

void AnalysisRoutes::ServeAnalysis(const httplib::Request& req, httplib::Response& res) {
  auto got = Analysis(req.matches[1].str());
  if (!got.ok()) return SendError(res, got.status());
  auto& [summary, body] = *got;
  body["experiment"] = summary.value("name", std::string());
  body["journal"] = summary.value("journal", std::string());
  body["metric"] = summary.value("metric", std::string());
  body["mode"] = summary.value("mode", std::string());
  body["searcher"] = SearcherPhase(summary);
  SendJson(res, body);
}

void AnalysisRoutes::ServeImportance(const httplib::Request& req, httplib::Response& res) {
  auto got = Analysis(req.matches[1].str());
  if (!got.ok()) return SendError(res, got.status());
  json body = got->second["importance"];
  body["metric"] = got->first.value("metric", std::string());
  SendJson(res, body);
}

void AnalysisRoutes::ServeSearcher(const httplib::Request& req, httplib::Response& res) {
  proto::GetExperiment get;
  get.experiment = req.matches[1].str();
  auto summary = control_.Call(get);
  if (!summary.ok()) return SendError(res, summary.status());
  SendJson(res, SearcherPhase(*summary));
}

void AnalysisRoutes::ServeDecisions(const httplib::Request& req, httplib::Response& res) {
  proto::ListSchedulerDecisions list;
  list.experiment = req.matches[1].str();
  auto decisions = control_.Call(list);
  if (!decisions.ok()) return SendError(res, decisions.status());
  SendJson(res, *decisions);
}

}  // namespace tunebus::dashboard
