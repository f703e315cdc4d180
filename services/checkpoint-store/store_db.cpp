#include "services/checkpoint-store/store_db.hpp"

#include <fmt/format.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>

#include "libs/bus/service_guard.hpp"
#include "services/checkpoint-store/rocksdb_spdlog_logger.hpp"

namespace tunebus::store {

namespace {

// RocksDB's memtable (bytes): it holds every write since the last flush in arena blocks of an
// eighth of its size, so the store's resident memory grows with the bytes written until it is
// full. RocksDB's default, 64 MB, made a long-lived suite's memory grow with the trials it had run
// (docs/explanation/performance/soak.md); 4 MB bounds it at two memtables (the active one and
// one being flushed). A checkpoint chunk (proto::kCheckpointChunkBytes) fills one.
constexpr size_t kMemtableBytes = 4u << 20;

// Turns off RocksDB's automatic recovery from hard background errors (out of space: its
// SstFileManager retries every 5 s, and DB::Resume() answers Busy meanwhile), so that the
// store's own DB::Resume() about once a second recovers (CheckpointStore). Soft errors keep
// RocksDB's recovery: writes go on through them and Resume() has nothing to resume.
class ResumeHardErrorsByHand final : public rocksdb::EventListener {
 public:
  const char* Name() const override { return "tunebus.ResumeHardErrorsByHand"; }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/, rocksdb::Status bg_error,
                            bool* auto_recovery) override {
    if (bg_error.severity() >= rocksdb::Status::Severity::kHardError) *auto_recovery = false;
  }
};

}  // namespace

void PutBigEndian64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

void PutBigEndian32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

std::optional<uint64_t> GetBigEndian64(std::string_view bytes) {
  if (bytes.size() != 8) return std::nullopt;
  uint64_t v = 0;
  for (char c : bytes) v = (v << 8) | uint8_t(c);
  return v;
}

std::optional<uint32_t> GetBigEndian32(std::string_view bytes) {
  if (bytes.size() != 4) return std::nullopt;
  uint32_t v = 0;
  for (char c : bytes) v = (v << 8) | uint8_t(c);
  return v;
}

std::string JournalRecordPrefix(std::string_view experiment) {
  std::string k(kJournalPrefix);
  k.append(experiment);
  k.push_back('/');
  return k;
}

std::string JournalRecordKey(std::string_view experiment, uint64_t seq) {
  std::string k = JournalRecordPrefix(experiment);
  PutBigEndian64(k, seq);
  return k;
}

std::string JournalMetaKey(std::string_view experiment) {
  std::string k(kJournalMetaPrefix);
  k.append(experiment);
  return k;
}

std::string ChunkPrefix(std::string_view checkpoint_id) {
  std::string k(kChunkPrefix);
  k.append(checkpoint_id);
  k.push_back('\0');
  return k;
}

std::string ChunkKey(std::string_view checkpoint_id, uint32_t index) {
  std::string k = ChunkPrefix(checkpoint_id);
  PutBigEndian32(k, index);
  return k;
}

std::string ChunkRangeEnd(std::string_view checkpoint_id) {
  std::string k(kChunkPrefix);
  k.append(checkpoint_id);
  k.push_back('\1');
  return k;
}

std::string CheckpointMetaKey(std::string_view checkpoint_id) {
  std::string k(kCheckpointMetaPrefix);
  k.append(checkpoint_id);
  return k;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string k(prefix);
  while (!k.empty() && uint8_t(k.back()) == 0xff) k.pop_back();
  if (!k.empty()) k.back() = char(uint8_t(k.back()) + 1);
  return k;
}

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  const std::string message = fmt::format("{}: {}", what, s.ToString());
  if (s.IsNotFound()) return Status::NotFound(message);
  if (s.IsCorruption()) return Status::Corruption(message);
  return Status::IoError(message);
}

