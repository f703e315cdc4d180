// checkpoint-store: the real CheckpointStore on a thread with a temporary RocksDB directory,
// driven through a real ZeroMQ DEALER socket (plus a few direct tests of its RocksDB layer).
#include <gtest/gtest.h>

#include "tests/unit/checkpoint_store_fixture.hpp"

namespace tunebus::store_test {
namespace {

TEST_F(CheckpointStoreTest, AppendsGetGaplessSeqsPerExperimentAndReadBackIdentical) {
  // Three appends to one experiment and one to another; each journal counts from 1 without gaps.
  StartStore();
  std::vector<std::string> expected;
  uint64_t next = 1;
  for (int n : {3, 1, 5}) {
    std::vector<std::string> records;
    for (int i = 0; i < n; ++i) records.push_back(Record("a", int(expected.size()) + i));
    expected.insert(expected.end(), records.begin(), records.end());
    auto ack = peer().Call<proto::JournalAppendAck>(Append("exp-a", records));
    EXPECT_EQ(ack.experiment, "exp-a");
    EXPECT_EQ(ack.first_seq, next);
    EXPECT_EQ(ack.last_seq, next + n - 1);
    next += n;
  }
  auto other = peer().Call<proto::JournalAppendAck>(Append("exp-b", {"x", "y"}));
  EXPECT_EQ(other.first_seq, 1u);
  EXPECT_EQ(other.last_seq, 2u);

  auto read = peer().Call<proto::JournalReadReply>(Read("exp-a", 1));
  EXPECT_EQ(read.first_seq, 1u);
  EXPECT_TRUE(read.end);
  EXPECT_EQ(read.records, expected);
  auto tail = peer().Call<proto::JournalReadReply>(Read("exp-a", 8));
  EXPECT_EQ(tail.first_seq, 8u);
  EXPECT_EQ(tail.records, std::vector<std::string>(expected.begin() + 7, expected.end()));

  auto list = peer().Call<proto::JournalListReply>(proto::JournalList{});
  EXPECT_EQ(list.experiments, (std::vector<std::string>{"exp-a", "exp-b"}));
  EXPECT_EQ(list.last_seqs, (std::vector<uint64_t>{9, 2}));
}

TEST_F(CheckpointStoreTest, ThousandPipelinedAppendsAreAllAckedWithContiguousSeqs) {
  // A writer sends 1000 appends and then a read without waiting: every append is acked in
  // order with contiguous seqs, and the read sees all of them.
  StartStore();
  std::vector<uint64_t> ids;
  std::vector<std::string> expected;
  for (int i = 0; i < 1000; ++i) {
    std::vector<std::string> records{Record("p", i)};
    if (i % 7 == 0) records.push_back(Record("p-extra", i));
    expected.insert(expected.end(), records.begin(), records.end());
    ids.push_back(peer().Send(Append("pipelined", records)));
  }
  const uint64_t read_id = peer().Send(Read("pipelined", 1, 10000));
  uint64_t next = 1;
  for (int i = 0; i < 1000; ++i) {
    auto ack = Peer::As<proto::JournalAppendAck>(peer().Receive());
    ASSERT_EQ(ack.id, ids[i]) << "acks come back in request order";
    const uint64_t n = (i % 7 == 0) ? 2 : 1;
    EXPECT_EQ(ack.first_seq, next);
    EXPECT_EQ(ack.last_seq, next + n - 1);
    next += n;
  }
  auto read = Peer::As<proto::JournalReadReply>(peer().Receive());
  EXPECT_EQ(read.id, read_id);
  EXPECT_TRUE(read.end);
  EXPECT_EQ(read.records, expected);
}

TEST_F(CheckpointStoreTest, AppendsQueuedInOnePollRoundShareOneSyncedWrite) {
  // 500 appends are queued before the store starts polling: they are committed by one write.
  StartStore("inproc://group-commit-test", /*run=*/false);
  for (int i = 0; i < 500; ++i) peer().Send(Append("gc", {Record("g", i)}));
  RunStore();
  for (int i = 0; i < 500; ++i) {
    auto ack = Peer::As<proto::JournalAppendAck>(peer().Receive());
    EXPECT_EQ(ack.first_seq, uint64_t(i + 1));
  }
  store_->Stop();
  thread_.join();
  EXPECT_EQ(store_->group_commits(), 1u);
  EXPECT_EQ(store_->message_counts().at("journal_append"), 500u);
}

TEST_F(CheckpointStoreTest, AppendManyAppendsEachPartAsAnAppendWouldAndFailsAFencedPartAlone) {
  // One journal_append_many with parts for journals "a", "b" and "a" again, queued with a plain
  // journal_append of "b" in the same poll round: one synced write; each part gets the seqs it
  // would get alone, in order. A part fenced by expected_first_seq fails alone; a retried part
  // (its seqs already held) is acknowledged again without being written twice.
  StartStore("inproc://append-many-test", /*run=*/false);
  proto::JournalAppendMany many;
  many.parts = {{"a", {"a1", "a2"}, 1}, {"b", {"b1"}, 0}, {"a", {"a3"}, 3}};
  peer().Send(many);
  peer().Send(Append("b", {"b2"}));
  RunStore();
  auto ack = Peer::As<proto::JournalAppendManyAck>(peer().Receive());
  ASSERT_EQ(ack.parts.size(), 3u);
  EXPECT_EQ(ack.parts[0].experiment, "a");
  EXPECT_EQ(ack.parts[0].first_seq, 1u);
  EXPECT_EQ(ack.parts[0].last_seq, 2u);
  EXPECT_EQ(ack.parts[1].last_seq, 1u);
  EXPECT_EQ(ack.parts[2].first_seq, 3u);
  for (const auto& part : ack.parts) EXPECT_EQ(part.error_code, "") << part.error;
  EXPECT_EQ(Peer::As<proto::JournalAppendAck>(peer().Receive()).first_seq, 2u);

  many.parts = {{"a", {"a4"}, 9}, {"b", {"b3"}, 3}, {"a", {"a3"}, 3}};
  ack = peer().Call<proto::JournalAppendManyAck>(many);
  ASSERT_EQ(ack.parts.size(), 3u);
  EXPECT_EQ(ack.parts[0].error_code, "failed_precondition");
  EXPECT_NE(ack.parts[0].error.find("journal a does not continue at seq 9"), std::string::npos)
      << ack.parts[0].error;
  EXPECT_EQ(ack.parts[1].error_code, "");
  EXPECT_EQ(ack.parts[1].first_seq, 3u);
  EXPECT_EQ(ack.parts[2].error_code, "");  // a retry: already held
  EXPECT_EQ(ack.parts[2].last_seq, 3u);
  EXPECT_EQ(ReadAll("a"), (std::vector<std::string>{"a1", "a2", "a3"}));
  EXPECT_EQ(ReadAll("b"), (std::vector<std::string>{"b1", "b2", "b3"}));
  store_->Stop();
  thread_.join();
  EXPECT_EQ(store_->group_commits(), 2u);
}

TEST_F(CheckpointStoreTest, AppendManyWithOneBadPartOrNoPartAppendsNothing) {
  // A malformed part (no records, a name with '/') fails the whole request with
  // invalid_argument naming the part; an empty request too. No seq is used.
  StartStore();
  proto::JournalAppendMany many;
  many.parts = {{"a", {"a1"}, 0}, {"b", {}, 0}};
  proto::ErrorReply error = peer().CallExpectingError(many);
  EXPECT_EQ(error.code, "invalid_argument");
  EXPECT_EQ(error.request_type, "journal_append_many");
  EXPECT_NE(error.message.find("part 1"), std::string::npos) << error.message;
  many.parts = {{"x/y", {"r"}, 0}};
  EXPECT_EQ(peer().CallExpectingError(many).code, "invalid_argument");
  many.parts.clear();
  EXPECT_EQ(peer().CallExpectingError(many).code, "invalid_argument");
  EXPECT_EQ(peer().Call<proto::JournalAppendAck>(Append("a", {"first"})).first_seq, 1u);
}

TEST_F(CheckpointStoreTest, ReopenedStoreContinuesSeqsAndKeepsRecordsAndCheckpoints) {
  // The store is stopped and destroyed, then created again on the same directory.
  StartStore();
  std::vector<std::string> expected;
  for (int i = 0; i < 5; ++i) expected.push_back(Record("r", i));
  peer().Call<proto::JournalAppendAck>(Append("durable", expected));
  peer().Call<proto::CheckpointPutAck>(
      Put("durable/t1/1", 0, Blob(1000, 1), true, R"({"iteration":1})"));
  peer().Call<proto::CheckpointPutAck>(
      Put("durable/t1/2", 0, Blob(10, 2), false));  // left unfinished

  RestartStore();
  auto ack =
      peer().Call<proto::JournalAppendAck>(Append("durable", {Record("r", 5), Record("r", 6)}));
  EXPECT_EQ(ack.first_seq, 6u);
  EXPECT_EQ(ack.last_seq, 7u);
  expected.push_back(Record("r", 5));
  expected.push_back(Record("r", 6));
  EXPECT_EQ(ReadAll("durable"), expected);
  auto list = peer().Call<proto::JournalListReply>(proto::JournalList{});
  EXPECT_EQ(list.experiments, std::vector<std::string>{"durable"});
  EXPECT_EQ(list.last_seqs, std::vector<uint64_t>{7});

  auto chunk = peer().Call<proto::CheckpointGetReply>(Get("durable/t1/1", 0));
  EXPECT_EQ(chunk.data, Blob(1000, 1));
  EXPECT_EQ(chunk.metadata_json, R"({"iteration":1})");
  // The unfinished upload resumes where it stopped.
  auto resumed = peer().Call<proto::CheckpointPutAck>(Put("durable/t1/2", 1, Blob(10, 3), true));
  EXPECT_EQ(resumed.chunk_index, 1u);
}

TEST_F(CheckpointStoreTest, ReadPaginatesByMaxRecordsAndReportsEnd) {
  // 25 records are read in pages of 10; clamping, reading past the end and unknown journals.
  StartStore();
  std::vector<std::string> all;
  for (int i = 0; i < 25; ++i) all.push_back(Record("page", i));
  peer().Call<proto::JournalAppendAck>(Append("paged", all));

  std::vector<std::string> got;
  uint64_t from = 1;
  std::vector<bool> ends;
  while (true) {
    auto page = peer().Call<proto::JournalReadReply>(Read("paged", from, 10));
    EXPECT_EQ(page.first_seq, from);
    got.insert(got.end(), page.records.begin(), page.records.end());
    from += page.records.size();
    ends.push_back(page.end);
    if (page.end) break;
  }
  EXPECT_EQ(got, all);
  EXPECT_EQ(ends, (std::vector<bool>{false, false, true}));

  auto one = peer().Call<proto::JournalReadReply>(Read("paged", 1, 0));  // clamped to 1
  EXPECT_EQ(one.records, std::vector<std::string>{all[0]});
  EXPECT_FALSE(one.end);
  auto past = peer().Call<proto::JournalReadReply>(Read("paged", 26));
  EXPECT_TRUE(past.records.empty());
  EXPECT_TRUE(past.end);
  auto unknown = peer().Call<proto::JournalReadReply>(Read("never-written", 1));
  EXPECT_TRUE(unknown.records.empty());
  EXPECT_TRUE(unknown.end);
}

TEST_F(CheckpointStoreTest, MultiChunkCheckpointRoundTripsThroughPutListGetDelete) {
  // A 3-chunk checkpoint (one full 4 MiB chunk) is stored, listed by prefix, read back and deleted.
  StartStore();
  const std::vector<std::vector<char>> chunks{Blob(proto::kCheckpointChunkBytes, 1),
                                              Blob(300000, 2), Blob(17, 3)};
  const std::string meta = R"({"trial_id":"t1","iteration":10})";
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    const bool last = i + 1 == chunks.size();
    auto ack = peer().Call<proto::CheckpointPutAck>(
        Put("exp/t1/10", i, chunks[i], last, last ? meta : ""));
    EXPECT_EQ(ack.chunk_index, i);
  }
  peer().Call<proto::CheckpointPutAck>(Put("exp/t1/1", 0, Blob(5, 4), true));
  peer().Call<proto::CheckpointPutAck>(Put("exp/t2/1", 0, Blob(6, 5), true));

