#include "services/checkpoint-store/checkpoint_store.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string_view>
#include <utility>

#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {

namespace {

// Peer-supplied strings echoed into logs and error replies are cut to this many bytes.
constexpr size_t kEchoBytes = 64;

std::string Truncated(std::string_view s) {
  if (s.size() <= kEchoBytes) return std::string(s);
  return fmt::format("{}…({} bytes)", s.substr(0, kEchoBytes), s.size());
}

// ZeroMQ routing ids are binary: log them as hex.
std::string PeerName(const bus::Incoming& in) {
  const std::string peer = in.peer();
  std::string hex;
  for (size_t i = 0; i < peer.size() && i < 16; ++i) hex += fmt::format("{:02x}", uint8_t(peer[i]));
  return hex.empty() ? "?" : hex;
}

}  // namespace

Result<std::unique_ptr<CheckpointStore>> CheckpointStore::Create(zmq::context_t& ctx,
                                                                 CheckpointStoreOptions options) {
  auto db = store::StoreDb::Open(options.data_dir, options.sync);
  if (!db.ok()) return db.status();
  auto journals = store::JournalStore::Open(**db);
  if (!journals.ok()) return journals.status();
  auto router = bus::Bind(ctx, zmq::socket_type::router, options.endpoint);
  if (!router.ok()) return router.status();
  return std::unique_ptr<CheckpointStore>(new CheckpointStore(
      std::move(options), std::move(*db), std::move(*journals), std::move(*router)));
}

CheckpointStore::CheckpointStore(CheckpointStoreOptions options, std::unique_ptr<store::StoreDb> db,
                                 std::unique_ptr<store::JournalStore> journals,
                                 zmq::socket_t router)
    : options_(std::move(options)),
      db_(std::move(db)),
      journals_(std::move(journals)),
      checkpoints_(*db_),
      router_(std::move(router)),
      endpoint_(bus::BoundEndpoint(router_)) {
  loop_.AddSocket(router_, [this] { OnReadable(); });
}

CheckpointStore::~CheckpointStore() = default;

void CheckpointStore::Run() {
  state_ = State::kServing;
  spdlog::info("checkpoint-store serving on {} with data in {} (sync={}, {} journals)", endpoint_,
               options_.data_dir, options_.sync, journals_->last_seqs().size());
  if (Status s = metrics_.Start(loop_, options_.metrics,
                                [this](metrics::MetricsText& m) { RenderMetrics(m); });
      !s.ok()) {
    spdlog::error("No metrics endpoint: {}", s.ToString());
  }
  loop_.Run();
  FlushAppends();  // nothing is pending between rounds; kept as a safety net
  state_ = State::kStopped;
  std::string counts;
  for (const auto& [type, n] : counts_) counts += fmt::format(" {}={}", type, n);
  spdlog::info("checkpoint-store stopped; messages handled:{}", counts.empty() ? " none" : counts);
}

void CheckpointStore::OnReadable() {
  for (size_t n = 0; n < kMaxFramesPerRound; ++n) {
    bus::Incoming in;
    if (!bus::Receive(router_, in)) break;
    Dispatch(in);
  }
  FlushAppends();  // the group commit: one synced write for every append of this round
}

