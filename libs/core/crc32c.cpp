#include "libs/core/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace tunebus {

namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 1) ? (crc >> 1) ^ kCastagnoliReflected : crc >> 1;
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

// One byte at a time through the table: any CPU.
uint32_t ExtendByTable(uint32_t crc, std::string_view data) {
  for (const char c : data)
    crc = kTable[(crc ^ static_cast<unsigned char>(c)) & 0xFFu] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// SSE4.2's CRC32 instruction computes exactly this CRC (Castagnoli, reflected), 8 bytes a step.
__attribute__((target("sse4.2"))) uint32_t ExtendBySse42(uint32_t crc, std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t crc64 = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc64 = _mm_crc32_u64(crc64, word);
  }
  crc = static_cast<uint32_t>(crc64);
  for (; n > 0; ++p, --n) crc = _mm_crc32_u8(crc, static_cast<unsigned char>(*p));
  return crc;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t Crc32c(std::string_view data) {
#if defined(__x86_64__)
  if (kHaveSse42) return ExtendBySse42(0xFFFFFFFFu, data) ^ 0xFFFFFFFFu;
#endif
  return ExtendByTable(0xFFFFFFFFu, data) ^ 0xFFFFFFFFu;
}

uint32_t Crc32cByTable(std::string_view data) {
  return ExtendByTable(0xFFFFFFFFu, data) ^ 0xFFFFFFFFu;
}

}  // namespace tunebus
