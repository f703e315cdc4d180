#include "services/checkpoint-store/checkpoint_store.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <string_view>
#include <utility>

#include "libs/bus/domains.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {

Result<std::unique_ptr<CheckpointStore>> CheckpointStore::Create(zmq::context_t& ctx,
                                                                 CheckpointStoreOptions options) {
  auto db = store::StoreDb::Open(options.data_dir, options.sync, options.file_system);
  if (!db.ok()) return db.status();
  auto journals = store::JournalStore::Open(**db);
  if (!journals.ok()) return journals.status();
  auto router = bus::Bind(ctx, zmq::socket_type::router, options.endpoint, *options.security,
                          bus::kCheckpointStoreDomain);
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
      endpoint_(bus::BoundEndpoint(router_)),
      loop_(*options_.clock),
      dispatcher_({.reply_socket = &router_,
                   .security = options_.security,
                   .roles = {bus::Role::kWorker, bus::Role::kService}}) {
  // Journals are the scheduler's (service); checkpoints and status also the workers'.
  const bus::RoleSet services{bus::Role::kService};
  dispatcher_.On(proto::JournalAppend::kType, services, this, &CheckpointStore::HandleJournalAppend)
      .On(proto::JournalAppendMany::kType, services, this,
          &CheckpointStore::HandleJournalAppendMany)
      .On(proto::JournalRead::kType, services, this, &CheckpointStore::HandleJournalRead)
      .On(proto::JournalList::kType, services, this, &CheckpointStore::HandleJournalList)
      .On(proto::JournalTruncate::kType, services, this, &CheckpointStore::HandleJournalTruncate)
      .On(proto::ExperimentDelete::kType, services, this, &CheckpointStore::HandleExperimentDelete)
      .On(proto::CheckpointPut::kType, this, &CheckpointStore::HandleCheckpointPut)
      .On(proto::CheckpointGet::kType, this, &CheckpointStore::HandleCheckpointGet)
      .On(proto::CheckpointList::kType, this, &CheckpointStore::HandleCheckpointList)
      .On(proto::CheckpointDelete::kType, this, &CheckpointStore::HandleCheckpointDelete)
      .On(proto::StoreStatus::kType, this, &CheckpointStore::HandleStoreStatus);
  loop_.AddSocket(router_, [this] { OnReadable(); });
}

CheckpointStore::~CheckpointStore() = default;

void CheckpointStore::Run() {
  state_ = State::kServing;
  spdlog::info("checkpoint-store serving on {} with data in {} (sync={}, {} journals)", endpoint_,
               options_.data_dir, options_.sync, journals_->last_seqs().size());
  if (Status s = metrics_.Start(
          loop_, options_.metrics, [this](metrics::MetricsText& m) { RenderMetrics(m); },
          [this] { return HealthText(); });
      !s.ok()) {
    spdlog::error("No metrics endpoint: {}", s.ToString());
  }
  loop_.Run();
  FlushAppends();  // nothing is pending between rounds; kept as a safety net
  state_ = State::kStopped;
  spdlog::info("checkpoint-store stopped; messages handled: {}", dispatcher_.CountsSummary());
}

void CheckpointStore::OnReadable() {
  for (size_t n = 0; n < kMaxFramesPerRound; ++n) {
    bus::Incoming in;
    if (!bus::Receive(router_, in)) break;
    dispatcher_.Dispatch(in);
  }
  FlushAppends();  // the group commit: one synced write for every append of this round
}

namespace {

// A JournalAppend's or a JournalAppendPart's fields, moved out.
template <typename Append>
store::JournalAppendRequest TakeAppend(Append& m) {
  return {std::move(m.experiment), std::move(m.records), m.expected_first_seq};
}

}  // namespace

Status CheckpointStore::HandleJournalAppend(bus::Incoming& in, const proto::Decoded& msg) {
  if (Status s = RefuseWriteIfDegraded(); !s.ok()) return s;
  auto m = msg.As<proto::JournalAppend>();
  if (!m.ok()) return m.status();
  std::vector<store::JournalAppendRequest> parts;
  parts.push_back(TakeAppend(*m));
  if (Status s = store::JournalStore::ValidateAppend(parts[0]); !s.ok()) return s;
  QueueAppend(in, msg.id(), false, std::move(parts));
  return Status::Ok();  // acknowledged by FlushAppends
}

Status CheckpointStore::HandleJournalAppendMany(bus::Incoming& in, const proto::Decoded& msg) {
  if (Status s = RefuseWriteIfDegraded(); !s.ok()) return s;
  auto m = msg.As<proto::JournalAppendMany>();
  if (!m.ok()) return m.status();
  if (m->parts.empty() || m->parts.size() > proto::kMaxJournalAppendParts) {
    return Status::InvalidArgument(fmt::format("journal_append_many has {} parts, it takes 1 to {}",
                                               m->parts.size(), proto::kMaxJournalAppendParts));
  }
  std::vector<store::JournalAppendRequest> parts;
  for (size_t i = 0; i < m->parts.size(); ++i) {
    parts.push_back(TakeAppend(m->parts[i]));
    if (Status s = store::JournalStore::ValidateAppend(parts[i]); !s.ok()) {
      return Status(s.code(), fmt::format("part {}: {}", i, s.message()));
    }
  }
  QueueAppend(in, msg.id(), true, std::move(parts));
  return Status::Ok();  // acknowledged by FlushAppends
}

void CheckpointStore::QueueAppend(bus::Incoming& in, uint64_t id, bool many,
                                  std::vector<store::JournalAppendRequest> parts) {
  PendingAppend pending;
  pending.reply_to.route = std::move(in.route);
  pending.id = id;
  pending.many = many;
  pending.first = pending_parts_.size();
  pending.count = parts.size();
  for (auto& part : parts) {
    for (const auto& r : part.records) pending_bytes_ += r.size();
    pending_parts_.push_back(std::move(part));
  }
  pending_.push_back(std::move(pending));
  if (pending_parts_.size() >= kMaxBatchAppends || pending_bytes_ >= kMaxBatchBytes) {
    FlushAppends();
  }
}

void CheckpointStore::FlushAppends() {
  if (pending_.empty()) return;
  const std::vector<PendingAppend> batch = std::exchange(pending_, {});
  const std::vector<store::JournalAppendRequest> parts = std::exchange(pending_parts_, {});
  pending_bytes_ = 0;
  size_t records = 0;
  for (const auto& part : parts) records += part.records.size();
  auto ranges = journals_->AppendBatch(parts);
  if (!ranges.ok()) {
    spdlog::error("Failing {} journal appends because the group commit failed: {}", parts.size(),
                  ranges.status().ToString());
    NoteWriteFailure(ranges.status());
    for (const auto& p : batch) ReplyAppendError(p, ranges.status());
    return;
  }
  ++group_commits_;
  spdlog::debug("Group commit: {} appends, {} records in one write", parts.size(), records);
  // A part whose range is empty did not continue its journal where it said (fencing).
  const auto fenced = [&](size_t i) {
    return Status::FailedPrecondition(
        fmt::format("journal {} does not continue at seq {}: another writer appended to it",
                    parts[i].experiment, parts[i].expected_first_seq));
  };
  for (const PendingAppend& p : batch) {
    if (!p.many) {
      const size_t i = p.first;
      if ((*ranges)[i].first_seq == 0) {
        ReplyAppendError(p, fenced(i));
        continue;
      }
      proto::JournalAppendAck ack;
      ack.id = p.id;
      ack.experiment = parts[i].experiment;
      ack.first_seq = (*ranges)[i].first_seq;
      ack.last_seq = (*ranges)[i].last_seq;
      dispatcher_.Reply(p.reply_to, ack);
      continue;
    }
    proto::JournalAppendManyAck ack;
    ack.id = p.id;
    ack.parts.resize(p.count);
    for (size_t k = 0; k < p.count; ++k) {
      const size_t i = p.first + k;
      proto::JournalAppendPartAck& part = ack.parts[k];
      part.experiment = parts[i].experiment;
      if ((*ranges)[i].first_seq == 0) {
        const Status s = fenced(i);
        part.error_code = StatusCodeName(s.code());
        part.error = s.message();
        continue;
      }
      part.first_seq = (*ranges)[i].first_seq;
      part.last_seq = (*ranges)[i].last_seq;
    }
    dispatcher_.Reply(p.reply_to, ack);
  }
}

template <typename M>
void CheckpointStore::ReplyToRead(const bus::Incoming& in, M reply) {
  if (options_.read_delay.count() <= 0) return dispatcher_.Reply(in, reply);
  loop_.AddTimer(options_.read_delay, [this, route = in.route, reply = std::move(reply)] {
    bus::Incoming back;
    back.route = route;
    dispatcher_.Reply(back, reply);
  });
}

Status CheckpointStore::HandleJournalRead(bus::Incoming& in, const proto::Decoded& msg) {
  auto m = msg.As<proto::JournalRead>();
  Status valid = m.ok() ? store::JournalStore::ValidateExperiment(m->experiment) : m.status();
  if (!valid.ok()) return valid;
  FlushAppends();  // a read sees every append that arrived before it
  auto page = journals_->Read(m->experiment, m->from_seq, m->max_records);
  if (!page.ok()) return page.status();
  proto::JournalReadReply reply;
  reply.id = msg.id();
  reply.experiment = m->experiment;
  reply.first_seq = page->first_seq;
  reply.records = std::move(page->records);
  reply.end = page->end;
  ReplyToRead(in, std::move(reply));
  return Status::Ok();
}

Status CheckpointStore::HandleJournalTruncate(bus::Incoming& in, const proto::Decoded& msg) {
  if (Status s = RefuseWriteIfDegraded(); !s.ok()) return s;
  auto m = msg.As<proto::JournalTruncate>();
  Status valid = m.ok() ? store::JournalStore::ValidateExperiment(m->experiment) : m.status();
  if (!valid.ok()) return valid;
  FlushAppends();  // appends that arrived first are in the journal the fence compares with
  auto removed = journals_->Truncate(m->experiment, m->keep_through_seq, m->expected_last_seq);
  if (!removed.ok()) {
    if (removed.status().code() == StatusCode::kIoError) NoteWriteFailure(removed.status());
    return removed.status();
  }
  spdlog::warn("Cut journal '{}' after seq {}: {} record(s) removed", m->experiment,
               m->keep_through_seq, *removed);
  proto::JournalTruncateAck ack;
  ack.id = msg.id();
  ack.experiment = m->experiment;
  ack.last_seq = journals_->LastSeq(m->experiment);
  ack.removed = *removed;
  dispatcher_.Reply(in, ack);
  return Status::Ok();
}

Status CheckpointStore::HandleJournalList(bus::Incoming& in, const proto::Decoded& msg) {
  FlushAppends();
  proto::JournalListReply reply;
  reply.id = msg.id();
  for (const auto& [experiment, last] : journals_->last_seqs()) {
    reply.experiments.push_back(experiment);
    reply.last_seqs.push_back(last);
  }
  ReplyToRead(in, std::move(reply));
  return Status::Ok();
}

Status CheckpointStore::HandleCheckpointPut(bus::Incoming& in, const proto::Decoded& msg) {
  if (Status s = RefuseWriteIfDegraded(); !s.ok()) return s;
  auto m = msg.As<proto::CheckpointPut>();
  const Status s = m.ok() ? checkpoints_.Put(m->checkpoint_id, m->chunk_index, m->data, m->last,
                                             m->metadata_json, m->sha256)
                          : m.status();
  if (!s.ok()) {
    NoteWriteFailure(s);
    return s;
  }
  if (m->last) {
    spdlog::info("Committed checkpoint '{}' ({} chunks)",
                 service::MessageDispatcher::Truncated(m->checkpoint_id), m->chunk_index + 1);
  }
  proto::CheckpointPutAck ack;
  ack.id = msg.id();
  ack.checkpoint_id = m->checkpoint_id;
  ack.chunk_index = m->chunk_index;
  dispatcher_.Reply(in, ack);
  return Status::Ok();
}

Status CheckpointStore::HandleCheckpointGet(bus::Incoming& in, const proto::Decoded& msg) {
  auto m = msg.As<proto::CheckpointGet>();
  if (!m.ok()) return m.status();
  auto chunk = checkpoints_.Get(m->checkpoint_id, m->chunk_index);
  if (!chunk.ok()) return chunk.status();
  proto::CheckpointGetReply reply;
  reply.id = msg.id();
  reply.checkpoint_id = m->checkpoint_id;
  reply.chunk_index = m->chunk_index;
  reply.num_chunks = chunk->meta.num_chunks;
  reply.data.assign(chunk->data.begin(), chunk->data.end());
  reply.metadata_json = std::move(chunk->meta.metadata_json);
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

Status CheckpointStore::HandleCheckpointList(bus::Incoming& in, const proto::Decoded& msg) {
  auto m = msg.As<proto::CheckpointList>();
  if (!m.ok()) return m.status();
  auto entries = checkpoints_.List(m->prefix);
  if (!entries.ok()) return entries.status();
  proto::CheckpointListReply reply;
  reply.id = msg.id();
  for (auto& e : *entries) {
    reply.checkpoints.push_back(proto::CheckpointInfo{std::move(e.checkpoint_id), e.meta.size_bytes,
                                                      e.meta.num_chunks,
                                                      std::move(e.meta.metadata_json)});
  }
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

Status CheckpointStore::HandleCheckpointDelete(bus::Incoming& in, const proto::Decoded& msg) {
  if (Status s = RefuseWriteIfDegraded(); !s.ok()) return s;
  auto m = msg.As<proto::CheckpointDelete>();
  if (!m.ok()) return m.status();
  auto deleted = checkpoints_.Delete(m->checkpoint_id);
  if (!deleted.ok()) {
    NoteWriteFailure(deleted.status());
    return deleted.status();
  }
  if (*deleted)
    spdlog::info("Deleted checkpoint '{}'",
                 service::MessageDispatcher::Truncated(m->checkpoint_id));
  proto::CheckpointDeleteAck ack;
  ack.id = msg.id();
  ack.checkpoint_id = m->checkpoint_id;
  ack.deleted = *deleted;
  dispatcher_.Reply(in, ack);
  return Status::Ok();
}

Status CheckpointStore::HandleExperimentDelete(bus::Incoming& in, const proto::Decoded& msg) {
  if (Status s = RefuseWriteIfDegraded(); !s.ok()) return s;
  auto m = msg.As<proto::ExperimentDelete>();
  Status valid = m.ok() ? store::JournalStore::ValidateExperiment(m->experiment) : m.status();
  if (!valid.ok()) return valid;
  FlushAppends();  // appends that arrived first are deleted with the rest
  proto::ExperimentDeleteAck ack;
  ack.id = msg.id();
  ack.experiment = m->experiment;
  if (Status s = db_->Flush(); !s.ok()) {  // so that bytes_before counts everything it holds
    NoteWriteFailure(s);
    return s;
  }
  ack.bytes_before = db_->LiveBytes();
  rocksdb::WriteBatch batch;
  auto records = journals_->DeleteInto(m->experiment, batch);
  if (!records.ok()) return records.status();
  // Its checkpoints and snapshots: every id under "<journal>/".
  auto checkpoints = checkpoints_.DeletePrefixInto(m->experiment + "/", batch);
  if (!checkpoints.ok()) return checkpoints.status();
  if (Status s = db_->Write(batch, /*durable=*/true); !s.ok()) {
    NoteWriteFailure(s);
    return s;
  }
  journals_->Forget(m->experiment);
  ack.records = *records;
  ack.checkpoints = *checkpoints;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& prefix : {store::JournalRecordPrefix(m->experiment),
                                    std::string(store::kCheckpointMetaPrefix) + m->experiment + "/",
                                    std::string(store::kChunkPrefix) + m->experiment + "/"}) {
    if (Status s = db_->CompactAway(prefix, store::PrefixSuccessor(prefix)); !s.ok()) {
      spdlog::warn("Deleted experiment '{}'; its space is reclaimed by later compactions: {}",
                   m->experiment, s.ToString());
      break;
    }
  }
  ack.compaction_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ack.bytes_after = db_->LiveBytes();
  spdlog::info(
      "Deleted experiment '{}': {} journal records, {} checkpoints; live data {} -> {} bytes "
      "(compaction {:.3f} s)",
      m->experiment, ack.records, ack.checkpoints, ack.bytes_before, ack.bytes_after,
      ack.compaction_s);
  dispatcher_.Reply(in, ack);
  return Status::Ok();
}

Status CheckpointStore::HandleStoreStatus(bus::Incoming& in, const proto::Decoded& msg) {
  // Answered in every state, from memory: a client asks it precisely when writes fail.
  proto::StoreStatusReply reply;
  reply.id = msg.id();
  reply.state = state_ == State::kDegraded ? "degraded" : "ok";
  reply.reason = degraded_reason_;
  reply.since_unix_s = state_since_unix_s_;
  reply.recoveries = recoveries_;
  dispatcher_.Reply(in, reply);
  return Status::Ok();
}

Status CheckpointStore::RefuseWriteIfDegraded() const {
  if (state_ != State::kDegraded) return Status::Ok();
  return Status::IoError(fmt::format(
      "the checkpoint-store refuses writes while degraded since {:%H:%M:%S} UTC: {}; it retries "
      "RocksDB's recovery every second",
      fmt::gmtime(std::time_t(state_since_unix_s_)), degraded_reason_));
}

void CheckpointStore::NoteWriteFailure(const Status& status) {
  if (status.code() != StatusCode::kIoError || state_ == State::kDegraded) return;
  spdlog::error(
      "checkpoint-store is degraded (writes refused, reads served; RocksDB's recovery is retried "
      "every second) because a write failed: {}",
      status.ToString());
  state_ = State::kDegraded;
  degraded_reason_ = status.message();
  state_since_unix_s_ = loop_.clock().WallSeconds();
  degraded_at_ = loop_.clock().Now();
  failed_resumes_ = 0;
  resume_timer_ = loop_.AddPeriodic(kResumeInterval, [this] { TryResume(); });
}

void CheckpointStore::TryResume() {
  if (state_ != State::kDegraded) return;
  if (Status s = db_->Resume(); !s.ok()) {
    // Still out of space, most likely; the first failure of an outage is worth a line.
    if (failed_resumes_++ == 0) {
      spdlog::warn(
          "checkpoint-store is still degraded: RocksDB's recovery failed ({}); retrying "
          "every second",
          s.ToString());
    } else {
      spdlog::debug("RocksDB's recovery failed again ({} times): {}", failed_resumes_,
                    s.ToString());
    }
    return;
  }
  loop_.CancelTimer(resume_timer_);
  resume_timer_ = 0;
  state_ = State::kServing;
  degraded_reason_.clear();
  state_since_unix_s_ = loop_.clock().WallSeconds();
  ++recoveries_;
  spdlog::warn("checkpoint-store recovered after {:.1f} s: writes are taken again",
               loop_.clock().SecondsSince(degraded_at_));
}

std::string CheckpointStore::HealthText() const {
  return state_ == State::kDegraded ? "degraded: " + degraded_reason_ : "ok";
}

void CheckpointStore::ReplyAppendError(const PendingAppend& append, const Status& status) {
  dispatcher_.Reply(append.reply_to, proto::MakeError(status, append.id,
                                                      append.many ? proto::JournalAppendMany::kType
                                                                  : proto::JournalAppend::kType));
}

}  // namespace tunebus