Result<std::unique_ptr<StoreDb>> StoreDb::Open(const std::string& data_dir, bool sync,
                                               std::shared_ptr<rocksdb::FileSystem> file_system) {
  if (Status s = bus::MakeWritableDir(data_dir, "data dir"); !s.ok()) return s;

  rocksdb::Options options;
  std::unique_ptr<rocksdb::Env> env;
  if (file_system) {
    env = rocksdb::NewCompositeEnv(file_system);
    options.env = env.get();
  }
  options.create_if_missing = true;
  options.paranoid_checks = true;
  // No LOG file in data_dir: RocksDB writes it outside its error handler, and a failed append
  // to it aborts the next log line (rocksdb_spdlog_logger.hpp).
  options.info_log = std::make_shared<RocksDbSpdlogLogger>();
  options.listeners.push_back(std::make_shared<ResumeHardErrorsByHand>());
  // Checkpoint chunks (up to proto::kCheckpointChunkBytes) live in blob files; the LSM tree
  // holds only journal records, meta and blob references.
  options.enable_blob_files = true;
  options.min_blob_size = 64 << 10;
  options.enable_blob_garbage_collection = true;
  options.write_buffer_size = kMemtableBytes;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::Open(options, data_dir, &raw);
  if (!s.ok()) return FromRocks(s, fmt::format("cannot open RocksDB in {}", data_dir));
  return std::unique_ptr<StoreDb>(
      new StoreDb(std::move(env), std::unique_ptr<rocksdb::DB>(raw), data_dir, sync));
}

StoreDb::StoreDb(std::unique_ptr<rocksdb::Env> env, std::unique_ptr<rocksdb::DB> db,
                 std::string data_dir, bool sync)
    : env_(std::move(env)), db_(std::move(db)), data_dir_(std::move(data_dir)), sync_(sync) {}

StoreDb::~StoreDb() {
  if (db_) {
    // Close() reports errors that the destructor would swallow; nothing can be done about
    // them here, acknowledged writes are already in the WAL.
    (void)db_->Close();
  }
}

Status StoreDb::Write(rocksdb::WriteBatch& batch, bool durable) {
  rocksdb::WriteOptions options;
  options.sync = durable && sync_;
  return FromRocks(db_->Write(options, &batch), "RocksDB write");
}

Status StoreDb::WriteUnlogged(rocksdb::WriteBatch& batch) {
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  return FromRocks(db_->Write(options, &batch), "RocksDB write");
}

Status StoreDb::Resume() { return FromRocks(db_->Resume(), "RocksDB resume"); }

Result<std::optional<std::string>> StoreDb::Get(const std::string& key) {
  std::string value;
  const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "RocksDB get");
  return std::optional<std::string>(std::move(value));
}

Status StoreDb::CompactAway(const std::string& begin, const std::string& end) {
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  options.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
  options.blob_garbage_collection_age_cutoff = 1.0;
  const rocksdb::Slice from(begin), to(end);
  return FromRocks(db_->CompactRange(options, &from, &to), "RocksDB compaction");
}

Status StoreDb::Flush() { return FromRocks(db_->Flush(rocksdb::FlushOptions()), "RocksDB flush"); }

uint64_t StoreDb::LiveBytes() {
  uint64_t sst = 0, blob = 0;
  db_->GetIntProperty(rocksdb::DB::Properties::kLiveSstFilesSize, &sst);
  db_->GetIntProperty(rocksdb::DB::Properties::kLiveBlobFileSize, &blob);
  return sst + blob;
}

StoreDb::MemoryUsage StoreDb::Memory() {
  MemoryUsage m;
  db_->GetIntProperty(rocksdb::DB::Properties::kSizeAllMemTables, &m.memtables);
  db_->GetIntProperty(rocksdb::DB::Properties::kBlockCacheUsage, &m.block_cache);
  return m;
}

std::unique_ptr<StoreDb::Range> StoreDb::NewRange(std::string lower, std::string upper) {
  auto range = std::make_unique<Range>();
  range->lower_ = std::move(lower);
  range->upper_ = std::move(upper);
  range->lower_slice_ = rocksdb::Slice(range->lower_);
  range->upper_slice_ = rocksdb::Slice(range->upper_);
  rocksdb::ReadOptions options;
  // A range is a scan (a journal replayed, a store listed or deleted): its blocks would fill
  // RocksDB's block cache (8 MB) with data read once, and keep it resident.
  options.fill_cache = false;
  options.iterate_lower_bound = &range->lower_slice_;
  if (!range->upper_.empty()) options.iterate_upper_bound = &range->upper_slice_;
  range->it_.reset(db_->NewIterator(options));
  range->it_->Seek(range->lower_slice_);
  return range;
}

}  // namespace tunebus::store
