// JournalStore: experiment journals in the StoreDb (append-only, sequence-numbered; DESIGN.md
// "Journal and recovery").
//
// Each experiment has a journal of opaque records with seqs 1, 2, 3, … (1-based, gapless,
// never reused). Appends are group-committed: AppendBatch writes every record of many
// append requests plus the journals' last seqs in ONE RocksDB WriteBatch with one synced
// write, so an acknowledged record is durable and a crash never leaves a gap or half a batch.
// Last seqs are loaded from "jm/" keys at Open and kept in memory.
//
// Thread-compatible: used from the service's loop thread only. Does not own the StoreDb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "proto/envelope.hpp"
#include "services/checkpoint-store/store_db.hpp"

namespace tunebus::store {

/// Limits on untrusted input, bytes unless noted. An append's total size is bounded by the
/// transport (one frame ≤ proto::kMaxMessageBytes).
inline constexpr size_t kMaxExperimentNameBytes = 256;
inline constexpr size_t kMaxJournalRecordBytes = 8u << 20;        // keeps read replies < 32 MiB
inline constexpr size_t kMaxRecordsPerAppend = proto::kMaxArray;  // records
inline constexpr uint32_t kMaxReadRecords = 10000;                // records per read reply
inline constexpr size_t kReadReplyBudgetBytes = 16u << 20;        // records per read reply, bytes

/// One append request: records for one experiment, in order.
struct JournalAppendRequest {
  std::string experiment;
  std::vector<std::string> records;
  uint64_t expected_first_seq = 0;  // see proto::JournalAppend; 0 = append wherever the end is
};

/// The seqs assigned to one append request's records: first_seq..last_seq inclusive.
struct SeqRange {
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
};

/// A page of records: records[i] has seq first_seq + i.
struct JournalPage {
  uint64_t first_seq = 0;  // 0 if records is empty
  std::vector<std::string> records;
  bool end = true;  // no record with a higher seq exists (at read time)
};

class JournalStore {
 public:
  /// Loads every journal's last seq. `db` must outlive the JournalStore.
  /// Errors: IoError, Corruption (a "jm/" value that is not 8 bytes).
  static Result<std::unique_ptr<JournalStore>> Open(StoreDb& db);

  /// Validates one append request: experiment non-empty, ≤ kMaxExperimentNameBytes, no '/'
  /// or NUL; 1..kMaxRecordsPerAppend records, each ≤ kMaxJournalRecordBytes.
  /// Errors: InvalidArgument naming the problem.
  static Status ValidateAppend(const JournalAppendRequest& request);
  /// Validates an experiment name alone (for reads). Errors: InvalidArgument.
  static Status ValidateExperiment(const std::string& experiment);

  /// Appends all `requests` (each already validated) with one atomic, synced write; requests
  /// to the same experiment get consecutive seqs in the order given. Returns one SeqRange per
  /// request: a retried request (expected_first_seq already written) gets its old range back
  /// and writes nothing; a request whose expected_first_seq is neither that nor the next seq
  /// gets {0, 0} (a conflict) and writes nothing. Errors: IoError from RocksDB, in which case no
  /// seq is consumed in memory (the batch may still be on disk if only its sync failed: RocksDB
  /// then refuses further writes and a restart replays whatever reached the WAL).
  Result<std::vector<SeqRange>> AppendBatch(const std::vector<JournalAppendRequest>& requests);

  /// Records with seq ≥ from_seq (0 counts as 1): at most max_records (clamped to
  /// [1, kMaxReadRecords]) and, past the first record, at most kReadReplyBudgetBytes of record
  /// bytes. An unknown experiment reads as empty with end=true.
  /// Errors: IoError; Corruption if the stored journal has a gap or a bad key.
  Result<JournalPage> Read(const std::string& experiment, uint64_t from_seq, uint32_t max_records);

  /// Deletes the records after `keep_through_seq` with one synced write and makes it the last
  /// seq (a cut of a corrupt tail; the next append gets keep_through_seq + 1). Returns how
  /// many records were removed (0 if keep_through_seq >= the last seq).
  /// Errors: FailedPrecondition if the last seq is not `expected_last_seq` (another writer);
  /// IoError from RocksDB.
  Result<uint64_t> Truncate(const std::string& experiment, uint64_t keep_through_seq,
                            uint64_t expected_last_seq);

  /// Adds the deletion of the experiment's records and its last seq to `batch` (the caller
  /// writes it, then calls Forget). Returns how many records that deletes.
  /// Errors: IoError building the batch.
  Result<uint64_t> DeleteInto(const std::string& experiment, rocksdb::WriteBatch& batch) const;
  /// After DeleteInto's batch is written: the experiment has no journal (a new append starts
  /// at seq 1).
  void Forget(const std::string& experiment) { last_seqs_.erase(experiment); }

  /// Every experiment with a journal and its last seq, sorted by name.
  const std::map<std::string, uint64_t>& last_seqs() const { return last_seqs_; }
  /// The experiment's last seq, 0 if it has no journal.
  uint64_t LastSeq(const std::string& experiment) const;

 private:
  explicit JournalStore(StoreDb& db) : db_(db) {}
  StoreDb& db_;
  std::map<std::string, uint64_t> last_seqs_;
};

}  // namespace tunebus::store