void CheckpointStore::Dispatch(bus::Incoming& in) {
  auto decoded = proto::Decode(in.payload.data(), in.payload.size());
  if (!decoded.ok()) {
    Count("<malformed>");
    const proto::PeekedEnvelope env = proto::PeekEnvelope(in.payload.data(), in.payload.size());
    spdlog::warn("Rejecting a {}-byte frame from peer {} because it does not decode: {}",
                 in.payload.size(), PeerName(in), decoded.status().ToString());
    ReplyError(in, decoded.status(), env.id, env.type);
    return;
  }
  using Handler = void (CheckpointStore::*)(bus::Incoming&, const proto::Decoded&);
  static const std::pair<std::string_view, Handler> kHandlers[] = {
      {proto::JournalAppend::kType, &CheckpointStore::HandleJournalAppend},
      {proto::JournalRead::kType, &CheckpointStore::HandleJournalRead},
      {proto::JournalList::kType, &CheckpointStore::HandleJournalList},
      {proto::JournalTruncate::kType, &CheckpointStore::HandleJournalTruncate},
      {proto::CheckpointPut::kType, &CheckpointStore::HandleCheckpointPut},
      {proto::CheckpointGet::kType, &CheckpointStore::HandleCheckpointGet},
      {proto::CheckpointList::kType, &CheckpointStore::HandleCheckpointList},
      {proto::CheckpointDelete::kType, &CheckpointStore::HandleCheckpointDelete},
  };
  for (const auto& [type, handler] : kHandlers) {
    if (decoded->type() == type) return (this->*handler)(in, *decoded);
  }
  const std::string type = Truncated(decoded->type());
  if (decoded->type() == proto::ErrorReply::kType) {
    // Never answer an error with an error: two peers doing so would loop forever.
    Count(proto::ErrorReply::kType);
    spdlog::warn("Dropping an error message {} from peer {} because the store sends no requests",
                 decoded->id(), PeerName(in));
    return;
  }
  Count("<unknown>");
  spdlog::warn("Rejecting message {} from peer {} because its type '{}' is unknown", decoded->id(),
               PeerName(in), type);
  ReplyError(in, Status::InvalidArgument(fmt::format("unknown message type '{}'", type)),
             decoded->id(), type);
}

void CheckpointStore::HandleJournalAppend(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::JournalAppend::kType);
  if (RefuseWriteIfDegraded(in, msg.id(), msg.type())) return;
  auto m = msg.As<proto::JournalAppend>();
  Status valid = m.status();
  store::JournalAppendRequest request;
  if (valid.ok()) {
    request.experiment = std::move(m->experiment);
    request.records = std::move(m->records);
    request.expected_first_seq = m->expected_first_seq;
    valid = store::JournalStore::ValidateAppend(request);
  }
  if (!valid.ok()) {
    spdlog::warn("Rejecting journal_append {} from peer {}: {}", msg.id(), PeerName(in),
                 valid.ToString());
    return ReplyError(in, valid, msg.id(), msg.type());
  }
  for (const auto& r : request.records) pending_bytes_ += r.size();
  PendingAppend pending;
  pending.reply_to.route = std::move(in.route);
  pending.id = msg.id();
  pending.request = std::move(request);
  pending_.push_back(std::move(pending));
  if (pending_.size() >= kMaxBatchAppends || pending_bytes_ >= kMaxBatchBytes) FlushAppends();
}

void CheckpointStore::FlushAppends() {
  if (pending_.empty()) return;
  std::vector<PendingAppend> batch = std::exchange(pending_, {});
  pending_bytes_ = 0;
  std::vector<store::JournalAppendRequest> requests;
  requests.reserve(batch.size());
  size_t records = 0;
  for (auto& p : batch) {
    records += p.request.records.size();
    requests.push_back(std::move(p.request));
  }
  auto ranges = journals_->AppendBatch(requests);
  if (!ranges.ok()) {
    spdlog::error("Failing {} journal appends because the group commit failed: {}", batch.size(),
                  ranges.status().ToString());
    NoteWriteFailure(ranges.status());
    for (const auto& p : batch)
      ReplyError(p.reply_to, ranges.status(), p.id, proto::JournalAppend::kType);
    return;
  }
  ++group_commits_;
  spdlog::debug("Group commit: {} appends, {} records in one write", batch.size(), records);
  for (size_t i = 0; i < batch.size(); ++i) {
    if ((*ranges)[i].first_seq == 0) {
      ReplyError(batch[i].reply_to,
                 Status::FailedPrecondition(fmt::format(
                     "journal {} does not continue at seq {}: another writer appended to it",
                     requests[i].experiment, requests[i].expected_first_seq)),
                 batch[i].id, proto::JournalAppend::kType);
      continue;
    }
    proto::JournalAppendAck ack;
    ack.id = batch[i].id;
    ack.experiment = requests[i].experiment;
    ack.first_seq = (*ranges)[i].first_seq;
    ack.last_seq = (*ranges)[i].last_seq;
    ReplyTo(batch[i].reply_to, ack);
  }
}

