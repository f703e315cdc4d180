#include "libs/journal/journal_writer.hpp"

#include <spdlog/spdlog.h>

#include "libs/journal/records.hpp"
#include "proto/store.hpp"

namespace tunebus::journal {

namespace {
// A group commit takes milliseconds; a store that does not answer in this time is presumed
// gone and the batch is resent (expected_first_seq keeps a retry from being written twice).
constexpr bus::Duration kAppendTimeout{3000};
}  // namespace

JournalWriter::JournalWriter(bus::EventLoop& loop, bus::RequestClient& store,
                             std::string experiment, bus::Duration retry_delay)
    : loop_(loop),
      store_(store),
      experiment_(std::move(experiment)),
      retry_delay_(retry_delay),
      backoff_(retry_delay) {}

uint64_t JournalWriter::Append(const nlohmann::json& record) {
  return AppendEncoded(EncodeRecord(record));
}

uint64_t JournalWriter::AppendEncoded(std::string record) {
  queued_.push_back(std::move(record));
  return ++appended_;
}

void JournalWriter::AfterDurable(std::function<void()> effect) {
  if (effects_.empty() && durable_ >= appended_) {
    effect();
    return;
  }
  effects_.emplace_back(appended_, std::move(effect));
}

void JournalWriter::Flush() {
  if (queued_.empty() || in_flight_) return;
  in_flight_ = true;
  size_t bytes = 0;
  do {
    bytes += queued_.front().size();
    in_flight_records_.push_back(std::move(queued_.front()));
    queued_.pop_front();
  } while (!queued_.empty() && bytes + queued_.front().size() <= kMaxBatchBytes);
  in_flight_last_ = appended_ - queued_.size();
  Send();
}

void JournalWriter::Send() {
  proto::JournalAppend req;
  req.experiment = experiment_;
  req.records = std::move(in_flight_records_);
  req.expected_first_seq = store_seq_ + 1;  // a retry after a lost ack is not written twice
  const SteadyTime sent = loop_.clock().Now();
  const uint64_t last = in_flight_last_;
  store_.Request(
      req,
      [this, last, sent](Result<proto::Decoded> reply) {
        if (reply.ok() && reply->type() != proto::JournalAppendAck::kType) {
          reply =
              Status::InvalidArgument("store answered '" + reply->type() + "' to journal_append");
        }
        if (reply.ok()) {
          auto ack = reply->As<proto::JournalAppendAck>();
          if (ack.ok()) {
            store_seq_ = std::max(store_seq_, ack->last_seq);
            last_latency_s_ = loop_.clock().SecondsSince(sent);
            backoff_ = retry_delay_;
            in_flight_records_.clear();
            OnDurable(last);
            return;
          }
          reply = ack.status();
        }
        spdlog::error("Journal append of {} records for {} failed ({}); retrying in {} ms",
                      in_flight_records_.size(), experiment_, reply.status().ToString(),
                      backoff_.count());
        loop_.AddTimer(backoff_, [this] { Send(); });
        backoff_ = std::min(backoff_ * 2, kMaxBackoff);
      },
      kAppendTimeout);
  in_flight_records_ = std::move(req.records);  // kept for a retry until acknowledged
}

void JournalWriter::OnDurable(uint64_t last) {
  in_flight_ = false;
  durable_ = std::max(durable_, last);
  while (!effects_.empty() && effects_.front().first <= durable_) {
    auto effect = std::move(effects_.front().second);
    effects_.pop_front();
    effect();
  }
  Flush();  // what was appended while this batch was in flight
}

}  // namespace tunebus::journal
