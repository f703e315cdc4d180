#include "libs/journal/record_frame.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "libs/core/crc32c.hpp"
#include "libs/journal/records.hpp"

namespace tunebus::journal {

namespace {

constexpr size_t kCrcBytes = 4;

bool OpensMsgpackMap(unsigned char byte) {
  return (byte & 0xF0u) == 0x80u || byte == 0xDEu || byte == 0xDFu;  // fixmap, map16, map32
}

uint32_t FrameCrc(std::string_view format_and_payload) {
  return MaskCrc32c(Crc32c(format_and_payload));
}

}  // namespace

std::string FrameRecord(std::string_view payload) {
  std::string stored;
  stored.reserve(payload.size() + kFrameOverheadBytes);
  stored.push_back(static_cast<char>(kFramedRecordFormat));
  stored.append(payload);
  const uint32_t crc = FrameCrc(stored);
  for (size_t i = 0; i < kCrcBytes; ++i) stored.push_back(static_cast<char>(crc >> (8 * i)));
  return stored;
}

Result<std::string_view> UnframeRecord(std::string_view stored) {
  if (stored.empty()) return Status::Corruption("journal record is empty");
  const auto first = static_cast<unsigned char>(stored.front());
  if (OpensMsgpackMap(first)) return stored;  // unframed: written before records had frames
  if (first != kFramedRecordFormat) {
    return Status::Corruption(fmt::format(
        "journal record starts with byte 0x{:02x}, which opens neither a frame nor a record",
        first));
  }
  if (stored.size() < kFrameOverheadBytes + 1) {
    return Status::Corruption(fmt::format(
        "journal record is {} bytes, too short for a frame and a payload", stored.size()));
  }
  const std::string_view covered = stored.substr(0, stored.size() - kCrcBytes);
  uint32_t kept = 0;
  for (size_t i = 0; i < kCrcBytes; ++i)
    kept |= uint32_t(static_cast<unsigned char>(stored[covered.size() + i])) << (8 * i);
  const uint32_t computed = FrameCrc(covered);
  if (kept != computed) {
    return Status::Corruption(
        fmt::format("journal record of {} bytes fails its CRC-32C (stored {:08x}, computed {:08x})",
                    stored.size(), kept, computed));
  }
  return covered.substr(1);
}

Result<nlohmann::json> ReadStoredRecord(std::string_view stored) {
  auto payload = UnframeRecord(stored);
  if (!payload.ok()) return payload.status();
  return DecodeRecord(*payload);
}

}  // namespace tunebus::journal
