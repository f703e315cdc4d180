#include "services/scheduler/bus_journal_sink.hpp"

#include "proto/store.hpp"

namespace tunebus {

void BusJournalSink::Append(const std::string& journal, uint64_t expected_first_seq,
                            std::vector<std::string>& records, AppendDone done) {
  proto::JournalAppend req;
  req.experiment = journal;
  req.records = std::move(records);  // encoded by Request, then given back
  req.expected_first_seq = expected_first_seq;
  store_.Request(
      req,
      [done = std::move(done)](Result<proto::Decoded> reply) {
        if (!reply.ok()) return done(reply.status());
        if (reply->type() != proto::JournalAppendAck::kType) {
          return done(
              Status::InvalidArgument("store answered '" + reply->type() + "' to journal_append"));
        }
        auto ack = reply->As<proto::JournalAppendAck>();
        if (!ack.ok()) return done(ack.status());
        done(ack->last_seq);
      },
      kAppendTimeout);
  records = std::move(req.records);
}

void BusJournalSink::AddTimer(std::chrono::milliseconds delay, std::function<void()> fn) {
  loop_.AddTimer(delay, std::move(fn));
}

}  // namespace tunebus
