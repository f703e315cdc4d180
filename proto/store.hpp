// checkpoint-store messages: experiment journals (append-only, sequence-numbered) and trial
// checkpoints (chunked blobs + metadata). Requesters use a DEALER to the store's ROUTER.
#pragma once

#include <string>
#include <vector>

#include "proto/envelope.hpp"

namespace tunebus::proto {

/// Append records to an experiment's journal. The store writes the batch with one synced
/// RocksDB write (group commit) before it answers, so an ack means durable.
struct JournalAppend {
  TUNEBUS_ENVELOPE("journal_append");
  std::string experiment;
  std::vector<std::string> records;  // opaque bytes, encoded by libs/journal
  /// Idempotency and fencing: the seq records[0] must get, 0 = no check. If the journal already
  /// holds those seqs (a retry after a lost ack) the store acks them again without writing; any
  /// other mismatch is failed_precondition (another writer appended in between).
  uint64_t expected_first_seq = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, records, expected_first_seq)
};

struct JournalAppendAck {
  TUNEBUS_ENVELOPE("journal_append_ack");
  std::string experiment;
  uint64_t first_seq = 0;  // seq of records[0]; seqs are 1-based and gapless per experiment
  uint64_t last_seq = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, first_seq, last_seq)
};

/// One journal's part of a JournalAppendMany: the fields of a JournalAppend.
struct JournalAppendPart {
  std::string experiment;
  std::vector<std::string> records;
  uint64_t expected_first_seq = 0;
  TUNEBUS_DEFINE_MAP(experiment, records, expected_first_seq)
};

/// Most parts in one JournalAppendMany; more is invalid_argument.
inline constexpr size_t kMaxJournalAppendParts = 4096;

/// Appends to several journals at once, each part exactly as one JournalAppend would, in order,
/// in the store's one group commit. The scheduler sends every experiment's appends of a poll
/// round as one message (one request per round, not one per experiment and round). A malformed
/// part fails the whole request (nothing is appended). Answered by JournalAppendManyAck once
/// durable. Since v1.10.
struct JournalAppendMany {
  TUNEBUS_ENVELOPE("journal_append_many");
  std::vector<JournalAppendPart> parts;  // 1..kMaxJournalAppendParts
  TUNEBUS_DEFINE_MAP(v, type, id, parts)
};

/// One part's outcome: its seqs, or the error a JournalAppend of it would get.
struct JournalAppendPartAck {
  std::string experiment;
  uint64_t first_seq = 0;  // 0 when error_code is set
  uint64_t last_seq = 0;
  std::string error_code;  // "" = appended (durable); else a StatusCodeName
  std::string error;       // human-readable, with error_code
  TUNEBUS_DEFINE_MAP(experiment, first_seq, last_seq, error_code, error)
};

struct JournalAppendManyAck {
  TUNEBUS_ENVELOPE("journal_append_many_ack");
  std::vector<JournalAppendPartAck> parts;  // one per request part, same order
  TUNEBUS_DEFINE_MAP(v, type, id, parts)
};

/// Read records with seq >= from_seq, at most max_records (<= 10000).
struct JournalRead {
  TUNEBUS_ENVELOPE("journal_read");
  std::string experiment;
  uint64_t from_seq = 1;
  uint32_t max_records = 1000;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, from_seq, max_records)
};

struct JournalReadReply {
  TUNEBUS_ENVELOPE("journal_read_reply");
  std::string experiment;
  uint64_t first_seq = 0;  // seq of records[0]
  std::vector<std::string> records;
  bool end = true;  // no records after these
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, first_seq, records, end)
};

/// Cut a journal's corrupt tail: delete the records after keep_through_seq, so appends continue
/// right after the last good record (DESIGN.md: a torn or corrupt tail is detected, reported
/// and cut). Fenced: refused with failed_precondition unless the journal's last seq is
/// expected_last_seq. Answered by JournalTruncateAck once the cut is durable.
struct JournalTruncate {
  TUNEBUS_ENVELOPE("journal_truncate");
  std::string experiment;
  uint64_t keep_through_seq = 0;
  uint64_t expected_last_seq = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, keep_through_seq, expected_last_seq)
};

struct JournalTruncateAck {
  TUNEBUS_ENVELOPE("journal_truncate_ack");
  std::string experiment;
  uint64_t last_seq = 0;  // the journal's last seq after the cut
  uint64_t removed = 0;   // records deleted
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, last_seq, removed)
};

/// Delete a finished experiment: its journal and every checkpoint whose id starts with
/// "<experiment>/" (its trials' checkpoints and snapshots), in one synced write, then compact
/// those key ranges with blob garbage collection forced so the space leaves the disk (blocks the
/// store while it runs; docs/explanation/performance/delete.md has its
/// cost). Answered by ExperimentDeleteAck. Errors: invalid_argument (the name), unavailable
/// (degraded), io_error.
struct ExperimentDelete {
  TUNEBUS_ENVELOPE("experiment_delete");
  std::string experiment;  // the journal name, "<name>-<id>"
  TUNEBUS_DEFINE_MAP(v, type, id, experiment)
};

