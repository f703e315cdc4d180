// SHA-256 (FIPS 180-4) through libsodium's crypto_hash_sha256 (libsodium comes with libzmq):
// the content digest of shipped working_dir archives (docs/how-to/ship-code.md "The trainable's
// code").
#pragma once

#include <sodium.h>

#include <string>
#include <string_view>

namespace tunebus {

/// Incremental SHA-256: Update() any number of times, then HexDigest() once.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  void Update(const char* data, size_t size) { Update(std::string_view(data, size)); }
  /// The 64 lowercase hex digits of the digest of everything updated. Call once.
  std::string HexDigest();

 private:
  crypto_hash_sha256_state state_;
};

/// SHA-256 of `data` as 64 lowercase hex digits.
/// Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
std::string Sha256Hex(std::string_view data);

/// True for 64 lowercase hex digits (a digest as Sha256Hex writes it).
bool IsSha256Hex(std::string_view text);

}  // namespace tunebus
