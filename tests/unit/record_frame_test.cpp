// Tests for the stored form of journal records (libs/journal/record_frame.hpp,
// docs/reference/journal-format.md) and the CRC-32C under it: a framed record reads back as its
// record, a journal written before frames still reads, and every torn, flipped or foreign record is
// refused with a message saying why, never read as a record.
#include "libs/journal/record_frame.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/crc32c.hpp"
#include "libs/journal/records.hpp"

namespace tunebus::journal {
namespace {

using json = nlohmann::json;

// A result record as the scheduler journals it.
std::string ResultPayload() {
  Trial t;
  t.trial_id = "abc_00007";
  t.attempt = 2;
  t.last_seq = 41;
  return EncodeRecord(
      ResultRecord(t, {{"training_iteration", 41}, {"loss", 0.25}}, Action::kContinue));
}

TEST(Crc32cTest, TheFastPathAgreesWithTheTableAtEveryLengthAndAlignment) {
  // The SSE4.2 path takes 8 bytes a step and the rest one by one: lengths 0..100 at offsets
  // 0..7 cover every split, against the byte-at-a-time table.
  std::string data;
  for (int i = 0; i < 128; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n <= 100; ++n) {
      const std::string_view part = std::string_view(data).substr(offset, n);
      EXPECT_EQ(Crc32c(part), Crc32cByTable(part)) << offset << " " << n;
    }
  }
  EXPECT_EQ(Crc32cByTable("123456789"), 0xE3069283u);
}

TEST(RecordFrameTest, AFramedRecordReadsBackAsItsRecord) {
  const std::string payload = ResultPayload();
  const std::string stored = FrameRecord(payload);
  EXPECT_EQ(stored.size(), payload.size() + kFrameOverheadBytes);
  EXPECT_EQ(static_cast<unsigned char>(stored[0]), kFramedRecordFormat);
  auto unframed = UnframeRecord(stored);
  ASSERT_TRUE(unframed.ok()) << unframed.status().ToString();
  EXPECT_EQ(*unframed, payload);
  auto record = ReadStoredRecord(stored);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(*record, *DecodeRecord(payload));
  // The trailer is MaskCrc32c(Crc32c(format byte + payload)), little-endian.
  const uint32_t crc = MaskCrc32c(Crc32c(std::string_view(stored).substr(0, stored.size() - 4)));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(static_cast<unsigned char>(stored[stored.size() - 4 + i]), (crc >> (8 * i)) & 0xFF);
  }
}

TEST(RecordFrameTest, ARecordWrittenBeforeFramesStillReads) {
  // Journals of earlier versions hold bare msgpack maps (fixmap here, map16 for 16+ keys).
  const std::string payload = ResultPayload();
  auto record = ReadStoredRecord(payload);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->value("kind", ""), "result");
  json wide = {{"kind", "trial_updated"}};
  for (int i = 0; i < 20; ++i) wide["k" + std::to_string(i)] = i;
  const std::string map16 = EncodeRecord(wide);
  ASSERT_EQ(static_cast<unsigned char>(map16[0]), 0xDEu);
  EXPECT_EQ(*ReadStoredRecord(map16), wide);
}

TEST(RecordFrameTest, EveryFlippedBitIsRefused) {
  // One bit flipped anywhere (format byte, payload or CRC): the record is refused. A flip in the
  // payload that still decodes as msgpack is caught by the CRC alone.
  const std::string stored = FrameRecord(ResultPayload());
  size_t caught_by_crc_alone = 0;
  for (size_t i = 0; i < stored.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = stored;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      auto record = ReadStoredRecord(flipped);
      EXPECT_FALSE(record.ok()) << "byte " << i << " bit " << bit;
      if (i > 0 && i + 4 < stored.size() &&
          DecodeRecord(std::string_view(flipped).substr(1, flipped.size() - 5)).ok()) {
        ++caught_by_crc_alone;
        EXPECT_NE(record.status().message().find("fails its CRC-32C"), std::string::npos)
            << record.status().message();
      }
    }
  }
  EXPECT_GT(caught_by_crc_alone, 0u);  // e.g. a flipped character of trial_id
}

TEST(RecordFrameTest, ATornRecordIsRefusedAtEveryLength) {
  const std::string stored = FrameRecord(ResultPayload());
  for (size_t n = 0; n < stored.size(); ++n) {
    EXPECT_FALSE(ReadStoredRecord(stored.substr(0, n)).ok()) << n << " bytes";
  }
  EXPECT_EQ(UnframeRecord("").status().message(), "journal record is empty");
  EXPECT_NE(UnframeRecord("\x01\x82\x00").status().message().find("too short"), std::string::npos);
}

TEST(RecordFrameTest, BytesThatNeverWereARecordAreRefusedWithTheirFirstByte) {
  auto r = ReadStoredRecord("\xc1\xc1 torn");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("byte 0xc1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tunebus::journal
