// WhatIfHandlers: whatif (whatif_handlers.hpp).
#include "services/scheduler/control/handlers/whatif_handlers.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <utility>

#include "libs/tune/objective_rules.hpp"
#include "libs/tune/pareto.hpp"
#include "libs/tune/whatif.hpp"
#include "libs/tune/whatif_sweep.hpp"
#include "proto/control.hpp"
#include "services/scheduler/control/whatif_journal.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"

namespace tunebus {

using nlohmann::json;

/// One request: what step 1 gathered for the thread, and the answer it leaves.
struct WhatIfHandlers::Replay {
  std::vector<std::string> route;  // the reply's address
  uint64_t id = 0;
  std::string type;
  // Step 1's (the loop's) until the thread starts; then the thread's until `done`.
  std::string experiment, journal, metric, mode;
  WhatIfScheduler scheduler;
  json sweep;  // null: one replay
  uint64_t seed = 0;
  std::vector<std::string> records;  // the journal's stored records, in order
  double read_ms = 0;
  // The thread's until `done`, then the loop's.
  Result<json> answer = Status::Internal("not replayed");
  std::thread thread;
  std::atomic<bool> done{false};
  std::atomic<bool> cancel{false};
};

namespace {

// A request's JSON field: null for "", else the document. Errors: InvalidArgument naming it.
Result<json> ParseField(const std::string& text, const char* field) {
  if (text.empty()) return json();
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return Status::InvalidArgument(fmt::format("{}: not JSON: {}", field, text));
  }
  return doc;
}

// The result keys a replay of `scheduler` (at every setting of `sweep`) reads besides the
// auto-filled ones: the experiment's metric, and the time_attr and metric it names.
std::vector<std::string> KeysRead(const std::string& metric, const WhatIfScheduler& scheduler,
                                  const json& sweep) {
  std::vector<std::string> keys = {metric};
  for (const char* param : {"time_attr", "metric"}) {
    if (const auto v = scheduler.params.find(param);
        v != scheduler.params.end() && v->is_string()) {
      keys.push_back(v->get<std::string>());
    }
    if (!sweep.is_object() || !sweep.contains(param) || !sweep[param].is_array()) continue;
    for (const json& v : sweep[param]) {
      if (v.is_string()) keys.push_back(v.get<std::string>());
    }
  }
  return keys;
}

}  // namespace

WhatIfHandlers::WhatIfHandlers(ControlContext& control) : control_(control) {}

WhatIfHandlers::~WhatIfHandlers() {
  if (poll_) control_.parts().store.loop().CancelTimer(*poll_);
  for (auto& r : replays_) r->cancel = true;
  for (auto& r : replays_) {
    if (r->thread.joinable()) r->thread.join();
  }
}