  auto list = peer().Call<proto::CheckpointListReply>(proto::CheckpointList{.prefix = "exp/t1/"});
  ASSERT_EQ(list.checkpoints.size(), 2u);
  EXPECT_EQ(list.checkpoints[0].checkpoint_id, "exp/t1/1");
  EXPECT_EQ(list.checkpoints[1].checkpoint_id, "exp/t1/10");
  EXPECT_EQ(list.checkpoints[1].num_chunks, 3u);
  EXPECT_EQ(list.checkpoints[1].size_bytes, proto::kCheckpointChunkBytes + 300000 + 17);
  EXPECT_EQ(list.checkpoints[1].metadata_json, meta);

  for (uint32_t i = 0; i < chunks.size(); ++i) {
    auto got = peer().Call<proto::CheckpointGetReply>(Get("exp/t1/10", i));
    EXPECT_EQ(got.num_chunks, 3u);
    EXPECT_EQ(got.metadata_json, meta);
    EXPECT_TRUE(got.data == chunks[i]) << "chunk " << i << " differs";
  }
  EXPECT_EQ(peer().CallExpectingError(Get("exp/t1/10", 3)).code, "not_found");

  // Deleting "exp/t1/1" leaves "exp/t1/10", whose id extends it.
  EXPECT_TRUE(
      peer()
          .Call<proto::CheckpointDeleteAck>(proto::CheckpointDelete{.checkpoint_id = "exp/t1/1"})
          .deleted);
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("exp/t1/10", 2)).data, chunks[2]);
  EXPECT_TRUE(
      peer()
          .Call<proto::CheckpointDeleteAck>(proto::CheckpointDelete{.checkpoint_id = "exp/t1/10"})
          .deleted);
  EXPECT_FALSE(
      peer()
          .Call<proto::CheckpointDeleteAck>(proto::CheckpointDelete{.checkpoint_id = "exp/t1/10"})
          .deleted);
  EXPECT_EQ(peer().CallExpectingError(Get("exp/t1/10", 0)).code, "not_found");
  auto after = peer().Call<proto::CheckpointListReply>(proto::CheckpointList{.prefix = "exp/"});
  ASSERT_EQ(after.checkpoints.size(), 1u);
  EXPECT_EQ(after.checkpoints[0].checkpoint_id, "exp/t2/1");
  // A deleted id can be uploaded again.
  peer().Call<proto::CheckpointPutAck>(Put("exp/t1/10", 0, Blob(3, 6), true));
}