void CheckpointStore::HandleJournalRead(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::JournalRead::kType);
  auto m = msg.As<proto::JournalRead>();
  Status valid = m.ok() ? store::JournalStore::ValidateExperiment(m->experiment) : m.status();
  if (!valid.ok()) {
    spdlog::warn("Rejecting journal_read {} from peer {}: {}", msg.id(), PeerName(in),
                 valid.ToString());
    return ReplyError(in, valid, msg.id(), msg.type());
  }
  FlushAppends();  // a read sees every append that arrived before it
  auto page = journals_->Read(m->experiment, m->from_seq, m->max_records);
  if (!page.ok()) {
    spdlog::error("Failing journal_read {} of '{}': {}", msg.id(), m->experiment,
                  page.status().ToString());
    return ReplyError(in, page.status(), msg.id(), msg.type());
  }
  proto::JournalReadReply reply;
  reply.id = msg.id();
  reply.experiment = m->experiment;
  reply.first_seq = page->first_seq;
  reply.records = std::move(page->records);
  reply.end = page->end;
  ReplyTo(in, reply);
}

void CheckpointStore::HandleJournalTruncate(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::JournalTruncate::kType);
  if (RefuseWriteIfDegraded(in, msg.id(), msg.type())) return;
  auto m = msg.As<proto::JournalTruncate>();
  Status valid = m.ok() ? store::JournalStore::ValidateExperiment(m->experiment) : m.status();
  if (!valid.ok()) {
    spdlog::warn("Rejecting journal_truncate {} from peer {}: {}", msg.id(), PeerName(in),
                 valid.ToString());
    return ReplyError(in, valid, msg.id(), msg.type());
  }
  FlushAppends();  // appends that arrived first are in the journal the fence compares with
  auto removed = journals_->Truncate(m->experiment, m->keep_through_seq, m->expected_last_seq);
  if (!removed.ok()) {
    spdlog::warn("Refusing journal_truncate {} of '{}': {}", msg.id(), m->experiment,
                 removed.status().ToString());
    if (removed.status().code() == StatusCode::kIoError) NoteWriteFailure(removed.status());
    return ReplyError(in, removed.status(), msg.id(), msg.type());
  }
  spdlog::warn("Cut journal '{}' after seq {}: {} record(s) removed", m->experiment,
               m->keep_through_seq, *removed);
  proto::JournalTruncateAck ack;
  ack.id = msg.id();
  ack.experiment = m->experiment;
  ack.last_seq = journals_->LastSeq(m->experiment);
  ack.removed = *removed;
  ReplyTo(in, ack);
}

void CheckpointStore::HandleJournalList(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::JournalList::kType);
  FlushAppends();
  proto::JournalListReply reply;
  reply.id = msg.id();
  for (const auto& [experiment, last] : journals_->last_seqs()) {
    reply.experiments.push_back(experiment);
    reply.last_seqs.push_back(last);
  }
  ReplyTo(in, reply);
}

void CheckpointStore::HandleCheckpointPut(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::CheckpointPut::kType);
  if (RefuseWriteIfDegraded(in, msg.id(), msg.type())) return;
  auto m = msg.As<proto::CheckpointPut>();
  const Status s = m.ok() ? checkpoints_.Put(m->checkpoint_id, m->chunk_index, m->data, m->last,
                                             m->metadata_json)
                          : m.status();
  if (!s.ok()) {
    spdlog::warn("Rejecting checkpoint_put {} (chunk {}) from peer {}: {}", msg.id(),
                 m.ok() ? m->chunk_index : 0, PeerName(in), s.ToString());
    NoteWriteFailure(s);
    return ReplyError(in, s, msg.id(), msg.type());
  }
  if (m->last) {
    spdlog::info("Committed checkpoint '{}' ({} chunks)", Truncated(m->checkpoint_id),
                 m->chunk_index + 1);
  }
  proto::CheckpointPutAck ack;
  ack.id = msg.id();
  ack.checkpoint_id = m->checkpoint_id;
  ack.chunk_index = m->chunk_index;
  ReplyTo(in, ack);
}