struct ExperimentDeleteAck {
  TUNEBUS_ENVELOPE("experiment_delete_ack");
  std::string experiment;
  uint64_t records = 0;       // journal records deleted
  uint64_t checkpoints = 0;   // checkpoints deleted (snapshots included)
  uint64_t bytes_before = 0;  // the store's live SST and blob files, bytes, before
  uint64_t bytes_after = 0;   // and after the delete and its compaction
  double compaction_s = 0;    // seconds the compaction took
  TUNEBUS_DEFINE_MAP(v, type, id, experiment, records, checkpoints, bytes_before, bytes_after,
                     compaction_s)
};

/// List experiments that have a journal.
struct JournalList {
  TUNEBUS_ENVELOPE("journal_list");
  TUNEBUS_DEFINE_MAP(v, type, id)
};

struct JournalListReply {
  TUNEBUS_ENVELOPE("journal_list_reply");
  std::vector<std::string> experiments;
  std::vector<uint64_t> last_seqs;  // parallel to experiments
  TUNEBUS_DEFINE_MAP(v, type, id, experiments, last_seqs)
};

/// The checkpoint id a shipped working_dir archive is stored under (content-addressed).
inline std::string WorkingDirBlobId(const std::string& sha256) { return "working_dirs/" + sha256; }

/// Store one chunk of a checkpoint. Chunks are written in order 0..n-1; the one with
/// last=true commits the checkpoint (metadata, total size) atomically.
struct CheckpointPut {
  TUNEBUS_ENVELOPE("checkpoint_put");
  std::string checkpoint_id;
  uint32_t chunk_index = 0;
  std::vector<char> data;  // <= kCheckpointChunkBytes
  bool last = false;
  std::string metadata_json;  // on the last chunk: {"trial_id", "iteration", ...}
  /// On the last chunk, optional (since v1.8): the SHA-256 (64 lowercase hex digits) the chunks
  /// concatenated must have. The store checks it before committing; on a mismatch it answers
  /// `corruption` and drops the upload (nothing is committed).
  std::string sha256;
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoint_id, chunk_index, data, last, metadata_json, sha256)
};

struct CheckpointPutAck {
  TUNEBUS_ENVELOPE("checkpoint_put_ack");
  std::string checkpoint_id;
  uint32_t chunk_index = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoint_id, chunk_index)
};

struct CheckpointGet {
  TUNEBUS_ENVELOPE("checkpoint_get");
  std::string checkpoint_id;
  uint32_t chunk_index = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoint_id, chunk_index)
};

struct CheckpointGetReply {
  TUNEBUS_ENVELOPE("checkpoint_get_reply");
  std::string checkpoint_id;
  uint32_t chunk_index = 0;
  uint32_t num_chunks = 0;
  std::vector<char> data;
  std::string metadata_json;
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoint_id, chunk_index, num_chunks, data, metadata_json)
};

/// List committed checkpoints whose id starts with `prefix` (e.g. "<experiment>/<trial_id>/").
struct CheckpointList {
  TUNEBUS_ENVELOPE("checkpoint_list");
  std::string prefix;
  TUNEBUS_DEFINE_MAP(v, type, id, prefix)
};

struct CheckpointInfo {
  std::string checkpoint_id;
  uint64_t size_bytes = 0;
  uint32_t num_chunks = 0;
  std::string metadata_json;
  TUNEBUS_DEFINE_MAP(checkpoint_id, size_bytes, num_chunks, metadata_json)
};

struct CheckpointListReply {
  TUNEBUS_ENVELOPE("checkpoint_list_reply");
  std::vector<CheckpointInfo> checkpoints;
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoints)
};

struct CheckpointDelete {
  TUNEBUS_ENVELOPE("checkpoint_delete");
  std::string checkpoint_id;
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoint_id)
};

struct CheckpointDeleteAck {
  TUNEBUS_ENVELOPE("checkpoint_delete_ack");
  std::string checkpoint_id;
  bool deleted = false;  // false if it did not exist
  TUNEBUS_DEFINE_MAP(v, type, id, checkpoint_id, deleted)
};

/// The store's health: whether it takes writes. Cheap (no RocksDB call); the
/// scheduler asks about once a second and shows the answer in `tunectl status`.
struct StoreStatus {
  TUNEBUS_ENVELOPE("store_status");
  TUNEBUS_DEFINE_MAP(v, type, id)
};

struct StoreStatusReply {
  TUNEBUS_ENVELOPE("store_status_reply");
  /// "ok" (writes taken) or "degraded" (a RocksDB write failed: writes are refused with
  /// io_error, reads served, and the store retries RocksDB's recovery about once a second).
  std::string state = "ok";
  /// Why it is degraded (RocksDB's error, "IO error: No space left on device: ..."); "" when ok.
  std::string reason;
  /// Unix time (seconds) of the last change of `state`; 0 = never changed since start.
  double since_unix_s = 0;
  /// Times the store went back from degraded to ok without a restart.
  uint64_t recoveries = 0;
  TUNEBUS_DEFINE_MAP(v, type, id, state, reason, since_unix_s, recoveries)
};

}  // namespace tunebus::proto
