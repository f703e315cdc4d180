// The stored form of a journal record: its msgpack bytes (records.hpp) framed with a format
// byte and a CRC-32C, so that replay detects a torn or flipped record instead of applying it.
// docs/reference/journal-format.md is the grammar:
//
//   stored_record := 0x01 payload crc       a framed record
//                  | payload                 an unframed record (journals written before frames)
//   payload       := a msgpack map with a string "kind" (EncodeRecord's bytes)
//   crc           := MaskCrc32c(Crc32c(0x01 payload)) as 4 bytes, little-endian
//
// The two forms cannot be confused: a msgpack map starts with 0x80..0x8f, 0xde or 0xdf.
// The CRC is libs/core/crc32c.hpp's (Castagnoli, masked as LevelDB and TFRecord mask theirs).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus::journal {

/// The first byte of a framed record (the frame's format version).
inline constexpr unsigned char kFramedRecordFormat = 0x01;
/// Bytes a frame adds to its payload: the format byte and the CRC.
inline constexpr size_t kFrameOverheadBytes = 5;

/// The stored record of `payload` (EncodeRecord's bytes, or any encoder's with the same bytes).
std::string FrameRecord(std::string_view payload);

/// The payload of a stored record, after checking its frame: a view into `stored`. An
/// unframed record (its first byte opens a msgpack map) is its own payload, unchecked.
/// Errors: Corruption saying what is wrong (empty, shorter than a frame, an unknown first
/// byte, or a CRC mismatch with both values); the caller adds the record's seq.
Result<std::string_view> UnframeRecord(std::string_view stored);

/// UnframeRecord, then DecodeRecord of the payload: what replay applies.
/// Errors: Corruption from either.
Result<nlohmann::json> ReadStoredRecord(std::string_view stored);

}  // namespace tunebus::journal