TEST_F(CheckpointStoreTest, ChunksOutOfOrderOrAfterCommitAreRejected) {
  // An upload must go 0, 1, 2, …; chunk 0 restarts it; a committed id is immutable.
  StartStore();
  EXPECT_EQ(peer().CallExpectingError(Put("e/t/1", 1, Blob(4, 1), false)).code,
            "failed_precondition");
  peer().Call<proto::CheckpointPutAck>(Put("e/t/1", 0, Blob(4, 1), false));
  EXPECT_EQ(peer().CallExpectingError(Put("e/t/1", 2, Blob(4, 2), false)).code,
            "failed_precondition");
  EXPECT_EQ(peer().CallExpectingError(Get("e/t/1", 0)).code, "not_found")
      << "uncommitted is invisible";
  EXPECT_TRUE(peer().Call<proto::CheckpointListReply>(proto::CheckpointList{}).checkpoints.empty());

  peer().Call<proto::CheckpointPutAck>(Put("e/t/1", 1, Blob(4, 2), false));
  peer().Call<proto::CheckpointPutAck>(Put("e/t/1", 0, Blob(8, 3), false));  // restart
  peer().Call<proto::CheckpointPutAck>(Put("e/t/1", 1, Blob(2, 4), true));
  auto got = peer().Call<proto::CheckpointGetReply>(Get("e/t/1", 0));
  EXPECT_EQ(got.num_chunks, 2u);
  EXPECT_EQ(got.data, Blob(8, 3));
  EXPECT_EQ(
      peer().Call<proto::CheckpointListReply>(proto::CheckpointList{}).checkpoints.at(0).size_bytes,
      10u);

  EXPECT_EQ(peer().CallExpectingError(Put("e/t/1", 0, Blob(4, 5), true)).code,
            "failed_precondition");
  EXPECT_EQ(peer().CallExpectingError(Put("e/t/1", 2, Blob(4, 5), true)).code,
            "failed_precondition");
  EXPECT_EQ(
      peer()
          .CallExpectingError(Put("e/t/2", 0, Blob(proto::kCheckpointChunkBytes + 1, 6), true))
          .code,
      "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Put("", 0, Blob(1, 7), true)).code, "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Put(std::string("e/t\0/3", 6), 0, Blob(1, 7), true)).code,
            "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Put(std::string(513, 'x'), 0, Blob(1, 7), true)).code,
            "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Put("e/t/4", 0, Blob(1, 7), true, "{not json")).code,
            "invalid_argument");
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("e/t/1", 1)).data, Blob(2, 4))
      << "state intact";
}

