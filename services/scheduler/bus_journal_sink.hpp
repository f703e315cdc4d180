// BusJournalSink: the scheduler's JournalSink. Each batch goes to the checkpoint-store as one
// JournalAppend request (proto/store.hpp) over the scheduler's RequestClient, and the retry
// timers are the event loop's.
//
// An append succeeds only on a well-formed JournalAppendAck; any other answer (an ErrorReply,
// another message type, an ack whose fields do not decode) or no answer within kAppendTimeout
// is an error, and the writer retries the batch. Neither the loop nor the client is owned:
// both must outlive the sink.
#pragma once

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/journal/journal_sink.hpp"

namespace tunebus {

class BusJournalSink final : public journal::JournalSink {
 public:
  /// A group commit takes milliseconds; a store that does not answer in this time is presumed
  /// gone and the batch is resent (expected_first_seq keeps a retry from being written twice).
  static constexpr bus::Duration kAppendTimeout{3000};

  BusJournalSink(bus::EventLoop& loop, bus::RequestClient& store) : loop_(loop), store_(store) {}

  void Append(const std::string& journal, uint64_t expected_first_seq,
              std::vector<std::string>& records, AppendDone done) override;
  void AddTimer(std::chrono::milliseconds delay, std::function<void()> fn) override;

 private:
  bus::EventLoop& loop_;
  bus::RequestClient& store_;
};

}  // namespace tunebus
