// checkpoint-store on a full disk, and RocksDB's log: a full disk is a
// rocksdb::FileSystemWrapper that fails appends; time is a ManualClock where a test needs the
// store's timers.
#include <gtest/gtest.h>

#include "tests/support/wait_until.hpp"
#include "tests/unit/checkpoint_store_fixture.hpp"

namespace tunebus::store_test {
namespace {

// The data folder's disk: while `full` is set, every append to a file RocksDB writes fails with
// NoSpace (ENOSPC), as on a full file system. Files are still created, and read as usual.
class FullDiskFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  FullDiskFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FullDiskFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->NewWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* file,
                                       rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->ReopenWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* file,
                                      rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->ReuseWritableFile(name, old_name, options, file, dbg), file);
  }

  std::atomic<bool> full{false};
  std::atomic<int> refused_appends{0};

 private:
  class File final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> file, FullDiskFileSystem* disk)
        : FSWritableFileOwnerWrapper(std::move(file)), disk_(disk) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      if (disk_->Refuse()) return rocksdb::IOStatus::NoSpace("injected: the disk is full");
      return target()->Append(data, options, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (disk_->Refuse()) return rocksdb::IOStatus::NoSpace("injected: the disk is full");
      return target()->Append(data, options, info, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* dbg) override {
      if (disk_->Refuse()) return rocksdb::IOStatus::NoSpace("injected: the disk is full");
      return target()->PositionedAppend(data, offset, options, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* dbg) override {
      if (disk_->Refuse()) return rocksdb::IOStatus::NoSpace("injected: the disk is full");
      return target()->PositionedAppend(data, offset, options, info, dbg);
    }

   private:
    FullDiskFileSystem* disk_;
  };

  bool Refuse() {
    if (!full) return false;
    ++refused_appends;
    return true;
  }
  rocksdb::IOStatus Wrap(rocksdb::IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* file) {
    if (s.ok()) *file = std::make_unique<File>(std::move(*file), this);
    return s;
  }
};

// Sends spdlog's default logger to memory ("<level> <message>" lines) while it lives.
class CapturedLog {
 public:
  CapturedLog()
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100000)),
        previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("captured", sink_);
    logger->set_pattern("%l %v");
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::vector<std::string> lines() const {
    std::vector<std::string> lines = sink_->last_formatted();
    for (auto& line : lines) {
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    }
    return lines;
  }
  bool Contains(const std::string& text) const {
    for (const auto& line : lines()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

// Calls `done` until it is true, for at most 5 s of real time (the loop polls every 100 ms).
bool Eventually(const std::function<bool()>& done) {
  return test_support::PollUntil(done, std::chrono::seconds(5), milliseconds(5));
}

TEST_F(CheckpointStoreTest, AFullDiskDegradesTheStoreAndItHealsWithoutARestart) {
  // A journal and a two-chunk checkpoint are acknowledged, then the data folder's disk fills
  // up: the next write that reaches the disk (a checkpoint's commit) fails and the store
  // degrades. Writes are refused with io_error naming
  // why and since when, reads are served, store_status and /healthz say "degraded". RocksDB's
  // recovery, retried every second of the store's (manual) clock, fails while the disk is full
  // and succeeds at the first retry after space is freed: writes are taken again without a
  // restart, nothing acknowledged is lost (also after a restart), and nothing aborts.
  auto disk = std::make_shared<FullDiskFileSystem>();
  file_system_ = disk;
  clock_ = &manual_clock_;
  auto server = metrics::MetricsServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  metrics_server_ = std::move(*server);
  StartStore();
  EXPECT_EQ(StoreStatus().state, "ok");  // also: Run() started, so the figures are published
  EXPECT_EQ(Health(), "ok\n");

  std::vector<std::string> journal{Record("d", 0), Record("d", 1), Record("d", 2)};
  peer().Call<proto::JournalAppendAck>(Append("outage", journal));
  const std::vector<char> chunk0 = Blob(300000, 1), chunk1 = Blob(200000, 2);
  peer().Call<proto::CheckpointPutAck>(Put("outage/t1/1", 0, chunk0, false));
  peer().Call<proto::CheckpointPutAck>(Put("outage/t1/1", 1, chunk1, true, R"({"iteration":1})"));

  // The disk fills up during an upload: its first chunk is taken (written without the WAL, it
  // is in memory), and the committing chunk, which flushes it to disk first, fails.
  disk->full = true;
  peer().Call<proto::CheckpointPutAck>(Put("outage/t1/2", 0, Blob(300000, 3), false));
  const double degraded_at = manual_clock_.WallSeconds();
  auto failed = peer().CallExpectingError(Put("outage/t1/2", 1, Blob(10, 4), true));
  EXPECT_EQ(failed.code, "io_error");
  EXPECT_NE(failed.message.find("No space left on device"), std::string::npos) << failed.message;

  const proto::StoreStatusReply degraded = StoreStatus();
  EXPECT_EQ(degraded.state, "degraded");
  EXPECT_NE(degraded.reason.find("No space left on device"), std::string::npos) << degraded.reason;
  EXPECT_EQ(degraded.since_unix_s, degraded_at);
  EXPECT_EQ(degraded.recoveries, 0u);
  // Every write request is refused without touching RocksDB; the clock says 22:13:20 UTC.
  for (const proto::ErrorReply& refused :
       {peer().CallExpectingError(Append("outage", {Record("d", 3)})),
        peer().CallExpectingError(Put("outage/t1/2", 0, Blob(300000, 3), false)),
        peer().CallExpectingError(proto::CheckpointDelete{.checkpoint_id = "outage/t1/1"})}) {
    EXPECT_EQ(refused.code, "io_error");
    EXPECT_EQ(refused.message,
              "the checkpoint-store refuses writes while degraded since "
              "22:13:20 UTC: " +
                  degraded.reason + "; it retries RocksDB's recovery every second");
  }
  // Reads are served.
  EXPECT_EQ(ReadAll("outage"), journal);
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("outage/t1/1", 0)).data, chunk0);

  // A second later RocksDB's recovery is tried and fails: the disk is still full.
  const int refused_before = disk->refused_appends;
  manual_clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Eventually([&] { return disk->refused_appends > refused_before; }));
  EXPECT_EQ(StoreStatus().state, "degraded");
  EXPECT_EQ(Health(), "degraded: " + degraded.reason + "\n");  // still HTTP 200

  // Space is freed: the next retry recovers.
  disk->full = false;
  manual_clock_.Advance(std::chrono::seconds(1));
  proto::StoreStatusReply healed;
  ASSERT_TRUE(Eventually([&] {
    healed = StoreStatus();
    return healed.state == "ok";
  }));
  EXPECT_EQ(healed.reason, "");
  EXPECT_EQ(healed.since_unix_s, degraded_at + 2);
  EXPECT_EQ(healed.recoveries, 1u);
  manual_clock_.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(Eventually([&] { return Health() == "ok\n"; }));

  // Writes are taken again; the refused ones consumed nothing.
  auto ack = peer().Call<proto::JournalAppendAck>(Append("outage", {Record("d", 3)}));
  EXPECT_EQ(ack.first_seq, 4u);
  journal.push_back(Record("d", 3));
  peer().Call<proto::CheckpointPutAck>(Put("outage/t1/2", 0, Blob(300000, 3), true));
  EXPECT_EQ(ReadAll("outage"), journal);
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("outage/t1/1", 1)).data, chunk1);

  RestartStore();
  EXPECT_EQ(ReadAll("outage"), journal);
  auto list = peer().Call<proto::CheckpointListReply>(proto::CheckpointList{.prefix = "outage/"});
  ASSERT_EQ(list.checkpoints.size(), 2u);
  EXPECT_EQ(list.checkpoints[0].size_bytes, chunk0.size() + chunk1.size());
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("outage/t1/1", 0)).data, chunk0);
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("outage/t1/2", 0)).data, Blob(300000, 3));
  EXPECT_EQ(StoreStatus().state, "ok");
}

