#include "services/scheduler/journal_reader.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "libs/bus/domains.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/snapshot.hpp"
#include "libs/service/stop_request.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {

std::string ExperimentNameOfJournal(const std::string& journal) {
  return journal.size() > 6 ? journal.substr(0, journal.size() - 6) : journal;
}

using nlohmann::json;

namespace {

// One request over a dedicated DEALER, outside the event loop (before it runs, or inside a
// handler): resent every second until `deadline` (the store may still be starting). A stop
// request (SIGTERM/SIGINT) ends the wait at once (service::PollUnlessStopped). Errors:
// Unavailable at the deadline, or when the service stops (service::StoppedWaiting), or the
// store's error reply.
template <typename Reply, typename Request>
Result<Reply> BlockingCall(const Clock& clock, zmq::socket_t& socket, Request request,
                           SteadyTime deadline) {
  static uint64_t next_id = 1;
  request.id = next_id++;
  const std::string payload = proto::Encode(request);
  const std::string what = fmt::format("the checkpoint-store's answer to {}", Request::kType);
  while (clock.Now() < deadline) {
    bus::Send(socket, payload);
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    const auto until = std::min(deadline, clock.Now() + std::chrono::seconds(1));
    while (clock.Now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock.Now());
      auto ready = service::PollUnlessStopped(
          {&item, 1}, std::max<std::chrono::milliseconds>(left, std::chrono::milliseconds(1)),
          what);
      if (!ready.ok()) return ready.status();
      if (*ready == 0) continue;
      bus::Incoming in;
      if (!bus::Receive(socket, in)) continue;
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok() || d->id() != request.id) continue;  // a late answer to an earlier try
      if (d->type() == proto::ErrorReply::kType) {
        auto err = d->As<proto::ErrorReply>();
        return Status(bus::StatusCodeFromName(err.ok() ? err->code : "internal"),
                      err.ok() ? err->message : "error");
      }
      return d->As<Reply>();
    }
  }
  return Status::Unavailable(fmt::format("the checkpoint-store did not answer {}", Request::kType));
}

}  // namespace

JournalReader::JournalReader(zmq::context_t& ctx, const std::string& store_endpoint,
                             const bus::Security& security, std::chrono::milliseconds timeout,
                             const Clock& clock)
    : ctx_(ctx),
      endpoint_(store_endpoint),
      security_(security),
      clock_(clock),
      deadline_(clock.Now() + timeout) {}

Result<std::vector<json>> JournalReader::Read(const std::string& journal, uint64_t from,
                                              uint32_t max) {
  auto socket =
      bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_, security_, bus::kCheckpointStoreKey);
  if (!socket.ok()) return socket.status();
  std::vector<json> records;
  proto::JournalRead read;
  read.experiment = journal;
  read.from_seq = from;
  read.max_records = max;
  auto got = BlockingCall<proto::JournalReadReply>(clock_, *socket, read, deadline_);
  if (!got.ok()) return got.status();
  for (size_t i = 0; i < got->records.size(); ++i) {
    auto r = journal::ReadStoredRecord(got->records[i]);
    if (!r.ok()) {  // a torn or flipped record ends the usable journal; nothing after it applies
      spdlog::error("Journal {} record {} is torn or corrupt ({}); using the records before it",
                    journal, got->first_seq + i, r.status().message());
      records.push_back(json{{"kind", "torn"}});
      return records;
    }
    records.push_back(std::move(*r));
  }
  return records;
}

Result<bool> JournalReader::Ended(const std::string& journal, uint64_t last_seq) {
  // The newest record alone first (it answers for almost every journal), then 32 at a time.
  for (uint64_t end = last_seq, window = 1; end >= 1; window = 32) {
    const uint64_t from = end > window ? end - window + 1 : 1;
    auto records = Read(journal, from, uint32_t(end - from + 1));
    if (!records.ok()) return records.status();
    for (auto it = records->rbegin(); it != records->rend(); ++it) {
      const std::string kind = it->value("kind", "");
      if (kind != "checkpoint_saved" && kind != "checkpoint_deleted" &&
          kind != "checkpoint_failed") {
        return kind == "experiment_ended";
      }
    }
    if (records->size() != end - from + 1) return false;  // a short read: treated as not ended
    end = from - 1;
  }
  return false;
}