TEST_F(CheckpointStoreTest, InvalidJournalAppendsAreRejectedWithoutConsumingSeqs) {
  // Empty names, names with '/', empty or oversized appends: invalid_argument, no seq used.
  StartStore();
  peer().Call<proto::JournalAppendAck>(Append("j", {"one"}));
  EXPECT_EQ(peer().CallExpectingError(Append("", {"r"})).code, "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Append("a/b", {"r"})).code, "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Append("j", {})).code, "invalid_argument");
  EXPECT_EQ(
      peer()
          .CallExpectingError(Append("j", {std::string(store::kMaxJournalRecordBytes + 1, 'x')}))
          .code,
      "invalid_argument");
  EXPECT_EQ(peer().CallExpectingError(Read("", 1)).code, "invalid_argument");
  auto ack = peer().Call<proto::JournalAppendAck>(Append("j", {"two"}));
  EXPECT_EQ(ack.first_seq, 2u);
  EXPECT_EQ(ReadAll("j"), (std::vector<std::string>{"one", "two"}));
}

// One kind of bad frame, the error code it must get, and whether the reply can echo its id.
struct BadFrame {
  std::string name;
  std::string bytes;
  std::string code;
  uint64_t id = 0;
};

std::string PackRaw(const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& fill) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  fill(pk);
  return std::string(buf.data(), buf.size());
}

