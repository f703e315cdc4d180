// CheckpointBlobStore: trial checkpoints in the StoreDb as chunked blobs plus metadata
// (DESIGN.md "checkpoint-store"; key layout in store_db.hpp).
//
// A checkpoint id is path-like, "<experiment>/<trial_id>/<n>". An upload writes chunks
// 0, 1, …, n-1 in order; each chunk and the upload's progress (CheckpointMeta with
// committed=false) are written together, and the chunk with last=true commits the meta
// (size, chunk count, metadata JSON) in the same atomic, synced write. Readers only ever see
// committed checkpoints. Chunk 0 restarts an uncommitted upload (its old chunks are dropped);
// a committed checkpoint is immutable until deleted.
//
// The chunks before the last are written without RocksDB's WAL (StoreDb::WriteUnlogged), so a
// checkpoint's bytes reach the disk once, in blob files, when a memtable is flushed; the
// committing chunk first flushes the memtables (synced), then commits with a synced WAL write,
// so a committed checkpoint's chunks are all durable. An upload in progress survives a clean
// restart (closing RocksDB flushes) but after a crash only as far as a flush wrote it: its
// progress is then an earlier chunk count, consistent with the chunks kept, and the next chunk
// the uploader sends is refused as out of order (the uploader starts again from chunk 0).
//
// Thread-compatible: used from the service's loop thread only. Does not own the StoreDb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "proto/envelope.hpp"
#include "services/checkpoint-store/store_db.hpp"

namespace tunebus::store {

/// Limits on untrusted input, bytes unless noted. Chunk data is ≤ proto::kCheckpointChunkBytes.
inline constexpr size_t kMaxCheckpointIdBytes = 512;
inline constexpr size_t kMaxCheckpointMetadataBytes = 64u << 10;
inline constexpr size_t kMaxListEntries = 10000;            // checkpoints per list reply
inline constexpr size_t kListReplyBudgetBytes = 16u << 20;  // ids + metadata per list reply

/// The stored meta of a checkpoint ("cm/<id>"), msgpack-encoded.
struct CheckpointMeta {
  uint64_t size_bytes = 0;    // sum of the chunks written so far, bytes
  uint32_t num_chunks = 0;    // chunks written so far; the next expected chunk index
  std::string metadata_json;  // set on commit, "" or a JSON value from the last chunk
  bool committed = false;     // true once the last chunk is written
  TUNEBUS_DEFINE_MAP(size_bytes, num_chunks, metadata_json, committed)
};

/// One committed checkpoint as listed.
struct CheckpointEntry {
  std::string checkpoint_id;
  CheckpointMeta meta;
};

/// One chunk read back, with its checkpoint's meta.
struct CheckpointChunk {
  std::string data;
  CheckpointMeta meta;
};

class CheckpointBlobStore {
 public:
  /// `db` must outlive the store.
  explicit CheckpointBlobStore(StoreDb& db) : db_(db) {}

  /// Validates an id: non-empty, ≤ kMaxCheckpointIdBytes, no NUL. Errors: InvalidArgument.
  static Status ValidateId(const std::string& checkpoint_id);

  /// Stores chunk `index` of `checkpoint_id`; `last` commits with `metadata_json` (must be
  /// empty or valid JSON, ≤ kMaxCheckpointMetadataBytes; ignored unless last). Only the
  /// committing write is synced. Errors: InvalidArgument (bad id, data larger than
  /// proto::kCheckpointChunkBytes, bad metadata); FailedPrecondition (already committed, or
  /// index is not the next expected one: no upload in progress and index > 0, or index !=
  /// chunks written so far); IoError, Corruption. Not `last`: written without the WAL (durable
  /// once flushed); `last` after earlier chunks: flushes first (blocks for the memtables'
  /// write, ≤ RocksDB's write_buffer_size per memtable). With `last` and a non-empty `sha256` (64
  /// hex digits), the chunks' SHA-256 must equal it: otherwise the upload is deleted and the error
  /// is Corruption naming both digests (nothing is committed).
  Status Put(const std::string& checkpoint_id, uint32_t index, const std::vector<char>& data,
             bool last, const std::string& metadata_json, const std::string& sha256 = "");

  /// Chunk `index` of a committed checkpoint. Errors: NotFound (unknown or uncommitted id,
  /// index ≥ num_chunks); Corruption (a committed chunk is missing); IoError.
  Result<CheckpointChunk> Get(const std::string& checkpoint_id, uint32_t index);

  /// Committed checkpoints whose id starts with `prefix` ("" = all), in id order.
  /// Errors: InvalidArgument (prefix > kMaxCheckpointIdBytes or has NUL); ResourceExhausted
  /// (more than kMaxListEntries match or they exceed kListReplyBudgetBytes: narrow the
  /// prefix; a list is never silently truncated); Corruption; IoError.
  Result<std::vector<CheckpointEntry>> List(const std::string& prefix);

  /// Deletes a checkpoint (committed or a partial upload): its chunks and meta, atomically
  /// and synced. Returns false if it did not exist. Errors: IoError.
  Result<bool> Delete(const std::string& checkpoint_id);
  /// Adds the deletion of every checkpoint whose id starts with `prefix` (committed or partial:
  /// chunks and meta) to `batch`, for the caller to write. Returns how many it deletes.
  /// Errors: IoError, Corruption (scanning the metas).
  Result<uint64_t> DeletePrefixInto(const std::string& prefix, rocksdb::WriteBatch& batch);

 private:
  /// The meta of `checkpoint_id`, nullopt if absent. Errors: Corruption, IoError.
  Result<std::optional<CheckpointMeta>> LoadMeta(const std::string& checkpoint_id);
  /// SHA-256 hex of chunks 0..num_chunks-1 already written of `checkpoint_id`, then `tail`.
  Result<std::string> DigestOfUpload(const std::string& checkpoint_id, uint32_t num_chunks,
                                     const std::vector<char>& tail);

  StoreDb& db_;
};

}  // namespace tunebus::store
