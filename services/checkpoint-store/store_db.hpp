// StoreDb: the checkpoint-store's RocksDB database and its key layout (DESIGN.md
// "checkpoint-store").
//
// One RocksDB database in `data_dir`, default column family, four key prefixes:
//
//   j/<experiment>/<seq>        journal record; <seq> is a big-endian u64 (8 bytes), 1-based,
//                               gapless per experiment; value = the record's opaque bytes.
//                               Experiment names never contain '/' or NUL (JournalStore checks),
//                               so "j/<experiment>/" is an exact prefix of one journal.
//   jm/<experiment>             journal meta; value = last seq as a big-endian u64 (8 bytes).
//   c/<checkpoint_id>\0<index>  checkpoint chunk; <index> is a big-endian u32 (4 bytes), 0-based;
//                               value = the chunk's bytes. The separator is NUL (not '/')
//                               because ids are path-like ("exp/trial/3"): with '/', the chunks
//                               of "a/b" would share a prefix with those of "a/b/c"; ids never
//                               contain NUL (CheckpointBlobStore checks).
//   cm/<checkpoint_id>          checkpoint meta; value = msgpack map {size_bytes, num_chunks,
//                               metadata_json, committed} (CheckpointMeta).
//
// Big-endian integers make RocksDB's bytewise order equal numeric order, so a journal or a
// checkpoint is one contiguous key range. Large values (checkpoint chunks) go to RocksDB blob
// files (integrated BlobDB) so compactions do not rewrite them.
//
// Failures: RocksDB's info log goes to spdlog (RocksDbSpdlogLogger), so no LOG file is written
// in `data_dir`, and every file RocksDB keeps open there (WAL, MANIFEST, SST and blob files) is
// written under RocksDB's background-error handler. A failed write (out of space, say) stops
// RocksDB's writes with a "hard" background error until Resume() succeeds; the owner calls it
// (CheckpointStore retries about once a second). RocksDB's own recovery of an out-of-space hard
// error is turned off (its SstFileManager polls only every 5 s, and Resume() answers Busy while it
// runs), so Resume() is the way back from a full disk; RocksDB still recovers by itself from
// out-of-space "soft" errors (a compaction; writes go on) and from retryable I/O errors.
//
// Thread-compatible: the owning service uses it from its loop thread only.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/write_batch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus::store {

inline constexpr std::string_view kJournalPrefix = "j/";
inline constexpr std::string_view kJournalMetaPrefix = "jm/";
inline constexpr std::string_view kChunkPrefix = "c/";
inline constexpr std::string_view kCheckpointMetaPrefix = "cm/";

/// Appends `v` big-endian (8 / 4 bytes) to `out`.
void PutBigEndian64(std::string& out, uint64_t v);
void PutBigEndian32(std::string& out, uint32_t v);
/// Reads a big-endian integer from exactly 8 / 4 bytes; nullopt if the size is wrong.
std::optional<uint64_t> GetBigEndian64(std::string_view bytes);
std::optional<uint32_t> GetBigEndian32(std::string_view bytes);

/// "j/<experiment>/" and "j/<experiment>/<seq>".
std::string JournalRecordPrefix(std::string_view experiment);
std::string JournalRecordKey(std::string_view experiment, uint64_t seq);
/// "jm/<experiment>".
std::string JournalMetaKey(std::string_view experiment);
/// "c/<id>\0" and "c/<id>\0<index>"; ChunkRangeEnd is the exclusive end of all of id's chunks.
std::string ChunkPrefix(std::string_view checkpoint_id);
std::string ChunkKey(std::string_view checkpoint_id, uint32_t index);
std::string ChunkRangeEnd(std::string_view checkpoint_id);
/// "cm/<id>".
std::string CheckpointMetaKey(std::string_view checkpoint_id);

/// The smallest key greater than every key starting with `prefix` ("" if none exists, i.e.
/// `prefix` is all 0xff bytes); used as an exclusive iteration upper bound.
std::string PrefixSuccessor(std::string_view prefix);

/// Maps a RocksDB status to a tunebus Status: NotFound → kNotFound, Corruption → kCorruption,
/// everything else → kIoError. `what` prefixes the message ("write journal batch").
Status FromRocks(const rocksdb::Status& s, std::string_view what);