Status WhatIfHandlers::HandleWhatIf(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::WhatIf>();
  if (!msg.ok()) return msg.status();
  Result<json> spec = ParseField(msg->scheduler_json, "scheduler_json");
  if (!spec.ok()) return spec.status();
  Result<WhatIfScheduler> scheduler =
      ParseWhatIfScheduler(spec->is_null() ? json::object() : *spec);
  if (!scheduler.ok()) return scheduler.status();
  Result<json> sweep = ParseField(msg->sweep_json, "sweep_json");
  if (!sweep.ok()) return sweep.status();
  if (!sweep->is_null()) {
    if (auto settings = ExpandSweep(scheduler->params, *sweep); !settings.ok()) {
      return settings.status();
    }
  }
  if (replays_.size() >= proto::kMaxWhatIfReplays) {
    return Status::ResourceExhausted(
        fmt::format("{} whatif replays are under way (the most at once); try again when one ends",
                    replays_.size()));
  }
  auto replay = std::make_unique<Replay>();
  replay->route = in.route;
  replay->id = d.id();
  replay->type = d.type();
  replay->scheduler = std::move(*scheduler);
  replay->sweep = std::move(*sweep);
  replay->seed = msg->seed;
  Replay* r = replay.get();
  replays_.push_back(std::move(replay));
  const auto fail = [this, r](const Status& s) {
    control_.ReplyError(ControlContext::ReplyTo(r->route), r->id, r->type, s);
    std::erase_if(replays_, [r](const std::unique_ptr<Replay>& p) { return p.get() == r; });
  };
  const auto asked = std::chrono::steady_clock::now();
  control_.experiments().FindExperiment(msg->experiment, [this, r, fail,
                                                          asked](Result<Experiment*> found) {
    if (!found.ok()) return fail(found.status());
    const Experiment& e = **found;
    const bool finished = e.runner().IsFinished() && (e.read_only() || e.recorder().end_durable());
    if (!finished) {
      return fail(Status::FailedPrecondition(fmt::format(
          "experiment {} is still running: whatif replays a finished experiment's record; "
          "wait for it to end, or stop it (tunectl stop-experiment -e {})",
          e.journal_name(), e.name())));
    }
    r->experiment = e.name();
    r->journal = e.journal_name();
    r->metric = e.runner().options().metric;
    r->mode = e.runner().options().mode;
    // Several objectives: the replay is by the one the scheduler names (Ray Tune's rule for a
    // trial scheduler of a multi-objective experiment), also what "best" means in its report.
    const std::vector<Objective>& objectives = e.runner().options().objectives;
    if (r->metric.empty() && !objectives.empty()) {
      const auto named = r->scheduler.params.find("metric");
      for (const Objective& o : objectives) {
        if (named != r->scheduler.params.end() && *named == o.metric) {
          r->metric = o.metric;
          r->mode = o.mode;
        }
      }
      if (r->metric.empty()) {
        return fail(Status::InvalidArgument(fmt::format(
            "experiment {} has several objectives ({}): name the one to replay by in the "
            "scheduler's metric, e.g. {{type: asha, metric: {}}}",
            r->journal, DescribeObjectives(objectives), objectives.front().metric)));
      }
    }
    if (r->metric.empty()) {
      return fail(Status::FailedPrecondition(fmt::format(
          "experiment {} has no metric: a replay compares trials by the experiment's metric",
          r->journal)));
    }
    // Every setting builds before any record is read.
    std::vector<WhatIfScheduler> settings = {r->scheduler};
    if (!r->sweep.is_null()) {
      settings.clear();
      Result<std::vector<json>> grid = ExpandSweep(r->scheduler.params, r->sweep);
      if (!grid.ok()) return fail(grid.status());
      for (json& params : *grid) settings.push_back({r->scheduler.type, std::move(params)});
    }
    for (const WhatIfScheduler& s : settings) {
      if (Status st = CheckWhatIfScheduler(s, r->metric, r->mode); !st.ok()) {
        return fail(r->sweep.is_null()
                        ? st
                        : Status(st.code(), fmt::format("sweep setting {}: {}", s.params.dump(),
                                                        st.message())));
      }
    }
    const uint64_t last_seq = e.read_only() ? e.journal_base() : e.journal().store_seq();
    control_.experiments().journals().ReadStored(
        r->journal, 1, last_seq, [this, r, fail, asked](Result<std::vector<std::string>> records) {
          if (!records.ok()) return fail(records.status());
          r->records = std::move(*records);
          r->read_ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked)
                  .count();
          r->thread = std::thread([r] { Run(*r); });
          if (!poll_) {
            poll_ = control_.parts().store.loop().AddPeriodic(kPollInterval, [this] { Poll(); });
          }
        });
  });
  return Status::Ok();
}

void WhatIfHandlers::Run(Replay& r) {
  if (setpriority(PRIO_PROCESS, id_t(gettid()), kReplayNice) != 0) {
    spdlog::debug("whatif: cannot lower the replay thread's priority");
  }
  const auto start = std::chrono::steady_clock::now();
  WhatIfJournal fold(KeysRead(r.metric, r.scheduler, r.sweep));
  int64_t records = 0;
  for (const std::string& stored : r.records) {
    // A torn or corrupt record ends the usable journal, as in replay.
    if (Status s = fold.ApplyStored(stored); !s.ok()) {
      spdlog::error("whatif {}: journal record {} ({}); replaying the records before it", r.journal,
                    records + 1, s.message());
      break;
    }
    ++records;
  }
  r.records = {};
  RecordedExperiment experiment = fold.Take(r.metric, r.mode);
  const auto folded = std::chrono::steady_clock::now();
  Result<json> body = Status::Internal("not replayed");
  if (r.sweep.is_null()) {
    Result<WhatIfReport> report =
        ReplayExperiment(experiment, r.scheduler.type, r.scheduler.params, r.seed);
    body = report.ok() ? Result<json>(report->ToJson()) : Result<json>(report.status());
  } else {
    body =
        SweepExperiment(experiment, r.scheduler, r.sweep, r.seed, [&r] { return r.cancel.load(); });
  }
  if (body.ok()) {
    (*body)["experiment"] = r.experiment;
    (*body)["journal"] = r.journal;
    (*body)["record"] = {
        {"journal_records", records},
        {"results", int64_t(experiment.arrival.size())},
        {"read_ms", r.read_ms},
        {"decode_ms", std::chrono::duration<double, std::milli>(folded - start).count()},
        {"replay_ms",
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - folded)
             .count()}};
  }
  r.answer = std::move(body);
  r.done = true;
}

void WhatIfHandlers::Poll() {
  for (auto it = replays_.begin(); it != replays_.end();) {
    Replay& r = **it;
    if (!r.done) {
      ++it;
      continue;
    }
    r.thread.join();
    if (r.answer.ok()) {
      control_.ReplyRead(ControlContext::ReplyTo(r.route), r.id, *r.answer);
    } else {
      control_.ReplyError(ControlContext::ReplyTo(r.route), r.id, r.type, r.answer.status());
    }
    it = replays_.erase(it);
  }
  // Replays still reading their journal start the poll again when their thread starts.
  bool replaying = false;
  for (const auto& r : replays_) replaying = replaying || r->thread.joinable();
  if (!replaying) {
    control_.parts().store.loop().CancelTimer(*poll_);
    poll_.reset();
  }
}

}  // namespace tunebus