std::vector<BadFrame> BadFrames() {
  static constexpr char kGarbage[] =
      "\xc1\xc1 not msgpack \x00\xff";  // 0xc1 is never valid msgpack
  proto::JournalRead wrong_version = Read("bad", 1);
  wrong_version.v = proto::kProtocolVersion + 1;
  wrong_version.id = 78;
  proto::JournalRead unknown = Read("bad", 1);
  unknown.type = "journal_frobnicate";
  unknown.id = 77;
  return {
      {"GarbageBytes", std::string(kGarbage, sizeof(kGarbage) - 1), "invalid_argument", 0},
      {"MsgpackNonMap", PackRaw([](auto& pk) { pk.pack_array(2).pack(1).pack("journal_read"); }),
       "invalid_argument", 0},
      {"UnknownType", proto::Encode(unknown), "invalid_argument", 77},
      {"WrongVersion", proto::Encode(wrong_version), "failed_precondition", 78},
      {"MalformedFields", PackRaw([](auto& pk) {  // experiment is an integer
         pk.pack_map(4).pack("v").pack(proto::kProtocolVersion).pack("type").pack("journal_append");
         pk.pack("id").pack(79).pack("experiment").pack(12345);
       }),
       "invalid_argument", 79},
      {"EmptyFrame", std::string(), "invalid_argument", 0},
  };
}