class StoreDb {
 public:
  /// Opens (creating if missing, with parent directories) the database in `data_dir`.
  /// `sync` is the default for Write(…, durable=true). `file_system` is a test seam: the
  /// rocksdb::FileSystem RocksDB reads and writes its files through (a FileSystemWrapper that
  /// injects faults); null = the real one. Errors: IoError (cannot create the directory, the
  /// database is locked by another process, …), Corruption.
  static Result<std::unique_ptr<StoreDb>> Open(
      const std::string& data_dir, bool sync,
      std::shared_ptr<rocksdb::FileSystem> file_system = nullptr);
  /// Flushes nothing extra (the WAL already holds every acknowledged write) and closes the DB.
  ~StoreDb();
  StoreDb(const StoreDb&) = delete;
  StoreDb& operator=(const StoreDb&) = delete;

  /// Writes `batch` atomically. `durable`: fsync the WAL first when the store syncs (this
  /// also makes every earlier unsynced write durable, since the WAL is sequential).
  /// Errors: IoError; after one RocksDB may refuse every write (a hard background error) until
  /// Resume() succeeds.
  Status Write(rocksdb::WriteBatch& batch, bool durable);
  /// Writes `batch` atomically without the WAL: readable at once, on disk only once a flush
  /// (a full memtable's, Flush(), or a clean close) wrote it; a crash before that loses it.
  /// Checkpoint chunks go this way so their bytes reach the disk once (in blob files), not
  /// twice (WAL, then blob files). Errors: IoError, as Write.
  Status WriteUnlogged(rocksdb::WriteBatch& batch);
  /// Asks RocksDB to recover from a background error (DB::Resume(): flush the memtables, start
  /// a new WAL, clear the error) so that writes are taken again. Ok also when there was nothing
  /// to recover from. Blocks for the flush. Errors: IoError with RocksDB's error (still out of
  /// space; "Busy" while RocksDB's own recovery runs; a fatal error that no Resume() clears),
  /// Corruption.
  Status Resume();
  /// Compacts the keys in [begin, end) down to the last level with blob garbage collection
  /// forced (every blob of the range relocated, so blob files holding only deleted values are
  /// dropped): deleted keys' space leaves the disk. Blocks until done. Errors: IoError.
  Status CompactAway(const std::string& begin, const std::string& end);
  /// Bytes of the live SST and blob files: what the data takes on disk (the WAL and the
  /// memtables aside: Flush first to count everything).
  uint64_t LiveBytes();
  /// What RocksDB holds in memory, bytes: its memtables (active, being flushed and kept for
  /// history) and its block cache's usage (8 MB capacity, RocksDB's default).
  struct MemoryUsage {
    uint64_t memtables = 0;
    uint64_t block_cache = 0;
  };
  MemoryUsage Memory();
  /// Writes the memtables to SST and blob files, synced: everything WriteUnlogged wrote before
  /// is then durable. Blocks. Errors: IoError.
  Status Flush();
  /// The value of `key`, nullopt if absent. Errors: IoError, Corruption.
  Result<std::optional<std::string>> Get(const std::string& key);
  /// A forward iterator over the keys in [lower, upper) (upper "" = unbounded), positioned
  /// at `lower`. Check `it->status()` once `Valid()` turns false. Its blocks do not enter the
  /// block cache (RocksDB's `fill_cache = false`, as for any scan).
  class Range {
   public:
    bool Valid() const { return it_->Valid(); }
    void Next() { it_->Next(); }
    rocksdb::Slice key() const { return it_->key(); }
    rocksdb::Slice value() const { return it_->value(); }
    rocksdb::Status status() const { return it_->status(); }

   private:
    friend class StoreDb;
    std::string lower_, upper_;
    rocksdb::Slice lower_slice_, upper_slice_;  // ReadOptions points at these
    std::unique_ptr<rocksdb::Iterator> it_;
  };
  std::unique_ptr<Range> NewRange(std::string lower, std::string upper);

  const std::string& data_dir() const { return data_dir_; }
  bool sync() const { return sync_; }

 private:
  StoreDb(std::unique_ptr<rocksdb::Env> env, std::unique_ptr<rocksdb::DB> db, std::string data_dir,
          bool sync);
  // RocksDB's Env over Open's file_system (null: Env::Default()); declared first, so it
  // outlives db_.
  std::unique_ptr<rocksdb::Env> env_;
  std::unique_ptr<rocksdb::DB> db_;
  std::string data_dir_;
  bool sync_;
};

}  // namespace tunebus::store