Result<std::vector<JournalSummary>> JournalReader::List() {
  auto socket =
      bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_, security_, bus::kCheckpointStoreKey);
  if (!socket.ok()) return socket.status();
  auto list =
      BlockingCall<proto::JournalListReply>(clock_, *socket, proto::JournalList{}, deadline_);
  if (!list.ok()) return list.status();
  std::vector<JournalSummary> out;
  for (size_t i = 0; i < list->experiments.size() && i < list->last_seqs.size(); ++i) {
    if (list->last_seqs[i] == 0) continue;
    JournalSummary j;
    j.journal = list->experiments[i];
    j.last_seq = list->last_seqs[i];
    auto first = Read(j.journal, 1, 1);
    if (!first.ok()) return first.status();
    if (!first->empty()) j.submitted_at_s = first->front().value("submitted_at", 0.0);
    auto ended = Ended(j.journal, j.last_seq);
    if (!ended.ok()) return ended.status();
    j.ended = *ended;
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::optional<journal::ReplayedExperiment>> JournalReader::NewestSnapshot(
    const std::string& name) {
  auto socket =
      bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_, security_, bus::kCheckpointStoreKey);
  if (!socket.ok()) return socket.status();
  proto::CheckpointList list;
  list.prefix = journal::SnapshotPrefix(name);
  auto listed = BlockingCall<proto::CheckpointListReply>(clock_, *socket, list, deadline_);
  if (!listed.ok()) return listed.status();
  std::string newest;  // ids end in a zero-padded seq: the greatest is the newest
  for (const proto::CheckpointInfo& info : listed->checkpoints)
    newest = std::max(newest, info.checkpoint_id);
  if (newest.empty()) return std::optional<journal::ReplayedExperiment>();
  std::string bytes;
  for (uint32_t chunk = 0, chunks = 1; chunk < chunks; ++chunk) {
    proto::CheckpointGet get;
    get.checkpoint_id = newest;
    get.chunk_index = chunk;
    auto got = BlockingCall<proto::CheckpointGetReply>(clock_, *socket, get, deadline_);
    if (!got.ok()) return got.status();
    chunks = got->num_chunks;
    bytes.append(got->data.begin(), got->data.end());
  }
  auto state = journal::DecodeSnapshot(bytes);
  if (!state.ok()) {
    spdlog::error("Snapshot {} is unusable ({}); replaying the whole journal", newest,
                  state.status().message());
    return std::optional<journal::ReplayedExperiment>();
  }
  return std::optional<journal::ReplayedExperiment>(std::move(*state));
}

Result<journal::ReplayedExperiment> JournalReader::ReplayToResume(const std::string& journal,
                                                                  uint64_t* last_seq) {
  auto replayed = Replay(journal, *last_seq);
  if (!replayed.ok() || replayed->records >= *last_seq) return replayed;
  spdlog::error(
      "Journal {}: records {}..{} are torn or corrupt; cutting them (the state is that of record "
      "{})",
      journal, replayed->records + 1, *last_seq, replayed->records);
  auto removed = Truncate(journal, replayed->records, *last_seq);
  if (!removed.ok()) return removed.status();
  *last_seq = replayed->records;
  return replayed;
}

Result<uint64_t> JournalReader::Truncate(const std::string& journal, uint64_t keep_through_seq,
                                         uint64_t expected_last_seq) {
  auto socket =
      bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_, security_, bus::kCheckpointStoreKey);
  if (!socket.ok()) return socket.status();
  proto::JournalTruncate cut;
  cut.experiment = journal;
  cut.keep_through_seq = keep_through_seq;
  cut.expected_last_seq = expected_last_seq;
  auto ack = BlockingCall<proto::JournalTruncateAck>(clock_, *socket, cut, deadline_);
  if (!ack.ok()) return ack.status();
  return ack->removed;
}

Status JournalReader::ForEachRecord(const std::string& journal, uint64_t from, uint64_t last_seq,
                                    const std::function<void(const json&)>& on_record) {
  while (from <= last_seq) {
    auto got = Read(journal, from, uint32_t(std::min<uint64_t>(10000, last_seq - from + 1)));
    if (!got.ok()) return got.status();
    if (got->empty()) break;
    for (const json& r : *got) {
      if (r.value("kind", "") == "torn") return Status::Ok();
      on_record(r);
    }
    from += got->size();
  }
  return Status::Ok();
}

Result<journal::ReplayedExperiment> JournalReader::Replay(const std::string& name,
                                                          uint64_t last_seq) {
  journal::JournalReplayer replayer;
  auto snapshot = NewestSnapshot(name);
  if (!snapshot.ok()) return snapshot.status();
  if (snapshot->has_value() && (*snapshot)->records <= last_seq)
    replayer.Reset(std::move(**snapshot));
  while (replayer.state().records < last_seq) {
    auto got = Read(name, replayer.state().records + 1, 10000);
    if (!got.ok()) return got.status();
    if (got->empty()) break;
    for (const json& r : *got) {
      if (r.value("kind", "") == "torn") return replayer.Take();
      if (Status s = replayer.Apply(r); !s.ok()) {
        spdlog::error("Journal {}: {}; using the state before it", name, s.message());
        return replayer.Take();
      }
    }
  }
  if (replayer.state().experiment_id.empty()) {
    return Status::Corruption("journal " + name + " does not start with experiment_submitted");
  }
  return replayer.Take();
}

}  // namespace tunebus