class BadFrameTest : public CheckpointStoreTest, public ::testing::WithParamInterface<BadFrame> {};

TEST_P(BadFrameTest, GetsTypedErrorAndStoreKeepsServingWithDataIntact) {
  // A journal and a checkpoint exist; one bad frame arrives; the store answers an ErrorReply
  // with the expected code and then serves valid requests against unchanged data.
  const BadFrame& bad = GetParam();
  StartStore();
  peer().Call<proto::JournalAppendAck>(Append("kept", {Record("k", 0), Record("k", 1)}));
  peer().Call<proto::CheckpointPutAck>(Put("kept/t/1", 0, Blob(100, 9), true));

  peer().SendRaw(bad.bytes);
  auto error = Peer::As<proto::ErrorReply>(peer().Receive());
  EXPECT_EQ(error.code, bad.code) << error.message;
  EXPECT_EQ(error.id, bad.id);
  EXPECT_FALSE(error.message.empty());

  EXPECT_EQ(ReadAll("kept"), (std::vector<std::string>{Record("k", 0), Record("k", 1)}));
  EXPECT_EQ(peer().Call<proto::JournalAppendAck>(Append("kept", {Record("k", 2)})).first_seq, 3u);
  EXPECT_EQ(peer().Call<proto::CheckpointGetReply>(Get("kept/t/1", 0)).data, Blob(100, 9));
  StopStore();
}

INSTANTIATE_TEST_SUITE_P(CheckpointStore, BadFrameTest, ::testing::ValuesIn(BadFrames()),
                         [](const auto& info) { return info.param.name; });

TEST_F(CheckpointStoreTest, ErrorMessagesAreNotAnswered) {
  // A peer sends an ErrorReply to the store: it is dropped, so two peers never ping-pong errors.
  StartStore();
  peer().SendRaw(proto::Encode(proto::MakeError(Status::Internal("x"), 5, "journal_read")));
  auto list =
      peer().Call<proto::JournalListReply>(proto::JournalList{});  // the next reply is this one
  EXPECT_TRUE(list.experiments.empty());
}

TEST(CheckpointStoreLayout, ChunkKeysOfAnIdNeverShareARangeWithLongerIds) {
  // Ids are path-like, so "a/b" is a string prefix of "a/b/c": their chunk ranges stay disjoint.
  const std::string begin = store::ChunkPrefix("a/b"), end = store::ChunkRangeEnd("a/b");
  for (const std::string other : {"a/b/c", "a/b0", "a/b\x01"}) {
    const std::string key = store::ChunkKey(other, 0);
    EXPECT_FALSE(key >= begin && key < end) << other;
  }
  EXPECT_TRUE(store::ChunkKey("a/b", 0xffffffffu) < end);
  EXPECT_LT(store::JournalRecordKey("e", 255), store::JournalRecordKey("e", 256))
      << "big-endian sorts numerically";
  EXPECT_EQ(store::PrefixSuccessor("ab\xff"), "ac");
}

TEST(CheckpointStoreLayout, JournalStoreReloadsLastSeqsFromMeta) {
  // The RocksDB layer alone: a batch with two appends to one journal, then a reopen.
  const std::string dir = MakeTempDir();
  {
    auto db = store::StoreDb::Open(dir, true);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto journals = store::JournalStore::Open(**db);
    ASSERT_TRUE(journals.ok());
    auto ranges = (*journals)->AppendBatch({{"x", {"1", "2"}}, {"y", {"a"}}, {"x", {"3"}}});
    ASSERT_TRUE(ranges.ok()) << ranges.status().ToString();
    EXPECT_EQ((*ranges)[2].first_seq, 3u);
  }
  auto db = store::StoreDb::Open(dir, true);
  ASSERT_TRUE(db.ok());
  auto journals = store::JournalStore::Open(**db);
  ASSERT_TRUE(journals.ok());
  EXPECT_EQ((*journals)->LastSeq("x"), 3u);
  EXPECT_EQ((*journals)->LastSeq("y"), 1u);
  auto page = (*journals)->Read("x", 2, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->records, (std::vector<std::string>{"2", "3"}));
  journals->reset();
  db->reset();
  fs::remove_all(dir);
}

