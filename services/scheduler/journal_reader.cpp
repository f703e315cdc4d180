#include "services/scheduler/journal_reader.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// One request over a dedicated DEALER, before the event loop runs: resent every second until
// `deadline` (the store may still be starting). Errors: Unavailable at the deadline, or the
// store's error reply.
template <typename Reply, typename Request>
Result<Reply> BlockingCall(zmq::socket_t& socket, Request request, bus::Clock::time_point deadline) {
  static uint64_t next_id = 1;
  request.id = next_id++;
  const std::string payload = proto::Encode(request);
  while (bus::Clock::now() < deadline) {
    bus::Send(socket, payload);
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    const auto until = std::min(deadline, bus::Clock::now() + std::chrono::seconds(1));
    while (bus::Clock::now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - bus::Clock::now());
      if (zmq::poll(&item, 1, std::max<std::chrono::milliseconds>(left, std::chrono::milliseconds(1))) == 0) continue;
      bus::Incoming in;
      if (!bus::Receive(socket, in)) continue;
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok() || d->id() != request.id) continue;  // a late answer to an earlier try
      if (d->type() == proto::ErrorReply::kType) {
        auto err = d->As<proto::ErrorReply>();
        return Status(bus::StatusCodeFromName(err.ok() ? err->code : "internal"), err.ok() ? err->message : "error");
      }
      return d->As<Reply>();
    }
  }
  return Status::Unavailable(fmt::format("the checkpoint-store did not answer {}", Request::kType));
}

}  // namespace

JournalReader::JournalReader(zmq::context_t& ctx, const std::string& store_endpoint,
                             std::chrono::milliseconds timeout)
    : ctx_(ctx), endpoint_(store_endpoint), deadline_(bus::Clock::now() + timeout) {}

Result<std::vector<json>> JournalReader::Read(const std::string& journal, uint64_t from, uint32_t max) {
  auto socket = bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_);
  if (!socket.ok()) return socket.status();
  std::vector<json> records;
  proto::JournalRead read;
  read.experiment = journal;
  read.from_seq = from;
  read.max_records = max;
  auto got = BlockingCall<proto::JournalReadReply>(*socket, read, deadline_);
  if (!got.ok()) return got.status();
  for (size_t i = 0; i < got->records.size(); ++i) {
    auto r = journal::DecodeRecord(got->records[i]);
    if (!r.ok()) {  // a torn record ends the usable journal; nothing after it is applied
      spdlog::error("Journal {} record {} does not decode ({}); using the records before it", journal,
                    got->first_seq + i, r.status().message());
      records.push_back(json{{"kind", "torn"}});
      return records;
    }
    records.push_back(std::move(*r));
  }
  return records;
}

Result<std::vector<JournalSummary>> JournalReader::List() {
  auto socket = bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_);
  if (!socket.ok()) return socket.status();
  auto list = BlockingCall<proto::JournalListReply>(*socket, proto::JournalList{}, deadline_);
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
    auto last = Read(j.journal, j.last_seq, 1);
    if (!last.ok()) return last.status();
    j.ended = !last->empty() && last->back().value("kind", "") == "experiment_ended";
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::vector<json>> JournalReader::ReadAll(const std::string& journal, uint64_t last_seq) {
  std::vector<json> records;
  records.reserve(last_seq);
  while (records.size() < last_seq) {
    auto got = Read(journal, records.size() + 1, 10000);
    if (!got.ok()) return got.status();
    if (got->empty()) break;
    for (json& r : *got) {
      if (r.value("kind", "") == "torn") return records;
      records.push_back(std::move(r));
    }
  }
  return records;
}

}  // namespace tunebus
