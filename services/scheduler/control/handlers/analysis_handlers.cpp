// AnalysisHandlers: list_results, list_scheduler_decisions and list_workers
// (analysis_handlers.hpp).
#include "services/scheduler/control/handlers/analysis_handlers.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "libs/core/json_text.hpp"
#include "proto/control.hpp"
#include "proto/resources.hpp"
#include "services/scheduler/control/result_page.hpp"
#include "services/scheduler/core/experiment.hpp"

namespace tunebus {

using nlohmann::json;

Status AnalysisHandlers::HandleListResults(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ListResults>();
  if (!msg.ok()) return msg.status();
  if (msg->trial_id.empty()) return Status::InvalidArgument("name the trial (trial_id)");
  if (msg->offset < 0) {
    return Status::InvalidArgument(fmt::format("offset must be >= 0, got {}", msg->offset));
  }
  if (msg->limit < 0 || msg->limit > proto::kMaxResultsPageRows) {
    return Status::InvalidArgument(fmt::format("limit must be 0..{} (0: {}), got {}",
                                               proto::kMaxResultsPageRows,
                                               proto::kMaxResultsPageRows, msg->limit));
  }
  control_.AnswerReadText(
      in, d, msg->experiment, [msg = *msg](Result<Experiment*> found) -> Result<std::string> {
        if (!found.ok()) return found.status();
        const Experiment& e = **found;
        const Trial* t = e.runner().FindTrial(msg.trial_id);
        if (t == nullptr) {
          return Status::NotFound(
              fmt::format("no trial {} in experiment {}", msg.trial_id, e.journal_name()));
        }
        const int64_t limit = msg.limit > 0 ? msg.limit : proto::kMaxResultsPageRows;
        auto page = ReadResultRows(e.experiment_dir() + "/" + t->DirName() + "/result.json",
                                   msg.offset, limit, proto::kResultsPageBytes);
        if (!page.ok()) return page.status();
        std::string body;
        body.reserve(page->rows_json.size() + 256);
        {
          JsonObjectText o(body);
          o.String("experiment", e.journal_name());
          o.String("trial_id", t->trial_id);
          o.Int("offset", msg.offset);
          o.Int("total", page->total);
          if (msg.offset + page->rows < page->total) {
            o.Int("next_offset", msg.offset + page->rows);
          } else {
            o.Null("next_offset");
          }
          o.Key("results") += page->rows_json;
        }
        return body;
      });
  return Status::Ok();
}

Status AnalysisHandlers::HandleListSchedulerDecisions(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ListSchedulerDecisions>();
  if (!msg.ok()) return msg.status();
  control_.AnswerRead(in, d, msg->experiment, [](Result<Experiment*> found) -> Result<json> {
    if (!found.ok()) return found.status();
    const Experiment* e = *found;
    json body = e->runner().scheduler_decisions().ToJson();
    body["experiment"] = e->journal_name();
    body["scheduler"] = e->spec().scheduler;
    return body;
  });
  return Status::Ok();
}

Status AnalysisHandlers::HandleListWorkers(bus::Incoming& in, const proto::Decoded& d) {
  const uint64_t id = d.id();
  const std::string type = d.type();
  control_.parts().rm.Request(
      proto::GetClusterView{}, [this, route = in.route, id, type](Result<proto::Decoded> reply) {
        bus::Incoming back;
        back.route = route;
        auto view = reply.ok() ? reply->As<proto::ClusterView>()
                               : Result<proto::ClusterView>(reply.status());
        if (!view.ok()) return control_.ReplyError(back, id, type, view.status());
        json body = json::array();
        for (const auto& n : view->nodes) {
          auto cap = Resources::FromUnits(n.capacity);
          auto used = Resources::FromUnits(n.committed);
          if (!cap.ok() || !used.ok()) continue;
          Resources free = *cap;
          if (used->FitsIn(free)) free -= *used;
          body.push_back({{"worker_id", n.worker_id},
                          {"hostname", n.hostname},
                          {"alive", n.alive},
                          {"capacity", cap->ToAmounts()},
                          {"committed", used->ToAmounts()},
                          {"free", free.ToAmounts()},
                          {"trials", n.trials},
                          {"connected", control_.parts().workers.IsConnected(n.worker_id)}});
        }
        control_.ReplyRead(back, id, body);
      });
  return Status::Ok();
}

}  // namespace tunebus