TEST(CheckpointStoreLayout, AJournalReadLeavesTheBlockCacheEmptyAndAMemtableIsBounded) {
  // 20,000 records of 1 KiB (20 MiB written): the memtable flushes at its 4 MiB, and reading
  // the whole journal back (a scan) puts none of its blocks in the block cache.
  const std::string dir = MakeTempDir();
  {
    auto db = store::StoreDb::Open(dir, /*sync=*/false);
    ASSERT_TRUE(db.ok());
    auto journals = store::JournalStore::Open(**db);
    ASSERT_TRUE(journals.ok());
    for (int batch = 0; batch < 20; ++batch) {
      std::vector<std::string> records;
      for (int i = 0; i < 1000; ++i) records.push_back(std::string(1024, char('a' + i % 26)));
      ASSERT_TRUE((*journals)->AppendBatch({{"j", records}}).ok());
    }
    EXPECT_LE((*db)->Memory().memtables, uint64_t(2 * (4u << 20) + (1u << 20)));
    ASSERT_TRUE((*db)->Flush().ok());
    uint64_t read = 0;
    for (uint64_t from = 1; from <= 20000;) {
      auto page = (*journals)->Read("j", from, 1000);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      ASSERT_FALSE(page->records.empty());
      read += page->records.size();
      from += page->records.size();
    }
    EXPECT_EQ(read, 20000u);
    EXPECT_LT((*db)->Memory().block_cache, uint64_t(64u << 10));
    journals->reset();
  }
  fs::remove_all(dir);
}

TEST(CheckpointStoreLayout, JournalReadStopsBeforeTheReplyByteBudget) {
  // Three 6 MiB records: a read returns two (12 MiB) since the third would pass 16 MiB.
  const std::string dir = MakeTempDir();
  {
    auto db = store::StoreDb::Open(dir, /*sync=*/false);
    ASSERT_TRUE(db.ok());
    auto journals = store::JournalStore::Open(**db);
    ASSERT_TRUE(journals.ok());
    const std::string big(6u << 20, 'b');
    ASSERT_TRUE((*journals)->AppendBatch({{"big", {big}}, {"big", {big}}, {"big", {big}}}).ok());
    auto page = (*journals)->Read("big", 1, 10000);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_EQ(page->records.size(), 2u);
    EXPECT_FALSE(page->end);
    auto rest = (*journals)->Read("big", 3, 10000);
    ASSERT_TRUE(rest.ok());
    EXPECT_EQ(rest->records.size(), 1u);
    EXPECT_TRUE(rest->end);
  }
  fs::remove_all(dir);
}

TEST_F(CheckpointStoreTest, TruncateCutsATailDurablyAndAppendsContinueAfterIt) {
  // A journal of 5 records is cut after seq 3 (its tail was corrupt): reads end at 3, the next
  // append gets seq 4, and a reopened store agrees. A cut fenced on the wrong last seq is
  // refused with failed_precondition and changes nothing.
  StartStore();
  peer().Call<proto::JournalAppendAck>(Append("cut", {"1", "2", "3", "bad4", "bad5"}));
  proto::JournalTruncate fenced;
  fenced.experiment = "cut";
  fenced.keep_through_seq = 3;
  fenced.expected_last_seq = 4;
  auto refused = peer().CallExpectingError(fenced);
  EXPECT_EQ(refused.code, "failed_precondition");
  EXPECT_EQ(ReadAll("cut").size(), 5u);

  proto::JournalTruncate cut = fenced;
  cut.expected_last_seq = 5;
  auto ack = peer().Call<proto::JournalTruncateAck>(cut);
  EXPECT_EQ(ack.last_seq, 3u);
  EXPECT_EQ(ack.removed, 2u);
  EXPECT_EQ(ReadAll("cut"), (std::vector<std::string>{"1", "2", "3"}));
  auto next = peer().Call<proto::JournalAppendAck>(Append("cut", {"4"}));
  EXPECT_EQ(next.first_seq, 4u);
  RestartStore();
  EXPECT_EQ(ReadAll("cut"), (std::vector<std::string>{"1", "2", "3", "4"}));
}

