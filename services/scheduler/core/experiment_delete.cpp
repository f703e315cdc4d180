// `tunectl delete NAME [--keep-results]`: a finished experiment's journal and checkpoints leave
// the checkpoint-store (proto::ExperimentDelete: one synced write, then a compaction that takes
// the space off the disk) and its results folder is removed. An unfinished one is refused.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string>
#include <vector>

#include "proto/control.hpp"
#include "proto/store.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/scheduler.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using nlohmann::json;

Status Scheduler::HandleDeleteExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::DeleteExperiment>();
  if (!msg.ok()) return msg.status();
  const std::string& name = msg->experiment;
  if (name.empty()) return Status::InvalidArgument("name the experiment to delete");
  if (claimed_names_.contains(name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed", name));
  }
  for (const Experiment* e : Unfinished()) {
    if (e->name() == name || e->journal_name() == name) {
      return Status::FailedPrecondition(
          fmt::format("experiment {} is not finished (journal {}); stop it first: tunectl "
                      "stop-experiment -e {}",
                      e->name(), e->journal_name(), e->journal_name()));
    }
  }
  FindExperiment(name, [this, route = in.route, id = d.id(), type = d.type(),
                        keep = msg->keep_results](Result<Experiment*> found) {
    if (!found.ok()) return ReplyError(ReplyTo(route), id, type, found.status());
    Experiment* e = *found;
    if (e->read_only()) return DeleteFinished(route, id, *e, e->journal_name(), keep);
    if (e->phase() != Experiment::Phase::kEnded) {
      return ReplyError(ReplyTo(route), id, type,
                        Status::FailedPrecondition(fmt::format(
                            "experiment {} is not finished; stop it first", e->journal_name())));
    }
    // Its experiment_ended record (and any late one) reaches the store before the delete: a
    // live experiment stays allocated (retired_), so `e` outlives the wait.
    e->recorder().CompleteEnd(true);
    e->journal().AfterDurable(
        [this, route, id, e, keep] { DeleteFinished(route, id, *e, e->journal_name(), keep); });
  });
  return Status::Ok();
}

void Scheduler::DeleteFinished(const std::vector<std::string>& route, uint64_t id,
                               const Experiment& e, const std::string& journal, bool keep_results) {
  proto::ExperimentDelete request;
  request.experiment = journal;
  // Values only: `e` may leave the read-only cache before the store answers.
  store_->Request(request, [this, route, id, journal, name = e.name(), dir = e.experiment_dir(),
                            keep_results](Result<proto::Decoded> reply) {
    const std::string type = proto::DeleteExperiment::kType;
    auto ack = reply.ok() ? reply->As<proto::ExperimentDeleteAck>()
                          : Result<proto::ExperimentDeleteAck>(reply.status());
    if (!ack.ok()) {
      return ReplyError(
          ReplyTo(route), id, type,
          Status(ack.status().code(), fmt::format("checkpoint-store: {}", ack.status().message())));
    }
    Forget(journal);
    bool removed = false;
    std::error_code ec;
    if (!keep_results && fs::exists(dir, ec)) {
      fs::remove_all(dir, ec);
      removed = !ec;
      if (ec)
        spdlog::warn("Experiment {}: cannot remove its results {}: {}", journal, dir, ec.message());
    }
    spdlog::info(
        "Deleted experiment {}: {} journal records, {} checkpoints; the store's live data {} -> {} "
        "bytes; results {} {}",
        journal, ack->records, ack->checkpoints, ack->bytes_before, ack->bytes_after, dir,
        removed ? "removed" : "kept");
    ReplyRead(ReplyTo(route), id,
              {{"name", name},
               {"journal", journal},
               {"records", ack->records},
               {"checkpoints", ack->checkpoints},
               {"store_bytes_before", ack->bytes_before},
               {"store_bytes_after", ack->bytes_after},
               {"compaction_s", ack->compaction_s},
               {"results_dir", dir},
               {"results_removed", removed}});
  });
}

void Scheduler::Forget(const std::string& journal) {
  for (auto it = experiments_.begin(); it != experiments_.end();) {
    if ((*it)->journal_name() != journal) {
      ++it;
      continue;
    }
    if (auto r = by_experiment_id_.find((*it)->experiment_id());
        r != by_experiment_id_.end() && r->second == it->get()) {
      by_experiment_id_.erase(r);
    }
    retired_.push_back(std::move(*it));
    it = experiments_.erase(it);
  }
  if (auto it = journaled_.find(journal); it != journaled_.end()) {
    retired_.push_back(std::move(it->second));
    journaled_.erase(it);
  }
  lsx_rows_.erase(journal);
  journals_->Forget(journal);
}

}  // namespace tunebus
