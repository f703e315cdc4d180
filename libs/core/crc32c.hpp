// CRC-32C (Castagnoli): the checksum TFRecord files frame their records with (TensorFlow's
// tensorflow/core/lib/hash/crc32c.h and the TFRecord format described in the TensorFlow guide
// "TFRecord and tf.train.Example"). Debian ships no C or C++ library with a public CRC-32C API
// (RocksDB's is internal), so this is a small implementation of our own: SSE4.2's CRC32
// instruction where the CPU has it (8 bytes a step), else a table, one byte a step. The journal
// checks every record with it on append and on replay (docs/reference/journal-format.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace tunebus {

/// CRC-32C of `data`: reflected polynomial 0x82F63B78 (Castagnoli), initial value and final
/// xor 0xFFFFFFFF (RFC 3720 B.4). Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data);
/// The same CRC computed through the table alone, whatever the CPU (for tests of Crc32c).
uint32_t Crc32cByTable(std::string_view data);

/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a CRC of data that
/// itself holds CRCs is not trivially related to them.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace tunebus