// The files of a live store's folder, copied as they are: what a crash of the store at this
// moment leaves on disk (its memtables are lost, its files' written bytes kept).
void CopyFolderAsACrashLeavesIt(const std::string& from, const std::string& to) {
  fs::copy(from, to, fs::copy_options::recursive);
  fs::remove(fs::path(to) / "LOCK");
}

uint64_t WalBytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") bytes += entry.file_size();
  }
  return bytes;
}

TEST(CheckpointStoreLayout, ChunksBeforeTheLastSkipTheWalAndACommittedCheckpointSurvivesACrash) {
  // Three 1 MiB chunks: the first two are written without the WAL, so the WAL holds about the
  // last one only; a crash right after the commit (a copy of the folder) keeps every chunk.
  const std::string dir = MakeTempDir(), crashed = dir + "-crashed";
  const std::vector<std::vector<char>> chunks{Blob(1 << 20, 1), Blob(1 << 20, 2), Blob(1 << 20, 3)};
  {
    auto db = store::StoreDb::Open(dir, true);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    store::CheckpointBlobStore blobs(**db);
    for (uint32_t i = 0; i < chunks.size(); ++i) {
      const Status put = blobs.Put("e/t/1", i, chunks[i], i + 1 == chunks.size(), "{}");
      ASSERT_TRUE(put.ok()) << put.ToString();
    }
    EXPECT_LT(WalBytes(dir), uint64_t(3) << 19) << "the WAL holds the committing chunk, no more";
    CopyFolderAsACrashLeavesIt(dir, crashed);
  }
  auto db = store::StoreDb::Open(crashed, true);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  store::CheckpointBlobStore blobs(**db);
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    auto chunk = blobs.Get("e/t/1", i);
    ASSERT_TRUE(chunk.ok()) << "chunk " << i << ": " << chunk.status().ToString();
    EXPECT_TRUE(chunk->data == std::string(chunks[i].begin(), chunks[i].end()));
    EXPECT_EQ(chunk->meta.num_chunks, 3u);
  }
  db->reset();
  fs::remove_all(dir);
  fs::remove_all(crashed);
}

TEST(CheckpointStoreLayout, AnUploadCutByACrashIsRefusedWhereItStoodAndRestartsFromChunkZero) {
  // Two chunks of an upload, then a crash (a copy of the folder): the unflushed chunks and their
  // progress are gone together, so the next chunk is refused as out of order (the uploader starts
  // again), nothing is listed, and an upload from chunk 0 commits.
  const std::string dir = MakeTempDir(), crashed = dir + "-crashed";
  {
    auto db = store::StoreDb::Open(dir, true);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    store::CheckpointBlobStore blobs(**db);
    ASSERT_TRUE(blobs.Put("e/t/2", 0, Blob(1000, 1), false, "").ok());
    ASSERT_TRUE(blobs.Put("e/t/2", 1, Blob(1000, 2), false, "").ok());
    CopyFolderAsACrashLeavesIt(dir, crashed);
  }
  auto db = store::StoreDb::Open(crashed, true);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  store::CheckpointBlobStore blobs(**db);
  EXPECT_EQ(blobs.Put("e/t/2", 2, Blob(10, 3), true, "").code(), StatusCode::kFailedPrecondition);
  auto listed = blobs.List("e/");
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  ASSERT_TRUE(blobs.Put("e/t/2", 0, Blob(1000, 1), false, "").ok());
  ASSERT_TRUE(blobs.Put("e/t/2", 1, Blob(10, 3), true, "").ok());
  auto chunk = blobs.Get("e/t/2", 1);
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ(chunk->meta.size_bytes, 1010u);
  db->reset();
  fs::remove_all(dir);
  fs::remove_all(crashed);
}

}  // namespace
}  // namespace tunebus::store_test
