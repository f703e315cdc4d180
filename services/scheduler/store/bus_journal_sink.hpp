// BusJournalSink: the scheduler's JournalSink, one per experiment's JournalWriter. A batch is
// queued on the scheduler's JournalAppendBatcher, which sends every experiment's batches of a
// poll round to the checkpoint-store as one JournalAppendMany (proto/store.hpp) over the
// scheduler's RequestClient when the round ends (Send, from the loop's idle hook after every
// experiment flushed its journal). The retry timers are the event loop's.
//
// One request per round, not one per experiment and round: with 50 experiments the store got 13
// times the appends of one experiment of the same trials (5,464 against 424 for 10,000 trials),
// and each cost a decode, an ack and the scheduler's request bookkeeping
// (docs/explanation/performance/many-experiments.md).
//
// A part succeeds only on a well-formed JournalAppendManyAck whose part for it names its journal
// and has no error; any other answer (an ErrorReply, another message type, an ack whose fields
// do not decode or that has too few parts) or no answer within kAppendTimeout fails every part
// of the request, and each writer retries its batch. Neither the loop nor the client is owned:
// both must outlive the sink and the batcher.
#pragma once

#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/journal/journal_sink.hpp"

namespace tunebus {

class JournalAppendBatcher {
 public:
  /// A group commit takes milliseconds; a store that does not answer in this time is presumed
  /// gone and the batches are resent (expected_first_seq keeps a retry from being written twice).
  static constexpr bus::Duration kAppendTimeout{3000};
  /// A request carries at most this many bytes of records (the rest goes in the next one, in the
  /// same Send): well under proto::kMaxMessageBytes.
  static constexpr size_t kMaxRequestBytes = 8u << 20;

  explicit JournalAppendBatcher(bus::RequestClient& store) : store_(store) {}

  /// Queues a journal's batch for the next Send: JournalSink::Append's arguments and contract
  /// (`records` stays unchanged until `done` runs; it is read at Send).
  void Add(const std::string& journal, uint64_t expected_first_seq,
           std::vector<std::string>& records, journal::JournalSink::AppendDone done);
  /// Sends the queued batches, in order, as one JournalAppendMany (more only past
  /// kMaxRequestBytes or proto::kMaxJournalAppendParts). Nothing when none is queued.
  void Send();
  size_t queued() const { return queued_.size(); }

 private:
  struct Part {
    std::string journal;
    uint64_t expected_first_seq = 0;
    std::vector<std::string>* records = nullptr;
    journal::JournalSink::AppendDone done;
  };
  void SendRequest(std::vector<Part> parts);

  bus::RequestClient& store_;
  std::vector<Part> queued_;
};

class BusJournalSink final : public journal::JournalSink {
 public:
  BusJournalSink(bus::EventLoop& loop, JournalAppendBatcher& batcher)
      : loop_(loop), batcher_(batcher) {}

  void Append(const std::string& journal, uint64_t expected_first_seq,
              std::vector<std::string>& records, AppendDone done) override;
  void AddTimer(std::chrono::milliseconds delay, std::function<void()> fn) override;

 private:
  bus::EventLoop& loop_;
  JournalAppendBatcher& batcher_;
};

}  // namespace tunebus