void CheckpointStore::HandleCheckpointGet(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::CheckpointGet::kType);
  auto m = msg.As<proto::CheckpointGet>();
  if (!m.ok()) return ReplyError(in, m.status(), msg.id(), msg.type());
  auto chunk = checkpoints_.Get(m->checkpoint_id, m->chunk_index);
  if (!chunk.ok()) {
    spdlog::warn("Failing checkpoint_get {} of '{}' chunk {}: {}", msg.id(),
                 Truncated(m->checkpoint_id), m->chunk_index, chunk.status().ToString());
    return ReplyError(in, chunk.status(), msg.id(), msg.type());
  }
  proto::CheckpointGetReply reply;
  reply.id = msg.id();
  reply.checkpoint_id = m->checkpoint_id;
  reply.chunk_index = m->chunk_index;
  reply.num_chunks = chunk->meta.num_chunks;
  reply.data.assign(chunk->data.begin(), chunk->data.end());
  reply.metadata_json = std::move(chunk->meta.metadata_json);
  ReplyTo(in, reply);
}

void CheckpointStore::HandleCheckpointList(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::CheckpointList::kType);
  auto m = msg.As<proto::CheckpointList>();
  if (!m.ok()) return ReplyError(in, m.status(), msg.id(), msg.type());
  auto entries = checkpoints_.List(m->prefix);
  if (!entries.ok()) {
    spdlog::warn("Failing checkpoint_list {} of prefix '{}': {}", msg.id(), Truncated(m->prefix),
                 entries.status().ToString());
    return ReplyError(in, entries.status(), msg.id(), msg.type());
  }
  proto::CheckpointListReply reply;
  reply.id = msg.id();
  for (auto& e : *entries) {
    reply.checkpoints.push_back(proto::CheckpointInfo{std::move(e.checkpoint_id), e.meta.size_bytes,
                                                      e.meta.num_chunks,
                                                      std::move(e.meta.metadata_json)});
  }
  ReplyTo(in, reply);
}

void CheckpointStore::HandleCheckpointDelete(bus::Incoming& in, const proto::Decoded& msg) {
  Count(proto::CheckpointDelete::kType);
  if (RefuseWriteIfDegraded(in, msg.id(), msg.type())) return;
  auto m = msg.As<proto::CheckpointDelete>();
  if (!m.ok()) return ReplyError(in, m.status(), msg.id(), msg.type());
  auto deleted = checkpoints_.Delete(m->checkpoint_id);
  if (!deleted.ok()) {
    spdlog::warn("Failing checkpoint_delete {} of '{}': {}", msg.id(), Truncated(m->checkpoint_id),
                 deleted.status().ToString());
    NoteWriteFailure(deleted.status());
    return ReplyError(in, deleted.status(), msg.id(), msg.type());
  }
  if (*deleted) spdlog::info("Deleted checkpoint '{}'", Truncated(m->checkpoint_id));
  proto::CheckpointDeleteAck ack;
  ack.id = msg.id();
  ack.checkpoint_id = m->checkpoint_id;
  ack.deleted = *deleted;
  ReplyTo(in, ack);
}

bool CheckpointStore::RefuseWriteIfDegraded(const bus::Incoming& in, uint64_t id,
                                            const std::string& type) {
  if (state_ != State::kDegraded) return false;
  spdlog::warn("Dropping {} {} from peer {} because the store is degraded after a failed write",
               type, id, PeerName(in));
  ReplyError(in,
             Status::IoError("the store refuses writes after a failed RocksDB write; restart it"),
             id, type);
  return true;
}

void CheckpointStore::NoteWriteFailure(const Status& status) {
  if (status.code() != StatusCode::kIoError || state_ == State::kDegraded) return;
  spdlog::error(
      "checkpoint-store is degraded (writes refused, reads served) because a write failed: {}",
      status.ToString());
  state_ = State::kDegraded;
}

void CheckpointStore::ReplyError(const bus::Incoming& in, const Status& status, uint64_t id,
                                 const std::string& request_type) {
  ReplyTo(in, proto::MakeError(status, id, Truncated(request_type)));
}

template <typename M>
void CheckpointStore::ReplyTo(const bus::Incoming& in, const M& message) {
  if (!bus::ReplyMessage(router_, in, message)) {
    spdlog::warn("Dropping {} {} to peer {} because the peer is gone or its queue is full",
                 message.type, message.id, PeerName(in));
  }
}

}  // namespace tunebus
