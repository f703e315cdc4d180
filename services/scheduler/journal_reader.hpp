// JournalReader: blocking reads of experiment journals from the checkpoint-store, for the
// scheduler's resume at start and for requests that need a journal that is not in memory
// (resume of a finished experiment, lsx). Uses its own DEALER; every request is resent each
// second until the deadline given at construction (the store may still be starting).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

struct JournalSummary {
  std::string journal;       // "<name>-<experiment_id>"
  uint64_t last_seq = 0;     // records in it
  double submitted_at_s = 0; // from its experiment_submitted record, seconds since the epoch
  bool ended = false;        // its last record is experiment_ended
};

class JournalReader {
 public:
  JournalReader(zmq::context_t& ctx, const std::string& store_endpoint, std::chrono::milliseconds timeout);
  /// Every non-empty journal. Errors: Unavailable when the store does not answer in time.
  Result<std::vector<JournalSummary>> List();
  /// Records 1..last_seq, decoded, in order. A record that does not decode (torn tail) ends the
  /// list there, with an error log line. Errors: Unavailable.
  Result<std::vector<nlohmann::json>> ReadAll(const std::string& journal, uint64_t last_seq);

 private:
  Result<std::vector<nlohmann::json>> Read(const std::string& journal, uint64_t from, uint32_t max);

  zmq::context_t& ctx_;
  std::string endpoint_;
  bus::Clock::time_point deadline_;
};

}  // namespace tunebus
