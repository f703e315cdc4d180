// JournalWriter: the scheduler's write-ahead path to the experiment's journal.
//
// Records are framed (record_frame.hpp) and handed to the JournalSink as one batch per Flush
// (from the loop's idle hook). One batch is in flight at a time and everything appended
// meanwhile forms the next batch (group commit: the store syncs each batch once), so
// durability costs one batch of latency, not throughput, and the journal order is exactly the
// Append order even across retries. A batch carries at most kMaxBatchBytes of stored records:
// a larger backlog goes as several batches, one after another, so the store writes and syncs
// one part while the loop handles the decisions the previous part released and the results
// they bring back (a two-stage pipeline instead of lockstep waves; measured in
// docs/explanation/performance/index.md). AfterDurable(effect) runs `effect` only once every record
// appended before it is acknowledged as durable, in call order: this is how the scheduler releases
// effects (start a trial, ack a result, answer a control request) only after the record that
// causes them is safe (DESIGN.md "Journal and recovery").
// A failed append (State::kFailing) is retried with the same records after `retry_delay`,
// doubling per consecutive failure up to 30 s (back-off while the checkpoint-store is down or
// refuses writes); a success resets it. RetryNow() skips the wait: the scheduler calls it when
// the store says it takes writes again (services/scheduler/store/store_health.hpp), so writes
// resume within a poll of the store's recovery whatever the back-off. The sink's AddTimer times the
// retries.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/clock.hpp"
#include "libs/journal/journal_sink.hpp"

namespace tunebus::journal {

class JournalWriter {
 public:
  using Duration = std::chrono::milliseconds;
  enum class State {
    kOk,       // the last append succeeded (or none was tried yet)
    kFailing,  // the last append failed; its batch is retried until the store acknowledges it
  };
  /// Bytes of stored records one batch carries at most (a single larger record goes alone).
  static constexpr size_t kMaxBatchBytes = 48 * 1024;

  /// Writes the journal named `journal` through `sink` (owned). `clock` times the appends
  /// (last_append_latency_s) and must outlive the writer.
  JournalWriter(std::unique_ptr<JournalSink> sink, std::string journal,
                Duration retry_delay = Duration{500}, const Clock& clock = Clock::Real());

  /// Queues a record. Returns its position (1-based, counted by this writer).
  uint64_t Append(const nlohmann::json& record);
  /// Same, for a record already encoded (EncodeRecord's bytes, not yet framed).
  uint64_t AppendEncoded(std::string_view record);
  /// Runs `effect` once all records appended so far are durable (at once if they are).
  void AfterDurable(std::function<void()> effect);
  /// Hands the queued records to the sink as one batch. Cheap when nothing is queued or a
  /// batch is in flight.
  void Flush();
  /// Sends the failed batch again now if it waits for its retry timer (which then does
  /// nothing); no-op otherwise.
  void RetryNow();

  State state() const { return failed_tries_ > 0 ? State::kFailing : State::kOk; }
  /// While kFailing: the wall time (Unix seconds) of the first failure of this outage, the
  /// newest failure's status and the failed tries so far. Unspecified while kOk.
  double failing_since_wall_s() const { return failing_since_wall_s_; }
  const Status& last_error() const { return last_error_; }
  uint64_t failed_tries() const { return failed_tries_; }

  uint64_t appended() const { return appended_; }
  uint64_t durable() const { return durable_; }
  /// Last seq the store assigned (the journal's length), 0 before the first ack.
  uint64_t store_seq() const { return store_seq_; }
  /// For a writer continuing an existing journal (resume): it holds `records` already.
  void set_store_seq(uint64_t records) { store_seq_ = records; }
  const std::string& experiment() const { return journal_; }
  /// Seconds from handing the newest acknowledged batch to the sink to its ack (group commit
  /// latency).
  double last_append_latency_s() const { return last_latency_s_; }

 private:
  void Send();
  void OnAppended(const Result<uint64_t>& last_seq, SteadyTime sent, uint64_t last);
  void OnDurable(uint64_t last);

  std::unique_ptr<JournalSink> sink_;
  std::string journal_;
  Duration retry_delay_;  // first retry after a failed append
  Duration backoff_;      // the next retry's delay: doubles per failure up to kMaxBackoff
  const Clock& clock_;
  static constexpr Duration kMaxBackoff{30000};
  std::deque<std::string> queued_;              // stored records, not yet handed to the sink
  std::vector<std::string> in_flight_records_;  // the batch sent and not yet acknowledged (the
                                                // sink may read it until its done runs)
  uint64_t in_flight_last_ = 0;                 // its last record's position
  uint64_t appended_ = 0;
  uint64_t durable_ = 0;
  uint64_t store_seq_ = 0;
  bool in_flight_ = false;
  double last_latency_s_ = 0;
  double failing_since_wall_s_ = 0;
  Status last_error_;
  uint64_t failed_tries_ = 0;      // consecutive failed appends: > 0 is State::kFailing
  SteadyTime last_failure_log_{};  // a failing writer logs once, then every kFailureLogPeriod
  static constexpr Duration kFailureLogPeriod{30000};
  bool retry_pending_ = false;     // a retry timer is set for the in-flight batch
  uint64_t retry_generation_ = 0;  // a timer set for an older generation does nothing
  std::deque<std::pair<uint64_t, std::function<void()>>> effects_;
};

}  // namespace tunebus::journal