TEST_F(CheckpointStoreTest, RocksDbLogsThroughSpdlogAndWritesNoLogFileInTheDataFolder) {
  // A store is started, written to, restarted and stopped: RocksDB's info log reached spdlog
  // ("rocksdb: " lines) and the data folder holds no LOG or LOG.old.* file, the one file
  // RocksDB would write outside its error handler.
  CapturedLog log;
  StartStore();
  peer().Call<proto::JournalAppendAck>(Append("quiet", {Record("q", 0)}));
  peer().Call<proto::CheckpointPutAck>(Put("quiet/t/1", 0, Blob(300000, 1), true));
  RestartStore();
  EXPECT_EQ(ReadAll("quiet"), std::vector<std::string>{Record("q", 0)});
  StopStore();
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    files.push_back(entry.path().filename().string());
  }
  EXPECT_FALSE(files.empty());
  for (const auto& name : files) EXPECT_NE(name.rfind("LOG", 0), 0u) << name;
  EXPECT_TRUE(log.Contains("debug rocksdb: "));
}

TEST(RocksDbSpdlogLogger, MapsLevelsAndPrefixesEveryLine) {
  // RocksDB's levels become spdlog's (INFO and the HEADER banner are debug), lines lose their
  // trailing newline, long lines are whole, and lines under the logger's level are dropped.
  CapturedLog log;
  auto logger = std::make_shared<store::RocksDbSpdlogLogger>();
  rocksdb::Log(rocksdb::InfoLogLevel::DEBUG_LEVEL, logger, "not logged %d", 1);
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, logger, "flushed %d files\n", 2);
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, logger, "slow %s", "disk");
  rocksdb::Log(rocksdb::InfoLogLevel::ERROR_LEVEL, logger, "write failed: %s", "ENOSPC");
  rocksdb::Log(rocksdb::InfoLogLevel::FATAL_LEVEL, logger, "fatal %d", 3);
  rocksdb::Header(logger, "RocksDB version: %s", "7.8.3");
  const std::string long_text(2000, 'x');
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, logger, "%s", long_text.c_str());
  EXPECT_EQ(log.lines(), (std::vector<std::string>{
                             "debug rocksdb: flushed 2 files",
                             "warning rocksdb: slow disk",
                             "error rocksdb: write failed: ENOSPC",
                             "critical rocksdb: fatal 3",
                             "debug rocksdb: RocksDB version: 7.8.3",
                             "warning rocksdb: " + long_text,
                         }));
}

}  // namespace
}  // namespace tunebus::store_test
