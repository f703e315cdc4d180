// WorkingDirHandlers: the working_dir uploads relayed to the checkpoint-store
// (working_dir_handlers.hpp).
#include "services/scheduler/control/handlers/working_dir_handlers.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "libs/core/sha256.hpp"
#include "proto/control.hpp"
#include "proto/store.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

Status CheckDigest(const std::string& digest) {
  if (IsSha256Hex(digest)) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("digest '{}' is not a SHA-256 (64 lowercase hex digits)", digest.substr(0, 80)));
}

Status FromStore(const Status& s) {
  return Status(s.code(), fmt::format("checkpoint-store: {}", s.message()));
}

}  // namespace

void StatWorkingDir(bus::RequestClient& store, const std::string& digest,
                    std::function<void(Result<std::optional<int64_t>>)> done) {
  proto::CheckpointList list;
  list.prefix = proto::WorkingDirBlobId(digest);
  store.Request(list, [id = list.prefix, done = std::move(done)](Result<proto::Decoded> reply) {
    auto listed = reply.ok() ? reply->As<proto::CheckpointListReply>()
                             : Result<proto::CheckpointListReply>(reply.status());
    if (!listed.ok()) return done(FromStore(listed.status()));
    for (const proto::CheckpointInfo& info : listed->checkpoints) {
      if (info.checkpoint_id == id) return done(std::optional<int64_t>(int64_t(info.size_bytes)));
    }
    done(std::optional<int64_t>());
  });
}

Status WorkingDirHandlers::HandleWorkingDirStat(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::WorkingDirStat>();
  if (!msg.ok()) return msg.status();
  if (Status s = CheckDigest(msg->digest); !s.ok()) return s;
  StatWorkingDir(control_.parts().store, msg->digest,
                 [this, route = in.route, id = d.id(), type = d.type(),
                  digest = msg->digest](Result<std::optional<int64_t>> size) {
                   bus::Incoming back;
                   back.route = route;
                   if (!size.ok()) return control_.ReplyError(back, id, type, size.status());
                   control_.ReplyRead(back, id,
                                      json{{"digest", digest},
                                           {"stored", size->has_value()},
                                           {"size_bytes", size->value_or(0)}});
                 });
  return Status::Ok();
}

Status WorkingDirHandlers::HandleWorkingDirPut(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::WorkingDirPut>();
  if (!msg.ok()) return msg.status();
  if (Status s = CheckDigest(msg->digest); !s.ok()) return s;
  if (msg->data.size() > proto::kCheckpointChunkBytes) {
    return Status::InvalidArgument(fmt::format("chunk is {} bytes, the limit is {}",
                                               msg->data.size(), proto::kCheckpointChunkBytes));
  }
  proto::CheckpointPut put;
  put.checkpoint_id = proto::WorkingDirBlobId(msg->digest);
  put.chunk_index = msg->chunk_index;
  put.data = std::move(msg->data);
  put.last = msg->last;
  if (msg->last) {
    put.metadata_json = json{{"kind", "working_dir"}}.dump();
    put.sha256 = msg->digest;  // the store checks what it commits
  }
  control_.parts().store.Request(
      put, [this, route = in.route, id = d.id(), type = d.type(), digest = msg->digest,
            chunk = msg->chunk_index, last = msg->last](Result<proto::Decoded> reply) {
        bus::Incoming back;
        back.route = route;
        auto ack = reply.ok() ? reply->As<proto::CheckpointPutAck>()
                              : Result<proto::CheckpointPutAck>(reply.status());
        if (!ack.ok()) {
          spdlog::warn("working_dir {} chunk {} was not stored: {}", digest.substr(0, 12), chunk,
                       ack.status().ToString());
          return control_.ReplyError(back, id, type, FromStore(ack.status()));
        }
        if (last)
          spdlog::info("Stored working_dir {} ({} chunks)", digest.substr(0, 12), chunk + 1);
        control_.ReplyRead(back, id,
                           json{{"digest", digest}, {"chunk_index", chunk}, {"stored", last}});
      });
  return Status::Ok();
}

}  // namespace tunebus
