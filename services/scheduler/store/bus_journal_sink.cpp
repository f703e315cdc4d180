#include "services/scheduler/store/bus_journal_sink.hpp"

#include "proto/store.hpp"

namespace tunebus {

void JournalAppendBatcher::Add(const std::string& journal, uint64_t expected_first_seq,
                               std::vector<std::string>& records,
                               journal::JournalSink::AppendDone done) {
  queued_.push_back(Part{journal, expected_first_seq, &records, std::move(done)});
}

void JournalAppendBatcher::Send() {
  if (queued_.empty()) return;
  std::vector<Part> all = std::exchange(queued_, {});
  std::vector<Part> request;
  size_t bytes = 0;
  for (Part& part : all) {
    size_t part_bytes = 0;
    for (const std::string& r : *part.records) part_bytes += r.size();
    if (!request.empty() && (bytes + part_bytes > kMaxRequestBytes ||
                             request.size() == proto::kMaxJournalAppendParts)) {
      SendRequest(std::exchange(request, {}));
      bytes = 0;
    }
    bytes += part_bytes;
    request.push_back(std::move(part));
  }
  SendRequest(std::move(request));
}

void JournalAppendBatcher::SendRequest(std::vector<Part> parts) {
  proto::JournalAppendMany req;
  req.parts.resize(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    req.parts[i].experiment = parts[i].journal;
    req.parts[i].expected_first_seq = parts[i].expected_first_seq;
    req.parts[i].records = std::move(*parts[i].records);  // encoded by Request, then given back
  }
  std::vector<journal::JournalSink::AppendDone> done(parts.size());
  std::vector<std::string> journals(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    done[i] = std::move(parts[i].done);
    journals[i] = std::move(parts[i].journal);
  }
  store_.Request(
      req,
      [done = std::move(done), journals = std::move(journals)](Result<proto::Decoded> reply) {
        Result<proto::JournalAppendManyAck> ack = Status::Internal("unset");
        if (!reply.ok()) {
          ack = reply.status();
        } else if (reply->type() != proto::JournalAppendManyAck::kType) {
          ack = Status::InvalidArgument("store answered '" + reply->type() +
                                        "' to journal_append_many");
        } else {
          ack = reply->As<proto::JournalAppendManyAck>();
          if (ack.ok() && ack->parts.size() != done.size()) {
            ack = Status::InvalidArgument(
                fmt::format("store acknowledged {} parts of {}", ack->parts.size(), done.size()));
          }
        }
        for (size_t i = 0; i < done.size(); ++i) {
          if (!ack.ok()) {
            done[i](ack.status());
            continue;
          }
          const proto::JournalAppendPartAck& part = ack->parts[i];
          if (part.experiment != journals[i]) {
            done[i](Status::InvalidArgument(
                fmt::format("store acknowledged journal {} for part {} of {}", part.experiment, i,
                            journals[i])));
          } else if (!part.error_code.empty()) {
            done[i](Status(bus::StatusCodeFromName(part.error_code), part.error));
          } else {
            done[i](part.last_seq);
          }
        }
      },
      kAppendTimeout);
  for (size_t i = 0; i < parts.size(); ++i) *parts[i].records = std::move(req.parts[i].records);
}

void BusJournalSink::Append(const std::string& journal, uint64_t expected_first_seq,
                            std::vector<std::string>& records, AppendDone done) {
  batcher_.Add(journal, expected_first_seq, records, std::move(done));
}

void BusJournalSink::AddTimer(std::chrono::milliseconds delay, std::function<void()> fn) {
  loop_.AddTimer(delay, std::move(fn));
}

}  // namespace tunebus
