// RocksDbSpdlogLogger: RocksDB's info log (rocksdb::Options::info_log) sent to spdlog, so RocksDB
// writes no LOG file (nor LOG.old.*) into the store's data folder.
//
// Why: without an info_log RocksDB opens <data_dir>/LOG and keeps it open. That file
// is written outside RocksDB's background-error handler: when the data folder's file system is
// full, an append to LOG fails, its WritableFileWriter remembers the error, and the next log line
// (RocksDB logs from its own error handler, ErrorHandler::HandleKnownErrors) fails
// `assert(sync_without_flush_called_)` in WritableFileWriter::AssertFalseAndGetStatusForPrevError
// (file/writable_file_writer.h; Debian's RocksDB keeps its assertions): the store aborted exactly
// when it should have degraded and healed. The other files RocksDB keeps open are written under
// that handler and never reused after a failure: the WAL (the DB stops; recovery switches to a
// new WAL), the MANIFEST (dropped on a failed write, a new one is started), SST and blob files
// (one writer per file, discarded with the failed flush or compaction); OPTIONS, IDENTITY and
// CURRENT are written whole through short-lived writers (RocksDB 7.8.3).
//
// Levels: RocksDB DEBUG and INFO → spdlog debug (flushes, compactions, the periodic stats dump:
// RocksDB is chatty), WARN → warn, ERROR → error, FATAL → critical, HEADER (the version and
// options banner RocksDB writes at open, emitted whatever the level) → debug. Each line is
// prefixed "rocksdb: ". RocksDB drops lines below the logger's level before formatting them
// (INFO by default, so its DEBUG lines are never formatted); lines spdlog would drop are not
// formatted either.
//
// Thread-safe: RocksDB logs from its background threads; spdlog's default logger is thread-safe.
#pragma once

#include <rocksdb/env.h>
#include <spdlog/common.h>

#include <cstdarg>

namespace tunebus::store {

class RocksDbSpdlogLogger final : public rocksdb::Logger {
 public:
  explicit RocksDbSpdlogLogger(rocksdb::InfoLogLevel level = rocksdb::InfoLogLevel::INFO_LEVEL)
      : rocksdb::Logger(level) {}

  /// The spdlog level a RocksDB line is logged at (the table above).
  static spdlog::level::level_enum SpdlogLevel(rocksdb::InfoLogLevel level);

  void Logv(rocksdb::InfoLogLevel level, const char* format, va_list ap) override;
  /// Lines logged without a level (rocksdb::Log(logger, ...)) are INFO.
  void Logv(const char* format, va_list ap) override;
  void LogHeader(const char* format, va_list ap) override;
};

}  // namespace tunebus::store
