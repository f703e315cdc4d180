// JournalReader: blocking reads of experiment journals from the checkpoint-store, for the
// scheduler's resume at start and for requests that need a journal that is not in memory
// (resume of a finished experiment, lsx). Uses its own DEALER; every request is resent each
// second until the deadline given at construction (the store may still be starting). A stop
// request (SIGTERM/SIGINT, libs/service/stop_request.hpp) ends a read at once: it fails with
// Unavailable "stopped waiting for ..." like a store that does not answer, and is never taken for
// a torn journal (nothing is cut).
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/security.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "libs/journal/replay.hpp"

namespace tunebus {

struct JournalSummary {
  std::string journal;        // "<name>-<experiment_id>"
  uint64_t last_seq = 0;      // records in it
  double submitted_at_s = 0;  // from its experiment_submitted record, seconds since the epoch
  bool ended = false;         // see JournalReader::Ended
};

/// "digits-3e962" -> "digits": journals are named "<experiment name>-<experiment_id>" (5 hex
/// digits).
std::string ExperimentNameOfJournal(const std::string& journal);

/// How long a control request waits for the journals it reads (the store may be busy).
constexpr std::chrono::milliseconds kJournalReadTimeout{5000};

class JournalReader {
 public:
  /// Requests give up `timeout` after construction, as `clock` tells.
  /// Its sockets are secured by `security` (which outlives it).
  JournalReader(zmq::context_t& ctx, const std::string& store_endpoint,
                const bus::Security& security, std::chrono::milliseconds timeout,
                const Clock& clock);
  /// Every non-empty journal. Errors: Unavailable when the store does not answer in time (or the
  /// service stops).
  Result<std::vector<JournalSummary>> List();
  /// True if the experiment of `journal` (holding `last_seq` records) ended: its newest record
  /// other than checkpoint_saved / checkpoint_deleted is experiment_ended. A checkpoint the store
  /// committed late may be journaled after the end; the experiment stays finished (a read-only
  /// load adopts it) and is not resumed. Reads the newest record, then 32 records a request.
  Result<bool> Ended(const std::string& journal, uint64_t last_seq);
  /// The experiment's state: the newest snapshot in the store (if any) plus the records after
  /// it, up to last_seq. A record that fails its frame's CRC or does not decode (torn or
  /// flipped, docs/journal-format.md) or does not apply ends the replay there, with an error
  /// log line naming its seq. Errors: Unavailable; Corruption for a journal that
  /// does not start with experiment_submitted.
  Result<journal::ReplayedExperiment> Replay(const std::string& journal, uint64_t last_seq);

  /// Replay() for a resume: a torn or corrupt tail (records after the last one that decodes
  /// and applies) is reported and cut from the store, so appends continue right after the
  /// last good record and the next replay reads them. `*last_seq` (the journal's length) is
  /// updated to the length after the cut. Errors: as Replay and Truncate.
  Result<journal::ReplayedExperiment> ReplayToResume(const std::string& journal,
                                                     uint64_t* last_seq);
  /// Calls `on_record` with every record of `journal` from seq `from` through `last_seq`, in
  /// order, stopping before a record that is torn or corrupt. Errors: Unavailable.
  Status ForEachRecord(const std::string& journal, uint64_t from, uint64_t last_seq,
                       const std::function<void(const nlohmann::json&)>& on_record);
  /// Cuts `journal` after `keep_through_seq` (its corrupt tail), fenced on its last seq being
  /// `expected_last_seq`. Returns the records removed. Errors: Unavailable; FailedPrecondition.
  Result<uint64_t> Truncate(const std::string& journal, uint64_t keep_through_seq,
                            uint64_t expected_last_seq);

 private:
  Result<std::vector<nlohmann::json>> Read(const std::string& journal, uint64_t from, uint32_t max);
  /// The newest snapshot of `journal`, or nullopt when there is none (or it cannot be read).
  Result<std::optional<journal::ReplayedExperiment>> NewestSnapshot(const std::string& journal);

  zmq::context_t& ctx_;
  std::string endpoint_;
  const bus::Security& security_;
  const Clock& clock_;
  SteadyTime deadline_;
};

}  // namespace tunebus
