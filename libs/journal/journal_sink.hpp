// JournalSink: where a JournalWriter's batches of records go, and the timer its retries wait on.
//
// The writer owns one sink. The scheduler's sink sends each batch to the checkpoint-store in a
// JournalAppendMany over the bus (services/scheduler/store/bus_journal_sink.hpp); tests use an
// in-memory sink that acknowledges or fails batches when the test says so. Both calls are made on,
// and both callbacks run on, the writer's thread (the scheduler's event loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus::journal {

class JournalSink {
 public:
  /// The append's outcome: the seq the store gave the batch's last record, or why the batch
  /// is not known to be durable (the writer then retries the same batch).
  using AppendDone = std::function<void(Result<uint64_t> last_seq)>;

  virtual ~JournalSink() = default;

  /// Appends `records` (stored records, FrameRecord's bytes, in order) to the journal named
  /// `journal` as seqs expected_first_seq, expected_first_seq + 1, ...; a store that already
  /// holds them from an earlier try acknowledges without writing them twice. The caller keeps
  /// `records` unchanged until `done` runs, and the sink may read it until then (the
  /// scheduler's sends every experiment's batches of a round at its end); the sink leaves it as
  /// it found it. Calls `done` exactly once, later, once the records are durable (Ok) or the
  /// append failed or timed out (an error).
  virtual void Append(const std::string& journal, uint64_t expected_first_seq,
                      std::vector<std::string>& records, AppendDone done) = 0;

  /// Runs `fn` once, `delay` from now (the writer's back-off before a retry).
  virtual void AddTimer(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

}  // namespace tunebus::journal
