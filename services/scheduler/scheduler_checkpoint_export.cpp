// Scheduler control handler for `tunectl checkpoint export`: one chunk of a trial's stored
// checkpoint, fetched from the checkpoint-store, for the experiment the request names (a
// finished one too, read from its journal). The scheduler only relays: it checks the trial keeps
// the checkpoint, then asks the store for the chunk.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "proto/control.hpp"
#include "proto/store.hpp"
#include "services/scheduler/experiment.hpp"

namespace tunebus {

namespace {

// The trial's checkpoint `wanted`: "" = the newest; else its full id or the part after the
// trial's prefix ("00000020-a1"). Errors: FailedPrecondition when it has none, NotFound naming
// the ones it keeps.
Result<CheckpointRef> ChooseCheckpoint(const Trial& t, const std::string& wanted) {
  if (t.checkpoints.empty()) {
    return Status::FailedPrecondition(
        fmt::format("trial {} has no stored checkpoint (checkpoints are saved with checkpoint_freq "
                    "or checkpoint_at_end)",
                    t.trial_id));
  }
  if (wanted.empty()) return t.checkpoints.back();
  std::vector<std::string> kept;
  for (const CheckpointRef& c : t.checkpoints) {
    const std::string& id = c.checkpoint_id;
    if (id == wanted || (id.size() > wanted.size() && id.ends_with("/" + wanted))) return c;
    kept.push_back(id);
  }
  return Status::NotFound(fmt::format("trial {} keeps no checkpoint {}; it keeps {}", t.trial_id,
                                      wanted, fmt::join(kept, ", ")));
}

}  // namespace

void Scheduler::HandleFetchCheckpoint(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::FetchCheckpoint>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  auto e = FindExperiment(msg->experiment);
  if (!e.ok()) return ReplyError(in, d.id(), d.type(), e.status());
  const Trial* t = (*e)->runner->FindTrial(msg->trial_id);
  if (t == nullptr) {
    return ReplyError(in, d.id(), d.type(),
                      Status::NotFound(fmt::format("no trial {} in experiment {}", msg->trial_id,
                                                   (*e)->journal_name)));
  }
  auto checkpoint = ChooseCheckpoint(*t, msg->checkpoint_id);
  if (!checkpoint.ok()) return ReplyError(in, d.id(), d.type(), checkpoint.status());
  proto::CheckpointGet get;
  get.checkpoint_id = checkpoint->checkpoint_id;
  get.chunk_index = msg->chunk_index;
  proto::CheckpointChunk chunk;
  chunk.id = d.id();
  chunk.experiment = (*e)->journal_name;
  chunk.trial_id = t->trial_id;
  chunk.checkpoint_id = checkpoint->checkpoint_id;
  chunk.training_iteration = checkpoint->training_iteration;
  // Captures values only: a read-only experiment may leave the cache before the store answers.
  store_->Request(get, [this, route = in.route, type = d.type(),
                        chunk = std::move(chunk)](Result<proto::Decoded> reply) mutable {
    bus::Incoming back;
    back.route = route;
    auto got = reply.ok() ? reply->As<proto::CheckpointGetReply>()
                          : Result<proto::CheckpointGetReply>(reply.status());
    if (!got.ok()) {
      spdlog::warn("Checkpoint {} chunk {} was not fetched for export: {}", chunk.checkpoint_id,
                   chunk.chunk_index, got.status().ToString());
      return ReplyError(
          back, chunk.id, type,
          Status(got.status().code(), fmt::format("checkpoint-store: {}", got.status().message())));
    }
    chunk.chunk_index = got->chunk_index;
    chunk.num_chunks = got->num_chunks;
    chunk.data = std::move(got->data);
    bus::Reply(control_, back, proto::Encode(chunk));
  });
}

}  // namespace tunebus
